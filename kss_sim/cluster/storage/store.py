"""The virtual cluster's state: objects in memory, written through to SQL, with one resourceVersion sequence.

``ClusterStore`` is the in-process service API that the Kubernetes router, the scheduler loop, the results
recorder and the web UI all use. It is thread-safe: one re-entrant lock guards memory, and is never held while
the database works. Objects handed out are fresh copies; the store's own dicts are never mutated in place.

Its parts: the committer (``committer.py``: the objects and their versions; group commit, so a write returns once
durable and visible and reads see committed state only), the change log (``change_log.py``: committed changes
replayed to watches, listeners told), the next version every write builds (``versions.py``), the API's write verbs
(``writes.py``) and the scheduler's and the kubelet's writes to pods (``pod_writes.py``). The store reads; the
verbs of its parts are bound as its own.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime

from sqlalchemy import Engine

from kss_sim.cluster.admission.pipeline import AdmissionPipeline
from kss_sim.cluster.crd.kinds import CustomKindInfo, CustomKinds
from kss_sim.cluster.crd.objects import CustomResourceRules
from kss_sim.cluster.errors import InternalError as InternalError
from kss_sim.cluster.errors import NotFound
from kss_sim.cluster.kinds.registry import BY_KIND, KINDS, KindInfo, minor_of, served
from kss_sim.cluster.kinds.stored import PACKED_KINDS, Change, held
from kss_sim.cluster.kinds.stored import StoredObject as StoredObject
from kss_sim.cluster.storage import repository
from kss_sim.cluster.storage.change_log import ChangeLog, Listener, WatchEvent
from kss_sim.cluster.storage.committer import Committer
from kss_sim.cluster.storage.committer import PendingWrites as PendingWrites
from kss_sim.cluster.storage.listing import ListResult, decode_continue, page
from kss_sim.cluster.storage.pod_writes import PodWrites
from kss_sim.cluster.storage.selectors import Selector, make_selector
from kss_sim.cluster.storage.versions import Versions
from kss_sim.cluster.storage.writes import ObjectWrites
from kss_sim.kube import raw_numbers
from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import gate_enabled
from kss_sim.kube.versions import kube_version as kube_version_named

log = logging.getLogger(__name__)


def _utcnow() -> datetime:
    return datetime.now(UTC)


_Changes = list[Change]
_Events = list[WatchEvent]
_Objs = list[Obj]


class ClusterStore:
    """Kubernetes objects in memory, written through to SQL; see the module docstring for the guarantees.

    Reads are its own. Its writes are its parts' verbs, bound in ``__init__``: ``create``, ``create_json``,
    ``update``, ``patch``, ``apply``, ``delete``, ``delete_collection`` (``ObjectWrites``); ``bind_pod``,
    ``take_binder``, ``update_pod_status``, ``merge_pod_status``, ``update_status``, ``create_event``
    (``PodWrites``); ``deferred``, ``flush``, ``write_alongside`` (``Committer``).
    """

    def __init__(
        self,
        engine: Engine | None = None,
        *,
        watch_window: int = 10000,
        auto_create_namespaces: bool = True,
        clock: Callable[[], datetime] = _utcnow,
        feature_gates: Mapping[str, bool] | None = None,
        kube_version: str | None = None,
    ) -> None:
        """An empty store; ``engine=None`` keeps everything in memory only (tests, offline simulation).

        ``feature_gates`` (``Settings.feature_gates``; a gate not given: ``kube_version``'s default) and the
        Kubernetes release ``kube_version`` (``"1.36"``; None: the default) decide what is served as on
        kube-apiserver: the workload-scheduling kinds and a pod's ``spec.workloadRef`` (v1.35) or
        ``spec.schedulingGroup`` (v1.36) only with GenericWorkload on, each kind in the versions that have it; the
        release's schema decodes every body.
        """
        self._lock = threading.RLock()
        self._engine = engine
        self._auto_create_namespaces = auto_create_namespaces
        self._clock = clock
        # Every gate as the release has it: a gate not given takes ``kube_version``'s default, not the default
        # release's (gate_enabled's fallback). Gates kss does not know are kept as given.
        release = kube_version_named(kube_version)
        self._gates: dict[str, bool] = {**(feature_gates or {}), **release.effective_gates(feature_gates)}
        self._kube_version = kube_version
        self._minor = minor_of(kube_version)
        self._changes = ChangeLog(self._lock, watch_window)
        # The objects and their versions, staged and committed (``_committer.objects``, ``.rv``, ``.committed_rv``).
        self._committer = Committer(self._lock, engine, self._changes)
        # Every object any write stores goes through this one admission (decode, admit, validate, managed fields).
        self._admission = admission = AdmissionPipeline(
            self._gates, kube_version=kube_version, custom=CustomResourceRules()
        )
        self._versions = Versions(
            self._committer, clock=clock, admission=admission, auto_create_namespaces=auto_create_namespaces
        )
        self._writes = writes = ObjectWrites(self._lock, self._committer, self._versions, admission)
        self._pod_writes = pod_writes = PodWrites(
            self._lock,
            self._committer,
            self._versions,
            admission,
            self,
            clock=clock,
            clear_nominated_on_bind=gate_enabled(self._gates, "ClearingNominatedNodeNameAfterBinding"),
        )
        # Their verbs are the store's own, bound here so that a call costs no delegating frame (every API write; the
        # scheduler's and the kubelet's writes, once per pod).
        self.create = writes.create
        self.create_json = writes.create_json
        self.update = writes.update
        self.patch = writes.patch
        self.apply = writes.apply
        self.delete = writes.delete
        self.delete_collection = writes.delete_collection
        self.deferred = self._committer.deferred
        self.flush = self._committer.flush
        self.write_alongside = self._committer.write_alongside
        self.bind_pod = pod_writes.bind_pod
        self.take_binder = pod_writes.take_binder
        self.update_pod_status = pod_writes.update_pod_status
        self.merge_pod_status = pod_writes.merge_pod_status
        self.update_status = pod_writes.update_status
        self.create_event = pod_writes.create_event

    def admit_subresource_create(self, kind: str, namespace: str, name: str) -> None:
        """NamespaceLifecycle for a create of ``kind``'s subresource (a Binding, an Eviction) on ``name`` in
        ``namespace``: ``NotFound`` for a missing namespace, ``NamespaceTerminating`` for one being deleted."""
        with self._lock:
            self._versions.admit_subresource_create(BY_KIND[kind], name, namespace)

    # ------------------------------------------------------------------------------------------ lifecycle

    @classmethod
    def open(
        cls,
        engine: Engine | None,
        *,
        watch_window: int = 10000,
        auto_create_namespaces: bool = True,
        clock: Callable[[], datetime] = _utcnow,
        feature_gates: Mapping[str, bool] | None = None,
        kube_version: str | None = None,
    ) -> ClusterStore:
        """Load every object from ``engine``'s database (already migrated) and add the built-in objects."""
        store = cls(
            engine,
            watch_window=watch_window,
            auto_create_namespaces=auto_create_namespaces,
            clock=clock,
            feature_gates=feature_gates,
            kube_version=kube_version,
        )
        store.load()
        store.ensure_builtins()
        return store

    def load(self) -> None:
        """Replace memory with the database's content; the watch log starts empty at the stored version."""
        if self._engine is None:
            return
        with self._lock, self._engine.connect() as conn:
            objects: dict[str, dict[tuple[str, str], StoredObject]] = {k.kind: {} for k in KINDS}
            for row in repository.load_rows(conn):
                if row.kind not in objects and "." in row.kind:
                    objects[row.kind] = {}  # a CRD's kind (Kind.group): served again once its CRD is loaded
                if row.kind not in objects:
                    log.warning("ignoring stored object of unknown kind %s", row.kind)
                    continue
                raw = row.body.encode()
                obj = raw_numbers.loads(raw)
                if row.kind not in PACKED_KINDS:
                    self._versions.shared.share(obj)
                objects[row.kind][(row.namespace, row.name)] = held(row.kind, StoredObject(obj, raw))
            resource_version = repository.load_resource_version(conn)
            self._committer.reset(objects, resource_version)
            self._changes.reset(resource_version)

    def scratch_copy(self) -> ClusterStore:
        """An in-memory store holding the same objects (no database, no listeners): a place to try a
        batch of writes, such as an import, before doing them for real."""
        with self._lock:
            copy = ClusterStore(
                None,
                watch_window=self._changes.window,
                auto_create_namespaces=self._auto_create_namespaces,
                clock=self._clock,
                feature_gates=self._gates,
                kube_version=self._kube_version,
            )
            # StoredObjects are immutable, so sharing them is safe. Only committed state is copied.
            committed = self._committer.committed_rv
            copy._committer.reset(
                {kind: dict(self._committer.view(kind)) for kind in self._committer.objects}, committed
            )
            copy._changes.reset(committed)
            return copy

    def ensure_builtins(self) -> None:
        """Create the namespaces and priority classes every cluster starts with, when missing."""
        with self._lock:
            changes: _Changes = []
            rv = self._committer.rv
            for info, obj in self._admission.builtin_objects():
                if ("", obj["metadata"]["name"]) not in self._committer.objects[info.key]:
                    rv += 1
                    changes.append(self._versions.added(info.key, obj, rv))
            batch = self._committer.stage(changes) if changes else None
        self._committer.acknowledge(batch)

    # ------------------------------------------------------------------------------------------ reads

    @property
    def feature_gates(self) -> dict[str, bool]:
        """The feature gates the store was opened with, completed with its release's defaults (a copy)."""
        return dict(self._gates)

    @property
    def kube_version(self) -> str | None:
        """The Kubernetes release whose API the store serves and whose schema decodes the bodies (None: the
        default one)."""
        return self._kube_version

    @property
    def kube_minor(self) -> int:
        """The minor number of that release."""
        return self._minor

    def serves(self, kind: str) -> bool:
        """Whether the API serves ``kind`` with these feature gates at this version. Reads and deletes work for
        every registered kind (objects may remain from a run with the gate on); creates, updates and patches only
        for served ones."""
        info = BY_KIND.get(kind)
        if info is None and "." in kind:
            return self.custom_kind(kind) is not None
        return info is not None and served(info, self._gates, self._minor)

    def _kind(self, kind: str) -> KindInfo:
        info = BY_KIND.get(kind)
        if info is not None:
            return info
        with self._lock:
            return self._versions.kind_info(kind)

    def custom_kinds(self) -> CustomKinds:
        """The kinds the established CustomResourceDefinitions serve (``kss_sim.cluster.crd.kinds``)."""
        with self._lock:
            return self._versions.custom_kinds()

    def custom_resource(self, group: str, version: str, plural: str) -> CustomKindInfo | None:
        """The custom kind served at ``/apis/{group}/{version}/{plural}``, or None."""
        with self._lock:
            return self._versions.custom_kinds().resource(group, version, plural)

    def custom_kind(self, key: str) -> CustomKindInfo | None:
        """The custom kind stored under ``key`` (``Kind.group``), at its storage version; None if none is served."""
        with self._lock:
            return self._versions.custom_kinds().by_key(key)

    @property
    def clock(self) -> Callable[[], datetime]:
        """The store's clock (timestamps it writes; what Event expiry counts on)."""
        return self._clock

    @property
    def resource_version(self) -> int:
        """The latest committed (visible) resourceVersion."""
        with self._lock:
            return self._committer.committed_rv

    def get(self, kind: str, namespace: str | None, name: str, *, working: bool = False) -> Obj | None:
        """A copy of one object, or None. ``working``: staged writes included, so a bulk write inside
        ``deferred()`` (an import) sees the objects it wrote before they are committed."""
        info = self._kind(kind)
        key = ((namespace or "") if info.namespaced else "", name)
        with self._lock:
            entry = self._committer.objects[kind].get(key) if working else self._committer.committed_entry(kind, key)
        return entry.copy() if entry is not None else None

    def read(self, kind: str, namespace: str | None, name: str) -> StoredObject:
        """The stored entry of one object (read-only), or ``NotFound``."""
        info = self._kind(kind)
        with self._lock:
            entry = self._committer.committed_entry(kind, ((namespace or "") if info.namespaced else "", name))
        if entry is None:
            raise NotFound(info.plural, name, group=info.group)
        return entry

    def list(
        self,
        kind: str,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> tuple[_Objs, int]:
        """Copies of the matching objects in (namespace, name) order, and the list's resourceVersion."""
        result = self.select(kind, namespace, make_selector(kind, label_selector, field_selector))
        return [e.copy() for e in result.items], result.resource_version

    def select(
        self,
        kind: str,
        namespace: str | None = None,
        selector: Selector | None = None,
        *,
        limit: int | None = None,
        continue_token: str | None = None,
    ) -> ListResult:
        """Stored entries (read-only) matching ``selector``, optionally one page of ``limit`` items."""
        info = self._kind(kind)
        start: tuple[str, str] | None = decode_continue(continue_token) if continue_token else None
        with self._lock:
            entries = self._committer.view(kind)
            return page(info, entries, self._committer.committed_rv, namespace, selector, limit=limit, start=start)

    def events_since(self, resource_version: int) -> _Events:
        """Every change after ``resource_version``, oldest first; ``Expired`` if some were already dropped."""
        return self._changes.since(resource_version)

    # ------------------------------------------------------------------------------------------ change log

    def add_listener(self, callback: Listener, kinds: Iterable[str] | None = None, *, copy: bool = True) -> None:
        """Call ``callback(event_type, kind, obj)`` after each committed change (of ``kinds`` only, when
        given), in resourceVersion order: see ``ChangeLog.add_listener`` for what it may do there, and what
        ``copy=False`` (the store's read-only dict instead of a copy) asks of it."""
        self._changes.add_listener(callback, kinds, copy=copy)

    def remove_listener(self, callback: Listener) -> None:
        """Stop calling ``callback``."""
        self._changes.remove_listener(callback)

    def add_waker(self, wake: Callable[[], None]) -> None:
        """Call ``wake()`` (no arguments, no copies) after each commit; the watch hub uses this."""
        self._changes.add_waker(wake)

    def remove_waker(self, wake: Callable[[], None]) -> None:
        """Stop calling ``wake``."""
        self._changes.remove_waker(wake)

    def memory_counts(self) -> dict[str, int]:
        """The sizes of what the store holds, for a memory census (``KSS_API_MEMORY_CENSUS``): objects by kind (the
        kinds holding any), the watch log, listeners and wakers, the shared values' tables, the writes staged."""
        with self._lock:
            counts = {f"objects_{kind}": len(held) for kind, held in self._committer.objects.items() if held}
            counts.update(self._changes.counts())
            counts.update(self._versions.shared.counts())
            counts.update(self._committer.counts())
            return counts

    def compact(self) -> None:
        """Drop the whole watch log (as etcd compaction does): watches from older versions get 410."""
        with self._lock:
            self._changes.reset(self._committer.committed_rv)

"""The cluster as the controllers see it: the store verbs they use, and nothing else.

Every controller of ``kss_sim/controllers/`` reads and writes through a :class:`ClusterPort`. ``kss serve``'s
``ClusterStore`` satisfies it as it is (mypy checks that where the manager hands the store over); any other object
world that offers these verbs with the store's meaning — resourceVersions that conflict, the API's errors
(``NotFound``, ``Conflict``, ``AlreadyExists``), listeners called once per committed change in order — can run the
same controllers, on whatever clock the loop is given. The port is narrow on purpose: a verb a controller starts
to use is added here, where a second implementation has to follow it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.crd.kinds import CustomKinds
from kss_sim.cluster.storage.selectors import Selector
from kss_sim.kube.objects import Obj

# ``callback(event_type, kind, obj)``: ADDED, MODIFIED or DELETED, after the change is committed.
Listener = Callable[[str, str, Obj], None]


class Entry(Protocol):
    """One stored object as a read returns it: its dict is the store's own (read-only: never mutate it)."""

    @property
    def obj(self) -> Obj: ...

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...


class Listing(Protocol):
    """What a select returns: the matching entries in (namespace, name) order."""

    @property
    def items(self) -> Sequence[Entry]: ...


class Pending(Protocol):
    """The writes made inside ``ClusterPort.deferred``."""

    def wait(self) -> None:
        """Block until they are committed (and their listeners called); raise if the commit failed."""
        ...


class ClusterPort(Protocol):
    """The store verbs the controllers use, with ``ClusterStore``'s signatures and meaning."""

    # --- reads -----------------------------------------------------------------------------------------------
    def read(self, kind: str, namespace: str | None, name: str) -> Entry:
        """The stored entry of one object (read-only), or ``NotFound``."""
        ...

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        """A copy of one object the caller owns, or None."""
        ...

    def select(self, kind: str, namespace: str | None = None, selector: Selector | None = None) -> Listing:
        """Stored entries (read-only) of ``kind`` in ``namespace`` (every namespace: None) matching ``selector``."""
        ...

    def serves(self, kind: str) -> bool:
        """Whether ``kind`` can be created and written (its API served with these feature gates)."""
        ...

    def custom_kinds(self) -> CustomKinds:
        """The kinds the established CustomResourceDefinitions serve (what discovery lists beside the built-ins)."""
        ...

    @property
    def feature_gates(self) -> dict[str, bool]:
        """The feature gates the cluster runs with (a copy)."""
        ...

    # --- writes ----------------------------------------------------------------------------------------------
    def create(self, kind: str, obj: Obj, namespace: str | None = None, *, manager: str = ...) -> Obj:
        """Create ``obj`` (``generateName`` honoured); ``AlreadyExists`` when the name is taken."""
        ...

    def update(self, kind: str, obj: Obj, *, subresource: str | None = None, manager: str = ...) -> Obj:
        """Replace an object; ``Conflict`` on a stale ``metadata.resourceVersion``."""
        ...

    def patch(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        patch: Any,
        patch_type: str = "merge",
        *,
        subresource: str | None = None,
        manager: str = ...,
    ) -> Obj:
        """Patch an object (``merge``, ``strategic`` or ``json``); a resourceVersion in the patch is a precondition."""
        ...

    def apply(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        configuration: Any,
        *,
        manager: str,
        force: bool = False,
        subresource: str | None = None,
    ) -> tuple[Obj, bool]:
        """Server-side apply of ``configuration`` by ``manager``; the object and whether it was created."""
        ...

    def update_status(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        status: Obj,
        *,
        resource_version: str | None = None,
        annotations: Mapping[str, str | None] | None = None,
    ) -> Obj:
        """Replace an object's ``status`` (and merge ``annotations``); ``Conflict`` on a stale version."""
        ...

    def merge_pod_status(
        self, namespace: str, name: str, status: Obj, *, resource_version: str | None, manager: str
    ) -> Obj:
        """Merge ``status`` into a pod's through ``pods/status`` (the kubelet's write)."""
        ...

    def delete(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        resource_version: str | None = None,
        options: DeleteOptions | None = None,
    ) -> Obj:
        """Delete one object (finalizers and propagation as the API does); ``Conflict`` when ``uid`` is not its."""
        ...

    def create_event(
        self,
        involved: Obj,
        reason: str,
        message: str,
        *,
        type: str = "Normal",
        component: str = "default-scheduler",
        action: str = "",
    ) -> Obj | None:
        """Record a core/v1 Event about ``involved`` (a repeat counts on the one recorded lately); None when it is
        dropped (its namespace is being deleted), as client-go's recorder drops it."""
        ...

    def deferred(self) -> AbstractContextManager[Pending]:
        """Writes inside the block return once staged (seen by the writes after them) rather than once committed;
        ``wait()`` on what it yields before reading what they changed. Many writes share a commit that way."""
        ...

    # --- changes ---------------------------------------------------------------------------------------------
    def add_listener(self, callback: Listener, kinds: Iterable[str] | None = None, *, copy: bool = True) -> None:
        """Call ``callback`` after each committed change of ``kinds`` (every kind: None), in order; it only notes
        the change (it never writes). ``copy=False``: ``obj`` is the store's read-only dict."""
        ...

    def remove_listener(self, callback: Listener) -> None:
        """Stop calling ``callback``."""
        ...

"""View models of the web UI, built from the cluster store, the results service and the scheduler service.

Nothing here renders HTML or touches the database: the router turns these plain objects into templates,
and every read goes through the services on ``app.state`` (typed by ``app.web.ports``). The lists stay fast
at 5,000 nodes / 50,000 pods because per-pod rows are cached by resourceVersion (a rebuild after one change
re-reads one pod), and node allocation comes from the scheduler cache when the scheduler runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import yaml

from app.cluster.errors import ApiError
from app.cluster.kinds import BY_KIND, KINDS
from app.scheduler.config import ConfigError
from app.scheduler.nodeinfo import NodeInfo
from app.scheduler.resources import CPU, MEMORY, PODS, Resource
from app.web.formatting import Page, make_bar, paginate, resource_bars, to_yaml
from app.web.pod_index import PodIndex, PodRow, PodSnapshot, pod_row
from app.web.ports import Operations, Results, Scheduler, Store, StoredEntry
from app.web.views.cluster import NODE_POD_PREVIEW, NODE_SORTS, ClusterView, NodeRow, Summary, node_matches, node_ready
from app.web.views.editor import EditOutcome, Target, _bad, _failure
from app.web.views.pod import (
    MATRIX_PAGE_SIZE,
    MATRIX_SORTS,
    AttemptView,
    PodDetail,
    _elide_annotations,
    _heat_and_bars,
    _stages,
)
from app.web.views.pods import POD_SORTS, POD_STATES, PodsView, pod_matches
from app.web.views.scheduler import ConfigInEffect, ConfigOutcome

Obj = dict[str, Any]

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


# ---------------------------------------------------------------------------------------------- service


class WebService:
    """Builds every page's view model from the application's services (held on ``app.state``)."""

    def __init__(self, state: Any) -> None:
        self._state = state
        self.pod_index = PodIndex()
        self._allocatable_cache: dict[str, tuple[Obj, Resource]] = {}

    # --- the services ----------------------------------------------------------------------------
    @property
    def store(self) -> Store:
        """The cluster store."""
        store: Store = self._state.store
        return store

    @property
    def results(self) -> Results:
        """The results service."""
        results: Results = self._state.results
        return results

    @property
    def scheduler(self) -> Scheduler | None:
        """The in-process scheduler service (None in bare test apps)."""
        scheduler: Scheduler | None = getattr(self._state, "scheduler", None)
        return scheduler

    @property
    def scheduler_running(self) -> bool:
        """The scheduler loop runs in this process (its cache then mirrors the cluster)."""
        settings = getattr(self._state, "settings", None)
        return bool(getattr(settings, "scheduler_enabled", False)) and self.scheduler is not None

    @property
    def operations(self) -> Operations | None:
        """The operations service (reset / export / import), when this build has one."""
        operations: Operations | None = getattr(self._state, "operations", None)
        return operations

    # --- allocation ------------------------------------------------------------------------------
    def _cache_infos(self) -> dict[str, NodeInfo]:
        if not self.scheduler_running:
            return {}
        scheduler = self.scheduler
        assert scheduler is not None
        # node_info_list is replaced wholesale by the scheduler thread, so this list is a stable view.
        return {ni.name: ni for ni in list(scheduler.cache.snapshot.node_info_list)}

    def _allocation(
        self, entry: StoredEntry, infos: dict[str, NodeInfo], pods: PodSnapshot
    ) -> tuple[Resource, Resource, int, list[str]]:
        """(requested, allocatable, pod count, pod keys) of one node, from the scheduler cache when it has it."""
        ni = infos.get(entry.name)
        if ni is not None:
            listed = list(ni.pods)
            return ni.requested, ni.allocatable, len(listed), [p.key for p in listed]
        rows = pods.by_node.get(entry.name, [])
        return pods.requested(entry.name), self._allocatable(entry), len(rows), [r.key for r in rows]

    def _allocatable(self, entry: StoredEntry) -> Resource:
        """A node's allocatable resources, parsed once per version of the node."""
        cached = self._allocatable_cache.get(entry.name)
        if cached is not None and cached[0] is entry.obj:
            return cached[1]
        status = entry.obj.get("status") or {}
        value = Resource.from_raw(status.get("allocatable") or status.get("capacity") or {})
        self._allocatable_cache[entry.name] = (entry.obj, value)
        return value

    def _totals(
        self, entry: StoredEntry, infos: dict[str, NodeInfo], pods: PodSnapshot
    ) -> tuple[Resource, Resource, int]:
        """(requested, allocatable, pod count) of one node without listing its pods."""
        ni = infos.get(entry.name)
        if ni is not None:
            return ni.requested, ni.allocatable, len(ni.pods)
        return pods.requested(entry.name), self._allocatable(entry), len(pods.by_node.get(entry.name, ()))

    def _node_row(self, entry: StoredEntry, infos: dict[str, NodeInfo], pods: PodSnapshot) -> NodeRow:
        requested, allocatable, count, keys = self._allocation(entry, infos, pods)
        obj = entry.obj
        spec = obj.get("spec") or {}
        return NodeRow(
            name=entry.name,
            labels=dict((obj.get("metadata") or {}).get("labels") or {}),
            taints=list(spec.get("taints") or []),
            unschedulable=bool(spec.get("unschedulable")),
            ready=node_ready(obj),
            bars=resource_bars(requested, allocatable, count),
            pod_count=count,
            pod_keys=sorted(keys)[:NODE_POD_PREVIEW],
            obj=obj,
        )

    # --- cluster ---------------------------------------------------------------------------------
    def cluster(self, *, q: str = "", page: int = 1, sort: str = "name") -> ClusterView:
        """Summary strip and one page of nodes matching ``q`` (name or label), sorted by name or usage."""
        store = self.store
        rv = store.resource_version
        sort = sort if sort in NODE_SORTS else "name"
        nodes = store.select("Node").items
        infos = self._cache_infos()
        index = self.pod_index.get(store)
        terms = q.split()
        matching = [e for e in nodes if node_matches(e, terms)] if terms else nodes

        summary_req = Resource()
        summary_alloc = Resource()
        pods_on_nodes = 0
        unschedulable = 0
        usage: dict[str, tuple[float, float, float]] = {}
        for entry in nodes:
            requested, allocatable, count = self._totals(entry, infos, index)
            summary_req.add(requested)
            summary_alloc.add(allocatable)
            pods_on_nodes += count
            if (entry.obj.get("spec") or {}).get("unschedulable"):
                unschedulable += 1
            if sort != "name":
                usage[entry.name] = (
                    requested.milli_cpu / allocatable.milli_cpu if allocatable.milli_cpu else 0.0,
                    requested.memory / allocatable.memory if allocatable.memory else 0.0,
                    count / allocatable.allowed_pod_number if allocatable.allowed_pod_number else 0.0,
                )
        if sort != "name":
            slot = NODE_SORTS.index(sort) - 1
            matching = sorted(matching, key=lambda e: (-usage[e.name][slot], e.name))
        window = paginate(matching, page)
        rows = Page(
            [self._node_row(e, infos, index) for e in window.items], window.page, window.page_size, window.total
        )
        bound = sum(1 for r in index.rows if r.bound and not r.terminal)
        pending = sum(1 for r in index.rows if not r.bound and not r.terminal)
        summary = Summary(
            nodes=len(nodes),
            unschedulable_nodes=unschedulable,
            pods=len(index.rows),
            bound=bound,
            pending=pending,
            cpu=make_bar(CPU, summary_req.milli_cpu, summary_alloc.milli_cpu),
            memory=make_bar(MEMORY, summary_req.memory, summary_alloc.memory),
            pod_slots=make_bar(PODS, pods_on_nodes, summary_alloc.allowed_pod_number),
            source="scheduler cache" if infos else "pods in the store",
        )
        return ClusterView(summary, rows, q, sort, rv)

    # --- node ------------------------------------------------------------------------------------
    def node(self, name: str) -> tuple[NodeRow, list[PodRow]] | None:
        """A node with its allocation and the pods bound to it; None when there is no such node."""
        store = self.store
        try:
            entry = store.read("Node", None, name)
        except ApiError:
            return None
        infos = self._cache_infos()
        index = self.pod_index.get(store)
        row = self._node_row(entry, infos, index)
        pods = sorted(index.by_node.get(name, []), key=lambda r: (r.namespace, r.name))
        return row, pods

    # --- pods ------------------------------------------------------------------------------------
    def pods(
        self,
        *,
        q: str = "",
        state: str = "all",
        node: str = "",
        namespace: str = "",
        sort: str = "name",
        desc: bool = False,
        page: int = 1,
    ) -> PodsView:
        """One page of pods: searched, filtered, sorted, with attempt counts and pending reasons."""
        store = self.store
        index = self.pod_index.get(store)
        state = state if state in POD_STATES else "all"
        sort = sort if sort in POD_SORTS else "name"
        attempts = self.results.attempt_counts()  # one query per request
        rows: Iterable[PodRow] = index.rows
        if namespace:
            rows = (r for r in rows if r.namespace == namespace)
        if node:
            rows = (r for r in rows if r.node == node or r.nominated == node)
        if state == "pending":
            rows = (r for r in rows if not r.bound and not r.terminal)
        elif state == "bound":
            rows = (r for r in rows if r.bound)
        terms = q.split()
        if terms:
            rows = (r for r in rows if pod_matches(r, terms))
        selected = list(rows)
        keys: dict[str, Callable[[PodRow], Any]] = {
            "namespace": lambda r: (r.namespace, r.name),
            "node": lambda r: (r.node == "", r.node, r.namespace, r.name),
            "phase": lambda r: (r.phase, r.namespace, r.name),
            "priority": lambda r: (r.priority, r.namespace, r.name),
            "attempts": lambda r: (attempts.get((r.namespace, r.name), 0), r.namespace, r.name),
            "age": lambda r: (r.created, r.namespace, r.name),
        }
        if sort == "name":
            selected.sort(key=lambda r: (r.name, r.namespace), reverse=desc)
        else:
            selected.sort(key=keys[sort], reverse=desc)
        counts = {
            "all": len(index.rows),
            "pending": sum(1 for r in index.rows if not r.bound and not r.terminal),
            "bound": sum(1 for r in index.rows if r.bound),
        }
        namespaces = [e.name for e in store.select("Namespace").items]
        return PodsView(
            paginate(selected, page),
            attempts,
            q,
            state,
            node,
            namespace,
            sort,
            desc,
            namespaces,
            counts,
            index.resource_version,
        )

    # --- pod detail ------------------------------------------------------------------------------
    def pod(
        self,
        namespace: str,
        name: str,
        *,
        attempt: int | None = None,
        fpage: int = 1,
        fsort: str = "failing",
        fnode: str = "",
        fplugin: str = "",
        spage: int = 1,
    ) -> PodDetail | None:
        """A pod: its YAML, attempts timeline and the chosen (default: latest) attempt in full."""
        store = self.store
        rv = store.resource_version
        try:
            entry = store.read("Pod", namespace, name)
        except ApiError:
            return None
        row = pod_row(entry.obj)
        shown, elided = _elide_annotations(entry.obj)
        self.results.flush()  # attempts are written off-thread: show what was submitted before this request
        attempts = self.results.list_attempts(namespace, name)
        chosen = attempt if attempt is not None else (attempts[0]["attempt"] if attempts else None)
        view = (
            self.attempt(namespace, name, chosen, fpage=fpage, fsort=fsort, fnode=fnode, fplugin=fplugin, spage=spage)
            if chosen is not None
            else None
        )
        events = self.events_for("Pod", namespace, name)
        waiting = self.scheduler_running and not attempts and not row.bound and not row.terminal
        return PodDetail(row, to_yaml(shown), elided, attempts, view, events, waiting, rv)

    def attempt(
        self,
        namespace: str,
        name: str,
        number: int,
        *,
        fpage: int = 1,
        fsort: str = "failing",
        fnode: str = "",
        fplugin: str = "",
        spage: int = 1,
    ) -> AttemptView | None:
        """One attempt: the filter matrix page (sorted/filtered) and the scores page (sorted by total)."""
        fsort = fsort if fsort in MATRIX_SORTS else "failing"
        filter_page = self.results.get_attempt(
            namespace,
            name,
            number,
            page=fpage,
            page_size=MATRIX_PAGE_SIZE,
            sort=fsort,
            node=fnode or None,
            plugin=fplugin or None,
            top=0,
        )
        if filter_page is None:
            return None
        score_page = self.results.get_attempt(
            namespace, name, number, page=spage, page_size=MATRIX_PAGE_SIZE, sort="total", node=fnode or None, top=8
        )
        assert score_page is not None
        # Nodes that were never scored (filtered out) sort last by total; the score table skips them.
        score_page["matrix"]["rows"] = [r for r in score_page["matrix"]["rows"] if r.get("total") is not None]
        heat, bars = _heat_and_bars(score_page)
        postfilter = filter_page.get("postfilter")
        return AttemptView(
            number=number,
            summary=filter_page,
            filter_page=filter_page,
            score_page=score_page,
            stages=_stages(filter_page),
            postfilter=postfilter,
            victims=list(filter_page.get("victims") or []),
            heat=heat,
            plugin_bars=bars,
            fsort=fsort,
            fnode=fnode,
            fplugin=fplugin,
        )

    def events_for(self, kind: str, namespace: str | None, name: str, limit: int = 20) -> list[Obj]:
        """The newest Events about one object (what ``kubectl describe`` lists)."""
        ns = namespace or "default"
        found = [
            e.obj
            for e in self.store.select("Event", ns if kind != "Node" else None).items
            if (e.obj.get("involvedObject") or {}).get("name") == name
            and (e.obj.get("involvedObject") or {}).get("kind") == kind
        ]
        found.sort(key=lambda o: (str(o.get("lastTimestamp") or ""), int(o["metadata"]["resourceVersion"])))
        return found[-limit:][::-1]

    # --- objects of any kind ---------------------------------------------------------------------
    def objects(self, kind: str, *, q: str = "", page: int = 1) -> Page[StoredEntry]:
        """One page of objects of one kind, matching ``q`` in namespace/name."""
        items = self.store.select(kind).items
        t = q.strip().lower()
        if t:
            items = [e for e in items if t in e.name.lower() or t in e.namespace.lower()]
        return paginate(items, page)

    def object_yaml(self, kind: str, namespace: str, name: str) -> str | None:
        """An object's full YAML for the editor, or None."""
        obj = self.store.get(kind, namespace or None, name)
        if obj is None:
            return None
        obj.get("metadata", {}).pop("managedFields", None)
        return to_yaml(obj)

    def save_yaml(self, text: str, *, target: Target | None = None) -> EditOutcome:
        """Create the object in ``text`` (or replace ``target`` with it) through the store, as the API would.

        On any error nothing is saved and the outcome carries the Status message and the field causes.
        """
        try:
            docs = [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc)
            return _bad(f"the YAML could not be parsed{where}: {problem}", "<document>")
        if not docs:
            return _bad("the document is empty: write one Kubernetes object", "<document>")
        if len(docs) > 1:
            return _bad(f"found {len(docs)} documents: submit one object at a time", "<document>")
        obj = docs[0]
        if not isinstance(obj, dict):
            return _bad("the document must be a Kubernetes object (a mapping)", "<document>")
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            return _bad("Required value: every object needs a kind", "kind")
        info = BY_KIND.get(kind)
        if info is None:
            supported = ", ".join(k.kind for k in KINDS)
            return _bad(f'Unsupported value: "{kind}": supported values: {supported}', "kind")
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
        assert isinstance(meta, dict)
        namespace = str(meta.get("namespace") or ("default" if info.namespaced else ""))
        name = str(meta.get("name") or "")
        try:
            if target is None:
                saved = self.store.create(kind, obj)
            else:
                if (kind, name) != (target.kind, target.name) or (info.namespaced and namespace != target.namespace):
                    shown = f"{namespace}/{name}" if info.namespaced else name
                    return _bad(
                        f"the object in the editor ({kind} {shown}) is not the one being edited "
                        f"({target.kind} {target.namespace + '/' if target.namespace else ''}{target.name})",
                        "metadata.name",
                    )
                saved = self.store.update(kind, obj)
        except ApiError as exc:
            return _failure(exc, kind, namespace, name)
        smeta = saved.get("metadata") or {}
        return EditOutcome(True, kind, str(smeta.get("namespace") or ""), str(smeta.get("name") or ""), obj=saved)

    def delete(self, kind: str, namespace: str, name: str) -> EditOutcome:
        """Delete one object (a node takes its pods with it, as in the store)."""
        if kind not in BY_KIND:
            return _bad(f'Unsupported value: "{kind}"', "kind")
        try:
            self.store.delete(kind, namespace or None, name)
        except ApiError as exc:
            return _failure(exc, kind, namespace, name)
        return EditOutcome(True, kind, namespace, name)

    # --- scheduler configuration -----------------------------------------------------------------
    def config_yaml(self) -> str:
        """The running KubeSchedulerConfiguration as YAML."""
        scheduler = self.scheduler
        if scheduler is None:
            return ""
        return to_yaml(scheduler.config_document())

    def config_in_effect(self) -> ConfigInEffect | None:
        """What the running configuration amounts to: each profile's plugins per extension point, and the
        document after kube-scheduler's defaulting."""
        scheduler = self.scheduler
        if scheduler is None:
            return None
        return ConfigInEffect(scheduler.plugins_in_effect(), to_yaml(scheduler.defaulted_config_document()))

    def queue_counts(self) -> dict[str, int]:
        """Pods per scheduling queue."""
        scheduler = self.scheduler
        return scheduler.queue.pending_counts() if scheduler is not None else {}

    def apply_config(self, text: str) -> ConfigOutcome:
        """Validate and apply a configuration; on error the running one stays and the field is named."""
        scheduler = self.scheduler
        if scheduler is None:
            return ConfigOutcome(False, text, "<document>", "no scheduler runs in this process")
        try:
            scheduler.update_config(text)
        except ConfigError as exc:
            return ConfigOutcome(False, text, exc.field, exc.detail)
        except (ValueError, TypeError, KeyError, AttributeError) as exc:
            # A document of the wrong shape can fail before validation names a field.
            return ConfigOutcome(False, text, "<document>", f"{type(exc).__name__}: {exc}")
        return ConfigOutcome(True, self.config_yaml())

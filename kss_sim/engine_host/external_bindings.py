"""What another scheduler did: its bindings recorded as attempts, and (``--shadow``) kss's own judgement of each.

An external kube-scheduler (``KSS_SCHEDULER_ENABLED=false``, or pods whose schedulerName is none of kss's profiles)
binds through the API's ``pods/binding``. The scheduler thread sees the pod go from pending to bound without having
assumed it, and hands both versions to :meth:`ExternalBindings.bound` before its cache takes the binding in, so the
shadow judgement sees the cluster as it was just before it. The attempt is recorded a little later
(:data:`SETTLE_SECONDS`): kube-scheduler-simulator's debuggable scheduler writes its result annotations in an update
after the binding, and the ``Scheduled`` Event that names the binder (when the Binding's field manager does not)
follows it too.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from kss_sim.engine_host.recorder import AttemptRecorder
from kss_sim.engine_host.store_actions import ClusterStoreLike
from kss_sim.results.annotation_reader import fill_attempt, read_result_annotations
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.record import Attempt

log = logging.getLogger("kss.scheduler")

# How long after a binding its attempt is recorded: the result annotations and the Scheduled Event arrive in
# writes of their own after the binding (the debuggable scheduler's store reflector updates the pod on the next
# pod event it sees).
SETTLE_SECONDS = 1.5
EVENTS_KEPT = 20  # the pod's newest Events kept on its attempt


@dataclass
class _Awaiting:
    """A binding seen, its attempt not recorded yet."""

    pod: dict[str, Any]  # the newest version seen
    node: str
    bound_at: float  # wall clock
    due: float  # on the host's clock
    shadow: dict[str, Any] | None


def _rfc3339_seconds(text: Any) -> float | None:
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def shadow_judgement(att: Attempt, bound_to: str) -> dict[str, Any]:
    """What kss's own attempt says of a binding to ``bound_to``: its pick, its best nodes, whether it agrees (the
    bound node is one of the nodes with its best total: ties aside), and its filter and score rows of both nodes."""
    pick = att.suggested_host if att.result == "scheduled" else None
    best = list(att.selected or ([pick] if pick else []))
    rows: dict[str, Any] = {}
    filters, finals, totals = att.filter or {}, att.final_score or {}, att.total or {}
    for node in dict.fromkeys(n for n in (bound_to, pick) if n):
        rows[node] = {
            "filter": filters.get(node),
            "stoppedAt": att.stopped_at.get(node),
            "finalScore": finals.get(node),
            "total": totals.get(node),
        }
    return {
        "node": pick,
        "best": best,
        "agrees": pick is not None and bound_to in best,
        "result": att.result,
        "message": att.message,
        "profile": att.profile,
        "nodes": att.num_nodes,
        "feasibleNodes": att.feasible_count,
        "rows": rows,
    }


class ExternalBindings:
    """Bindings other schedulers made, recorded as attempts (on the scheduler thread: its host calls every method)."""

    def __init__(
        self,
        store: ClusterStoreLike,
        results: AttemptRecorder | None,
        *,
        judge: Callable[[PodInfo], Attempt] | None = None,
        on_judged: Callable[[bool], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
        settle_seconds: float = SETTLE_SECONDS,
    ) -> None:
        """``judge``: kss's own scheduling cycle of a pending pod, placing nothing (the shadow; None: no shadow).
        ``on_judged``: told whether each judgement agreed (the metrics)."""
        self.store = store
        self.results = results
        self.judge = judge
        self.on_judged = on_judged
        self.clock = clock
        self.settle_seconds = settle_seconds
        self._awaiting: dict[str, _Awaiting] = {}  # pod uid -> binding

    def bound(self, before: dict[str, Any], after: dict[str, Any]) -> None:
        """``before`` (pending) became ``after`` (bound) by another binder; the host's cache does not have it yet."""
        node = str((after.get("spec") or {}).get("nodeName") or "")
        uid = str((after.get("metadata") or {}).get("uid") or "")
        shadow = None
        if self.judge is not None:
            try:
                shadow = shadow_judgement(self.judge(PodInfo(before)), node)
            except Exception:  # the judgement is an extra: a failure loses it, never the record
                log.exception("the shadow judgement of %s failed", PodInfo(after).key)
            if shadow is not None and self.on_judged is not None:
                self.on_judged(bool(shadow["agrees"]))
        self._awaiting[uid] = _Awaiting(after, node, time.time(), self.clock() + self.settle_seconds, shadow)

    def updated(self, pod: dict[str, Any], *, deleted: bool = False) -> None:
        """A later version of an awaited pod (its annotations may have come); a deleted pod is recorded at once."""
        uid = str((pod.get("metadata") or {}).get("uid") or "")
        awaiting = self._awaiting.get(uid)
        if awaiting is None:
            return
        awaiting.pod = pod
        if deleted:
            self._record(self._awaiting.pop(uid))

    @property
    def awaiting(self) -> int:
        return len(self._awaiting)

    def record_due(self, *, everything: bool = False) -> None:
        """Record the bindings whose settle time passed (``everything``: all of them, as the host stops)."""
        now = self.clock()
        for uid in [u for u, a in self._awaiting.items() if everything or a.due <= now]:
            awaiting = self._awaiting.pop(uid)
            try:
                self._record(awaiting)
            except Exception:  # one pod's record must not stop the others'
                log.exception("recording the binding of %s failed", PodInfo(awaiting.pod).key)

    def _record(self, awaiting: _Awaiting) -> None:
        pod = awaiting.pod
        meta = pod.get("metadata") or {}
        namespace, name = str(meta.get("namespace") or "default"), str(meta.get("name") or "")
        current = self.store.get("Pod", namespace, name)
        if current is not None and (current.get("metadata") or {}).get("uid") == meta.get("uid"):
            pod = current
            meta = pod.get("metadata") or {}
        info = PodInfo(pod)
        scheduler_name = str((pod.get("spec") or {}).get("schedulerName") or "default-scheduler")
        events = self._events(namespace, name, str(meta.get("uid") or ""))
        scheduled = next((e for e in reversed(events) if e.get("reason") == "Scheduled"), None)
        # Who bound it: the Binding's field manager (its fieldManager, else its client's User-Agent prefix, as
        # kube-apiserver names a write's manager), else the Scheduled Event's reporting controller.
        binder = self.store.take_binder(str(meta.get("uid") or "")) or ""
        if not binder and scheduled is not None:
            binder = scheduled.get("reportingController") or scheduled.get("source") or ""
        binder = binder or scheduler_name
        # creationTimestamp has whole seconds (as kube-apiserver's): the time to bind reads up to a second long.
        created = _rfc3339_seconds(meta.get("creationTimestamp"))
        to_bind = round(max(0.0, awaiting.bound_at - created), 3) if created is not None else None
        read = read_result_annotations(meta.get("annotations"))
        warnings = list(read.warnings)
        if read.selected_node and read.selected_node != awaiting.node:
            warnings.append(
                f"the selected-node annotation says {read.selected_node}, the pod is bound to {awaiting.node}"
            )
        att = Attempt(
            pod=info.key,
            attempt=self.results.next_attempt_number(namespace, name) if self.results is not None else 1,
            priority=info.priority,
            profile=scheduler_name,
        )
        att.result, att.bound_to, att.bound_by = "scheduled", awaiting.node, "external"
        att.started_at = awaiting.bound_at
        att.queued_for = to_bind or 0.0
        att.message = f"bound to {awaiting.node} by {binder}"
        fill_attempt(att, read)
        att.suggested_host = awaiting.node
        att.external = {
            "binder": binder,
            "node": awaiting.node,
            "secondsToBind": to_bind,
            "events": events[-EVENTS_KEPT:],
            "conditions": (pod.get("status") or {}).get("conditions") or [],
            "annotations": read.found,
            "postfilter": read.postfilter or None,
            "warnings": warnings,
        }
        att.shadow = awaiting.shadow
        if self.results is not None:
            self.results.submit(
                att, namespace=namespace, pod_name=name, pod_uid=info.uid, queued_seconds=att.queued_for
            )

    def _events(self, namespace: str, name: str, uid: str) -> list[dict[str, Any]]:
        """The pod's core/v1 Events, oldest first, as the pod page lists them."""
        out = []
        for entry in self.store.select("Event", namespace).items:
            event = entry.obj
            involved = event.get("involvedObject") or {}
            if involved.get("kind") != "Pod" or involved.get("name") != name:
                continue
            if uid and involved.get("uid") and involved.get("uid") != uid:
                continue
            source = event.get("source") or {}
            out.append(
                {
                    "type": event.get("type"),
                    "reason": event.get("reason"),
                    "message": event.get("message"),
                    "reportingController": event.get("reportingComponent") or source.get("component"),
                    "source": source.get("component"),
                    "time": event.get("lastTimestamp") or event.get("eventTime") or event.get("firstTimestamp"),
                }
            )
        out.sort(key=lambda e: str(e.get("time") or ""))
        return out

"""Terminating pods in a replay: bound pods deleted gracefully, kept on their nodes until their kubelets end them.

A deletion of a bound pod (a delete event, ``endAt``, a preemption, or one the workload controllers' store made:
a scale-down, the garbage collector, an eviction) sets ``deletionTimestamp`` (now + the grace period, as
kube-apiserver sets it) and ``deletionGracePeriodSeconds``; the pod keeps its node, its resources counted by the
scheduler as a terminating pod's are, until its node's kubelet kills it at the end of the grace period, as
``kss serve``'s kubelet does (``kss_sim/controllers/kubelet.py``). A node without a running kubelet (one whose Ready
condition is False or Unknown) leaves its pods Terminating until it is Ready again.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

from kss_sim.kube.node_ready import ready_status
from kss_sim.kube.pod_conditions import DISRUPTION_TARGET
from kss_sim.replay import intake
from kss_sim.replay.model import EVICTED
from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler.nodeinfo import PodInfo

if TYPE_CHECKING:
    from kss_sim.replay.engine import Replay


class Terminations:
    """The terminating pods of one replay (``run``), by key, with the outcome their deletion gives them."""

    def __init__(self, run: Replay) -> None:
        self.run = run
        self._outcomes: dict[str, str] = {}  # key -> the outcome of a bound pod deleted gracefully
        self._stranded: dict[str, dict[str, None]] = {}  # node -> pods past their grace period, no kubelet to end them

    def __contains__(self, key: object) -> bool:
        return key in self._outcomes

    def begin(
        self,
        bound: PodInfo,
        outcome: str,
        grace: float,
        *,
        condition: dict[str, Any] | None = None,
        reason: str = "",
        deletion_timestamp: str | None = None,
    ) -> None:
        """The bound pod is deleted gracefully: ``deletionTimestamp`` (now + ``grace``, unless the store's is given)
        and ``deletionGracePeriodSeconds``, the ``DisruptionTarget`` ``condition`` if any; it keeps its node until
        its kubelet ends it at the end of the grace period (``outcome`` then), or at once when ``grace`` is 0. Its
        record says when it began (``reason``: an eviction's cause)."""
        run = self.run
        key, uid = bound.key, bound.uid
        if key in self._outcomes:
            return
        meta = bound.pod.setdefault("metadata", {})
        meta["deletionTimestamp"] = deletion_timestamp or intake.rfc3339(run.workload.epoch, run.now + grace)
        meta["deletionGracePeriodSeconds"] = int(grace)
        if condition is not None:
            status = bound.pod.setdefault("status", {})
            kept = [c for c in status.get("conditions") or [] if c.get("type") != DISRUPTION_TARGET]
            status["conditions"] = [*kept, condition]
        record = run.records.get(uid)
        if record is not None and record.terminating_at is None:
            record.terminating_at = run.now
            if outcome == EVICTED:
                record.evicted_at, record.reason = run.now, reason
        self._outcomes[key] = outcome
        run.queue.move_all_to_active_or_backoff(ev.POD_UPDATE_OTHER)
        run.call_at(run.now + grace, functools.partial(self._grace_over, key, uid))

    def ended(self, key: str, node: str) -> str | None:
        """The pod left its node (its kubelet ended it, or it went otherwise): its deletion's outcome, None when it
        was not terminating."""
        outcome = self._outcomes.pop(key, None)
        if outcome is not None:
            self._stranded.get(node, {}).pop(key, None)
        return outcome

    def outcomes_by_uid(self) -> dict[str, str]:
        """uid -> outcome of the pods still terminating (their grace period running, or no kubelet to end them)."""
        bound = self.run.bound
        return {bound[key].uid: outcome for key, outcome in self._outcomes.items() if key in bound}

    def _grace_over(self, key: str, uid: str) -> None:
        """The pod's grace period is over: its node's kubelet kills it, if the node has a running kubelet (it exists,
        Ready True or no Ready condition); else it stays Terminating until the node is Ready again."""
        pod = self.run.bound.get(key)
        if pod is None or pod.uid != uid or key not in self._outcomes:
            return
        if self._kubelet_runs(pod.node_name):
            self.run._finish_bound(key, uid, self._outcomes[key])
        else:
            self._stranded.setdefault(pod.node_name, {})[key] = None

    def _kubelet_runs(self, node: str) -> bool:
        found = self.run.objects.nodes.get(node)
        return found is not None and ready_status(found) in (None, "True")

    def node_changed(self, name: str) -> None:
        """A node was updated: one Ready again ends the pods whose grace period ran out while it had no kubelet (after
        whatever else happens at this instant)."""
        if self._stranded.get(name) and self._kubelet_runs(name):
            self.run.call_at(self.run.now, functools.partial(self._end_stranded, name))

    def _end_stranded(self, name: str) -> None:
        if not self._kubelet_runs(name):
            return
        for key in list(self._stranded.pop(name, {})):
            pod = self.run.bound.get(key)
            if pod is not None and key in self._outcomes:
                self.run._finish_bound(key, pod.uid, self._outcomes[key])

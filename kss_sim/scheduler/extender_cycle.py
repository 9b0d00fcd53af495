"""The scheduler extenders' part of a scheduling attempt: ``findNodesThatPassExtenders`` after the Filter plugins and
the extenders' scores in ``prioritizeNodes`` (the HTTP calls are ``extender.py``'s).

``ExtenderCycle`` is a mixin of ``cycle.Scheduler``, which defines the state declared here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kss_sim.scheduler.extender import (
    EXTENDER_NAME,
    MAX_EXTENDER_PRIORITY,
    MAX_NODE_SCORE,
    Extender,
    ExtenderError,
    extender_score,
)
from kss_sim.scheduler.framework import Code, Status
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.record import Attempt

if TYPE_CHECKING:
    from kss_sim.scheduler.cycle import Diagnosis


class ExtenderCycle:
    """The extenders' side of ``Scheduler``."""

    extenders: list[Extender]

    def _find_nodes_that_pass_extenders(
        self, pod: PodInfo, feasible: list[NodeInfo], diagnosis: Diagnosis, att: Attempt, record: bool
    ) -> tuple[list[NodeInfo], Status | None]:
        """``findNodesThatPassExtenders``: each interested extender, in order, filters what the previous one kept;
        its failedNodes become Unschedulable, failedAndUnresolvableNodes UnschedulableAndUnresolvable (taking
        precedence). An error fails the attempt, unless the extender is ignorable (then it is skipped)."""
        before = len(feasible)
        for ext in self.extenders:
            if not feasible:
                break
            if not ext.is_interested(pod):
                continue
            key = ext.record_name
            try:
                res = ext.filter(pod, feasible)
            except ExtenderError as exc:
                if ext.is_filter():
                    att.extender_results.setdefault("filter", {})[ext.name] = {"Error": str(exc)}
                if ext.is_ignorable():
                    att.extenders.setdefault(key, {})["filter"] = f"ignored error: {exc}"
                    continue
                att.extenders.setdefault(key, {})["filter"] = f"error: {exc}"
                return [], Status(Code.ERROR, str(exc), plugin=key)
            unresolvable = res.failed_and_unresolvable
            if ext.is_filter():
                att.extenders.setdefault(key, {})["filter"] = "success"
                att.extender_results.setdefault("filter", {})[ext.name] = {
                    "NodeNames": [ni.name for ni in res.nodes],
                    "FailedNodes": dict(res.failed),
                    "FailedAndUnresolvableNodes": dict(unresolvable),
                    "Error": "",
                }
            for name, msg in unresolvable.items():
                diagnosis.node_to_status.set(name, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, msg, plugin=key))
            for name, msg in res.failed.items():
                if name not in unresolvable:
                    diagnosis.node_to_status.set(name, Status(Code.UNSCHEDULABLE, msg, plugin=key))
            if record and ext.is_filter():
                kept = {ni.name for ni in res.nodes}
                for ni in feasible:
                    verdicts = att.filter.setdefault(ni.name, {})
                    if ni.name in kept:
                        verdicts[key] = "passed"
                        continue
                    msg = unresolvable.get(ni.name) or res.failed.get(ni.name) or "not returned by the extender"
                    verdicts[key] = msg
                    if ni.name in unresolvable:
                        att.unresolvable.setdefault(ni.name, []).append(key)
            kept_names = {ni.name for ni in res.nodes}
            for ni in feasible:
                if ni.name not in kept_names:
                    msg = unresolvable.get(ni.name) or res.failed.get(ni.name) or "not returned by the extender"
                    att.filter_fail[ni.name] = f"{key}: {msg}"
            feasible = res.nodes
        if len(feasible) != before:
            # Extenders have no queueing hints: a pod they rejected is retried on any cluster event.
            diagnosis.unschedulable_plugins.add(EXTENDER_NAME)
        return feasible, None

    def _prioritize_extenders(
        self, pod: PodInfo, nodes: list[NodeInfo], totals: list[int], att: Attempt, record: bool
    ) -> None:
        """The extenders' part of ``prioritizeNodes``: each interested extender's score times its weight, scaled by
        MaxNodeScore / MaxExtenderPriority, added to the node's total. A failed call gives no score (ignored, as
        kube-scheduler does, ignorable or not)."""
        index = {ni.name: i for i, ni in enumerate(nodes)}
        scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
        for ext in self.extenders:
            if not ext.is_interested(pod) or not ext.is_prioritizer():
                continue  # a non-prioritizing extender scores 0 with weight 0 and is not called
            key = ext.record_name
            try:
                scores = ext.prioritize(pod, nodes)
            except ExtenderError as exc:
                att.extenders.setdefault(key, {})["prioritize"] = f"ignored error: {exc}"
                continue
            att.extenders.setdefault(key, {})["prioritize"] = "success"
            att.extender_results.setdefault("prioritize", {})[ext.name] = [
                {"Host": host, "Score": score} for host, score in scores
            ]
            weight = ext.weight
            raw: dict[str, int] = {}
            for host, score in scores:
                i = index.get(host)
                if i is None:
                    continue
                totals[i] += extender_score(score, weight)
                raw[host] = raw.get(host, 0) + score
            if record:
                if att.score is None or att.normalized_score is None or att.final_score is None:
                    att.score, att.normalized_score, att.final_score = {}, {}, {}
                for ni in nodes:
                    s = raw.get(ni.name, 0)
                    att.score.setdefault(ni.name, {})[key] = s
                    att.normalized_score.setdefault(ni.name, {})[key] = s * scale
                    att.final_score.setdefault(ni.name, {})[key] = s * scale * weight

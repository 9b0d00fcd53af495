"""PodGroupPodsCount (v1.36, KEP-5732, default with TopologyAwareWorkloadScheduling): a PlacementScore plugin that
favours the placement where more of a PodGroup's pods would be scheduled.

A placement's score is the group's pods already scheduled (bound, or assumed: waiting in Permit) plus the pods the
placement's try placed; normalized against the best placement's count (``score * 100 / max``), never against
minCount, so that small differences in counts make small differences in score.
"""

from __future__ import annotations

from typing import ClassVar

from kss_sim.scheduler.framework import (
    MAX_NODE_SCORE,
    MIN_NODE_SCORE,
    PlacementScorePlugin,
    PodGroupAssignments,
    Status,
    error,
    success,
)
from kss_sim.scheduler.plugins.topology_placement import scheduled_pods

NAME = "PodGroupPodsCount"


class PodGroupPodsCount(PlacementScorePlugin):
    """``podgrouppodscount.PodGroupPodsCount``."""

    name: ClassVar[str] = NAME

    def events_to_register(self) -> list[str] | None:
        return []  # it never rejects a pod

    def score_placement(self, namespace: str, pod_group: str, assignments: PodGroupAssignments) -> tuple[int, Status]:
        scheduled = scheduled_pods(self.handle, namespace, pod_group)
        return len(scheduled) + len(assignments.proposed), success()

    def normalize_placement_scores(self, namespace: str, pod_group: str, scores: list[int]) -> Status:
        best = max(scores, default=0)
        if best == 0:
            return error("no pods from pod group are assigned to any of the candidate placements")
        for i, score in enumerate(scores):
            scores[i] = MIN_NODE_SCORE + score * (MAX_NODE_SCORE - MIN_NODE_SCORE) // best
        return success()

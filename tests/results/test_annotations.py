"""Result annotations stay within what the API server accepts on a pod."""

from __future__ import annotations

import json

from app.cluster.validation import TOTAL_ANNOTATION_BYTES
from app.results import annotations as ann


def _total(annotations: dict[str, str]) -> int:
    return sum(len(k) + len(v) for k, v in annotations.items())


def test_history_leaves_room_for_the_other_annotations_of_the_pod() -> None:
    # A pending pod of a 100-node cluster: ~40 KB of per-node results per attempt, retried again and again.
    pod_annotations = {"kubectl.kubernetes.io/last-applied-configuration": "y" * 20_000}
    for i in range(12):
        current = {ann.FILTER_RESULT: "x" * 40_000, ann.SELECTED_NODE: f"attempt-{i}"}
        pod_annotations = {**pod_annotations, **ann.with_history(current, pod_annotations)}
        assert _total(pod_annotations) <= TOTAL_ANNOTATION_BYTES, f"attempt {i} would be refused"
    history = json.loads(pod_annotations[ann.RESULT_HISTORY])
    assert history[-1][ann.SELECTED_NODE] == "attempt-11"
    assert len(history) >= 3  # older entries are dropped only as far as needed
    assert pod_annotations["kubectl.kubernetes.io/last-applied-configuration"] == "y" * 20_000

"""Result annotations stay within what the API server accepts on a pod."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kss_sim.cluster.admission.validation.metadata import TOTAL_ANNOTATION_BYTES
from kss_sim.results import annotations as ann
from kss_sim.simulation.runner import ScenarioRun


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


def _scenario_paths() -> list[Path]:
    golden = Path(__file__).resolve().parents[2].parent / "shared" / "golden"
    # One scenario of each family (preemption, sampling, volumes, ...): fits, ties, failures, unresolvable statuses.
    return [sorted(family.glob("*.scenario.json"))[0] for family in sorted(golden.iterdir()) if family.is_dir()]


@pytest.mark.parametrize("path", _scenario_paths(), ids=lambda p: p.parent.name)
def test_per_node_maps_from_the_matrices_equal_the_dict_path(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    attempts = [a for a, _ in ScenarioRun(json.loads(path.read_text()), record=True).run() if a.pre_enqueue is None]
    assert attempts
    fast = [ann.attempt_annotations(a) for a in attempts]
    assert any(ann._per_node_json(a) is not None for a in attempts)  # the matrices were used
    monkeypatch.setattr(ann, "_per_node_json", lambda _att: None)
    slow = [ann.attempt_annotations(a) for a in attempts]
    assert [list(f.items()) for f in fast] == [list(s.items()) for s in slow]  # same text, same key order


@pytest.mark.parametrize("path", _scenario_paths(), ids=lambda p: p.parent.name)
def test_postfilter_map_of_a_failed_attempt_is_built_without_the_filter_dicts(path: Path) -> None:
    """postfilter-result names every filtered node; it is read from the filter matrix, so the per-node verdict
    dicts are not built for it (each failed attempt on a big cluster paid for them)."""
    attempts = [a for a, _ in ScenarioRun(json.loads(path.read_text()), record=True).run() if a.postfilter is not None]
    if not attempts:
        pytest.skip("no attempt ran PostFilter")
    for a in attempts:
        matrix_held = a.matrices_only() is not None and a.filter_matrix is not None
        written = ann.attempt_annotations(a)
        if matrix_held:
            assert "_filter_from" not in a.__dict__  # att.filter was not built
        expected: dict[str, dict[str, str]] = {node: {} for node in a.filter}
        if a.nominated_node:
            expected[a.nominated_node] = {"DefaultPreemption": ann.POSTFILTER_NOMINATED_MESSAGE}
        assert json.loads(written[ann.POSTFILTER_RESULT]) == expected

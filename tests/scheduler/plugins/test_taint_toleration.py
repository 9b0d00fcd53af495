"""TaintToleration against upstream v1.35 rules (filter message, toleration matching, reversed scoring)."""

from __future__ import annotations

from typing import Any

from kss_sim.scheduler.framework import Code, CycleState, NodeScore
from kss_sim.scheduler.plugins.taint_toleration import TaintToleration
from tests.scheduler.factories import make_handle, make_node, make_pod, node_info, pod_info


def _taint(key: str, effect: str, value: str = "") -> dict[str, Any]:
    t = {"key": key, "effect": effect}
    if value:
        t["value"] = value
    return t


def _filter(taints: list[dict[str, Any]], tolerations: list[dict[str, Any]] | None = None) -> tuple[Code, str]:
    handle = make_handle(nodes=[make_node(name="n1", taints=taints)])
    plugin = TaintToleration(handle, {})
    pod = pod_info(make_pod(spec={"tolerations": tolerations or []}))
    st = plugin.filter(CycleState(), pod, node_info(handle, "n1"))
    return st.code, st.message()


def _scores(node_taints: list[list[dict[str, Any]]], tolerations: list[dict[str, Any]]) -> tuple[list[int], list[int]]:
    nodes = [make_node(name=f"n{i}", taints=t) for i, t in enumerate(node_taints)]
    handle = make_handle(nodes=nodes)
    plugin = TaintToleration(handle, {})
    pod = pod_info(make_pod(spec={"tolerations": tolerations}))
    state = CycleState()
    infos = handle.snapshot.node_info_list
    assert plugin.pre_score(state, pod, infos).is_success()
    raw, st = plugin.score_nodes(state, pod, infos)
    assert st.is_success()
    ns = [NodeScore(ni.name, s) for ni, s in zip(infos, raw, strict=True)]
    assert plugin.normalize_score(state, pod, ns).is_success()
    return raw, [n.score for n in ns]


def test_untolerated_no_schedule_taint_is_unresolvable_with_1_35_message() -> None:
    assert _filter([_taint("dedicated", "NoSchedule", "gpu")]) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "node(s) had untolerated taint(s)",
    )


def test_no_execute_taint_is_filtered_but_prefer_no_schedule_is_not() -> None:
    assert _filter([_taint("k", "NoExecute")])[0] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert _filter([_taint("k", "PreferNoSchedule")])[0] == Code.SUCCESS


def test_exists_with_empty_key_tolerates_every_taint() -> None:
    taints = [_taint("a", "NoSchedule", "x"), _taint("b", "NoExecute")]
    assert _filter(taints, [{"operator": "Exists"}])[0] == Code.SUCCESS


def test_equal_operator_needs_the_same_value_and_empty_operator_means_equal() -> None:
    taints = [_taint("dedicated", "NoSchedule", "gpu")]
    assert _filter(taints, [{"key": "dedicated", "operator": "Equal", "value": "gpu"}])[0] == Code.SUCCESS
    assert _filter(taints, [{"key": "dedicated", "value": "gpu"}])[0] == Code.SUCCESS
    assert _filter(taints, [{"key": "dedicated", "value": "cpu"}])[0] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_toleration_effect_must_match_unless_empty() -> None:
    taints = [_taint("k", "NoSchedule")]
    assert _filter(taints, [{"key": "k", "operator": "Exists", "effect": "NoExecute"}])[0] != Code.SUCCESS
    assert _filter(taints, [{"key": "k", "operator": "Exists"}])[0] == Code.SUCCESS


def test_every_do_not_schedule_taint_must_be_tolerated() -> None:
    taints = [_taint("a", "NoSchedule"), _taint("b", "NoSchedule")]
    assert _filter(taints, [{"key": "a", "operator": "Exists"}])[0] == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_comparison_operators_never_tolerate_with_the_alpha_gate_off() -> None:
    taints = [_taint("level", "NoSchedule", "5")]
    assert _filter(taints, [{"key": "level", "operator": "Gt", "value": "1"}])[0] != Code.SUCCESS
    assert _filter(taints, [{"key": "level", "operator": "Lt", "value": "9"}])[0] != Code.SUCCESS


def test_taint_prefer_no_schedule_reverses_normalization() -> None:
    prefer = "PreferNoSchedule"
    raw, norm = _scores([[], [_taint("a", prefer)], [_taint("a", prefer), _taint("b", prefer)]], [])
    assert raw == [0, 1, 2]
    # 100 - 100*count/max: 100 - 0, 100 - 50, 100 - 100.
    assert norm == [100, 50, 0]


def test_reverse_normalization_truncates_before_reversing() -> None:
    prefer = "PreferNoSchedule"
    three = [_taint("a", prefer), _taint("b", prefer), _taint("c", prefer)]
    raw, norm = _scores([[], [_taint("a", prefer)], three], [])
    assert raw == [0, 1, 3]
    assert norm == [100, 67, 0]  # 100*1/3 = 33 (int), 100 - 33 = 67


def test_no_intolerable_prefer_taints_anywhere_gives_every_node_100() -> None:
    raw, norm = _scores([[], [_taint("a", "NoSchedule")]], [{"operator": "Exists"}])
    assert raw == [0, 0]
    assert norm == [100, 100]


def test_score_only_uses_tolerations_with_empty_or_prefer_no_schedule_effect() -> None:
    taints = [[_taint("a", "PreferNoSchedule")], [_taint("a", "PreferNoSchedule")]]
    raw, _ = _scores(taints, [{"key": "a", "operator": "Exists", "effect": "NoSchedule"}])
    assert raw == [1, 1]
    raw, _ = _scores(taints, [{"key": "a", "operator": "Exists", "effect": "PreferNoSchedule"}])
    assert raw == [0, 0]

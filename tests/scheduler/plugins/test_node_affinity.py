"""NodeAffinity against kube-scheduler v1.35's nodeaffinity plugin."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.scheduler.framework import Code, CycleState, Handle, NodeScore
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError, parse_config
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins.node_affinity import NodeAffinity
from tests.scheduler.factories import make_handle, make_node, make_pod, node_info


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def affinity(
    *, required: list[dict[str, Any]] | None = None, preferred: list[tuple[int, dict[str, Any]]] | None = None
) -> dict[str, Any]:
    na: dict[str, Any] = {}
    if required is not None:
        na["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": required}
    if preferred is not None:
        na["preferredDuringSchedulingIgnoredDuringExecution"] = [{"weight": w, "preference": t} for w, t in preferred]
    return {"nodeAffinity": na}


def names_term(op: str, *names: str) -> dict[str, Any]:
    return {"matchFields": [expr("metadata.name", op, *names)]}


ZONES = {"n1": "a", "n2": "b", "n3": "c"}


def cluster() -> Handle:
    return make_handle(
        nodes=[make_node(name=n, labels={"zone": z, "gen": str(i + 1)}) for i, (n, z) in enumerate(ZONES.items())]
    )


def plugin(handle: Handle, args: dict[str, Any] | None = None) -> NodeAffinity:
    return NodeAffinity(handle, NodeAffinity.defaulted_args(args or {}))


def run_filter(pl: NodeAffinity, pod: PodInfo, nodes: list[NodeInfo]) -> tuple[Any, dict[str, tuple[Code, str]]]:
    state = CycleState()
    result, st = pl.pre_filter(state, pod, nodes)
    assert st.code in (Code.SUCCESS, Code.SKIP), st
    out = {}
    for ni in nodes:
        f = pl.filter(state, pod, ni)
        out[ni.name] = (f.code, f.message())
    return result, out


def run_score(pl: NodeAffinity, pod: PodInfo, nodes: list[NodeInfo]) -> tuple[Code, list[int], list[int]]:
    state = CycleState()
    st = pl.pre_score(state, pod, nodes)
    if st.is_skip():
        return st.code, [], []
    assert st.is_success(), st
    raw, st = pl.score_nodes(state, pod, nodes)
    assert st.is_success(), st
    scores = [NodeScore(ni.name, s) for ni, s in zip(nodes, raw, strict=True)]
    assert pl.normalize_score(state, pod, scores).is_success()
    return st.code, raw, [s.score for s in scores]


def test_pre_filter_skips_pod_without_selector_or_required_affinity() -> None:
    h = cluster()
    pod = PodInfo(make_pod(affinity=affinity(preferred=[(1, {"matchExpressions": [expr("zone", "In", "a")]})])))
    result, st = plugin(h).pre_filter(CycleState(), pod, h.snapshot.node_info_list)
    assert (result, st.code) == (None, Code.SKIP)


def test_pre_filter_does_not_skip_when_added_affinity_is_required() -> None:
    h = cluster()
    args: dict[str, Any] = {
        "addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}
    }
    pl = plugin(h, args)
    result, verdicts = run_filter(pl, PodInfo(make_pod()), h.snapshot.node_info_list)
    assert result is None
    # A required selector without terms matches no node.
    assert set(verdicts.values()) == {
        (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't match scheduler-enforced node affinity")
    }


def test_filter_node_selector_and_required_terms_are_unresolvable() -> None:
    h = cluster()
    pod = PodInfo(
        make_pod(
            spec={"nodeSelector": {"kubernetes.io/hostname": "n1"}},
            affinity=affinity(required=[{"matchExpressions": [expr("zone", "In", "a", "b")]}]),
        )
    )
    result, verdicts = run_filter(plugin(h), pod, h.snapshot.node_info_list)
    fail = (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "node(s) didn't match Pod's node affinity/selector")
    assert result is None
    assert verdicts == {"n1": (Code.SUCCESS, ""), "n2": fail, "n3": fail}


def test_filter_required_terms_are_ored_and_erroneous_term_skipped() -> None:
    h = cluster()
    pod = PodInfo(
        make_pod(
            affinity=affinity(
                required=[
                    {"matchExpressions": [expr("zone", "NotIn")]},  # invalid: would match all if valid
                    {"matchExpressions": [expr("gen", "Gt", "2")]},
                    {"matchExpressions": [expr("zone", "In", "a")]},
                ]
            )
        )
    )
    _, verdicts = run_filter(plugin(h), pod, h.snapshot.node_info_list)
    assert [n for n, (code, _) in verdicts.items() if code == Code.SUCCESS] == ["n1", "n3"]


def test_pre_filter_result_unions_terms_and_intersects_within_a_term() -> None:
    h = cluster()
    pod = PodInfo(
        make_pod(
            affinity=affinity(
                required=[
                    {"matchFields": [expr("metadata.name", "In", "n1", "n2"), expr("metadata.name", "In", "n2")]},
                    names_term("In", "n3"),
                ]
            )
        )
    )
    result, st = plugin(h).pre_filter(CycleState(), pod, h.snapshot.node_info_list)
    assert st.is_success()
    assert result is not None and result.node_names == {"n2", "n3"}


def test_pre_filter_result_is_all_nodes_when_one_term_lacks_name_in() -> None:
    h = cluster()
    pod = PodInfo(
        make_pod(affinity=affinity(required=[names_term("In", "n1"), {"matchExpressions": [expr("zone", "Exists")]}]))
    )
    result, st = plugin(h).pre_filter(CycleState(), pod, h.snapshot.node_info_list)
    assert (result, st.code) == (None, Code.SUCCESS)
    # NotIn on metadata.name never narrows the node set.
    pod = PodInfo(make_pod(affinity=affinity(required=[names_term("NotIn", "n1")])))
    result, st = plugin(h).pre_filter(CycleState(), pod, h.snapshot.node_info_list)
    assert (result, st.code) == (None, Code.SUCCESS)


def test_pre_filter_conflicting_name_terms_are_unresolvable() -> None:
    h = cluster()
    term = {"matchFields": [expr("metadata.name", "In", "n1"), expr("metadata.name", "In", "n2")]}
    pod = PodInfo(make_pod(affinity=affinity(required=[term])))
    result, st = plugin(h).pre_filter(CycleState(), pod, h.snapshot.node_info_list)
    assert result is None
    assert (st.code, st.message()) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "pod affinity terms conflict")


def test_filter_without_pre_filter_state_computes_it() -> None:
    h = cluster()
    pod = PodInfo(make_pod(spec={"nodeSelector": {"zone": "b"}}))
    pl = plugin(h)
    assert pl.filter(CycleState(), pod, node_info(h, "n1")).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert pl.filter(CycleState(), pod, node_info(h, "n2")).is_success()


def test_pre_score_skips_without_preferred_terms() -> None:
    h = cluster()
    pod = PodInfo(make_pod(affinity=affinity(required=[{"matchExpressions": [expr("zone", "Exists")]}])))
    code, _, _ = run_score(plugin(h), pod, h.snapshot.node_info_list)
    assert code == Code.SKIP


def test_score_sums_matching_weights_and_normalizes_to_max() -> None:
    h = cluster()
    pod = PodInfo(
        make_pod(
            affinity=affinity(
                preferred=[
                    (30, {"matchExpressions": [expr("zone", "In", "a", "b")]}),
                    (50, {"matchExpressions": [expr("gen", "Gt", "1")]}),
                    (20, {"matchFields": [expr("metadata.name", "In", "n1")]}),
                ]
            )
        )
    )
    _, raw, normalized = run_score(plugin(h), pod, h.snapshot.node_info_list)
    # n1: 30 + 20, n2: 30 + 50, n3: 50; normalized 100 * s / 80, truncated.
    assert raw == [50, 80, 50]
    assert normalized == [62, 100, 62]


def test_score_all_zero_is_not_reversed() -> None:
    h = cluster()
    pod = PodInfo(make_pod(affinity=affinity(preferred=[(5, {"matchExpressions": [expr("zone", "In", "z")]})])))
    _, raw, normalized = run_score(plugin(h), pod, h.snapshot.node_info_list)
    assert raw == normalized == [0, 0, 0]


def test_added_preferred_affinity_adds_to_pod_terms() -> None:
    h = cluster()
    args = {
        "addedAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 100, "preference": {"matchExpressions": [expr("zone", "In", "c")]}}
            ]
        }
    }
    pod = PodInfo(make_pod(affinity=affinity(preferred=[(25, {"matchExpressions": [expr("zone", "In", "a")]})])))
    code, raw, normalized = run_score(plugin(h, args), pod, h.snapshot.node_info_list)
    assert code == Code.SUCCESS
    assert raw == [25, 0, 100]
    assert normalized == [25, 0, 100]
    # With only the added terms, PreScore does not skip.
    code, raw, _ = run_score(plugin(h, args), PodInfo(make_pod()), h.snapshot.node_info_list)
    assert (code, raw) == (Code.SUCCESS, [0, 0, 100])


def test_pre_score_errors_on_unparsable_preferred_terms() -> None:
    h = cluster()
    pod = PodInfo(make_pod(affinity=affinity(preferred=[(5, {"matchExpressions": [expr("zone", "In")]})])))
    st = plugin(h).pre_score(CycleState(), pod, h.snapshot.node_info_list)
    assert st.code == Code.ERROR
    assert (
        st.message()
        == "[0].matchExpressions[0].values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
    )


def test_validate_args_reports_added_affinity_paths() -> None:
    args = {
        "addedAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [expr("zone", "Exists", "a")]}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchFields": [expr("metadata.name", "Exists")]}}
            ],
        }
    }
    assert NodeAffinity.validate_args(args) == [
        (
            "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values",
            'Invalid value: ["a"]: values set must be empty for exists and does not exist',
        ),
        (
            "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].matchFields[0].operator",
            'Unsupported value: "Exists": supported values: "In", "NotIn"',
        ),
    ]
    assert NodeAffinity.validate_args({}) == []


def test_invalid_added_affinity_rejects_the_configuration() -> None:
    cfg = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [
            {
                "pluginConfig": [
                    {
                        "name": "NodeAffinity",
                        "args": {
                            "addedAffinity": {
                                "requiredDuringSchedulingIgnoredDuringExecution": {
                                    "nodeSelectorTerms": [{"matchExpressions": [expr("gen", "Lt", "ten")]}]
                                }
                            }
                        },
                    }
                ]
            }
        ],
    }
    with pytest.raises(ConfigError) as exc:
        parse_config(cfg)
    assert exc.value.field == (
        "profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].values[0]"
    )
    assert exc.value.detail == "Invalid value: \"ten\": for 'Gt', 'Lt' operators, the value must be an integer"


def test_normalize_truncates_toward_zero_like_go() -> None:
    # Only negative addedAffinity weights can produce negative raw scores; Go's int64 division truncates.
    h = cluster()
    scores = [NodeScore("n1", -3), NodeScore("n2", 7), NodeScore("n3", 0)]
    assert plugin(h).normalize_score(CycleState(), PodInfo(make_pod()), scores).is_success()
    assert [s.score for s in scores] == [-42, 100, 0]
    # With no positive score the maximum stays 0 and nothing changes.
    scores = [NodeScore("n1", -5), NodeScore("n2", 0)]
    plugin(h).normalize_score(CycleState(), PodInfo(make_pod()), scores)
    assert [s.score for s in scores] == [-5, 0]


def test_malformed_added_affinity_is_a_validation_error_not_a_crash() -> None:
    args: dict[str, Any] = {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": ["zone"]}}
    assert NodeAffinity.validate_args(args) == [
        ("addedAffinity.requiredDuringSchedulingIgnoredDuringExecution", "Invalid value: must be a NodeSelector object")
    ]
    args = {"addedAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": "x"}]}}
    assert NodeAffinity.validate_args(args)[0][0] == "addedAffinity.preferredDuringSchedulingIgnoredDuringExecution"

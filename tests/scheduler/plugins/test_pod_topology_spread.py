"""PodTopologySpread against hand-derived kube-scheduler v1.35 numbers."""

from __future__ import annotations

import math
import random
from typing import Any

import numpy as np

from kss_sim.scheduler.columns import NodeBatch
from kss_sim.scheduler.framework import Code, CycleState, Handle, NodeScore
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    PRE_FILTER_STATE_KEY,
    CriticalPaths,
    PodTopologySpread,
    PreFilterState,
    PreScoreState,
    go_round,
)
from tests.scheduler.factories import make_handle, make_node, make_pod, node_info

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
WEB = {"matchLabels": {"app": "web"}}


def constraint(
    *,
    key: str = ZONE,
    max_skew: int = 1,
    when: str = "DoNotSchedule",
    selector: dict[str, Any] | None = WEB,
    **extra: Any,
) -> dict[str, Any]:
    c: dict[str, Any] = {"maxSkew": max_skew, "topologyKey": key, "whenUnsatisfiable": when}
    if selector is not None:
        c["labelSelector"] = selector
    c.update(extra)
    return c


def spread_pod(
    *constraints: dict[str, Any], name: str = "new", labels: dict[str, str] | None = None, **spec: Any
) -> PodInfo:
    body: dict[str, Any] = dict(spec)
    if constraints:
        body["topologySpreadConstraints"] = list(constraints)
    return PodInfo(make_pod(name=name, labels={"app": "web"} if labels is None else labels, spec=body))


def web_pod(name: str, node: str, **kw: Any) -> dict[str, Any]:
    return make_pod(name=name, labels={"app": "web"}, node_name=node, **kw)


def plugin(handle: Handle, args: dict[str, Any] | None = None) -> PodTopologySpread:
    return PodTopologySpread(handle, PodTopologySpread.defaulted_args(args or {}))


def filter_all(pl: PodTopologySpread, handle: Handle, pod: PodInfo) -> dict[str, tuple[Code, str]]:
    state = CycleState()
    _, st = pl.pre_filter(state, pod, handle.snapshot.node_info_list)
    assert st.is_success(), st
    out = {}
    for ni in handle.snapshot.node_info_list:
        fs = pl.filter(state, pod, ni)
        out[ni.name] = (fs.code, fs.message())
    return out


def score_all(
    pl: PodTopologySpread, handle: Handle, pod: PodInfo, names: list[str] | None = None
) -> tuple[dict[str, int], dict[str, int]]:
    """Raw and normalized scores over ``names`` (default: every node) as the feasible nodes."""
    state = CycleState()
    nodes = [ni for ni in handle.snapshot.node_info_list if names is None or ni.name in names]
    st = pl.pre_score(state, pod, nodes)
    assert st.is_success(), st
    raw, st = pl.score_nodes(state, pod, nodes)
    assert st.is_success(), st
    scores = [NodeScore(ni.name, s) for ni, s in zip(nodes, raw, strict=True)]
    assert pl.normalize_score(state, pod, scores).is_success()
    return {ni.name: s for ni, s in zip(nodes, raw, strict=True)}, {ns.name: ns.score for ns in scores}


def three_zone_cluster(**pods_kw: Any) -> Handle:
    """n1 in zone a with 2 web pods, n2 in zone b empty, n3 in zone c with 1 web pod."""
    return make_handle(
        nodes=[
            make_node(name="n1", labels={ZONE: "a"}),
            make_node(name="n2", labels={ZONE: "b"}),
            make_node(name="n3", labels={ZONE: "c"}),
        ],
        pods=[web_pod("w1", "n1"), web_pod("w2", "n1"), web_pod("w3", "n3")],
    )


# --- Filter ----------------------------------------------------------------------------------------


def test_filter_rejects_domain_whose_skew_would_exceed_max_skew() -> None:
    h = three_zone_cluster()
    got = filter_all(plugin(h), h, spread_pod(constraint()))
    # Global minimum is zone b's 0: a gives 2+1-0=3 > 1, b gives 1, c gives 1+1-0=2 > 1.
    assert got == {
        "n1": (Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH),
        "n2": (Code.SUCCESS, ""),
        "n3": (Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH),
    }


def test_filter_node_missing_topology_label_is_unresolvable() -> None:
    h = make_handle(nodes=[make_node(name="n1", labels={ZONE: "a"}), make_node(name="bare")])
    got = filter_all(plugin(h), h, spread_pod(constraint()))
    assert got["bare"] == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_NODE_LABEL_NOT_MATCH)
    assert got["n1"] == (Code.SUCCESS, "")
    assert (
        ERR_REASON_NODE_LABEL_NOT_MATCH
        == "node(s) didn't match pod topology spread constraints (missing required label)"
    )


def test_filter_self_match_counts_only_when_pod_matches_its_selector() -> None:
    h = make_handle(
        nodes=[make_node(name="n1", labels={ZONE: "a"}), make_node(name="n2", labels={ZONE: "b"})],
        pods=[web_pod("w1", "n1")],
    )
    pl = plugin(h)
    # A matching pod: a gives 1+1-0 = 2 > 1.
    assert filter_all(pl, h, spread_pod(constraint()))["n1"][0] == Code.UNSCHEDULABLE
    # A pod outside the selector adds nothing: 1+0-0 = 1 fits.
    assert filter_all(pl, h, spread_pod(constraint(), labels={"app": "db"}))["n1"][0] == Code.SUCCESS


def test_min_domains_makes_global_minimum_zero_while_domains_are_missing() -> None:
    h = make_handle(
        nodes=[make_node(name="n1", labels={ZONE: "a"}), make_node(name="n2", labels={ZONE: "b"})],
        pods=[web_pod("w1", "n1"), web_pod("w2", "n2")],
    )
    pl = plugin(h)
    # Without minDomains the minimum is 1: 1+1-1 = 1 fits everywhere.
    assert filter_all(pl, h, spread_pod(constraint()))["n1"][0] == Code.SUCCESS
    # Two domains < minDomains 3: minimum treated as 0, so 1+1-0 = 2 > 1 everywhere.
    got = filter_all(pl, h, spread_pod(constraint(minDomains=3)))
    assert {c for c, _ in got.values()} == {Code.UNSCHEDULABLE}


def test_counts_skip_other_namespaces_and_terminating_pods() -> None:
    terminating = web_pod("gone", "n1")
    terminating["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
    h = make_handle(
        nodes=[make_node(name="n1", labels={ZONE: "a"}), make_node(name="n2", labels={ZONE: "b"})],
        pods=[terminating, make_pod(name="other", namespace="team", labels={"app": "web"}, node_name="n1")],
    )
    got = filter_all(plugin(h), h, spread_pod(constraint()))
    assert got["n1"] == (Code.SUCCESS, "")


def test_node_affinity_policy_honor_leaves_unselected_nodes_out_of_the_counts() -> None:
    h = make_handle(
        nodes=[
            make_node(name="n1", labels={ZONE: "a", "disk": "ssd"}),
            make_node(name="n2", labels={ZONE: "b", "disk": "hdd"}),
            make_node(name="n3", labels={ZONE: "c", "disk": "ssd"}),
        ],
        pods=[web_pod("w1", "n1"), web_pod("w3", "n3")],
    )
    pl = plugin(h)
    honor = spread_pod(constraint(), nodeSelector={"disk": "ssd"})
    # Honor (default): domains a=1, c=1; minimum 1; n1: 1+1-1 = 1 fits.
    assert filter_all(pl, h, honor)["n1"][0] == Code.SUCCESS
    ignore = spread_pod(constraint(nodeAffinityPolicy="Ignore"), nodeSelector={"disk": "ssd"})
    # Ignore: zone b (0 pods) counts too; n1: 1+1-0 = 2 > 1.
    assert filter_all(pl, h, ignore)["n1"][0] == Code.UNSCHEDULABLE


def test_node_taints_policy_honor_leaves_untolerated_nodes_out_of_the_counts() -> None:
    taint = [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]
    h = make_handle(
        nodes=[
            make_node(name="n1", labels={ZONE: "a"}),
            make_node(name="n2", labels={ZONE: "b"}, taints=taint),
        ],
        pods=[web_pod("w1", "n1")],
    )
    pl = plugin(h)
    # Ignore (default): zone b's 0 is the minimum; n1: 1+1-0 = 2 > 1.
    assert filter_all(pl, h, spread_pod(constraint()))["n1"][0] == Code.UNSCHEDULABLE
    # Honor: the tainted node is not counted, only zone a (1) remains; 1+1-1 = 1 fits.
    assert filter_all(pl, h, spread_pod(constraint(nodeTaintsPolicy="Honor")))["n1"][0] == Code.SUCCESS
    tolerating = spread_pod(
        constraint(nodeTaintsPolicy="Honor"), tolerations=[{"key": "dedicated", "operator": "Exists"}]
    )
    assert filter_all(pl, h, tolerating)["n1"][0] == Code.UNSCHEDULABLE


def test_several_constraints_must_all_hold() -> None:
    h = make_handle(
        nodes=[
            make_node(name="n1", labels={ZONE: "a"}),
            make_node(name="n2", labels={ZONE: "a"}),
            make_node(name="n3", labels={ZONE: "b"}),
        ],
        pods=[web_pod("w1", "n1"), web_pod("w3", "n3")],
    )
    pod = spread_pod(constraint(), constraint(key=HOST))
    got = filter_all(plugin(h), h, pod)
    # Zones a=1, b=1 allow all; hosts n1=1, n2=0, n3=1: n1 and n3 give 1+1-0 = 2 > 1.
    assert {n: c for n, (c, _) in got.items()} == {
        "n1": Code.UNSCHEDULABLE,
        "n2": Code.SUCCESS,
        "n3": Code.UNSCHEDULABLE,
    }


def test_prefilter_skips_pod_without_do_not_schedule_constraints() -> None:
    h = three_zone_cluster()
    state = CycleState()
    _, st = plugin(h).pre_filter(state, spread_pod(constraint(when="ScheduleAnyway")), h.snapshot.node_info_list)
    assert st.code == Code.SKIP
    assert state.get(PRE_FILTER_STATE_KEY) is None


def test_empty_label_selector_counts_no_pods_but_self_matches() -> None:
    h = make_handle(
        nodes=[make_node(name="n1", labels={ZONE: "a"}), make_node(name="n2", labels={ZONE: "b"})],
        pods=[web_pod("w1", "n1"), web_pod("w2", "n1")],
    )
    pl = plugin(h)
    # labels.Everything() is Empty(): existing pods count 0, the pod itself matches: 0+1-0 = 1 fits.
    assert filter_all(pl, h, spread_pod(constraint(selector={})))["n1"][0] == Code.SUCCESS


# --- PreFilter extensions (preemption) --------------------------------------------------------------


def test_remove_pod_updates_a_clone_and_leaves_the_original_alone() -> None:
    h = make_handle(
        nodes=[make_node(name="n1", labels={ZONE: "a"}), make_node(name="n2", labels={ZONE: "b"})],
        pods=[web_pod("w1", "n1"), web_pod("w2", "n1")],
    )
    pl = plugin(h)
    pod = spread_pod(constraint())
    state = CycleState()
    pl.pre_filter(state, pod, h.snapshot.node_info_list)
    n1 = node_info(h, "n1")
    assert pl.filter(state, pod, n1).code == Code.UNSCHEDULABLE  # 2+1-0 = 3

    what_if = state.clone()
    victim = n1.pods[0]
    assert pl.remove_pod(what_if, pod, victim, n1).is_success()
    assert pl.remove_pod(what_if, pod, n1.pods[1], n1).is_success()
    assert pl.filter(what_if, pod, n1).is_success()  # 0+1-0 = 1
    cloned: PreFilterState = what_if.read(PRE_FILTER_STATE_KEY)
    original: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
    assert cloned.tp_value_to_match_num == [{"a": 0, "b": 0}]
    assert original.tp_value_to_match_num == [{"a": 2, "b": 0}]

    assert pl.add_pod(what_if, pod, victim, n1).is_success()
    assert cloned.tp_value_to_match_num == [{"a": 1, "b": 0}]
    assert cloned.critical_paths[0].num0 == 0


def test_add_pod_ignores_pods_of_other_namespaces() -> None:
    h = make_handle(nodes=[make_node(name="n1", labels={ZONE: "a"})])
    pl = plugin(h)
    pod = spread_pod(constraint())
    state = CycleState()
    pl.pre_filter(state, pod, h.snapshot.node_info_list)
    other = PodInfo(make_pod(name="x", namespace="team", labels={"app": "web"}, node_name="n1"))
    pl.add_pod(state, pod, other, node_info(h, "n1"))
    assert state.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num == [{"a": 0}]


def test_critical_paths_keep_the_minimum_first() -> None:
    cp = CriticalPaths()
    for value, num in [("a", 3), ("b", 1), ("c", 2)]:
        cp.update(value, num)
    assert (cp.val0, cp.num0, cp.val1, cp.num1) == ("b", 1, "c", 2)
    cp.update("b", 4)  # a tracked domain grows past the other: they swap
    assert (cp.val0, cp.num0, cp.val1, cp.num1) == ("c", 2, "b", 4)


# --- Score -----------------------------------------------------------------------------------------


def test_score_weights_counts_by_log_of_domain_count_and_normalizes_reversed() -> None:
    h = make_handle(
        nodes=[
            make_node(name="n1", labels={ZONE: "a"}),
            make_node(name="n2", labels={ZONE: "a"}),
            make_node(name="n3", labels={ZONE: "b"}),
        ],
        pods=[web_pod("w1", "n1"), web_pod("w2", "n1"), web_pod("w3", "n3")],
    )
    raw, norm = score_all(plugin(h), h, spread_pod(constraint(when="ScheduleAnyway")))
    # Two zones: weight ln(4) = 1.386; zone a 2·1.386 = 2.77 -> 3, zone b 1.386 -> 1.
    assert raw == {"n1": 3, "n2": 3, "n3": 1}
    # 100·(max + min - s) / max with max 3, min 1: 100·1/3 = 33, 100·3/3 = 100.
    assert norm == {"n1": 33, "n2": 33, "n3": 100}


def test_score_hostname_weight_uses_number_of_scored_nodes_and_adds_max_skew_minus_one() -> None:
    h = make_handle(
        nodes=[make_node(name="n1"), make_node(name="n2"), make_node(name="n3"), make_node(name="n4")],
        pods=[web_pod("w1", "n1"), web_pod("w2", "n1"), web_pod("w4", "n4")],
    )
    pod = spread_pod(constraint(key=HOST, max_skew=2, when="ScheduleAnyway"))
    raw, norm = score_all(plugin(h), h, pod, names=["n1", "n2", "n3"])
    # Three scored nodes: weight ln(5) = 1.609; n1: 2·1.609 + 1 = 4.22 -> 4; others 0 + 1 -> 1.
    assert raw == {"n1": 4, "n2": 1, "n3": 1}
    # max 4, min 1: n1 100·1/4 = 25, others 100·4/4 = 100.
    assert norm == {"n1": 25, "n2": 100, "n3": 100}


def test_score_ignores_nodes_missing_a_topology_label_for_own_constraints() -> None:
    h = make_handle(
        nodes=[make_node(name="n1", labels={ZONE: "a"}), make_node(name="bare")],
        pods=[web_pod("w1", "n1")],
    )
    raw, norm = score_all(plugin(h), h, spread_pod(constraint(when="ScheduleAnyway")))
    # One zone: weight ln(3) = 1.0986 -> n1 scores 1; "bare" is ignored: raw 0 and normalized 0.
    assert raw == {"n1": 1, "bare": 0}
    assert norm == {"n1": 100, "bare": 0}


def test_normalize_gives_max_score_when_every_score_is_zero() -> None:
    h = make_handle(nodes=[make_node(name="n1", labels={ZONE: "a"}), make_node(name="n2", labels={ZONE: "b"})])
    raw, norm = score_all(plugin(h), h, spread_pod(constraint(when="ScheduleAnyway")))
    assert raw == {"n1": 0, "n2": 0}
    assert norm == {"n1": 100, "n2": 100}


def test_go_round_rounds_half_away_from_zero() -> None:
    assert go_round(2.5) == 3
    assert round(2.5) == 2  # why Python's round must not be used
    assert go_round(0.5) == 1
    assert go_round(-2.5) == -3
    assert go_round(0.49999999999999994) == 0
    assert go_round(3 * math.log(4)) == 4  # 4.1588


def test_prescore_skips_pod_with_only_hard_constraints() -> None:
    h = three_zone_cluster()
    h.cluster.services = [{"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}]
    st = plugin(h).pre_score(CycleState(), spread_pod(constraint()), h.snapshot.node_info_list)
    # The pod has constraints of its own, so the (soft) defaults do not apply either.
    assert st.code == Code.SKIP


# --- Default constraints ---------------------------------------------------------------------------


def _system_default_cluster() -> Handle:
    h = make_handle(
        nodes=[
            make_node(name="n1", labels={ZONE: "a"}),
            make_node(name="n2", labels={ZONE: "a"}),
            make_node(name="n3"),
        ],
        pods=[web_pod("w1", "n1"), web_pod("w2a", "n2"), web_pod("w2b", "n2"), web_pod("w3", "n3")],
    )
    h.cluster.services = [{"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}]
    return h


def test_system_defaults_need_a_selecting_service() -> None:
    h = _system_default_cluster()
    h.cluster.services = []
    assert plugin(h).pre_score(CycleState(), spread_pod(), h.snapshot.node_info_list).code == Code.SKIP
    h.cluster.services = [{"metadata": {"name": "db", "namespace": "default"}, "spec": {"selector": {"app": "db"}}}]
    assert plugin(h).pre_score(CycleState(), spread_pod(), h.snapshot.node_info_list).code == Code.SKIP
    # Defaults are ScheduleAnyway only: nothing to filter.
    _, st = plugin(h).pre_filter(CycleState(), spread_pod(), h.snapshot.node_info_list)
    assert st.code == Code.SKIP


def test_system_defaults_score_zone_less_nodes_by_hostname() -> None:
    h = _system_default_cluster()
    raw, norm = score_all(plugin(h), h, spread_pod())
    # hostname (maxSkew 3): weight ln(3+2) = 1.609; zone (maxSkew 5): the zone-less n3 forms a domain ""
    # of its own, so domains "a" and "" -> weight ln(4) = 1.386, zone a holding 3 pods: 4.159 + 4.
    # n1: 1.609 + 2 + 8.159 = 11.77 -> 12; n2: 2·1.609 + 2 + 8.159 = 13.38 -> 13;
    # n3 has no zone label, only hostname: 1.609 + 2 = 3.609 -> 4.
    assert raw == {"n1": 12, "n2": 13, "n3": 4}
    # max 13, min 4: 100·5/13 = 38, 100·4/13 = 30, 100·13/13 = 100.
    assert norm == {"n1": 38, "n2": 30, "n3": 100}


def test_list_defaults_require_every_topology_label() -> None:
    h = _system_default_cluster()
    args = {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": 3, "topologyKey": HOST, "whenUnsatisfiable": "ScheduleAnyway"},
            {"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "ScheduleAnyway"},
        ],
    }
    raw, norm = score_all(plugin(h, args), h, spread_pod())
    # n3 is ignored; hostname weight ln(2+2) = 1.386, zone weight ln(1+2) = 1.0986 (zone a: 3 pods).
    # n1: 1.386 + 2 + 3.296 + 4 = 10.68 -> 11; n2: 2.773 + 2 + 7.296 = 12.07 -> 12.
    assert raw == {"n1": 11, "n2": 12, "n3": 0}
    # max 12, min 11: 100·12/12 = 100, 100·11/12 = 91; ignored nodes get 0.
    assert norm == {"n1": 100, "n2": 91, "n3": 0}


def test_list_default_do_not_schedule_constraint_filters() -> None:
    h = _system_default_cluster()
    args = {
        "defaultingType": "List",
        "defaultConstraints": [{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule"}],
    }
    got = filter_all(plugin(h, args), h, spread_pod())
    # Hosts n1=1, n2=2, n3=1; minimum 1: n2 gives 2+1-1 = 2 > 1.
    assert {n: c for n, (c, _) in got.items()} == {
        "n1": Code.SUCCESS,
        "n2": Code.UNSCHEDULABLE,
        "n3": Code.SUCCESS,
    }


def test_default_selector_adds_the_controlling_replicaset_selector() -> None:
    h = _system_default_cluster()
    h.cluster.services = []
    h.cluster.replica_sets = [
        {
            "metadata": {"name": "web-rs", "namespace": "default"},
            "spec": {"selector": {"matchExpressions": [{"key": "app", "operator": "In", "values": ["web"]}]}},
        }
    ]
    pod = make_pod(name="new", labels={"app": "web"})
    pod["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-rs", "controller": True, "uid": "u"}
    ]
    raw, _ = score_all(plugin(h), h, PodInfo(pod))
    # Same selector as the Service case: same numbers.
    assert raw == {"n1": 12, "n2": 13, "n3": 4}
    # Not the controller (controller unset): no selector, no default constraints.
    pod["metadata"]["ownerReferences"][0]["controller"] = False
    assert plugin(h).pre_score(CycleState(), PodInfo(pod), h.snapshot.node_info_list).code == Code.SKIP


# --- Args ------------------------------------------------------------------------------------------


def test_args_default_to_system_defaulting() -> None:
    assert PodTopologySpread.defaulted_args({}) == {"defaultingType": "System", "defaultConstraints": []}
    assert PodTopologySpread.validate_args(PodTopologySpread.defaulted_args({})) == []


def test_args_validation_messages() -> None:
    v = PodTopologySpread.validate_args
    c = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}
    assert v({"defaultingType": "System", "defaultConstraints": [c]}) == [
        ("defaultingType", 'Invalid value: "System": when .defaultConstraints are not empty')
    ]
    assert v({"defaultingType": "Other", "defaultConstraints": []}) == [
        ("defaultingType", 'Unsupported value: "Other": supported values: "System", "List"')
    ]
    assert v({"defaultingType": "List", "defaultConstraints": [{**c, "maxSkew": 0}]}) == [
        ("defaultConstraints[0].maxSkew", "Invalid value: 0: not in valid range (0, inf)")
    ]
    assert v({"defaultingType": "List", "defaultConstraints": [{**c, "labelSelector": {}}]}) == [
        (
            "defaultConstraints[0].labelSelector",
            "Forbidden: constraint must not define a selector, as they deduced for each pod",
        )
    ]
    assert v({"defaultingType": "List", "defaultConstraints": [c, dict(c)]}) == [
        ("defaultConstraints[1]", f'Duplicate value: "{{{ZONE}, DoNotSchedule}}"')
    ]
    assert v({"defaultingType": "List", "defaultConstraints": [{**c, "topologyKey": ""}]}) == [
        ("defaultConstraints[0].topologyKey", "Required value: can not be empty")
    ]
    assert v({"defaultingType": "List", "defaultConstraints": [{**c, "whenUnsatisfiable": "Maybe"}]}) == [
        (
            "defaultConstraints[0].whenUnsatisfiable",
            'Unsupported value: "Maybe": supported values: "DoNotSchedule", "ScheduleAnyway"',
        )
    ]


def test_score_batch_and_normalize_batch_equal_the_per_node_path() -> None:
    # Random clusters: zones and racks (some nodes without them: ignored), pods of two apps; the incoming pod spreads
    # over one to three keys (hostname included) with random skews. Scores and normalized scores must be the
    # per-node path's exactly (the float sums and Go's rounding included).
    rng = random.Random(3)
    keys = ["topology.kubernetes.io/zone", "rack", "kubernetes.io/hostname"]
    for trial in range(60):
        nodes = []
        for i in range(rng.randint(3, 40)):
            labels = {}
            if rng.random() < 0.9:
                labels["topology.kubernetes.io/zone"] = rng.choice("abc")
            if rng.random() < 0.8:
                labels["rack"] = f"r{rng.randint(0, 6)}"
            nodes.append(make_node(name=f"n{i}", labels=labels))
        pods = [
            make_pod(
                name=f"p{j}", labels={"app": rng.choice(["web", "api"])}, node_name=f"n{rng.randrange(len(nodes))}"
            )
            for j in range(rng.randint(0, 120))
        ]
        handle = make_handle(nodes=nodes, pods=pods)
        plugin = PodTopologySpread(handle, PodTopologySpread.defaulted_args({}))
        constraints = [
            {
                "maxSkew": rng.randint(1, 4),
                "topologyKey": key,
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app": "web"}},
            }
            for key in rng.sample(keys, rng.randint(1, 3))
        ]
        pod = PodInfo(make_pod(name="in", labels={"app": "web"}, spec={"topologySpreadConstraints": constraints}))
        cols = handle.snapshot.columns()
        batch = NodeBatch(cols, np.array(sorted(rng.sample(range(cols.n), rng.randint(1, cols.n))), np.int64))
        for require_all in (True, False):  # the domains and ignored nodes on columns equal the per-node walk's
            on_columns, per_node_walk = PreScoreState(), PreScoreState()
            plugin._init_pre_score_state(on_columns, pod, batch.nodes, require_all)
            plugin._init_pre_score_state(per_node_walk, pod, list(batch.nodes), require_all)
            assert on_columns.ignored_nodes == per_node_walk.ignored_nodes, trial
            assert [list(d.items()) for d in on_columns.topology_value_to_pod_counts] == [
                list(d.items()) for d in per_node_walk.topology_value_to_pod_counts
            ], trial
            assert on_columns.topology_normalizing_weight == per_node_walk.topology_normalizing_weight
        state = CycleState()
        if not plugin.pre_score(state, pod, batch.nodes).is_success():
            continue
        per_node, st = plugin.score_nodes(state, pod, batch.nodes)
        assert st.is_success()
        scores = plugin.score_batch(state, pod, batch)
        assert scores is not None
        assert scores.tolist() == per_node, trial
        node_scores = [NodeScore(name, s) for name, s in zip(batch.names(), per_node, strict=True)]
        assert plugin.normalize_score(state, pod, node_scores).is_success()
        normalized = plugin.normalize_batch(state, pod, scores)
        assert normalized is not None
        assert normalized.tolist() == [ns.score for ns in node_scores], trial
        assert plugin.normalize_batch(state, pod, scores.copy()) is None  # only the array score_batch returned

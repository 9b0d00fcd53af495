"""InterPodAffinity rules, each pinned with values derived by hand from upstream v1.35."""

from __future__ import annotations

from typing import Any

from kss_sim.scheduler.framework import Code, CycleState, Handle, NodeScore, Status
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.inter_pod_affinity import (
    PRE_FILTER_STATE_KEY,
    InterPodAffinity,
    PreFilterState,
)
from tests.scheduler.factories import make_handle, make_namespace, make_node, make_pod, node_info

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"


def term(
    *,
    labels: dict[str, str] | None = None,
    key: str = HOST,
    namespaces: list[str] | None = None,
    namespace_selector: dict[str, Any] | None = None,
) -> dict[str, Any]:
    t: dict[str, Any] = {"labelSelector": {"matchLabels": labels or {}}, "topologyKey": key}
    if namespaces is not None:
        t["namespaces"] = namespaces
    if namespace_selector is not None:
        t["namespaceSelector"] = namespace_selector
    return t


def weighted(weight: int, t: dict[str, Any]) -> dict[str, Any]:
    return {"weight": weight, "podAffinityTerm": t}


def affinity(
    *,
    required: list[dict[str, Any]] | None = None,
    required_anti: list[dict[str, Any]] | None = None,
    preferred: list[dict[str, Any]] | None = None,
    preferred_anti: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if required or preferred:
        out["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": required or [],
            "preferredDuringSchedulingIgnoredDuringExecution": preferred or [],
        }
    if required_anti or preferred_anti:
        out["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": required_anti or [],
            "preferredDuringSchedulingIgnoredDuringExecution": preferred_anti or [],
        }
    return out


def zoned_nodes() -> list[dict[str, Any]]:
    """n1, n2 in zone a; n3 in zone b; n4 without a zone label."""
    return [
        make_node(name="n1", labels={ZONE: "a"}),
        make_node(name="n2", labels={ZONE: "a"}),
        make_node(name="n3", labels={ZONE: "b"}),
        make_node(name="n4"),
    ]


def plugin(handle: Handle, **args: Any) -> InterPodAffinity:
    defaulted = InterPodAffinity.defaulted_args(args)
    assert InterPodAffinity.validate_args(defaulted) == []
    return InterPodAffinity(handle, defaulted)


def run_filter(handle: Handle, pod: dict[str, Any], **args: Any) -> tuple[Status, dict[str, Status]]:
    pl = plugin(handle, **args)
    pi = PodInfo(pod)
    state = CycleState()
    _, st = pl.pre_filter(state, pi, handle.snapshot.node_info_list)
    if not st.is_success():
        return st, {}
    return st, {ni.name: pl.filter(state, pi, ni) for ni in handle.snapshot.node_info_list}


def run_score(handle: Handle, pod: dict[str, Any], **args: Any) -> tuple[Status, dict[str, int], dict[str, int]]:
    pl = plugin(handle, **args)
    pi = PodInfo(pod)
    state = CycleState()
    nodes = handle.snapshot.node_info_list
    st = pl.pre_score(state, pi, nodes)
    if not st.is_success():
        return st, {}, {}
    raw, sst = pl.score_nodes(state, pi, nodes)
    assert sst.is_success()
    scores = [NodeScore(ni.name, s) for ni, s in zip(nodes, raw, strict=True)]
    assert pl.normalize_score(state, pi, scores).is_success()
    return st, {ni.name: s for ni, s in zip(nodes, raw, strict=True)}, {ns.name: ns.score for ns in scores}


def verdicts(statuses: dict[str, Status]) -> dict[str, str]:
    return {n: "passed" if st.is_success() else f"{st.code.label}: {st.message()}" for n, st in statuses.items()}


# --- PreFilter / Filter ------------------------------------------------------------------------------


def test_prefilter_skips_without_required_terms_or_existing_required_anti_affinity() -> None:
    handle = make_handle(
        nodes=zoned_nodes(),
        pods=[make_pod(name="db", labels={"app": "db"}, node_name="n1", affinity=affinity(required=[term()]))],
    )
    # Only preferred terms of its own, and the existing pod has required *affinity* (not anti): Skip.
    pod = make_pod(name="web", affinity=affinity(preferred=[weighted(10, term(labels={"app": "db"}))]))
    st, _ = run_filter(handle, pod)
    assert st.code == Code.SKIP


def test_required_affinity_passes_only_in_domains_holding_a_matching_pod() -> None:
    handle = make_handle(nodes=zoned_nodes(), pods=[make_pod(name="db", labels={"app": "db"}, node_name="n2")])
    pod = make_pod(name="web", affinity=affinity(required=[term(labels={"app": "db"}, key=ZONE)]))
    st, statuses = run_filter(handle, pod)
    assert st.is_success()
    assert verdicts(statuses) == {
        "n1": "passed",
        "n2": "passed",
        "n3": "UnschedulableAndUnresolvable: node(s) didn't match pod affinity rules",
        # No zone label at all: the term's topology must exist on the node.
        "n4": "UnschedulableAndUnresolvable: node(s) didn't match pod affinity rules",
    }


def test_first_pod_of_a_self_affine_group_passes_where_the_topology_exists() -> None:
    handle = make_handle(nodes=zoned_nodes(), pods=[make_pod(name="other", labels={"app": "x"}, node_name="n1")])
    pod = make_pod(
        name="web-0", labels={"app": "web"}, affinity=affinity(required=[term(labels={"app": "web"}, key=ZONE)])
    )
    _, statuses = run_filter(handle, pod)
    assert verdicts(statuses) == {
        "n1": "passed",
        "n2": "passed",
        "n3": "passed",
        "n4": "UnschedulableAndUnresolvable: node(s) didn't match pod affinity rules",
    }


def test_self_affinity_exception_needs_the_pod_to_match_its_own_terms() -> None:
    handle = make_handle(nodes=zoned_nodes())
    pod = make_pod(
        name="web", labels={"app": "web"}, affinity=affinity(required=[term(labels={"app": "db"}, key=ZONE)])
    )
    _, statuses = run_filter(handle, pod)
    assert {n: st.code for n, st in statuses.items()} == dict.fromkeys(
        ["n1", "n2", "n3", "n4"], Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    )


def test_required_anti_affinity_rejects_the_domain_of_a_matching_pod_as_unschedulable() -> None:
    handle = make_handle(nodes=zoned_nodes(), pods=[make_pod(name="db", labels={"app": "db"}, node_name="n1")])
    pod = make_pod(name="db-2", affinity=affinity(required_anti=[term(labels={"app": "db"}, key=ZONE)]))
    _, statuses = run_filter(handle, pod)
    assert verdicts(statuses) == {
        "n1": "Unschedulable: node(s) didn't match pod anti-affinity rules",
        "n2": "Unschedulable: node(s) didn't match pod anti-affinity rules",
        "n3": "passed",
        "n4": "passed",  # no zone label: anti-affinity cannot be violated there
    }


def test_existing_pods_required_anti_affinity_is_symmetric() -> None:
    existing = make_pod(
        name="loner",
        labels={"app": "loner"},
        node_name="n3",
        affinity=affinity(required_anti=[term(labels={"app": "web"}, key=ZONE)]),
    )
    handle = make_handle(nodes=zoned_nodes(), pods=[existing])
    st, statuses = run_filter(handle, make_pod(name="web", labels={"app": "web"}))
    assert st.is_success()  # not skipped: an existing pod has required anti-affinity
    assert verdicts(statuses) == {
        "n1": "passed",
        "n2": "passed",
        "n3": "Unschedulable: node(s) didn't satisfy existing pods anti-affinity rules",
        "n4": "passed",
    }


def test_empty_namespaces_and_no_selector_mean_the_pods_own_namespace() -> None:
    handle = make_handle(
        nodes=zoned_nodes(),
        pods=[make_pod(name="db", namespace="other", labels={"app": "db"}, node_name="n1")],
    )
    same_ns = make_pod(name="web", affinity=affinity(required_anti=[term(labels={"app": "db"}, key=ZONE)]))
    _, statuses = run_filter(handle, same_ns)
    assert all(st.is_success() for st in statuses.values())  # the db pod lives in "other"
    listed = make_pod(
        name="web", affinity=affinity(required_anti=[term(labels={"app": "db"}, key=ZONE, namespaces=["other"])])
    )
    _, statuses = run_filter(handle, listed)
    assert statuses["n1"].code == Code.UNSCHEDULABLE


def test_incoming_namespace_selector_unrolls_into_the_matching_namespaces() -> None:
    handle = make_handle(
        nodes=zoned_nodes(),
        pods=[
            make_pod(name="db-prod", namespace="team-a", labels={"app": "db"}, node_name="n1"),
            make_pod(name="db-dev", namespace="team-b", labels={"app": "db"}, node_name="n3"),
        ],
        namespaces=[
            make_namespace(name="team-a", labels={"env": "prod"}),
            make_namespace(name="team-b", labels={"env": "dev"}),
        ],
    )
    pod = make_pod(
        name="web",
        affinity=affinity(
            required_anti=[term(labels={"app": "db"}, key=ZONE, namespace_selector={"matchLabels": {"env": "prod"}})]
        ),
    )
    _, statuses = run_filter(handle, pod)
    assert sorted(n for n, st in statuses.items() if not st.is_success()) == ["n1", "n2"]
    everywhere = make_pod(
        name="web", affinity=affinity(required_anti=[term(labels={"app": "db"}, key=ZONE, namespace_selector={})])
    )
    _, statuses = run_filter(handle, everywhere)
    assert sorted(n for n, st in statuses.items() if not st.is_success()) == ["n1", "n2", "n3"]


def test_existing_pods_namespace_selector_is_matched_against_the_incoming_pods_namespace_labels() -> None:
    existing = make_pod(
        name="guard",
        namespace="team-a",
        node_name="n1",
        affinity=affinity(
            required_anti=[term(labels={"app": "web"}, key=ZONE, namespace_selector={"matchLabels": {"env": "dev"}})]
        ),
    )
    handle = make_handle(
        nodes=zoned_nodes(),
        pods=[existing],
        namespaces=[make_namespace(name="team-b", labels={"env": "dev"}), make_namespace(name="team-c")],
    )
    _, statuses = run_filter(handle, make_pod(name="web", namespace="team-b", labels={"app": "web"}))
    assert sorted(n for n, st in statuses.items() if not st.is_success()) == ["n1", "n2"]
    _, statuses = run_filter(handle, make_pod(name="web", namespace="team-c", labels={"app": "web"}))
    assert all(st.is_success() for st in statuses.values())


def test_incoming_namespace_selector_stays_in_force_after_the_merge_as_in_v1_35() -> None:
    # v1.35 unrolls the selector into the namespaces but, passing the term by value, keeps the selector,
    # which is then matched against an empty label set: DoesNotExist matches every namespace.
    handle = make_handle(
        nodes=zoned_nodes(),
        pods=[make_pod(name="db", namespace="team-a", labels={"app": "db"}, node_name="n3")],
        namespaces=[make_namespace(name="team-a", labels={"env": "prod"})],
    )
    selector = {"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}
    pod = make_pod(
        name="web", affinity=affinity(required_anti=[term(labels={"app": "db"}, key=ZONE, namespace_selector=selector)])
    )
    _, statuses = run_filter(handle, pod)
    assert sorted(n for n, st in statuses.items() if not st.is_success()) == ["n3"]


def test_add_pod_and_remove_pod_keep_the_prefilter_counts_current_and_clone_is_independent() -> None:
    handle = make_handle(nodes=zoned_nodes(), pods=[make_pod(name="db", labels={"app": "db"}, node_name="n1")])
    pl = plugin(handle)
    pod = PodInfo(
        make_pod(name="web", labels={"app": "web"}, affinity=affinity(required=[term(labels={"app": "db"}, key=ZONE)]))
    )
    state = CycleState()
    _, st = pl.pre_filter(state, pod, handle.snapshot.node_info_list)
    assert st.is_success()
    s: PreFilterState = state.read(PRE_FILTER_STATE_KEY)
    assert dict(s.affinity_counts) == {(ZONE, "a"): 1}

    ext = pl.pre_filter_extensions()
    assert ext is not None
    n3 = node_info(handle, "n3")
    hater = PodInfo(
        make_pod(
            name="hater", labels={"app": "db"}, affinity=affinity(required_anti=[term(labels={"app": "web"}, key=ZONE)])
        )
    )
    copy = state.clone()
    assert ext.add_pod(copy, pod, hater, n3).is_success()
    c: PreFilterState = copy.read(PRE_FILTER_STATE_KEY)
    assert dict(c.affinity_counts) == {(ZONE, "a"): 1, (ZONE, "b"): 1}
    assert dict(c.existing_anti_affinity_counts) == {(ZONE, "b"): 1}
    assert pl.filter(copy, pod, n3).message() == "node(s) didn't satisfy existing pods anti-affinity rules"
    # The original state did not see the added pod.
    assert dict(s.affinity_counts) == {(ZONE, "a"): 1}
    assert pl.filter(state, pod, n3).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE

    db = handle.snapshot.get("n1")
    assert db is not None
    assert ext.remove_pod(state, pod, db.pods[0], db).is_success()
    assert dict(s.affinity_counts) == {}  # dropped at zero: the self-affinity exception does not apply (no match)
    assert pl.filter(state, pod, db).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def test_filter_without_prefilter_state_is_an_error() -> None:
    handle = make_handle(nodes=zoned_nodes())
    pl = plugin(handle)
    st = pl.filter(CycleState(), PodInfo(make_pod()), node_info(handle, "n1"))
    assert st.code == Code.ERROR
    assert st.message() == 'error reading "PreFilterInterPodAffinity" from cycleState: not found'


# --- PreScore / Score / NormalizeScore ----------------------------------------------------------------


def test_preferred_terms_sum_weights_per_topology_and_normalize_by_float_min_max() -> None:
    handle = make_handle(
        nodes=zoned_nodes(),
        pods=[
            make_pod(name="db", labels={"app": "db"}, node_name="n1"),
            make_pod(name="cache", labels={"app": "cache"}, node_name="n2"),
            make_pod(name="cache-2", labels={"app": "cache"}, node_name="n3"),
        ],
    )
    pod = make_pod(
        name="web",
        affinity=affinity(
            preferred=[weighted(80, term(labels={"app": "db"}, key=ZONE))],
            preferred_anti=[weighted(30, term(labels={"app": "cache"}, key=HOST))],
        ),
    )
    st, raw, normalized = run_score(handle, pod)
    assert st.is_success()
    # zone a: +80 (db on n1); host n2: -30, host n3: -30.
    assert raw == {"n1": 80, "n2": 50, "n3": -30, "n4": 0}
    # (s + 30) / 110 * 100, truncated: 100, 72.7 -> 72, 0, 27.2 -> 27.
    assert normalized == {"n1": 100, "n2": 72, "n3": 0, "n4": 27}


def test_existing_pods_required_affinity_counts_hard_pod_affinity_weight() -> None:
    existing = make_pod(name="db", node_name="n3", affinity=affinity(required=[term(labels={"app": "web"}, key=ZONE)]))
    handle = make_handle(nodes=zoned_nodes(), pods=[existing])
    web = make_pod(name="web", labels={"app": "web"})
    _, raw, normalized = run_score(handle, web)
    assert raw == {"n1": 0, "n2": 0, "n3": 1, "n4": 0}
    assert normalized == {"n1": 0, "n2": 0, "n3": 100, "n4": 0}
    _, raw, _ = run_score(handle, web, hardPodAffinityWeight=70)
    assert raw["n3"] == 70
    st, _, _ = run_score(handle, web, hardPodAffinityWeight=0)
    assert st.code == Code.SKIP  # weight 0: the required term contributes nothing, nothing else matched


def test_existing_pods_preferred_terms_score_toward_the_incoming_pod() -> None:
    existing = make_pod(
        name="db",
        node_name="n1",
        affinity=affinity(
            preferred=[weighted(5, term(labels={"app": "web"}, key=ZONE))],
            preferred_anti=[weighted(9, term(labels={"app": "web"}, key=HOST))],
        ),
    )
    handle = make_handle(nodes=zoned_nodes(), pods=[existing])
    _, raw, normalized = run_score(handle, make_pod(name="web", labels={"app": "web"}))
    assert raw == {"n1": -4, "n2": 5, "n3": 0, "n4": 0}
    # (s + 4) / 9 * 100: 0, 100, 44.4 -> 44, 44.
    assert normalized == {"n1": 0, "n2": 100, "n3": 44, "n4": 44}


def test_ignore_preferred_terms_of_existing_pods_skips_prescore_for_pods_without_preferences() -> None:
    existing = make_pod(
        name="db", node_name="n1", affinity=affinity(preferred=[weighted(5, term(labels={"app": "web"}, key=ZONE))])
    )
    handle = make_handle(nodes=zoned_nodes(), pods=[existing])
    web = make_pod(name="web", labels={"app": "web"})
    st, _, _ = run_score(handle, web, ignorePreferredTermsOfExistingPods=True)
    assert st.code == Code.SKIP
    # With preferences of its own, existing pods' terms still count.
    web_pref = make_pod(
        name="web", labels={"app": "web"}, affinity=affinity(preferred=[weighted(1, term(labels={"app": "none"}))])
    )
    _, raw, _ = run_score(handle, web_pref, ignorePreferredTermsOfExistingPods=True)
    assert raw == {"n1": 5, "n2": 5, "n3": 0, "n4": 0}


def test_prescore_skips_when_no_term_matches_anywhere() -> None:
    handle = make_handle(nodes=zoned_nodes(), pods=[make_pod(name="db", labels={"app": "db"}, node_name="n1")])
    pod = make_pod(name="web", affinity=affinity(preferred=[weighted(10, term(labels={"app": "none"}))]))
    st, _, _ = run_score(handle, pod)
    assert st.code == Code.SKIP


def test_matches_that_cancel_out_still_score_and_normalize_to_zero() -> None:
    handle = make_handle(nodes=zoned_nodes(), pods=[make_pod(name="db", labels={"app": "db"}, node_name="n1")])
    pod = make_pod(
        name="web",
        affinity=affinity(
            preferred=[weighted(10, term(labels={"app": "db"}, key=ZONE))],
            preferred_anti=[weighted(10, term(labels={"app": "db"}, key=ZONE))],
        ),
    )
    st, raw, normalized = run_score(handle, pod)
    assert st.is_success()  # an entry exists even though it sums to zero
    assert raw == dict.fromkeys(["n1", "n2", "n3", "n4"], 0)
    assert normalized == dict.fromkeys(["n1", "n2", "n3", "n4"], 0)


def test_pods_on_nodes_without_labels_contribute_nothing() -> None:
    bare = make_node(name="bare")
    bare["metadata"]["labels"] = {}
    handle = make_handle(
        nodes=[*zoned_nodes(), bare], pods=[make_pod(name="db", labels={"app": "db"}, node_name="bare")]
    )
    pod = make_pod(name="web", affinity=affinity(preferred=[weighted(10, term(labels={"app": "db"}, key=ZONE))]))
    st, _, _ = run_score(handle, pod)
    assert st.code == Code.SKIP


# --- args ------------------------------------------------------------------------------------------------


def test_args_default_hard_pod_affinity_weight_to_one() -> None:
    assert InterPodAffinity.defaulted_args({}) == {
        "hardPodAffinityWeight": 1,
        "ignorePreferredTermsOfExistingPods": False,
    }
    assert InterPodAffinity.defaulted_args({"hardPodAffinityWeight": 0})["hardPodAffinityWeight"] == 0


def test_args_hard_pod_affinity_weight_must_be_within_0_and_100() -> None:
    assert InterPodAffinity.validate_args({"hardPodAffinityWeight": 100}) == []
    assert InterPodAffinity.validate_args({"hardPodAffinityWeight": 101}) == [
        ("hardPodAffinityWeight", "Invalid value: 101: not in valid range [0, 100]")
    ]
    assert InterPodAffinity.validate_args({"hardPodAffinityWeight": -1}) == [
        ("hardPodAffinityWeight", "Invalid value: -1: not in valid range [0, 100]")
    ]

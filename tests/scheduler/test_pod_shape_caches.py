"""Per-pod-shape caches and fast paths of the plugins: each must answer as a fresh computation would after the
cluster changed (pods bound or removed, nodes changed, Services added), where a stale cache would not."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest

from kss_sim.scheduler.columns import NodeBatch
from kss_sim.scheduler.framework import SKIP, Code, CycleState, Handle
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.image_locality import ImageLocality
from kss_sim.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from kss_sim.scheduler.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from kss_sim.scheduler.plugins.node_resources_fit import NodeResourcesFit
from kss_sim.scheduler.plugins.node_unschedulable import NodeUnschedulable
from kss_sim.scheduler.plugins.pod_topology_spread import PodTopologySpread
from kss_sim.scheduler.plugins.taint_toleration import TaintToleration
from kss_sim.scheduler.snapshot import Snapshot
from kss_sim.simulation.runner import ScenarioRun, _copy_object
from tests.scheduler.factories import make_handle, make_node, make_pod

NODES = [make_node(name=f"n{i}", allocatable={"cpu": "2", "memory": "4Gi", "pods": "3"}) for i in range(6)]


def _fit(handle: Handle, **args: Any) -> NodeResourcesFit:
    return NodeResourcesFit(handle, NodeResourcesFit.defaulted_args(args))


def _bind(snapshot: Snapshot, name: str, node: str, requests: dict[str, str] | None = None) -> PodInfo:
    pi = PodInfo(make_pod(name=name, node_name=node, requests=requests or {"cpu": "500m", "memory": "1Gi"}))
    snapshot.add_pod(pi, node)
    return pi


def _filter_both(plugin: NodeResourcesFit, handle: Handle, pod: PodInfo) -> tuple[list[bool], list[bool]]:
    """The batch verdicts (through the cache) and ``filter``'s, node by node, for a fresh cycle."""
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snapshot.node_info_list)
    cols = handle.snapshot.columns()
    mask = plugin.filter_nodes(state, pod, NodeBatch.all(cols))
    assert mask is not None
    per_node = [plugin.filter(state, pod, ni).is_success() for ni in cols.infos]
    return mask.tolist(), per_node


def test_fit_filter_cache_follows_binds_and_removals() -> None:
    handle = make_handle(nodes=NODES)
    plugin = _fit(handle)
    incoming = make_pod(name="in", requests={"cpu": "1", "memory": "1Gi"})
    got, want = _filter_both(plugin, handle, PodInfo(incoming))
    assert got == want == [True] * 6
    # n0 fills up after the verdicts were cached: a stale column would still say it fits.
    bound = [_bind(handle.snapshot, f"p{i}", "n0") for i in range(3)]
    got, want = _filter_both(plugin, handle, PodInfo(copy.deepcopy(incoming)))
    assert got == want
    assert got[handle.snapshot.columns().position["n0"]] is False
    handle.snapshot.remove_pod(bound[0])
    handle.snapshot.remove_pod(bound[1])
    got, want = _filter_both(plugin, handle, PodInfo(copy.deepcopy(incoming)))
    assert got == want == [True] * 6


def test_fit_filter_cache_recomputes_after_many_changes_and_new_nodes() -> None:
    handle = make_handle(nodes=NODES)
    plugin = _fit(handle)
    plugin.fit_columns.max_replay = 2
    incoming = make_pod(name="in", requests={"cpu": "1"})
    _filter_both(plugin, handle, PodInfo(incoming))
    for i in range(5):  # more changes than are replayed: the column is computed again
        _bind(handle.snapshot, f"p{i}", f"n{i}", {"cpu": "1500m"})
    got, want = _filter_both(plugin, handle, PodInfo(copy.deepcopy(incoming)))
    assert got == want == [False] * 5 + [True]
    # A node list change (n5 now smaller) gives new columns: nothing cached for the old ones is used.
    nodes = [*NODES[:5], make_node(name="n5", allocatable={"cpu": "500m", "memory": "4Gi", "pods": "3"})]
    pods = [p.pod for ni in handle.snapshot.node_info_list for p in ni.pods]
    handle.snapshot = Snapshot.build(nodes, pods)
    got, want = _filter_both(plugin, handle, PodInfo(copy.deepcopy(incoming)))
    assert got == want == [False] * 6


@pytest.mark.parametrize("strategy", ["LeastAllocated", "MostAllocated", "balanced"])
def test_score_columns_follow_pod_changes(strategy: str) -> None:
    # At v1.35: v1.36's BalancedAllocation scores the improvement in balance, which these pods leave the same on every
    # node before and after, so a stale column could not be told from a fresh one.
    handle = make_handle(nodes=NODES, version="1.35")
    plugin: NodeResourcesFit | NodeResourcesBalancedAllocation
    if strategy == "balanced":
        plugin = NodeResourcesBalancedAllocation(handle, NodeResourcesBalancedAllocation.defaulted_args({}))
    else:
        plugin = _fit(handle, scoringStrategy={"type": strategy})
    incoming = make_pod(name="in", requests={"cpu": "250m", "memory": "512Mi"})

    def scores() -> tuple[list[int], list[int]]:
        pod = PodInfo(copy.deepcopy(incoming))
        state = CycleState()
        assert plugin.pre_score(state, pod, handle.snapshot.node_info_list).is_success()
        cols = handle.snapshot.columns()
        batch = NodeBatch(cols, np.array([5, 0, 2, 1], np.int64))  # any order, any subset
        got = plugin.score_batch(state, pod, batch)
        assert got is not None
        return got.tolist(), [plugin.score(state, pod, ni)[0] for ni in batch.nodes]

    got, want = scores()
    assert got == want
    first = got
    removed = _bind(handle.snapshot, "a", "n0", {"cpu": "1", "memory": "256Mi"})
    _bind(handle.snapshot, "b", "n2", {"cpu": "100m", "memory": "3Gi"})
    got, want = scores()
    assert got == want
    assert got != first  # n0 and n2 changed: a stale column would repeat the first scores
    handle.snapshot.remove_pod(removed)
    got, want = scores()
    assert got == want


def test_score_columns_are_copies() -> None:
    handle = make_handle(nodes=NODES)
    plugin = _fit(handle)
    pod = PodInfo(make_pod(name="in", requests={"cpu": "250m"}))
    state = CycleState()
    plugin.pre_score(state, pod, handle.snapshot.node_info_list)
    batch = NodeBatch.all(handle.snapshot.columns())
    first = plugin.score_batch(state, pod, batch)
    assert first is not None
    first[:] = -1  # a caller changing its array must not change the cache
    again = plugin.score_batch(state, pod, batch)
    assert again is not None and (again >= 0).all()


def test_taint_toleration_groups_are_per_columns_and_tolerations() -> None:
    handle = make_handle(nodes=NODES)
    plugin = TaintToleration(handle)
    pod = PodInfo(make_pod(name="in"))
    batch = NodeBatch.all(handle.snapshot.columns())
    state = CycleState()
    plugin.pre_score(state, pod, batch.nodes)
    mask = plugin.filter_nodes(state, pod, batch)
    assert mask is not None and mask.all()
    scores = plugin.score_batch(state, pod, batch)
    assert scores is not None and not scores.any()
    # n1 gets taints (a node change: a new node list, new columns): the cached "no taints" answer must not stay.
    tainted = make_node(
        name="n1",
        taints=[
            {"key": "k", "value": "v", "effect": "NoSchedule"},
            {"key": "soft", "value": "x", "effect": "PreferNoSchedule"},
        ],
    )
    handle.snapshot = Snapshot.build([NODES[0], tainted, *NODES[2:]], [])
    batch = NodeBatch.all(handle.snapshot.columns())
    mask = plugin.filter_nodes(state, pod, batch)
    assert mask is not None and mask.tolist() == [ni.name != "n1" for ni in batch.nodes]
    scores = plugin.score_batch(state, pod, batch)
    assert scores is not None and scores.tolist() == [int(ni.name == "n1") for ni in batch.nodes]
    # Another pod tolerating the hard taint: its own entry.
    tolerant = PodInfo(make_pod(name="t", spec={"tolerations": [{"key": "k", "operator": "Exists"}]}))
    mask = plugin.filter_nodes(CycleState(), tolerant, batch)
    assert mask is not None and mask.all()


def test_node_unschedulable_fast_path_is_per_columns() -> None:
    handle = make_handle(nodes=NODES)
    plugin = NodeUnschedulable(handle)
    pod = PodInfo(make_pod(name="in"))
    mask = plugin.filter_nodes(CycleState(), pod, NodeBatch.all(handle.snapshot.columns()))
    assert mask is not None and mask.all()
    handle.snapshot = Snapshot.build([*NODES[:5], make_node(name="n5", unschedulable=True)], [])
    mask = plugin.filter_nodes(CycleState(), pod, NodeBatch.all(handle.snapshot.columns()))
    assert mask is not None and mask.tolist() == [True] * 5 + [False]


def test_image_locality_without_images_anywhere_scores_zero() -> None:
    images = [{"names": ["registry.k8s.io/pause:3.9"], "sizeBytes": 500 * 1024 * 1024}]
    with_image = make_node(name="n5")
    with_image["status"]["images"] = images
    handle = make_handle(nodes=NODES)
    plugin = ImageLocality(handle)
    pod = PodInfo(make_pod(name="in"))
    batch = NodeBatch.all(handle.snapshot.columns())
    scores = plugin.score_batch(CycleState(), pod, batch)
    assert scores is not None and scores.tolist() == [plugin.score(CycleState(), pod, ni)[0] for ni in batch.nodes]
    assert not scores.any()
    handle.snapshot = Snapshot.build([*NODES[:5], with_image], [])
    batch = NodeBatch.all(handle.snapshot.columns())
    scores = plugin.score_batch(CycleState(), pod, batch)
    assert scores is not None and scores.tolist() == [plugin.score(CycleState(), pod, ni)[0] for ni in batch.nodes]
    assert scores[-1] > 0


def _anti_affinity(required: bool) -> dict[str, Any]:
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    if required:
        return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    return {
        "podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": term}]}
    }


def test_inter_pod_affinity_skips_only_while_no_pod_has_terms() -> None:
    handle = make_handle(nodes=NODES)
    plugin = InterPodAffinity(handle, InterPodAffinity.defaulted_args({}))
    handle.snapshot.columns()
    incoming = make_pod(name="in", labels={"app": "web"})

    def pre_filter() -> tuple[CycleState, Code]:
        state = CycleState()
        _, st = plugin.pre_filter(state, PodInfo(copy.deepcopy(incoming)), handle.snapshot.node_info_list)
        return state, st.code

    def pre_score() -> Code:
        return plugin.pre_score(CycleState(), PodInfo(copy.deepcopy(incoming)), handle.snapshot.node_info_list).code

    assert pre_filter()[1] == Code.SKIP
    assert pre_score() == Code.SKIP
    # An existing pod with required anti-affinity against app=web appears on n3 after the first answers.
    anti = PodInfo(make_pod(name="anti", node_name="n3", affinity=_anti_affinity(True)))
    handle.snapshot.add_pod(anti, "n3")
    state, code = pre_filter()
    assert code == Code.SUCCESS
    pod = PodInfo(copy.deepcopy(incoming))
    assert plugin.filter(state, pod, handle.snapshot.node_info_list[3]).code == Code.UNSCHEDULABLE
    assert pre_score() == Code.SKIP  # required anti-affinity terms of existing pods do not score
    handle.snapshot.remove_pod(anti)
    assert pre_filter()[1] == Code.SKIP
    # Preferred terms only: PreFilter still skips, PreScore does not.
    handle.snapshot.add_pod(PodInfo(make_pod(name="pref", node_name="n2", affinity=_anti_affinity(False))), "n2")
    assert pre_filter()[1] == Code.SKIP
    assert pre_score() == Code.SUCCESS


def test_pod_topology_spread_defaults_follow_services() -> None:
    handle = make_handle(nodes=[make_node(name=f"n{i}", labels={"topology.kubernetes.io/zone": "z"}) for i in range(3)])
    plugin = PodTopologySpread(handle, PodTopologySpread.defaulted_args({}))
    incoming = make_pod(name="in", labels={"app": "web"})

    def pre_score() -> Code:
        pod = PodInfo(copy.deepcopy(incoming))
        return plugin.pre_score(CycleState(), pod, handle.snapshot.node_info_list).code

    assert pre_score() == Code.SKIP  # no Service selects the pod: no default selector
    handle.cluster.services.append(
        {"metadata": {"name": "web", "namespace": "default"}, "spec": {"selector": {"app": "web"}}}
    )
    assert pre_score() == Code.SUCCESS


def test_shared_skip_status_cannot_be_changed() -> None:
    assert SKIP.code == Code.SKIP and SKIP.is_skip() and SKIP.message() == ""
    with pytest.raises(AttributeError):
        SKIP.plugin = "X"
    with pytest.raises(AttributeError):
        SKIP.with_plugin("X")


def test_copy_object_is_deep_and_keeps_other_types() -> None:
    when = datetime(2025, 1, 1, tzinfo=UTC)
    obj: dict[str, Any] = {"a": [{"b": 1, "c": None, "d": 1.5, "e": True}], "t": when, "s": {1, 2}}
    out = _copy_object(obj)
    assert out == obj
    assert out["a"] is not obj["a"] and out["a"][0] is not obj["a"][0]
    assert out["s"] is not obj["s"]  # other mutable types are deep-copied
    out["a"][0]["b"] = 2
    assert obj["a"][0]["b"] == 1


def test_copy_object_of_plain_types_copies_a_part_used_twice_twice() -> None:
    shared = {"cpu": "1"}
    obj: dict[str, Any] = {"a": [shared, shared], "n": 2**70, "f": -0.0, "b": False, "t": (1, "x")}
    out = _copy_object(obj)
    assert out == obj and type(out["b"]) is bool and type(out["t"]) is tuple
    assert out["a"][0] is not shared and out["a"][0] is not out["a"][1]  # as the YAML's alias, copied apart
    out["a"][0]["cpu"] = "2"
    assert (shared["cpu"], out["a"][1]["cpu"]) == ("1", "1")


def test_scenario_run_leaves_the_scenario_untouched() -> None:
    scenario: dict[str, Any] = {
        "nodes": [make_node(name="n0", allocatable={"cpu": "1", "pods": "2"})],
        "pending": [
            make_pod(name="p0", requests={"cpu": "600m"}),
            make_pod(name="p1", priority=10, requests={"cpu": "600m"}),  # preempts p0
        ],
        "priorityClasses": [],
    }
    before = copy.deepcopy(scenario)
    first = [(a.pod, a.result, a.bound_to, a.nominated_node) for a, _ in ScenarioRun(scenario, record=False).run()]
    assert scenario == before
    again = [(a.pod, a.result, a.bound_to, a.nominated_node) for a, _ in ScenarioRun(scenario, record=False).run()]
    assert first == again
    assert ("default/p1", "scheduled", "n0", None) in first


def test_pod_topology_spread_pre_score_counts_follow_pod_changes(monkeypatch: pytest.MonkeyPatch) -> None:
    # Zones a/b/c, a node without a zone (never counted), a node outside the pod's node selector (nodeAffinityPolicy
    # Honor leaves it out). Each PreScore of a pod of the same shape must equal counting every pod again.
    zones = ["a", "b", "c", "a", "b", "c", "a", None, "x"]
    nodes = [
        make_node(name=f"n{i}", labels={"topology.kubernetes.io/zone": z, "pool": "web"} if z else {"pool": "web"})
        for i, z in enumerate(zones)
    ]
    nodes[8]["metadata"]["labels"]["pool"] = "batch"
    handle = make_handle(nodes=nodes)
    plugin = PodTopologySpread(handle, PodTopologySpread.defaulted_args({}))
    handle.snapshot.columns()
    spread = {"labelSelector": {"matchLabels": {"app": "web"}}, "whenUnsatisfiable": "ScheduleAnyway"}
    incoming = make_pod(
        name="in",
        labels={"app": "web"},
        spec={
            "nodeSelector": {"pool": "web"},
            "topologySpreadConstraints": [
                {**spread, "maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone"},
                {**spread, "maxSkew": 2, "topologyKey": "kubernetes.io/hostname"},
            ],
        },
    )
    recounts = [0]
    score_counts = PodTopologySpread._score_counts

    def counting(self: PodTopologySpread, *args: Any) -> Any:
        recounts[0] += 1
        return score_counts(self, *args)

    monkeypatch.setattr(PodTopologySpread, "_score_counts", counting)

    def both() -> tuple[list[dict[str, int]], list[dict[str, int]]]:
        # n0 filtered out (its zone still counts, through n3 and n6); n8 is outside the node selector.
        candidates = [ni for ni in handle.snapshot.node_info_list if ni.name not in ("n0", "n8")]
        state = CycleState()
        pod = PodInfo(copy.deepcopy(incoming))
        assert plugin.pre_score(state, pod, candidates).is_success()
        cached = state.read("PreScore" + "PodTopologySpread").topology_value_to_pod_counts
        fresh = PodTopologySpread(handle, PodTopologySpread.defaulted_args({}))
        reference = state.read("PreScore" + "PodTopologySpread").__class__()
        fresh._init_pre_score_state(reference, pod, candidates, True)
        fresh._count_candidate_domains(reference, pod, handle.snapshot.node_info_list, True)
        return cached, reference.topology_value_to_pod_counts

    def bind(name: str, node: str, namespace: str = "default", app: str = "web", **meta: Any) -> PodInfo:
        raw = make_pod(name=name, namespace=namespace, labels={"app": app}, node_name=node)
        raw["metadata"].update(meta)
        pi = PodInfo(raw)
        handle.snapshot.add_pod(pi, node)
        return pi

    bind("w0", "n0")
    bind("w7", "n7")  # no zone: not counted
    bind("w8", "n8")  # outside the node selector: not counted
    cached, reference = both()
    assert cached == reference == [{"a": 1, "b": 0, "c": 0}, {}]
    assert recounts[0] == 1
    gone = bind("w1", "n1")
    bind("w3", "n3")
    bind("o1", "n1", namespace="other")  # another namespace: not counted
    bind("d2", "n2", deletionTimestamp="2026-01-01T00:00:00Z")  # terminating: not counted
    bind("x2", "n2", app="api")  # not selected
    cached, reference = both()
    assert cached == reference == [{"a": 2, "b": 1, "c": 0}, {}]
    handle.snapshot.remove_pod(gone)
    bind("w5", "n5")
    cached, reference = both()
    assert cached == reference == [{"a": 2, "b": 0, "c": 1}, {}]
    assert recounts[0] == 1  # brought up to date from the pod changes, not counted again

"""NodeResourcesBalancedAllocation: the standard-deviation score, best-effort skip, args."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from kss_sim.kube.versions import kube_version
from kss_sim.scheduler.columns import NodeBatch
from kss_sim.scheduler.framework import Code, CycleState
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.node_resources_balanced_allocation import (
    NodeResourcesBalancedAllocation,
    balanced_resource_scorer,
    balanced_with_and_without,
)
from tests.scheduler.factories import make_handle, make_node, make_pod, node_info

GPU = "example.com/gpu"
# The scores worked out below are v1.35's (the balance with the pod); v1.36 scores the improvement in balance
# (test_score_batch_equals_the_per_node_path_at_each_version has both).
V1_35 = "1.35"


def _plugin(**args: Any) -> NodeResourcesBalancedAllocation:
    full = NodeResourcesBalancedAllocation.defaulted_args(args)
    assert NodeResourcesBalancedAllocation.validate_args(full) == []
    return NodeResourcesBalancedAllocation(make_handle(version=V1_35), full)


def _score(plugin: NodeResourcesBalancedAllocation, pod: dict[str, Any], handle: Any, node: str) -> int:
    state = CycleState()
    pi = PodInfo(pod)
    assert plugin.pre_score(state, pi, handle.snapshot.node_info_list).is_success()
    score, st = plugin.score(state, pi, node_info(handle, node))
    assert st.is_success()
    return score


def test_two_resources_score_half_the_fraction_gap() -> None:
    handle = make_handle(nodes=[make_node(name="n")])  # 4 CPU, 8 GiB
    pod = make_pod(name="p", requests={"cpu": "1", "memory": "1Gi"})
    # fractions 0.25 and 0.125: std 0.0625 -> int(93.75) = 93
    assert _score(_plugin(), pod, handle, "n") == 93


def test_counts_what_is_already_on_the_node() -> None:
    handle = make_handle(
        nodes=[make_node(name="n")], pods=[make_pod(name="b", node_name="n", requests={"cpu": "1", "memory": "5Gi"})]
    )
    pod = make_pod(name="p", requests={"cpu": "1", "memory": "1Gi"})
    # cpu 2/4 = 0.5, memory 6/8 = 0.75: std 0.125 -> 87
    assert _score(_plugin(), pod, handle, "n") == 87


def test_uses_actual_requests_without_non_zero_defaults() -> None:
    handle = make_handle(nodes=[make_node(name="n")], pods=[make_pod(name="b", node_name="n")])
    pod = make_pod(name="p", requests={"cpu": "1"})
    # memory stays 0 (no 200Mi default, also not for the bound pod): |0.25 - 0| / 2 -> 87
    assert _score(_plugin(), pod, handle, "n") == 87


def test_fractions_are_capped_at_one() -> None:
    node = make_node(name="n", allocatable={"cpu": "1", "memory": "8Gi"})
    handle = make_handle(nodes=[node])
    pod = make_pod(name="p", requests={"cpu": "3", "memory": "4Gi"})
    # cpu 3.0 capped to 1, memory 0.5: std 0.25 -> 75
    assert _score(_plugin(), pod, handle, "n") == 75


def test_three_resources_use_the_population_standard_deviation() -> None:
    assert balanced_resource_scorer([2, 1, 3], [4, 4, 4]) == 79  # 0.5, 0.25, 0.75: std 0.2041 -> 79.58
    node = make_node(name="n", allocatable={"cpu": "4", "memory": "8Gi", "ephemeral-storage": "4Gi"})
    handle = make_handle(nodes=[node])
    pod = make_pod(name="p", requests={"cpu": "2", "memory": "2Gi", "ephemeral-storage": "3Gi"})
    plugin = _plugin(resources=[{"name": "cpu"}, {"name": "memory"}, {"name": "ephemeral-storage"}])
    assert _score(plugin, pod, handle, "n") == 79


def test_one_resource_has_no_deviation() -> None:
    assert balanced_resource_scorer([3, 0], [4, 0]) == 100


def test_both_balances_in_one_pass_are_the_scorer_twice() -> None:
    # v1.36's per-node score takes the balance with and without the pod in one pass: it must be
    # balanced_resource_scorer on requested and on requested - pod, exactly (one to four resources, a left-out
    # resource, over-commitment, a pod larger than what the node holds).
    rng = random.Random(11)
    for trial in range(4000):
        n = rng.choice([1, 2, 2, 3, 4])  # two (cpu and memory) has a path of its own
        allocatable = [rng.choice([0, 1, 3, 4, 7, 4000, 16 << 30]) for _ in range(n)]
        pod = [rng.randint(0, 5000) for _ in range(n)]
        requested = [rng.randint(0, 2 * cap + 10) + p for cap, p in zip(allocatable, pod, strict=True)]
        without = [req - p for req, p in zip(requested, pod, strict=True)]
        expected = (balanced_resource_scorer(requested, allocatable), balanced_resource_scorer(without, allocatable))
        assert balanced_with_and_without(requested, pod, allocatable) == expected, trial


def test_unrequested_extended_resource_is_left_out() -> None:
    node = make_node(name="n", allocatable={"cpu": "4", "memory": "8Gi", GPU: "4"})
    handle = make_handle(nodes=[node])
    plugin = _plugin(resources=[{"name": "cpu"}, {"name": "memory"}, {"name": GPU}])
    assert _score(plugin, make_pod(name="p", requests={"cpu": "1", "memory": "1Gi"}), handle, "n") == 93
    # with the GPU: 0.25, 0.125, 1.0 -> mean 0.4583, std 0.3864 -> 61
    with_gpu = make_pod(name="g", requests={"cpu": "1", "memory": "1Gi", GPU: "4"})
    assert _score(plugin, with_gpu, handle, "n") == 61


def test_best_effort_pods_are_skipped_at_prescore() -> None:
    plugin = _plugin()
    handle = make_handle(nodes=[make_node(name="n")])
    for pod in (make_pod(name="none"), make_pod(name="zero", requests={"cpu": "0", "memory": "0"})):
        st = plugin.pre_score(CycleState(), PodInfo(pod), handle.snapshot.node_info_list)
        assert st.code == Code.SKIP
    # Score without PreScore state recomputes and gives 0 to a best-effort pod.
    score, st = plugin.score(CycleState(), PodInfo(make_pod(name="none")), node_info(handle, "n"))
    assert (score, st.code) == (0, Code.SUCCESS)


def test_pod_level_requests_are_honoured() -> None:
    handle = make_handle(nodes=[make_node(name="n")])
    pod = make_pod(name="p", requests={"cpu": "100m"}, spec={"resources": {"requests": {"cpu": "2", "memory": "1Gi"}}})
    # pod-level cpu 2 of 4 = 0.5, memory 1/8: std 0.1875 -> 81
    assert _score(_plugin(), pod, handle, "n") == 81


def test_defaults_and_validation() -> None:
    assert NodeResourcesBalancedAllocation.defaulted_args({}) == {
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]
    }
    assert NodeResourcesBalancedAllocation.defaulted_args({"resources": [{"name": GPU, "weight": 0}]}) == {
        "resources": [{"name": GPU, "weight": 1}]
    }
    args = {"resources": [{"name": "cpu", "weight": 1}, {"name": "cpu", "weight": 2}]}
    assert NodeResourcesBalancedAllocation.validate_args(args) == [
        ("resources[1].name", 'Duplicate value: "cpu"'),
        ("resources[1].weight", "Invalid value: 2: must be 1"),
    ]


@pytest.mark.parametrize("version", ["1.35", "1.36"])
def test_score_batch_equals_the_per_node_path_at_each_version(version: str) -> None:
    # Random clusters and pods, one or two resources (in either order): the columns' scores are the per-node path's
    # exactly, whether the score is the balance with the pod (v1.35) or its improvement (v1.36); a node without cpu
    # or memory allocatable counts the other alone, a pod larger than a node caps its fractions at 1.
    rng = random.Random(7)
    for trial in range(60):
        nodes = [
            make_node(
                name=f"n{i}",
                allocatable={"cpu": str(rng.choice([0, 2, 4, 8, 16])), "memory": f"{rng.choice([0, 4, 8, 32])}Gi"},
            )
            for i in range(rng.randint(2, 20))
        ]
        pods = [
            make_pod(name=f"p{j}", node_name=f"n{rng.randrange(len(nodes))}",
                     requests={"cpu": f"{rng.randint(0, 2000)}m", "memory": f"{rng.randint(0, 4096)}Mi"})
            for j in range(rng.randint(0, 40))
        ]  # fmt: skip
        handle = make_handle(nodes=nodes, pods=pods)
        handle.kube_version = kube_version(version)
        resources = rng.choice(
            [[{"name": "cpu"}, {"name": "memory"}], [{"name": "memory"}, {"name": "cpu"}], [{"name": "memory"}]]
        )
        plugin = NodeResourcesBalancedAllocation(
            handle, NodeResourcesBalancedAllocation.defaulted_args({"resources": resources})
        )
        pod = PodInfo(
            make_pod(name="in", requests={"cpu": f"{rng.randint(1, 3000)}m", "memory": f"{rng.randint(1, 6000)}Mi"})
        )
        cols = handle.snapshot.columns()
        batch = NodeBatch(cols, np.arange(cols.n, dtype=np.int64))
        state = CycleState()
        assert plugin.pre_score(state, pod, batch.nodes).is_success()
        per_node, st = plugin.score_nodes(state, pod, batch.nodes)
        assert st.is_success()
        scores = plugin.score_batch(state, pod, batch)
        assert scores is not None
        assert scores.tolist() == per_node, trial
        if version == "1.36":
            assert all(50 <= s <= 100 for s in per_node), trial
        # A pod bound meanwhile: its node's score is taken per node (the cached columns' other rows kept).
        target = f"n{rng.randrange(len(nodes))}"
        bound = make_pod(name="bound", node_name=target, requests={"cpu": f"{rng.randint(1, 2000)}m", "memory": "1Gi"})
        handle.snapshot.add_pod(PodInfo(bound), target)
        cols = handle.snapshot.columns()
        batch = NodeBatch(cols, np.arange(cols.n, dtype=np.int64))
        per_node, st = plugin.score_nodes(state, pod, batch.nodes)
        assert st.is_success()
        scores = plugin.score_batch(state, pod, batch)
        assert scores is not None
        assert scores.tolist() == per_node, trial


def test_v1_36_changed_nodes_are_scored_as_the_per_node_path_to_the_unit() -> None:
    # Tiny allocatables (a few millicores, a few bytes): one unit more or less in a request changes the score. The
    # columns are cached for the pod's shape, then pods are bound one by one and each changed node is scored on its
    # own (the NodeInfo's cpu and memory read directly): always the per-node path's score.
    rng = random.Random(5)
    for trial in range(30):
        nodes = [
            make_node(name=f"n{i}", allocatable={"cpu": f"{rng.randint(0, 9)}m", "memory": str(rng.randint(0, 9))})
            for i in range(8)
        ]
        handle = make_handle(nodes=nodes, version="1.36")
        plugin = NodeResourcesBalancedAllocation(handle, NodeResourcesBalancedAllocation.defaulted_args({}))
        incoming = make_pod(name="in", requests={"cpu": f"{rng.randint(1, 6)}m", "memory": str(rng.randint(1, 6))})
        for step in range(12):
            pod = PodInfo(incoming)
            state = CycleState()
            batch = NodeBatch.all(handle.snapshot.columns())
            assert plugin.pre_score(state, pod, batch.nodes).is_success()
            scores = plugin.score_batch(state, pod, batch)
            per_node, st = plugin.score_nodes(state, pod, batch.nodes)
            assert st.is_success()
            assert scores is not None and scores.tolist() == per_node, (trial, step)
            target = f"n{rng.randrange(len(nodes))}"
            requests = {"cpu": f"{rng.randint(0, 4)}m", "memory": str(rng.randint(0, 4))}
            handle.snapshot.add_pod(PodInfo(make_pod(name=f"b{step}", node_name=target, requests=requests)), target)

"""NodeResourcesFit's record keys: kept per request for every node, 0 exactly where the pod fits, and the status a
key stands for equals the one ``filter`` gives the node (reasons, their order, and the code), as pods come and go."""

from __future__ import annotations

import copy
import random

import numpy as np

from kss_sim.scheduler.columns import NodeBatch
from kss_sim.scheduler.framework import CycleState
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.node_resources_fit import NodeResourcesFit
from tests.scheduler.factories import make_handle, make_node, make_pod

GPU = "nvidia.com/gpu"


def _nodes() -> list[dict[str, object]]:
    rng = random.Random(7)
    out = []
    for i in range(24):
        alloc = {
            "cpu": str(rng.choice([1, 2, 4])),
            "memory": f"{rng.choice([1, 2, 8])}Gi",
            "pods": str(rng.choice([1, 2, 5])),
        }
        if i % 3:
            alloc[GPU] = str(rng.choice([0, 1, 2]))
            alloc["ephemeral-storage"] = f"{rng.choice([1, 10])}Gi"
        out.append(make_node(name=f"n{i:02d}", allocatable=alloc))
    return out


def _check(plugin: NodeResourcesFit, handle: object, pod: PodInfo) -> int:
    """Every rejected node: the key's status equals filter's. Returns how many nodes were rejected."""
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snapshot.node_info_list)  # type: ignore[attr-defined]
    cols = handle.snapshot.columns()  # type: ignore[attr-defined]
    batch = NodeBatch.all(cols)
    mask = plugin.filter_nodes(state, pod, batch)
    all_keys = plugin.filter_keys(state, pod, batch)
    assert mask is not None and all_keys is not None
    assert ((all_keys == 0) == mask).all()  # key 0 exactly where the pod fits
    bad = np.flatnonzero(~mask)
    keys = all_keys[bad]
    for pos, key in zip(bad.tolist(), keys.tolist(), strict=True):
        want = plugin.filter(state, pod, cols.infos[pos])
        got = plugin.filter_status_of_key(state, pod, key)
        assert got is not None
        assert (got.code, got.reasons) == (want.code, want.reasons), cols.infos[pos].name
    return len(bad)


def test_key_statuses_equal_filter_as_pods_are_bound_and_removed() -> None:
    handle = make_handle(nodes=_nodes())
    plugin = NodeResourcesFit(handle, NodeResourcesFit.defaulted_args({}))
    shapes = [
        {"cpu": "1", "memory": "1Gi"},
        {"cpu": "3", GPU: "1"},
        {"memory": "4Gi", "ephemeral-storage": "5Gi", GPU: "2"},
        {},  # requests nothing: only the pod count can fail
    ]
    rejected = 0
    bound: list[PodInfo] = []
    rng = random.Random(3)
    for step in range(40):
        pod = PodInfo(make_pod(name=f"in{step}", requests=copy.deepcopy(shapes[step % len(shapes)])))
        rejected += _check(plugin, handle, pod)
        # Change the cluster between checks (the key columns are kept and replayed).
        if bound and rng.random() < 0.3:
            handle.snapshot.remove_pod(bound.pop(rng.randrange(len(bound))))
        else:
            node = rng.choice(handle.snapshot.node_info_list).name
            pi = PodInfo(make_pod(name=f"b{step}", node_name=node, requests={"cpu": "500m", "memory": "512Mi"}))
            handle.snapshot.add_pod(pi, node)
            bound.append(pi)
    assert rejected > 50  # the cluster is small enough for every kind of failure to show up


def test_ignored_extended_resources_never_fail() -> None:
    handle = make_handle(nodes=[make_node(name="n", allocatable={"cpu": "4", GPU: "0"})])
    plugin = NodeResourcesFit(handle, NodeResourcesFit.defaulted_args({"ignoredResources": [GPU]}))
    pod = PodInfo(make_pod(name="p", requests={"cpu": "8", GPU: "1"}))
    assert _check(plugin, handle, pod) == 1
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snapshot.node_info_list)
    keys = plugin.filter_keys(state, pod, NodeBatch.all(handle.snapshot.columns()))
    st = plugin.filter_status_of_key(state, pod, int(keys[0]))  # type: ignore[index]
    assert st is not None and st.reasons == ["Insufficient cpu"]

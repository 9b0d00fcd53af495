"""``NodeColumnCache`` replays the journal node by node: many pod changes on a few nodes (in ``kss serve`` each
binding is assumed, bound, then started by the kubelet) recompute those nodes once each, not every node."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from kss_sim.scheduler.columns import NodeBatch
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins.node_resources_fit import NodeColumnCache
from tests.scheduler.factories import make_handle, make_node, make_pod

NODES = [make_node(name=f"n{i}", allocatable={"cpu": "8", "memory": "16Gi", "pods": "50"}) for i in range(6)]


def test_changes_on_few_nodes_recompute_those_nodes_once_each() -> None:
    handle = make_handle(nodes=NODES)
    snapshot = handle.snapshot
    cache: NodeColumnCache[str, np.int64] = NodeColumnCache(max_replay=2)
    wholes: list[int] = []
    ones: list[str] = []

    def whole(batch: NodeBatch) -> npt.NDArray[np.int64]:
        wholes.append(len(batch))
        return np.array([ni.requested.milli_cpu for ni in batch.nodes], np.int64)

    def one(ni: NodeInfo) -> int:
        ones.append(ni.name)
        return ni.requested.milli_cpu

    def take() -> list[int]:
        return [int(v) for v in cache.take(NodeBatch.all(snapshot.columns()), "cpu", whole, one)]

    assert take() == [0] * 6 and len(wholes) == 1
    # Eight changes (binds and removals) on two nodes, more than max_replay changes: still a replay of two nodes.
    pods = []
    for i in range(6):
        pod = PodInfo(make_pod(name=f"p{i}", node_name=f"n{i % 2}", requests={"cpu": "100m"}))
        snapshot.add_pod(pod, f"n{i % 2}")
        pods.append(pod)
    snapshot.remove_pod(pods[0])
    snapshot.remove_pod(pods[1])
    position = snapshot.columns().position
    want = [0] * 6
    want[position["n0"]] = want[position["n1"]] = 200
    assert take() == want
    assert len(wholes) == 1 and sorted(ones) == ["n0", "n1"]
    # Changes on three nodes, more than max_replay nodes: one pass over every node again.
    for i, node in enumerate(("n2", "n3", "n4")):
        snapshot.add_pod(PodInfo(make_pod(name=f"q{i}", node_name=node, requests={"cpu": "1"})), node)
    for node in ("n2", "n3", "n4"):
        want[position[node]] = 1000
    assert take() == want and len(wholes) == 2


def test_many_changed_nodes_are_recomputed_by_whole_on_just_those_and_two_caches_agree() -> None:
    nodes = [make_node(name=f"m{i:02d}", allocatable={"cpu": "8", "memory": "16Gi", "pods": "50"}) for i in range(20)]
    snapshot = make_handle(nodes=nodes).snapshot
    first: NodeColumnCache[str, np.int64] = NodeColumnCache(max_replay=32)
    second: NodeColumnCache[str, np.int64] = NodeColumnCache(max_replay=32)
    wholes: list[list[str]] = []
    ones: list[str] = []

    def whole(batch: NodeBatch) -> npt.NDArray[np.int64]:
        wholes.append([ni.name for ni in batch.nodes])
        # From the columns, as the plugins' ``whole`` reads them (so they must be synced for the nodes asked).
        return batch.take(batch.cols.req_cpu).copy()

    def one(ni: NodeInfo) -> int:
        ones.append(ni.name)
        return ni.requested.milli_cpu

    def take(cache: NodeColumnCache[str, np.int64]) -> dict[str, int]:
        cols = snapshot.columns()
        values = cache.take(NodeBatch.all(cols), "cpu", whole, one)
        return {name: int(v) for name, v in zip(cols.names, values.tolist(), strict=True)}

    assert set(take(first).values()) == {0} and set(take(second).values()) == {0} and len(wholes) == 2
    # Fourteen nodes changed, more than twelve: one whole on those fourteen, in each cache.
    changed = [f"m{i:02d}" for i in range(14)]
    for i, node in enumerate(changed):
        snapshot.add_pod(PodInfo(make_pod(name=f"p{i}", node_name=node, requests={"cpu": f"{100 * (i + 1)}m"})), node)
    want = {f"m{i:02d}": (100 * (i + 1) if i < 14 else 0) for i in range(20)}
    assert take(first) == want and take(second) == want
    assert [sorted(w) for w in wholes[2:]] == [changed, changed] and ones == []
    # Two more: node by node.
    for i, node in enumerate(("m15", "m16")):
        snapshot.add_pod(PodInfo(make_pod(name=f"q{i}", node_name=node, requests={"cpu": "1"})), node)
    want["m15"] = want["m16"] = 1000
    assert take(first) == want and len(wholes) == 4 and sorted(ones) == ["m15", "m16"]

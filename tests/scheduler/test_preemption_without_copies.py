"""DefaultPreemption's dry run without node copies (``victims_without_copies``) answers as the dry run on copies.

With the default plugins, on random nodes (requests of two resources, pod limits, cordons, taints, priorities,
start times, PDBs, nominated pods), every node's victims, PDB-violation count and status (code, reasons, plugin)
equal ``select_victims_on_node``'s on a copy of the node and the cycle state, and a whole preemption nominates the
same node with the same victims and message. The path stands aside when a PreFilter extension is in play, when a
filter neither reads no pod nor answers from a ``NodeWithout``, for a user's filter plugin, and for a node a
nominated pod of the preemptor's priority or higher would be added to.
"""

from __future__ import annotations

import random
from typing import Any, ClassVar

import pytest

from kss_sim.scheduler.framework import CycleState, FilterPlugin, NodeToStatus, Status, success
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.nodeinfo import NodeInfo, NodeWithout, PodInfo
from kss_sim.scheduler.plugins.default_preemption import DefaultPreemption
from kss_sim.scheduler.profiles import build_framework
from kss_sim.scheduler.runtime import Framework
from tests.scheduler.factories import make_handle, make_node, make_pod

START_TIMES = ["2024-06-01T00:00:00Z", "2024-06-01T00:00:10Z", "2024-06-01T00:00:10.5Z", None]


class WithCopies(DefaultPreemption):
    """The reference: every node copied (both shortcuts off)."""

    nodes_without_victims = None  # type: ignore[assignment]
    victims_without_copies = None  # type: ignore[assignment]


def _pod(rng: random.Random, name: str, node: str | None) -> dict[str, Any]:
    p = make_pod(
        name=name,
        node_name=node,
        priority=rng.choice([-5, 0, 0, 3, 10]),
        requests={"cpu": f"{rng.choice([100, 500, 900, 1500])}m", "memory": f"{rng.choice([1, 2, 3])}Gi"},
        labels={"app": rng.choice(["a", "b", "c"])},
    )
    start = rng.choice(START_TIMES)
    if start is not None:
        p["status"] = {"startTime": start}
    return p


def _cluster(seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(seed)
    nodes, pods = [], []
    for i in range(30):
        name = f"n{i:02d}"
        taints = [{"key": "t", "value": "v", "effect": "NoSchedule"}] if i % 11 == 5 else None
        alloc = {"cpu": "4", "memory": "8Gi", "pods": rng.choice(["4", "5", "110"])}
        nodes.append(make_node(name=name, allocatable=alloc, taints=taints, unschedulable=i % 13 == 7))
        pods.extend(_pod(rng, f"p{i}-{j}", name) for j in range(rng.randint(1, 5)))
    return nodes, pods


def _pdbs(allowed: int) -> list[dict[str, Any]]:
    return [
        {
            "metadata": {"name": f"pdb-{app}", "namespace": "default"},
            "spec": {"selector": {"matchLabels": {"app": app}}},
            "status": {"disruptionsAllowed": allowed},
        }
        for app in ("a", "b")
    ]


def _framework(
    nodes: list[dict[str, Any]], pods: list[dict[str, Any]], pdbs: list[dict[str, Any]]
) -> tuple[Framework, DefaultPreemption]:
    handle = make_handle(nodes=nodes, pods=pods)
    handle.cluster.pdbs = pdbs
    fwk = build_framework(parse_config(None, {}).profiles[0], handle)
    plugin = next(p for p in fwk.post_filter if isinstance(p, DefaultPreemption))
    return fwk, plugin


def _prefiltered(fwk: Framework, preemptor: PodInfo) -> CycleState:
    state = CycleState()
    assert fwk.run_pre_filter_plugins(state, preemptor).status.is_success()
    return state


def _answer(answer: tuple[list[PodInfo], int, Status]) -> tuple[list[str], int, int, str, str]:
    victims, violations, st = answer
    return [v.uid for v in victims], violations, int(st.code), st.message(), st.plugin


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("allowed", [0, 1])
def test_every_nodes_answer_equals_the_answer_on_copies(seed: int, allowed: int) -> None:
    nodes, pods = _cluster(seed)
    pdbs = _pdbs(allowed)
    fwk, plugin = _framework(nodes, pods, pdbs)
    rng = random.Random(seed)
    for k in range(4):  # nominated pods: two the preemptor's filters would add, two of lower priority
        nominated = PodInfo(_pod(rng, f"nominated-{k}", None) | {"spec": {"priority": 10 if k < 2 else -10}})
        fwk.handle.add_nominated_pod(nominated, f"n{3 * k:02d}")
    compared = with_copies = 0
    for cpu in ("1", "2500m", "3900m"):
        preemptor = PodInfo(make_pod(name="incoming", priority=5, requests={"cpu": cpu, "memory": "3Gi"}))
        state = _prefiltered(fwk, preemptor)
        select = plugin.victims_without_copies(state, preemptor)
        assert select is not None
        for ni in fwk.handle.snapshot.node_info_list:
            expected = plugin.select_victims_on_node(state.clone(), preemptor, ni.clone(), pdbs)
            got = select(ni, pdbs)
            if got is None:
                with_copies += 1
                continue
            compared += 1
            assert _answer(got) == _answer(expected), ni.name
    assert with_copies == 3 * 2 and compared == 3 * 28


@pytest.mark.parametrize("seed", range(4))
def test_a_preemption_nominates_and_evicts_as_the_dry_run_on_copies(seed: int) -> None:
    nodes, pods = _cluster(seed)
    outcomes = []
    for cls in (DefaultPreemption, WithCopies):
        fwk, _ = _framework(nodes, pods, _pdbs(seed % 2))
        plugin = cls(fwk.handle, DefaultPreemption.defaulted_args({}))
        preemptor = PodInfo(make_pod(name="incoming", priority=5, requests={"cpu": "3", "memory": "2Gi"}))
        state = _prefiltered(fwk, preemptor)
        statuses = NodeToStatus()
        for ni in fwk.handle.snapshot.node_info_list:
            statuses.set(ni.name, fwk.run_filter_plugins_with_nominated_pods(state, preemptor, ni))
        result, st = plugin.post_filter(state, preemptor, statuses)
        outcomes.append((result, st.code, st.message()))
    assert outcomes[0] == outcomes[1]


class UsersFilter(FilterPlugin):
    name: ClassVar[str] = "UsersFilter"
    filter_reads_pods: ClassVar[bool] = False  # not believed: a user's plugin

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        return success()


def test_the_path_stands_aside_when_the_filters_need_the_copies() -> None:
    nodes, pods = _cluster(0)
    fwk, plugin = _framework(nodes, pods, [])
    plain = PodInfo(make_pod(name="plain", priority=5, requests={"cpu": "1"}))
    assert plugin.victims_without_copies(_prefiltered(fwk, plain), plain) is not None
    # NodePorts reads the node's pods and cannot answer from a NodeWithout.
    ports = make_pod(name="ports", priority=5, requests={"cpu": "1"})
    ports["spec"]["containers"][0]["ports"] = [{"containerPort": 80, "hostPort": 80}]
    with_ports = PodInfo(ports)
    assert plugin.victims_without_copies(_prefiltered(fwk, with_ports), with_ports) is None
    # PodTopologySpread's PreFilter extension changes the state as pods go and come back.
    spread = make_pod(name="spread", priority=5, requests={"cpu": "1"}, labels={"app": "a"})
    spread["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "a"}},
        }
    ]
    spreading = PodInfo(spread)
    assert plugin.victims_without_copies(_prefiltered(fwk, spreading), spreading) is None
    # A user's filter plugin, whatever it says of itself.
    fwk.filter.append(UsersFilter(fwk.handle, {}))
    assert plugin.victims_without_copies(_prefiltered(fwk, plain), plain) is None


@pytest.mark.parametrize(
    "requests",
    [
        {"cpu": "2500m", "memory": "3Gi"},
        {"cpu": "0"},  # no request: only the pod count is compared
        {"memory": "5Gi", "ephemeral-storage": "1Gi"},
        {"cpu": "3", "example.com/gpu": "1"},  # a scalar request: the sums stand aside, the reprieve asks the filter
    ],
    ids=["cpu-memory", "no-request", "memory-ephemeral", "scalar"],
)
def test_the_reprieve_by_sums_answers_as_the_filter_on_copies(requests: dict[str, str]) -> None:
    """NodeResourcesFit, the only filter reading pods here, answers the reprieve walk with plain sums
    (``reprieve_without``); every node's victims, count and status equal the copying run's, including nodes whose
    pod limit or ephemeral storage decides, and a pod asking for a scalar resource takes the filter's own walk."""
    nodes, pods = _cluster(7)
    for k, raw in enumerate(pods):
        if k % 3 == 0:
            raw["spec"]["containers"][0]["resources"]["requests"]["ephemeral-storage"] = "2Gi"
    for node in nodes:
        node["status"]["allocatable"]["ephemeral-storage"] = "6Gi"
        node["status"]["allocatable"]["example.com/gpu"] = "1"
    fwk, plugin = _framework(nodes, pods, [])
    preemptor = PodInfo(make_pod(name="incoming", priority=5, requests=requests))
    state = _prefiltered(fwk, preemptor)
    select = plugin.victims_without_copies(state, preemptor)
    assert select is not None
    fit = next(pl for pl in fwk.filter if pl.name == "NodeResourcesFit")
    some = fwk.handle.snapshot.node_info_list[0]
    by_sums = fit.reprieve_without(state, preemptor, NodeWithout(some, some.pods))
    assert (by_sums is None) == ("example.com/gpu" in requests)
    with_victims = 0
    for ni in fwk.handle.snapshot.node_info_list:
        expected = plugin.select_victims_on_node(state.clone(), preemptor, ni.clone(), [])
        got = select(ni, [])
        assert got is not None
        assert _answer(got) == _answer(expected), ni.name
        with_victims += bool(expected[0])
    assert with_victims > 0

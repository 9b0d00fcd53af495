"""End to end: ``kss sync``'s first list places the source's waiting pods against its whole running load.

A source ``kss serve`` (its own scheduler off) holds nodes full of running pods and pods it has not scheduled,
listed before them (created first, names sorting first, or in a namespace listed first). Created in list order,
a waiting pod reaches the simulator's scheduler while the nodes are still empty; the running pods then arrive
bound to their nodes whatever those hold by then, and a node ends up holding more than its allocatable.
"""

from __future__ import annotations

from typing import Any

from tests.syncer.test_e2e import Mirror, eventually, mirror, node_body, pod_body, raw  # noqa: F401

# Four nodes of 2 CPUs, every pod asking 1: how many pods run on each in the source (three full, one with room for
# one more pod), and how many wait.
RUNNING = {"node-1": 2, "node-2": 2, "node-3": 2, "node-4": 1}
ROOMY_NODE = "node-4"
WAITING = 4


def _cpu_millis(quantity: str) -> int:
    return int(quantity[:-1]) if quantity.endswith("m") else int(float(quantity) * 1000)


def _requested_millis(pod: dict[str, Any]) -> int:
    return sum(
        _cpu_millis(str(((c.get("resources") or {}).get("requests") or {}).get("cpu", "0")))
        for c in pod["spec"]["containers"]
    )


def _fill_source(ends: Mirror, namespace: str, waiting_namespace: str) -> None:
    """Nodes first, then the waiting pods (in ``waiting_namespace``), then the running pods (in ``namespace``)."""
    for node in RUNNING:
        ends.src.create_node(node_body(node, cpu="2"))
    for i in range(WAITING):
        ends.src.create_namespaced_pod(waiting_namespace, pod_body(f"a-waiting-{i}", owned=False))
    for node, count in RUNNING.items():
        for i in range(count):
            ends.src.create_namespaced_pod(namespace, pod_body(f"running-{i}-on-{node}", node=node, owned=False))


def _settled(ends: Mirror, namespaces: tuple[str, ...]) -> dict[str, dict[str, Any]]:
    """Every pod of the source in the simulator, each waiting one bound or refused by the scheduler; else {}."""
    pods = {f"{ns}/{name}": pod for ns in namespaces for name, pod in ends.sim_pods(ns).items()}
    if len(pods) != WAITING + sum(RUNNING.values()):
        return {}
    for pod in pods.values():
        tried = any(c["type"] == "PodScheduled" for c in pod.get("status", {}).get("conditions") or [])
        if not pod["spec"].get("nodeName") and not tried:
            return {}
    return pods


def _assert_placed_against_the_running_load(ends: Mirror, pods: dict[str, dict[str, Any]]) -> None:
    allocatable = {
        n["metadata"]["name"]: _cpu_millis(n["status"]["allocatable"]["cpu"])
        for n in raw(ends.sim, "/api/v1/nodes")["items"]
    }
    held: dict[str, int] = dict.fromkeys(allocatable, 0)
    for pod in pods.values():
        if pod["spec"].get("nodeName"):
            held[pod["spec"]["nodeName"]] += _requested_millis(pod)
    overcommitted = {node: (held[node], allocatable[node]) for node in held if held[node] > allocatable[node]}
    assert overcommitted == {}, f"nodes holding more than their allocatable (requested, allocatable): {overcommitted}"
    for key, pod in pods.items():
        if "/running-" in key:
            assert pod["spec"]["nodeName"] == key.split("-on-")[1], f"{key} arrives bound to its source node"
    waiting = {key: pod for key, pod in pods.items() if "/a-waiting-" in key}
    bound = sorted(pod["spec"]["nodeName"] for pod in waiting.values() if pod["spec"].get("nodeName"))
    assert bound == [ROOMY_NODE], "one waiting pod fits, on the node with room"
    for key, pod in waiting.items():
        if not pod["spec"].get("nodeName"):
            reasons = [c.get("reason") for c in pod["status"]["conditions"] if c["type"] == "PodScheduled"]
            assert reasons == ["Unschedulable"], f"{key}: {pod['status']}"
    assert ends.proxy.mutating() == []


def test_first_list_creates_running_pods_before_the_waiting_pods_listed_first(mirror: Mirror) -> None:  # noqa: F811
    _fill_source(mirror, "default", "default")
    mirror.start_syncer()
    pods = eventually(lambda: _settled(mirror, ("default",)), what="every pod mirrored and tried")
    _assert_placed_against_the_running_load(mirror, pods)


def test_first_list_holds_waiting_pods_until_every_namespace_is_listed(mirror: Mirror) -> None:  # noqa: F811
    # ``--namespaces``: one list per namespace; the waiting pods' namespace is listed before the running pods' one.
    for namespace in ("first", "second"):
        mirror.src.create_namespace({"metadata": {"name": namespace}})
    _fill_source(mirror, "second", "first")
    mirror.start_syncer("--namespaces", "first,second")
    pods = eventually(lambda: _settled(mirror, ("first", "second")), what="every pod mirrored and tried")
    _assert_placed_against_the_running_load(mirror, pods)

"""The DaemonSet controller (app/controllers/daemonset.py) over an in-memory ClusterStore: one pod per eligible
node as nodeShouldRunDaemonPod decides (selector, required affinity, taints against the daemon tolerations), the
matchFields term replacing the template's required terms, nodes added/removed/tainted/relabelled, duplicates and
failed pods, the status, rolling updates with maxUnavailable and maxSurge, and a restart that changes nothing."""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Connection

from kss_sim.cluster.storage import repository
from kss_sim.cluster.storage.committer import Committer
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.daemon_placement import DAEMON_TOLERATIONS, NETWORK_UNAVAILABLE_TOLERATION
from kss_sim.controllers.daemonset import DaemonSetController
from kss_sim.kube.objects import Obj
from tests.cluster.factories import node

LABELS = {"app": "agent"}


def daemonset(name: str = "agent", *, spec: Obj | None = None, template_spec: Obj | None = None) -> Obj:
    """A DaemonSet selecting ``app=agent`` with one container."""
    pod_spec: Obj = {"containers": [{"name": "agent", "image": "agent:1"}]}
    pod_spec.update(template_spec or {})
    body: Obj = {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": dict(LABELS)},
            "template": {"metadata": {"labels": dict(LABELS)}, "spec": pod_spec},
        },
    }
    body["spec"].update(spec or {})
    return body


def tainted(name: str, key: str, effect: str, *, labels: dict[str, str] | None = None) -> Obj:
    body = node(name, labels=labels)
    body["spec"] = {"taints": [{"key": key, "effect": effect}]}
    return body


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mem(clock: Clock) -> ClusterStore:
    """An in-memory store whose timestamps follow ``clock`` (creation order decides which pod a node keeps)."""
    return ClusterStore(None, clock=clock)


@pytest.fixture
def controller(mem: ClusterStore, clock: Clock) -> Iterator[DaemonSetController]:
    c = DaemonSetController(mem, clock=clock)
    yield c
    c.stop()


def settle(c: DaemonSetController) -> None:
    assert c.wait_idle(), "the controller did not settle"


def daemon_pods(store: ClusterStore) -> list[Obj]:
    pods, _ = store.list("Pod", "default", label_selector="app=agent")
    return pods


def target(pod: Obj) -> str:
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"
    ]
    assert len(terms) == 1 and list(terms[0]) == ["matchFields"]
    (field,) = terms[0]["matchFields"]
    assert field["key"] == "metadata.name" and field["operator"] == "In" and len(field["values"]) == 1
    return str(field["values"][0])


def targets(store: ClusterStore) -> list[str]:
    return sorted(target(p) for p in daemon_pods(store))


def make_ready(store: ClusterStore, pod: Obj, at: datetime) -> None:
    """What a kubelet would report for a started, ready pod."""
    stamp = at.strftime("%Y-%m-%dT%H:%M:%SZ")
    store.patch(
        "Pod",
        "default",
        pod["metadata"]["name"],
        {
            "status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": stamp}],
            }
        },
        "merge",
        subresource="status",
    )


def ready_all(store: ClusterStore, clock: Clock) -> None:
    for pod in daemon_pods(store):
        if (pod.get("status") or {}).get("phase") != "Running":
            make_ready(store, pod, clock.now)


def ds_status(store: ClusterStore, name: str = "agent") -> Obj:
    ds = store.get("DaemonSet", "default", name)
    assert ds is not None
    return dict(ds.get("status") or {})


def test_one_pod_per_eligible_node_each_pinned_by_match_fields_with_daemon_tolerations(
    mem: ClusterStore, controller: DaemonSetController
) -> None:
    for n in ("n1", "n2"):
        mem.create("Node", node(n))
    mem.create("Node", tainted("n3", "dedicated", "NoSchedule"))
    mem.create("DaemonSet", daemonset())
    controller.start()
    settle(controller)

    pods = daemon_pods(mem)
    assert sorted(target(p) for p in pods) == ["n1", "n2"]  # n3's taint is not tolerated
    ds = mem.get("DaemonSet", "default", "agent")
    assert ds is not None
    for pod in pods:
        assert not pod["spec"].get("nodeName")  # the scheduler places it
        assert pod["metadata"]["name"].startswith("agent-")
        assert pod["metadata"]["ownerReferences"][0]["uid"] == ds["metadata"]["uid"]
        assert pod["metadata"]["ownerReferences"][0]["controller"] is True
        labels = pod["metadata"]["labels"]
        assert labels["app"] == "agent" and labels["controller-revision-hash"]
        assert labels["pod-template-generation"] == "1"
        tolerations = pod["spec"]["tolerations"]
        for wanted in DAEMON_TOLERATIONS:
            assert any(all(t.get(k) == v for k, v in wanted.items()) for t in tolerations), wanted
        assert not any(t.get("key") == NETWORK_UNAVAILABLE_TOLERATION["key"] for t in tolerations)
    status = ds_status(mem)
    assert status["desiredNumberScheduled"] == 2
    assert status["currentNumberScheduled"] == 2
    assert status["numberMisscheduled"] == 0
    assert status["numberReady"] == 0
    assert status["numberUnavailable"] == 2
    assert status["updatedNumberScheduled"] == 2
    assert status["observedGeneration"] == 1
    events, _ = mem.list("Event", "default")
    assert sum(1 for e in events if e["reason"] == "SuccessfulCreate") == 2


def test_required_terms_are_checked_then_replaced_by_the_node_name_term(
    mem: ClusterStore, controller: DaemonSetController
) -> None:
    mem.create("Node", node("a1", labels={"zone": "a", "disk": "ssd"}))
    mem.create("Node", node("a2", labels={"zone": "a"}))
    mem.create("Node", node("b1", labels={"zone": "b", "disk": "ssd"}))
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
            },
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {"weight": 1, "preference": {"matchExpressions": [{"key": "disk", "operator": "Exists"}]}}
            ],
        }
    }
    mem.create("DaemonSet", daemonset(template_spec={"affinity": affinity, "nodeSelector": {"disk": "ssd"}}))
    controller.start()
    settle(controller)

    (pod,) = daemon_pods(mem)
    assert target(pod) == "a1"  # zone a and disk=ssd
    assert pod["spec"]["nodeSelector"] == {"disk": "ssd"}
    # The preferred terms are the template's; only the required ones are replaced.
    assert (
        pod["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        == (affinity["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"])
    )


def test_host_network_pods_tolerate_network_unavailable_and_every_pod_tolerates_cordoned_nodes(
    mem: ClusterStore, controller: DaemonSetController
) -> None:
    mem.create("Node", tainted("cordoned", "node.kubernetes.io/unschedulable", "NoSchedule"))
    mem.create("Node", tainted("nonet", "node.kubernetes.io/network-unavailable", "NoSchedule"))
    mem.create("DaemonSet", daemonset("plain"))
    host = daemonset("host", template_spec={"hostNetwork": True})
    host["spec"]["selector"] = {"matchLabels": {"app": "host"}}
    host["spec"]["template"]["metadata"]["labels"] = {"app": "host"}
    mem.create("DaemonSet", host)
    controller.start()
    settle(controller)

    assert targets(mem) == ["cordoned"]
    host_pods, _ = mem.list("Pod", "default", label_selector="app=host")
    assert sorted(target(p) for p in host_pods) == ["cordoned", "nonet"]
    assert any(t.get("key") == NETWORK_UNAVAILABLE_TOLERATION["key"] for t in host_pods[0]["spec"]["tolerations"])


def test_follows_nodes_added_removed_tainted_and_relabelled(mem: ClusterStore, controller: DaemonSetController) -> None:
    mem.create("Node", node("n1", labels={"role": "edge"}))
    mem.create("Node", node("n2", labels={"role": "edge"}))
    mem.create("DaemonSet", daemonset(template_spec={"nodeSelector": {"role": "edge"}}))
    controller.start()
    settle(controller)
    assert targets(mem) == ["n1", "n2"]

    mem.create("Node", node("n3", labels={"role": "edge"}))  # added
    settle(controller)
    assert targets(mem) == ["n1", "n2", "n3"]

    mem.delete("Node", None, "n3")  # removed: its unscheduled pod would never be placed
    settle(controller)
    assert targets(mem) == ["n1", "n2"]

    mem.patch("Node", None, "n2", {"metadata": {"labels": {"role": "core"}}}, "merge")  # relabelled out
    settle(controller)
    assert targets(mem) == ["n1"]
    mem.patch("Node", None, "n2", {"metadata": {"labels": {"role": "edge"}}}, "merge")  # and back in
    settle(controller)
    assert targets(mem) == ["n1", "n2"]

    # A NoSchedule taint keeps the pod already there (misscheduled); NoExecute evicts it.
    mem.patch("Node", None, "n1", {"spec": {"taints": [{"key": "maint", "effect": "NoSchedule"}]}}, "merge")
    settle(controller)
    assert targets(mem) == ["n1", "n2"]
    assert ds_status(mem)["numberMisscheduled"] == 1
    assert ds_status(mem)["desiredNumberScheduled"] == 1
    mem.patch("Node", None, "n1", {"spec": {"taints": [{"key": "maint", "effect": "NoExecute"}]}}, "merge")
    settle(controller)
    assert targets(mem) == ["n2"]
    assert ds_status(mem)["numberMisscheduled"] == 0

    # A heartbeat (status only) changes nothing.
    version = mem.resource_version
    mem.patch(
        "Node",
        None,
        "n2",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        "merge",
        subresource="status",
    )
    settle(controller)
    assert mem.resource_version == version + 1


def test_an_orphan_is_adopted_and_a_duplicate_on_a_node_deleted_oldest_kept(
    mem: ClusterStore, controller: DaemonSetController, clock: Clock
) -> None:
    mem.create("Node", node("n1"))
    mem.create("DaemonSet", daemonset())
    controller.start()
    settle(controller)
    (first,) = daemon_pods(mem)

    clock.now += timedelta(seconds=5)
    orphan = copy.deepcopy(first)
    orphan["metadata"] = {"name": "stray", "namespace": "default", "labels": dict(LABELS)}
    orphan.pop("status", None)
    mem.create("Pod", orphan)
    settle(controller)

    (kept,) = daemon_pods(mem)
    assert kept["metadata"]["name"] == first["metadata"]["name"]
    events, _ = mem.list("Event", "default")
    assert any(e["reason"] == "SuccessfulDelete" and e["message"] == "Deleted pod: stray" for e in events)


def test_a_failed_pod_is_killed_and_replaced_with_a_warning(mem: ClusterStore, controller: DaemonSetController) -> None:
    mem.create("Node", node("n1"))
    mem.create("DaemonSet", daemonset())
    controller.start()
    settle(controller)
    (pod,) = daemon_pods(mem)
    mem.patch("Pod", "default", pod["metadata"]["name"], {"status": {"phase": "Failed"}}, "merge", subresource="status")
    settle(controller)

    (replacement,) = daemon_pods(mem)
    assert replacement["metadata"]["name"] != pod["metadata"]["name"]
    events, _ = mem.list("Event", "default")
    warnings = [e for e in events if e["reason"] == "FailedDaemonPod"]
    assert warnings and warnings[0]["type"] == "Warning"
    assert (
        warnings[0]["message"]
        == f"Found failed daemon pod default/{pod['metadata']['name']} on node n1, will try to kill it"
    )


def _roll(mem: ClusterStore, controller: DaemonSetController, clock: Clock, nodes: int) -> list[int]:
    """Ready every pod after each step until the rollout completes; returns how many nodes lacked an available pod
    at each step."""
    gaps: list[int] = []
    for _ in range(4 * nodes):
        settle(controller)
        status = ds_status(mem)
        gaps.append(status.get("numberUnavailable", 0))
        if status.get("updatedNumberScheduled") == nodes and status.get("numberAvailable") == nodes:
            return gaps
        clock.now += timedelta(seconds=1)
        ready_all(mem, clock)
    raise AssertionError(f"the rollout did not finish: {ds_status(mem)}")


def test_rolling_update_replaces_one_node_at_a_time_with_max_unavailable_1(
    mem: ClusterStore, controller: DaemonSetController, clock: Clock
) -> None:
    for i in range(4):
        mem.create("Node", node(f"n{i}"))
    mem.create("DaemonSet", daemonset())
    controller.start()
    settle(controller)
    ready_all(mem, clock)
    settle(controller)
    before = ds_status(mem)
    assert before["numberReady"] == 4 and before["numberAvailable"] == 4 and "numberUnavailable" not in before
    old_hash = daemon_pods(mem)[0]["metadata"]["labels"]["controller-revision-hash"]
    clock.now += timedelta(seconds=1)

    mem.patch(
        "DaemonSet",
        "default",
        "agent",
        {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "agent:2"}]}}}},
        "merge",
    )
    gaps = _roll(mem, controller, clock, 4)

    assert max(gaps) <= 1  # maxUnavailable 1 (the default)
    pods = daemon_pods(mem)
    assert len(pods) == 4 and sorted(target(p) for p in pods) == ["n0", "n1", "n2", "n3"]
    assert all(p["metadata"]["labels"]["controller-revision-hash"] != old_hash for p in pods)
    assert all(p["spec"]["containers"][0]["image"] == "agent:2" for p in pods)
    assert ds_status(mem)["observedGeneration"] == 2


def test_rolling_update_with_max_surge_keeps_every_node_available(
    mem: ClusterStore, controller: DaemonSetController, clock: Clock
) -> None:
    for i in range(3):
        mem.create("Node", node(f"n{i}"))
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    mem.create("DaemonSet", daemonset(spec={"updateStrategy": strategy}))
    controller.start()
    settle(controller)
    ready_all(mem, clock)
    settle(controller)
    clock.now += timedelta(seconds=1)

    mem.patch(
        "DaemonSet",
        "default",
        "agent",
        {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "agent:2"}]}}}},
        "merge",
    )
    settle(controller)
    pods = daemon_pods(mem)
    assert len(pods) == 4  # one surge pod next to its node's old one
    gaps = _roll(mem, controller, clock, 3)
    assert max(gaps) == 0
    assert len(daemon_pods(mem)) == 3


def test_a_restarted_controller_writes_nothing(
    mem: ClusterStore, controller: DaemonSetController, clock: Clock
) -> None:
    for i in range(3):
        mem.create("Node", node(f"n{i}"))
    mem.create("Node", tainted("t", "dedicated", "NoSchedule"))
    mem.create("DaemonSet", daemonset())
    controller.start()
    settle(controller)
    ready_all(mem, clock)
    settle(controller)
    version = mem.resource_version
    controller.stop()

    again = DaemonSetController(mem, clock=clock)
    again.start()
    try:
        settle(again)
    finally:
        again.stop()
    assert mem.resource_version == version
    assert targets(mem) == ["n0", "n1", "n2"]


def test_a_sync_commits_its_pods_together_and_reconciles_on_them_committed(
    store: ClusterStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On a database, where each write is a commit: the pods and Events of one syncNodes are staged while the first
    # of them commits (that commit waits, up to 10 s, for all of them to be staged) and share the next commit,
    # instead of one commit each awaited in turn; the status written after them counts them all.
    nodes = 30
    for i in range(nodes):
        store.create("Node", node(f"n{i}"))
    store.create("DaemonSet", daemonset())
    commits: list[list[str]] = []
    staged = [0]
    arrived = threading.Condition()
    stage, write_changes = Committer.stage, repository.write_changes

    def counted_stage(self: Committer, changes: Any) -> Any:
        batch = stage(self, changes)
        with arrived:
            staged[0] += sum(1 for c in changes if c.kind in ("Pod", "Event"))
            arrived.notify_all()
        return batch

    def counted(conn: Connection, changes: list[repository.Change], resource_version: int) -> None:
        kinds = [c.row.kind for c in changes]
        if "Pod" in kinds and not any("Pod" in earlier for earlier in commits):
            with arrived:
                arrived.wait_for(lambda: staged[0] >= 2 * nodes, timeout=10)
        commits.append(kinds)
        write_changes(conn, changes, resource_version)

    monkeypatch.setattr(Committer, "stage", counted_stage)
    monkeypatch.setattr(repository, "write_changes", counted)
    controller = DaemonSetController(store)
    controller.start()
    try:
        settle(controller)
    finally:
        controller.stop()
    assert len(daemon_pods(store)) == nodes
    assert sum(kinds.count("Pod") for kinds in commits) == nodes
    assert sum(kinds.count("Event") for kinds in commits) == nodes  # SuccessfulCreate
    # The first pod's commit, then the rest together (awaited one by one: a commit each, the first after 10 s).
    assert len([kinds for kinds in commits if "Pod" in kinds]) == 2
    status = ds_status(store)
    assert status["desiredNumberScheduled"] == nodes and status["currentNumberScheduled"] == nodes

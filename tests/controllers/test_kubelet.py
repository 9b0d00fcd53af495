"""The simulated kubelet (app/controllers/kubelet.py) over an in-memory ClusterStore on a clock the tests move:
bound pods start with the status a kubelet writes, run durations end them by restart policy, addresses are
unique per node, restarts rewrite nothing; and once through the live app with the scheduler, read back with the
real kubectl (a finished pod's node takes a pod that did not fit)."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.controllers.kubelet import KubeletController
from kss_sim.controllers.loop import ReconcileLoop
from kss_sim.controllers.node_lease import NodeLeaseController
from kss_sim.controllers.pod_status import (
    EXIT_CODE_ANNOTATION,
    RUN_DURATION_ANNOTATION,
    image_id,
    image_name,
    parse_go_duration,
)
from kss_sim.kube.objects import Obj
from kss_sim.main import create_app
from kss_sim.serve_cli import kubeconfig
from tests.cluster.factories import node, pod
from tests.conftest import KUBECTL, eventually, free_port

T0 = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class Clock:
    """A clock the test moves."""

    def __init__(self, start: datetime = T0) -> None:
        self.at = start

    def __call__(self) -> datetime:
        return self.at

    def advance(self, seconds: float) -> None:
        self.at += timedelta(seconds=seconds)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def mem_store(clock: Clock) -> ClusterStore:
    """An in-memory store on the test's clock, with the built-in namespaces."""
    store = ClusterStore(None, clock=clock)
    store.ensure_builtins()
    return store


@pytest.fixture
def kubelet(mem_store: ClusterStore, clock: Clock) -> Iterator[KubeletController]:
    """A kubelet over the store, started by the test (``kubelet.start()``), stopped after."""
    controller = KubeletController(mem_store, clock=clock)
    yield controller
    controller.stop()


def settle(controller: KubeletController) -> None:
    assert controller.wait_idle(), "the kubelet did not settle"


def tick(controller: KubeletController, clock: Clock, seconds: float) -> None:
    """Move the clock and let the kubelet act on its timers."""
    clock.advance(seconds)
    controller.poke()
    settle(controller)


def a_node(name: str = "n1", *, addresses: list[Obj] | None = None, pod_cidr: str | None = None, **kw: Any) -> Obj:
    body = node(name, **kw)
    if addresses is not None:
        body["status"]["addresses"] = addresses
    if pod_cidr:
        body["spec"] = {"podCIDR": pod_cidr, "podCIDRs": [pod_cidr]}
    return body


def a_pod(name: str, *, annotations: dict[str, str] | None = None, **kw: Any) -> Obj:
    body = pod(name, **kw)
    if annotations:
        body["metadata"]["annotations"] = annotations
    return body


def running(duration: str, *, restart: str = "Never", code: str | None = None) -> dict[str, Any]:
    annotations = {RUN_DURATION_ANNOTATION: duration}
    if code is not None:
        annotations[EXIT_CODE_ANNOTATION] = code
    return {"annotations": annotations, "restartPolicy": restart}


def status_of(store: ClusterStore, name: str) -> Obj:
    got = store.get("Pod", "default", name)
    assert got is not None
    return dict(got["status"])


def conditions(status: Obj) -> dict[str, Obj]:
    return {c["type"]: c for c in status.get("conditions") or []}


def rv_of(store: ClusterStore, name: str) -> str:
    got = store.get("Pod", "default", name)
    assert got is not None
    return str(got["metadata"]["resourceVersion"])


def pod_ips(store: ClusterStore, names: list[str]) -> list[str]:
    return [status_of(store, n)["podIP"] for n in names]


# ---------------------------------------------------------------------------------------------- starting


def test_a_bound_pod_runs_with_the_status_a_kubelet_writes(
    mem_store: ClusterStore, kubelet: KubeletController, clock: Clock
) -> None:
    mem_store.create(
        "Node",
        a_node(
            addresses=[{"type": "Hostname", "address": "n1"}, {"type": "InternalIP", "address": "192.168.5.7"}],
            pod_cidr="10.244.3.0/24",
        ),
    )
    body = a_pod("web", cpu="500m", limits={"cpu": "1", "memory": "64Mi"})
    body["spec"]["containers"].append({"name": "side", "image": "quay.io/org/tool@sha256:" + "ab" * 32})
    body["spec"]["containers"][0]["volumeMounts"] = [{"name": "cfg", "mountPath": "/etc/cfg", "readOnly": True}]
    body["spec"]["volumes"] = [{"name": "cfg", "emptyDir": {}}]
    body["spec"]["initContainers"] = [{"name": "setup", "image": "busybox"}]
    mem_store.create("Pod", body)
    qos = status_of(mem_store, "web")["qosClass"]
    kubelet.start()
    settle(kubelet)
    mem_store.bind_pod("default", "web", "n1")
    settle(kubelet)
    status = status_of(mem_store, "web")
    now = stamp(T0)
    assert status["phase"] == "Running"
    assert status["qosClass"] == qos == "Burstable"
    assert status["startTime"] == now
    assert status["observedGeneration"] == 1
    assert (status["hostIP"], status["hostIPs"]) == ("192.168.5.7", [{"ip": "192.168.5.7"}])
    assert (status["podIP"], status["podIPs"]) == ("10.244.3.2", [{"ip": "10.244.3.2"}])
    assert [c["type"] for c in status["conditions"]] == [
        "PodReadyToStartContainers",
        "Initialized",
        "Ready",
        "ContainersReady",
        "PodScheduled",
    ]
    for condition in status["conditions"]:
        assert condition["status"] == "True"
        assert condition["lastProbeTime"] is None
        assert condition["observedGeneration"] == 1
        assert condition["lastTransitionTime"] == now
    web, side = status["containerStatuses"]
    assert web["name"] == "c" and side["name"] == "side"
    assert web["image"] == "registry.k8s.io/pause:3.10"
    assert web["imageID"].startswith("registry.k8s.io/pause@sha256:") and len(web["imageID"].split(":")[-1]) == 64
    assert side["image"] == side["imageID"] == "quay.io/org/tool@sha256:" + "ab" * 32
    for container in (web, side):
        assert container["containerID"].startswith("containerd://")
        assert (container["ready"], container["started"], container["restartCount"]) == (True, True, 0)
        assert container["state"] == {"running": {"startedAt": now}}
        assert container["lastState"] == {}
    assert web["containerID"] != side["containerID"]
    # The memory request is defaulted from its limit, as kube-apiserver does.
    assert web["allocatedResources"] == {"cpu": "500m", "memory": "64Mi"}
    assert web["resources"] == {
        "requests": {"cpu": "500m", "memory": "64Mi"},
        "limits": {"cpu": "1", "memory": "64Mi"},
    }
    assert web["volumeMounts"] == [
        {"name": "cfg", "mountPath": "/etc/cfg", "readOnly": True, "recursiveReadOnly": "Disabled"}
    ]
    assert "resources" not in side
    (setup,) = status["initContainerStatuses"]
    assert setup["image"] == "docker.io/library/busybox:latest"
    assert (setup["ready"], setup["started"], setup["restartCount"]) == (True, False, 0)
    terminated = setup["state"]["terminated"]
    assert terminated == {
        "exitCode": 0,
        "reason": "Completed",
        "startedAt": now,
        "finishedAt": now,
        "containerID": setup["containerID"],
    }


def test_started_later_it_keeps_the_scheduling_time_and_stamps_its_own(
    mem_store: ClusterStore, kubelet: KubeletController, clock: Clock
) -> None:
    mem_store.create("Node", a_node())
    mem_store.create("Pod", a_pod("p"))
    mem_store.bind_pod("default", "p", "n1")
    clock.advance(7)
    kubelet.start()
    settle(kubelet)
    status = status_of(mem_store, "p")
    assert status["startTime"] == stamp(T0 + timedelta(seconds=7))
    by_type = conditions(status)
    assert by_type["PodScheduled"]["lastTransitionTime"] == stamp(T0)
    assert by_type["Ready"]["lastTransitionTime"] == stamp(T0 + timedelta(seconds=7))


def test_image_names_as_the_runtime_reports_them() -> None:
    assert image_name("nginx") == "docker.io/library/nginx:latest"
    assert image_name("nginx:1.27") == "docker.io/library/nginx:1.27"
    assert image_name("bitnami/redis") == "docker.io/bitnami/redis:latest"
    assert image_name("localhost:5000/app") == "localhost:5000/app:latest"
    assert image_name("ghcr.io/o/app:v1") == "ghcr.io/o/app:v1"
    assert image_id("nginx:1.27").startswith("docker.io/library/nginx@sha256:")
    assert image_id("nginx:1.27") == image_id("nginx:1.27") != image_id("nginx:1.28")


def test_pods_of_a_missing_node_wait_for_it(mem_store: ClusterStore, kubelet: KubeletController) -> None:
    mem_store.create("Pod", a_pod("p", node_name="later"))
    kubelet.start()
    settle(kubelet)
    assert status_of(mem_store, "p")["phase"] == "Pending"
    assert "podIP" not in status_of(mem_store, "p")
    mem_store.create("Node", a_node("later"))
    settle(kubelet)
    assert status_of(mem_store, "p")["phase"] == "Running"


def test_unbound_pods_are_left_alone(mem_store: ClusterStore, kubelet: KubeletController) -> None:
    mem_store.create("Node", a_node())
    mem_store.create("Pod", a_pod("unbound"))
    kubelet.start()
    settle(kubelet)
    assert status_of(mem_store, "unbound")["phase"] == "Pending"
    assert "startTime" not in status_of(mem_store, "unbound")


# ---------------------------------------------------------------------------------------------- addresses


def test_pod_ips_are_unique_on_a_node_and_freed_when_a_pod_goes(
    mem_store: ClusterStore, kubelet: KubeletController, clock: Clock
) -> None:
    mem_store.create("Node", a_node("n1", pod_cidr="10.244.1.0/24"))
    mem_store.create("Node", a_node("n2", pod_cidr="10.244.2.0/24"))
    kubelet.start()
    for i in range(3):
        mem_store.create("Pod", a_pod(f"a{i}", node_name="n1"))
        mem_store.create("Pod", a_pod(f"b{i}", node_name="n2"))
    settle(kubelet)
    assert pod_ips(mem_store, ["a0", "a1", "a2"]) == ["10.244.1.2", "10.244.1.3", "10.244.1.4"]
    assert pod_ips(mem_store, ["b0", "b1", "b2"]) == ["10.244.2.2", "10.244.2.3", "10.244.2.4"]
    mem_store.delete("Pod", "default", "a1")
    mem_store.create("Pod", a_pod("short", node_name="n1", **running("1s")))
    settle(kubelet)
    assert pod_ips(mem_store, ["short"]) == ["10.244.1.3"]
    tick(kubelet, clock, 1)
    assert status_of(mem_store, "short")["phase"] == "Succeeded"
    assert status_of(mem_store, "short")["podIP"] == "10.244.1.3"  # a finished pod keeps it in its status
    mem_store.create("Pod", a_pod("next", node_name="n1"))
    settle(kubelet)
    assert pod_ips(mem_store, ["next"]) == ["10.244.1.3"]  # ... but no longer holds it


def test_an_address_a_mirrored_pod_reports_moves_the_kubelets_pod_holding_it(
    mem_store: ClusterStore, kubelet: KubeletController
) -> None:
    mem_store.create("Node", a_node("n1", pod_cidr="10.244.1.0/24"))
    kubelet.start()
    for name in ("a", "b"):
        mem_store.create("Pod", a_pod(name, node_name="n1"))
    settle(kubelet)
    assert pod_ips(mem_store, ["a", "b"]) == ["10.244.1.2", "10.244.1.3"]
    # A pod mirrored from a source cluster: created bound (the kubelet starts it), then its source status
    # written, with the address its CNI gave it there, one the kubelet gave "a".
    mem_store.create("Pod", a_pod("mirrored", node_name="n1"))
    settle(kubelet)
    assert pod_ips(mem_store, ["mirrored"]) == ["10.244.1.4"]
    source_status = {**status_of(mem_store, "mirrored"), "podIP": "10.244.1.2", "podIPs": [{"ip": "10.244.1.2"}]}
    mem_store.merge_pod_status("default", "mirrored", source_status, resource_version=None, manager="kss-syncer")
    settle(kubelet)
    assert pod_ips(mem_store, ["mirrored", "a", "b"]) == ["10.244.1.2", "10.244.1.4", "10.244.1.3"]
    assert status_of(mem_store, "a")["podIPs"] == [{"ip": "10.244.1.4"}]
    mem_store.create("Pod", a_pod("c", node_name="n1"))
    settle(kubelet)
    assert pod_ips(mem_store, ["c"]) == ["10.244.1.5"]


def test_addresses_known_at_start_are_not_handed_out_again(mem_store: ClusterStore, clock: Clock) -> None:
    mem_store.create("Node", a_node(pod_cidr="10.244.1.0/24"))
    first = KubeletController(mem_store, clock=clock)
    first.start()
    for name in ("a", "b"):
        mem_store.create("Pod", a_pod(name, node_name="n1"))
    settle(first)
    first.stop()
    mem_store.create("Pod", a_pod("c", node_name="n1"))
    second = KubeletController(mem_store, clock=clock)
    second.start()
    try:
        settle(second)
        assert pod_ips(mem_store, ["a", "b", "c"]) == ["10.244.1.2", "10.244.1.3", "10.244.1.4"]
    finally:
        second.stop()


def test_host_network_pods_take_the_node_ips_of_both_families(
    mem_store: ClusterStore, kubelet: KubeletController
) -> None:
    addresses = [
        {"type": "ExternalIP", "address": "203.0.113.9"},
        {"type": "InternalIP", "address": "10.1.0.4"},
        {"type": "InternalIP", "address": "10.1.0.5"},
        {"type": "InternalIP", "address": "fd00::4"},
    ]
    mem_store.create("Node", a_node(addresses=addresses, pod_cidr="10.244.0.0/24"))
    mem_store.create("Pod", a_pod("host", node_name="n1", hostNetwork=True))
    mem_store.create("Pod", a_pod("plain", node_name="n1"))
    kubelet.start()
    settle(kubelet)
    host = status_of(mem_store, "host")
    assert host["hostIPs"] == host["podIPs"] == [{"ip": "10.1.0.4"}, {"ip": "fd00::4"}]
    assert host["hostIP"] == host["podIP"] == "10.1.0.4"
    plain = status_of(mem_store, "plain")
    assert plain["hostIP"] == "10.1.0.4"
    assert plain["podIP"] == "10.244.0.2"  # the host network pod holds no pod address


def test_nodes_without_addresses_or_pod_range_get_stable_made_up_ones(
    mem_store: ClusterStore, kubelet: KubeletController
) -> None:
    mem_store.create("Node", a_node("bare"))
    mem_store.create("Node", a_node("other"))
    for name, where in (("p1", "bare"), ("p2", "bare"), ("q", "other")):
        mem_store.create("Pod", a_pod(name, node_name=where))
    kubelet.start()
    settle(kubelet)
    p1, p2, q = (status_of(mem_store, n) for n in ("p1", "p2", "q"))
    assert p1["hostIP"] == p2["hostIP"] != q["hostIP"]
    assert ipaddress.ip_address(p1["hostIP"]) in ipaddress.ip_network("172.16.0.0/12")
    for status in (p1, p2, q):
        assert ipaddress.ip_address(status["podIP"]) in ipaddress.ip_network("10.0.0.0/8")
    assert p1["podIP"] != p2["podIP"]
    bare_range = ipaddress.ip_network(f"{p1['podIP']}/24", strict=False)
    assert ipaddress.ip_address(p2["podIP"]) in bare_range
    assert str(ipaddress.ip_address(p1["podIP"])).endswith(".2")
    # Stable: another kubelet over another store puts the same node at the same addresses.
    other_store = ClusterStore(None)
    other_store.create("Node", a_node("bare"))
    other_store.create("Pod", a_pod("p1", node_name="bare"))
    again = KubeletController(other_store)
    again.start()
    try:
        settle(again)
        assert (status_of(other_store, "p1")["hostIP"], status_of(other_store, "p1")["podIP"]) == (
            p1["hostIP"],
            p1["podIP"],
        )
    finally:
        again.stop()


def test_a_full_pod_range_keeps_pods_pending_with_the_sandbox_warning(
    mem_store: ClusterStore, kubelet: KubeletController
) -> None:
    mem_store.create("Node", a_node(pod_cidr="10.9.0.0/29"))  # .2 to .6: five pods
    kubelet.start()
    for i in range(6):
        mem_store.create("Pod", a_pod(f"p{i}", node_name="n1"))
    settle(kubelet)
    phases = [status_of(mem_store, f"p{i}")["phase"] for i in range(6)]
    assert phases == ["Running"] * 5 + ["Pending"]
    events, _ = mem_store.list("Event", "default")
    warnings = [e for e in events if e["involvedObject"]["name"] == "p5"]
    assert [(e["type"], e["reason"], e["source"]["component"]) for e in warnings] == [
        ("Warning", "FailedCreatePodSandBox", "kubelet")
    ]
    assert warnings[0]["message"].endswith("no IP addresses available in range set: 10.9.0.1-10.9.0.6")
    mem_store.delete("Pod", "default", "p2")
    settle(kubelet)
    assert status_of(mem_store, "p5")["phase"] == "Running"
    assert status_of(mem_store, "p5")["podIP"] == "10.9.0.4"


# ---------------------------------------------------------------------------------------------- run durations


def test_a_run_duration_ends_a_never_restarting_pod_succeeded_on_the_clock(
    mem_store: ClusterStore, kubelet: KubeletController, clock: Clock
) -> None:
    mem_store.create("Node", a_node())
    mem_store.create("Pod", a_pod("job", node_name="n1", **running("1m30s")))
    kubelet.start()
    settle(kubelet)
    tick(kubelet, clock, 89)
    assert status_of(mem_store, "job")["phase"] == "Running"
    tick(kubelet, clock, 1)
    status = status_of(mem_store, "job")
    assert status["phase"] == "Succeeded"
    (container,) = status["containerStatuses"]
    assert (container["ready"], container["started"], container["restartCount"]) == (False, False, 0)
    assert container["state"]["terminated"] == {
        "exitCode": 0,
        "reason": "Completed",
        "startedAt": stamp(T0),
        "finishedAt": stamp(T0 + timedelta(seconds=90)),
        "containerID": container["containerID"],
    }
    by_type = conditions(status)
    assert (by_type["Ready"]["status"], by_type["Ready"]["reason"]) == ("False", "PodCompleted")
    assert (by_type["ContainersReady"]["status"], by_type["ContainersReady"]["reason"]) == ("False", "PodCompleted")
    assert (by_type["Initialized"]["status"], by_type["Initialized"]["reason"]) == ("True", "PodCompleted")
    assert by_type["PodReadyToStartContainers"]["status"] == "False"
    assert by_type["Initialized"]["lastTransitionTime"] == stamp(T0)  # unchanged status: time kept
    assert by_type["Ready"]["lastTransitionTime"] == stamp(T0 + timedelta(seconds=90))
    rv = rv_of(mem_store, "job")
    tick(kubelet, clock, 600)
    assert rv_of(mem_store, "job") == rv  # a finished pod is never written again


def test_an_exit_code_fails_a_never_restarting_pod(
    mem_store: ClusterStore, kubelet: KubeletController, clock: Clock
) -> None:
    mem_store.create("Node", a_node())
    mem_store.create("Pod", a_pod("bad", node_name="n1", **running("10s", code="3")))
    kubelet.start()
    settle(kubelet)
    tick(kubelet, clock, 10)
    status = status_of(mem_store, "bad")
    assert status["phase"] == "Failed"
    terminated = status["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (3, "Error")
    by_type = conditions(status)
    assert (by_type["Ready"]["status"], by_type["Ready"]["reason"]) == ("False", "PodFailed")
    assert (by_type["ContainersReady"]["status"], by_type["ContainersReady"]["reason"]) == ("False", "PodFailed")


@pytest.mark.parametrize(
    ("restart", "code", "phase"),
    [("OnFailure", "0", "Succeeded"), ("OnFailure", "1", "Running"), ("Always", "0", "Running")],
)
def test_restart_policy_decides_between_an_end_and_a_restart(
    mem_store: ClusterStore, kubelet: KubeletController, clock: Clock, restart: str, code: str, phase: str
) -> None:
    mem_store.create("Node", a_node())
    mem_store.create("Pod", a_pod("p", node_name="n1", **running("30s", restart=restart, code=code)))
    kubelet.start()
    settle(kubelet)
    tick(kubelet, clock, 30)
    assert status_of(mem_store, "p")["phase"] == phase


def test_an_always_restarting_pod_restarts_its_containers_as_the_kubelet_does(
    mem_store: ClusterStore, kubelet: KubeletController, clock: Clock
) -> None:
    mem_store.create("Node", a_node())
    mem_store.create("Pod", a_pod("svc", node_name="n1", **running("20s", restart="Always", code="137")))
    kubelet.start()
    settle(kubelet)
    started = status_of(mem_store, "svc")
    first = started["containerStatuses"][0]
    tick(kubelet, clock, 20)
    status = status_of(mem_store, "svc")
    assert status["phase"] == "Running"
    assert status["podIP"] == started["podIP"]  # the sandbox, and its address, stay
    (container,) = status["containerStatuses"]
    restarted = stamp(T0 + timedelta(seconds=20))
    assert container["restartCount"] == 1
    assert container["state"] == {"running": {"startedAt": restarted}}
    assert container["containerID"] != first["containerID"]
    assert container["lastState"] == {
        "terminated": {
            "exitCode": 137,
            "reason": "Error",
            "startedAt": stamp(T0),
            "finishedAt": restarted,
            "containerID": first["containerID"],
        }
    }
    assert (container["ready"], container["started"]) == (True, True)
    assert conditions(status)["Ready"]["status"] == "True"
    assert status["startTime"] == stamp(T0)  # the pod's start, not the container's
    tick(kubelet, clock, 19)
    assert status_of(mem_store, "svc")["containerStatuses"][0]["restartCount"] == 1
    tick(kubelet, clock, 1)
    assert status_of(mem_store, "svc")["containerStatuses"][0]["restartCount"] == 2


def test_a_running_pod_is_not_rewritten_and_its_run_still_ends_after_a_restart(
    mem_store: ClusterStore, clock: Clock
) -> None:
    mem_store.create("Node", a_node())
    mem_store.create("Pod", a_pod("forever", node_name="n1"))
    mem_store.create("Pod", a_pod("timed", node_name="n1", **running("1m")))
    first = KubeletController(mem_store, clock=clock)
    first.start()
    settle(first)
    first.stop()
    versions = {name: rv_of(mem_store, name) for name in ("forever", "timed")}
    clock.advance(30)
    second = KubeletController(mem_store, clock=clock)
    second.start()
    try:
        settle(second)
        assert {name: rv_of(mem_store, name) for name in versions} == versions
        tick(second, clock, 29)
        assert status_of(mem_store, "timed")["phase"] == "Running"
        tick(second, clock, 1)
        assert status_of(mem_store, "timed")["phase"] == "Succeeded"
        assert rv_of(mem_store, "forever") == versions["forever"]
    finally:
        second.stop()


def test_a_run_past_its_end_while_stopped_ends_at_start(mem_store: ClusterStore, clock: Clock) -> None:
    mem_store.create("Node", a_node())
    mem_store.create("Pod", a_pod("timed", node_name="n1", **running("5s")))
    first = KubeletController(mem_store, clock=clock)
    first.start()
    settle(first)
    first.stop()
    clock.advance(3600)
    second = KubeletController(mem_store, clock=clock)
    second.start()
    try:
        settle(second)
        assert status_of(mem_store, "timed")["phase"] == "Succeeded"
    finally:
        second.stop()


def test_an_unreadable_annotation_is_one_warning_and_the_pod_runs(
    mem_store: ClusterStore, kubelet: KubeletController, clock: Clock
) -> None:
    mem_store.create("Node", a_node())
    mem_store.create("Pod", a_pod("odd", node_name="n1", **running("5 days", code="x")))
    kubelet.start()
    settle(kubelet)
    tick(kubelet, clock, 3600)
    assert status_of(mem_store, "odd")["phase"] == "Running"
    events, _ = mem_store.list("Event", "default")
    messages = sorted(e["message"] for e in events if e["reason"] == "InvalidAnnotation")
    assert messages == [
        'annotation kss.sigs.k8s.io/exit-code: "x" is not a 32-bit integer; the containers exit with 0',
        'annotation kss.sigs.k8s.io/run-duration: time: unknown unit " days" in duration "5 days"; the pod runs '
        "until it is deleted",
    ]
    assert all(e["type"] == "Warning" and e["source"]["component"] == "kubelet" for e in events)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("0", 0), ("30s", 30), ("1h30m", 5400), ("1.5h", 5400), ("300ms", 0.3), ("2m3.5s", 123.5), ("+1m", 60)],
)
def test_go_durations(text: str, seconds: float) -> None:
    assert parse_go_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("30", 'time: missing unit in duration "30"'),
        ("1d", 'time: unknown unit "d" in duration "1d"'),
        ("", 'time: invalid duration ""'),
        ("s", 'time: invalid duration "s"'),
        ("-5s", 'negative duration "-5s": a run cannot end before it starts'),
    ],
)
def test_bad_go_durations(text: str, message: str) -> None:
    with pytest.raises(ValueError) as caught:
        parse_go_duration(text)
    assert str(caught.value) == message


# ---------------------------------------------------------------------------------------------- graceful deletion


def test_a_pod_deleted_gracefully_holds_its_address_and_ends_at_its_deletion_timestamp(
    mem_store: ClusterStore, kubelet: KubeletController, clock: Clock
) -> None:
    mem_store.create("Node", a_node("n1", pod_cidr="10.244.1.0/24"))
    kubelet.start()
    mem_store.create("Pod", a_pod("web", node_name="n1", terminationGracePeriodSeconds=20))
    settle(kubelet)
    mem_store.delete("Pod", "default", "web", options=DeleteOptions(graceful=True))
    settle(kubelet)
    tick(kubelet, clock, 10)
    mem_store.create("Pod", a_pod("other", node_name="n1"))
    settle(kubelet)
    assert pod_ips(mem_store, ["web", "other"]) == ["10.244.1.2", "10.244.1.3"]  # still its address
    tick(kubelet, clock, 9)
    assert mem_store.get("Pod", "default", "web") is not None
    tick(kubelet, clock, 1)
    assert mem_store.get("Pod", "default", "web") is None
    # Shortened by a later delete: it ends then; a pod held by a finalizer stays, with no grace period left.
    body = a_pod("held", node_name="n1")
    body["metadata"]["finalizers"] = ["example.com/keep"]
    mem_store.create("Pod", body)
    mem_store.create("Pod", a_pod("shortened", node_name="n1"))
    settle(kubelet)
    for name in ("held", "shortened"):
        mem_store.delete("Pod", "default", name, options=DeleteOptions(graceful=True))
    mem_store.delete("Pod", "default", "shortened", options=DeleteOptions(grace_period_seconds=2, graceful=True))
    settle(kubelet)
    tick(kubelet, clock, 2)
    assert mem_store.get("Pod", "default", "shortened") is None
    tick(kubelet, clock, 28)
    held = mem_store.get("Pod", "default", "held")
    assert held is not None and held["metadata"]["deletionGracePeriodSeconds"] == 0


def test_a_restarted_kubelet_ends_the_grace_periods_that_ran_meanwhile(mem_store: ClusterStore, clock: Clock) -> None:
    mem_store.create("Node", a_node("n1"))
    mem_store.create("Pod", a_pod("web", node_name="n1", terminationGracePeriodSeconds=5))
    mem_store.delete("Pod", "default", "web", options=DeleteOptions(graceful=True))
    clock.advance(6)
    kubelet = KubeletController(mem_store, clock=clock)
    kubelet.start()
    try:
        settle(kubelet)
        assert mem_store.get("Pod", "default", "web") is None
    finally:
        kubelet.stop()


def test_at_the_end_of_its_grace_period_a_pod_is_written_failed_its_containers_killed_then_deleted(
    mem_store: ClusterStore, kubelet: KubeletController, clock: Clock
) -> None:
    mem_store.create("Node", a_node("n1"))
    kubelet.start()
    seen: list[tuple[str, str]] = []
    mem_store.add_listener(lambda event, kind, obj: seen.append((event, obj["status"].get("phase"))), ["Pod"])
    for name in ("web", "held"):
        body = a_pod(name, node_name="n1", terminationGracePeriodSeconds=5)
        if name == "held":
            body["metadata"]["finalizers"] = ["example.com/keep"]
        mem_store.create("Pod", body)
    settle(kubelet)
    for name in ("web", "held"):
        mem_store.delete("Pod", "default", name, options=DeleteOptions(graceful=True))
    settle(kubelet)
    tick(kubelet, clock, 4)
    assert status_of(mem_store, "web")["phase"] == "Running"  # its containers still stopping
    tick(kubelet, clock, 1)
    assert mem_store.get("Pod", "default", "web") is None
    held = status_of(mem_store, "held")
    assert held["phase"] == "Failed"
    (container,) = held["containerStatuses"]
    assert container["state"]["terminated"]["exitCode"] == 137 and container["ready"] is False
    assert conditions(held)["Ready"]["status"] == "False"
    # web went Failed before it went away, as the status manager's TerminatePod writes it.
    assert seen.index(("MODIFIED", "Failed")) < seen.index(("DELETED", "Failed"))


def test_a_failed_node_leaves_its_pods_terminating_until_it_is_ready_again(
    mem_store: ClusterStore, kubelet: KubeletController, clock: Clock
) -> None:
    mem_store.create("Node", a_node("n1"))
    kubelet.start()
    mem_store.create("Pod", a_pod("web", node_name="n1", terminationGracePeriodSeconds=5))
    settle(kubelet)
    ready = {"type": "Ready", "status": "Unknown", "reason": "NodeStatusUnknown"}
    mem_store.patch("Node", None, "n1", {"status": {"conditions": [ready]}}, "strategic", subresource="status")
    mem_store.delete("Pod", "default", "web", options=DeleteOptions(graceful=True))
    settle(kubelet)
    tick(kubelet, clock, 60)
    still = mem_store.get("Pod", "default", "web")
    assert still is not None and still["status"]["phase"] == "Running" and still["metadata"]["deletionTimestamp"]

    ready = {"type": "Ready", "status": "True", "reason": "KubeletReady"}
    mem_store.patch("Node", None, "n1", {"status": {"conditions": [ready]}}, "strategic", subresource="status")
    settle(kubelet)
    assert mem_store.get("Pod", "default", "web") is None


# ---------------------------------------------------------------------------------------------- readiness gates


def test_readiness_gates_hold_ready_until_their_condition_is_true(
    mem_store: ClusterStore, kubelet: KubeletController
) -> None:
    mem_store.create("Node", a_node())
    mem_store.create("Pod", a_pod("gated", node_name="n1", readinessGates=[{"conditionType": "example.com/lb"}]))
    kubelet.start()
    settle(kubelet)
    ready = conditions(status_of(mem_store, "gated"))["Ready"]
    assert (ready["status"], ready["reason"], ready["message"]) == (
        "False",
        "ReadinessGatesNotReady",
        'corresponding condition of pod readiness gate "example.com/lb" does not exist.',
    )
    assert conditions(status_of(mem_store, "gated"))["ContainersReady"]["status"] == "True"
    current = status_of(mem_store, "gated")
    gate = {"type": "example.com/lb", "status": "True", "lastProbeTime": None, "lastTransitionTime": stamp(T0)}
    mem_store.patch(
        "Pod", "default", "gated", {"status": {"conditions": [gate, *current["conditions"]]}}, "merge",
        subresource="status",
    )  # fmt: skip
    settle(kubelet)
    after = status_of(mem_store, "gated")
    assert conditions(after)["Ready"]["status"] == "True"
    assert after["conditions"][0]["type"] == "example.com/lb"  # others' conditions first, kept


# ---------------------------------------------------------------------------------------------- the setting


def test_kss_kubelet_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().kubelet is True
    monkeypatch.setenv("KSS_KUBELET", "false")
    assert Settings().kubelet is False


# ---------------------------------------------------------------------------------------------- the live app


def _kubectl(config_path: Path, *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        [KUBECTL, "--kubeconfig", str(config_path), *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=60,
        env={**os.environ, "KUBECACHEDIR": str(config_path.parent / "kubecache")},
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")
def test_live_app_pods_run_finish_and_free_their_node_with_kubectl(tmp_path: Path) -> None:
    # The app's scheduler on, its controllers off: the test runs the kubelet and the node leases around the app's
    # store, as the controller manager will.
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", controllers=False, kubelet=False))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    controllers: list[ReconcileLoop[Any]] = [KubeletController(app.state.store), NodeLeaseController(app.state.store)]
    for controller in controllers:
        controller.start()
    try:
        config_path = tmp_path / "kubeconfig"
        config_path.write_text(kubeconfig(f"http://127.0.0.1:{port}"))
        manifests = [
            {
                **node("worker", cpu="2", memory="4Gi"),
                "spec": {"podCIDR": "10.244.7.0/24", "podCIDRs": ["10.244.7.0/24"]},
            },
            # Long enough to outlast the kubectl calls below on a loaded machine: the second pod must find the
            # node still full.
            a_pod("batch", cpu="1500m", **running("15s")),
        ]
        _kubectl(config_path, "apply", "-f", "-", stdin=input_text(manifests))

        def phase(name: str) -> str:
            return _kubectl(config_path, "get", "pod", name, "-o", "jsonpath={.status.phase}")

        eventually(lambda: phase("batch") == "Running", what="the batch pod to run")
        wide = _kubectl(config_path, "get", "pods", "-o", "wide").splitlines()
        header, row = wide[0].split(), wide[1].split()
        assert header[:7] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE"]
        assert (row[0], row[1], row[2], row[5], row[6]) == ("batch", "1/1", "Running", "10.244.7.2", "worker")

        describe = _kubectl(config_path, "describe", "node", "worker")
        assert "Failed to get lease" not in describe
        lease = describe.split("Lease:", 1)[1].splitlines()
        assert lease[1].split() == ["HolderIdentity:", "worker"]
        assert lease[3].split()[0] == "RenewTime:" and "<unset>" not in lease[3]

        _kubectl(config_path, "apply", "-f", "-", stdin=input_text([a_pod("waiting", cpu="1")]))
        eventually(
            lambda: "Insufficient cpu" in _kubectl(config_path, "describe", "pod", "waiting"),
            what="the second pod to be refused",
        )
        assert phase("waiting") == "Pending"
        eventually(lambda: phase("batch") == "Succeeded", timeout=60.0, what="the batch pod to finish")
        eventually(lambda: phase("waiting") == "Running", what="the second pod to take the freed node")
        got = json.loads(_kubectl(config_path, "get", "pod", "waiting", "-o", "json"))
        assert got["spec"]["nodeName"] == "worker"
        assert got["status"]["podIP"] == "10.244.7.2"  # the finished pod's address, free again
        completed = _kubectl(config_path, "get", "pod", "batch").splitlines()[1].split()
        assert completed[1:3] == ["0/1", "Completed"]
    finally:
        for controller in controllers:
            controller.stop()
        server.should_exit = True
        thread.join(timeout=30)


def input_text(objects: list[Obj]) -> str:
    """A kubectl List of ``objects`` as JSON (kubectl reads it on stdin)."""
    return json.dumps({"apiVersion": "v1", "kind": "List", "items": objects})

"""Extended resources backed by DRA (DRAExtendedResource): which class serves a name, the claim's requests, what a
run does with them at v1.36 (gate on) and v1.35 (off), and the claim of an earlier attempt or a failed binding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kss_sim.kube.versions import kube_version
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.dra import dra_manager as dm
from kss_sim.scheduler.dra.dra_manager import dra_manager_for
from kss_sim.scheduler.dra.extended_resources import (
    DEVICE_CLASS_PREFIX,
    classes_by_resource_name,
    is_dra_extended_resource_name,
    requests_and_mappings,
)
from kss_sim.scheduler.framework import Code, CycleState
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.dynamic_resources import DynamicResources
from kss_sim.simulation.runner import ScenarioRun

FAMILY = Path(__file__).resolve().parents[2] / "golden" / "v1.36" / "draextended"


def _class(name: str, resource: str | None = None, created: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if created is not None:
        meta["creationTimestamp"] = created
    spec: dict[str, Any] = {"extendedResourceName": resource} if resource else {}
    return {"kind": "DeviceClass", "metadata": meta, "spec": spec}


def test_every_class_serves_its_implicit_name_and_the_oldest_its_explicit_one() -> None:
    classes = [
        _class("b", "example.com/gpu", "2025-01-01T00:00:00Z"),
        _class("a", "example.com/gpu", "2025-01-02T00:00:00Z"),
        _class("c", "example.com/fpga", "2025-01-01T00:00:00Z"),
        _class("d", "example.com/fpga", "2025-01-01T00:00:00Z"),
        _class("e"),
    ]
    mapping = classes_by_resource_name(classes)
    assert mapping["example.com/gpu"]["metadata"]["name"] == "b"  # the older one
    assert mapping["example.com/fpga"]["metadata"]["name"] == "c"  # same age: the first by name
    assert {n for n in mapping if n.startswith(DEVICE_CLASS_PREFIX)} == {DEVICE_CLASS_PREFIX + c for c in "abcde"}
    assert is_dra_extended_resource_name(DEVICE_CLASS_PREFIX + "e")
    assert is_dra_extended_resource_name("example.com/gpu")
    assert not is_dra_extended_resource_name("cpu")


def _container(name: str, gpus: int, *, sidecar: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {
        "name": name,
        "resources": {"requests": {"cpu": "100m", "example.com/gpu": str(gpus), "memory": "1Mi"}},
    }
    if sidecar:
        container["restartPolicy"] = "Always"
    return container


def test_requests_per_container_init_containers_reuse_the_devices_of_later_ones() -> None:
    pod = {
        "spec": {
            "initContainers": [_container("init-a", 1), _container("init-b", 3), _container("side", 1, sidecar=True)],
            "containers": [_container("main", 2)],
        }
    }
    classes = classes_by_resource_name([_class("gpu.example.com", "example.com/gpu")])
    requests, mappings = requests_and_mappings(pod, ["example.com/gpu"], classes)
    # The sidecar (index 2) and the main container (3) hold theirs; init-a runs on the sidecar's device, init-b on
    # the sidecar's and main's (1 + 2 = 3): neither needs a request of its own. A request is named after the
    # container's index and the resource's position (1) among the container's sorted request names.
    assert [(r["name"], r["exactly"]["count"], r["exactly"]["deviceClassName"]) for r in requests] == [
        ("container-2-request-1", 1, "gpu.example.com"),
        ("container-3-request-1", 2, "gpu.example.com"),
    ]
    assert {(m["containerName"], m["requestName"]) for m in mappings} == {
        ("side", "container-2-request-1"),
        ("main", "container-3-request-1"),
        ("init-a", "container-2-request-1"),
        ("init-b", "container-2-request-1"),
        ("init-b", "container-3-request-1"),
    }


def test_a_short_lived_init_container_asking_more_gets_its_own_request_shared_by_the_others() -> None:
    pod = {"spec": {"initContainers": [_container("i0", 2), _container("i1", 4)], "containers": [_container("m", 1)]}}
    classes = classes_by_resource_name([_class("gpu.example.com", "example.com/gpu")])
    requests, mappings = requests_and_mappings(pod, ["example.com/gpu"], classes)
    # The largest of the init containers' extra requests (i1's: 4 - 1), and the main container's, by name...
    assert [(r["name"], r["exactly"]["count"]) for r in requests] == [
        ("container-1-request-1", 3),
        ("container-2-request-1", 1),
    ]
    # ...the first every init container is mapped to, besides the main container's devices they reuse.
    assert {(m["containerName"], m["requestName"]) for m in mappings} == {
        ("m", "container-2-request-1"),
        ("i0", "container-2-request-1"),
        ("i0", "container-1-request-1"),
        ("i1", "container-2-request-1"),
        ("i1", "container-1-request-1"),
    }


def _run(name: str, version: str, gates: dict[str, bool] | None = None) -> tuple[ScenarioRun, list[Any]]:
    scenario = json.loads((FAMILY / f"{name}.scenario.json").read_text())
    run = ScenarioRun(scenario, record=False, kube_version=kube_version(version), feature_gates=gates)
    return run, [attempt.bound_to for attempt, _ in run.run()]


def test_v1_36_allocates_the_class_s_devices_through_a_claim_made_for_the_pod() -> None:
    run, bound = _run("draextended-000-named-by-class", "1.36")
    assert bound == ["node-0", "node-1", None]
    claims = {c["metadata"]["name"]: c for c in run.cluster.list_objects(dm.RESOURCE_CLAIM)}
    assert len(claims) == 2
    for name, claim in claims.items():
        meta = claim["metadata"]
        assert name.startswith(meta["generateName"])
        assert meta["annotations"] == {"resource.kubernetes.io/extended-resource-claim": "true"}
        pod_name = meta["ownerReferences"][0]["name"]
        assert [r["name"] for r in claim["status"]["reservedFor"]] == [pod_name]
        assert claim["spec"]["devices"]["requests"][0]["name"] == "container-0-request-1"
    devices = {
        (c["metadata"]["ownerReferences"][0]["name"], r["pool"], r["device"])
        for c in claims.values()
        for r in c["status"]["allocation"]["devices"]["results"]
    }
    assert devices == {("gpu-0", "node-0", "gpu-0"), ("gpu-1", "node-1", "gpu-0"), ("gpu-1", "node-1", "gpu-1")}
    # Each bound pod's status names its claim and the request serving its container's GPUs.
    for node_name in ("node-0", "node-1"):
        node_info = run.scheduler.snapshot.get(node_name)
        assert node_info is not None
        (pod,) = node_info.pods
        status = pod.pod["status"]["extendedResourceClaimStatus"]
        assert claims[status["resourceClaimName"]]["metadata"]["ownerReferences"][0]["uid"] == pod.uid
        assert status["requestMappings"] == [
            {"containerName": "c", "resourceName": "example.com/gpu", "requestName": "container-0-request-1"}
        ]


def test_a_device_plugin_node_is_counted_as_before_without_a_claim() -> None:
    run, bound = _run("draextended-002-device-plugin-node", "1.36")
    assert bound == ["node-0", "node-1", None]
    owners = [c["metadata"]["ownerReferences"][0]["name"] for c in run.cluster.list_objects(dm.RESOURCE_CLAIM)]
    assert owners == ["gpu-0"]  # gpu-1 got node-1's device-plugin GPU


@pytest.mark.parametrize(("version", "gates"), [("1.35", None), ("1.36", {"DRAExtendedResource": False})])
def test_without_the_gate_the_resource_is_a_node_s_allocatable_only(
    version: str, gates: dict[str, bool] | None
) -> None:
    run, bound = _run("draextended-000-named-by-class", version, gates)
    assert bound == [None, None, None]
    assert not run.cluster.list_objects(dm.RESOURCE_CLAIM)


def test_an_earlier_attempt_s_claim_is_deleted_in_post_filter_and_its_device_goes_to_the_next_pod() -> None:
    run, bound = _run("draextended-008-earlier-claim-allocated", "1.36")
    # The claim holding node-0's only GPU makes gpu-0 fit nowhere; PostFilter deletes it, and gpu-1 gets the GPU.
    assert bound == [None, "node-0"]
    (claim,) = run.cluster.list_objects(dm.RESOURCE_CLAIM)
    assert claim["metadata"]["ownerReferences"][0]["name"] == "gpu-1"
    assert [(r["pool"], r["device"]) for r in claim["status"]["allocation"]["devices"]["results"]] == [
        ("node-0", "gpu-0")
    ]


def test_an_earlier_attempt_s_claim_without_requests_is_reused_under_its_name() -> None:
    run, bound = _run("draextended-010-earlier-claim-reused", "1.36")
    assert bound == ["node-1", "node-0"]
    claim = run.cluster.get_object(dm.RESOURCE_CLAIM, "default", "gpu-0-extended-resources-x7k2q")
    assert claim is not None
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["gpu-0"]
    assert len(claim["status"]["allocation"]["devices"]["results"]) == 2
    node_info = run.scheduler.snapshot.get("node-1")
    assert node_info is not None
    (pod,) = node_info.pods
    assert pod.pod["status"]["extendedResourceClaimStatus"]["resourceClaimName"] == "gpu-0-extended-resources-x7k2q"


def _through_reserve(run: ScenarioRun, pod: dict[str, Any]) -> tuple[Any, CycleState, PodInfo]:
    plugin = run.frameworks["default-scheduler"].plugins_by_name["DynamicResources"]
    assert isinstance(plugin, DynamicResources)
    state, info = CycleState(), PodInfo(pod)
    nodes = run.scheduler.snapshot.node_info_list
    assert plugin.pre_filter(state, info, nodes)[1].is_success()
    node = run.scheduler.snapshot.get("node-0")
    assert node is not None
    assert plugin.filter(state, info, node).is_success()
    assert plugin.reserve(state, info, "node-0").is_success()
    return plugin, state, info


def test_unreserve_after_a_failed_pre_bind_deletes_the_claim_pre_bind_created(monkeypatch: pytest.MonkeyPatch) -> None:
    scenario = json.loads((FAMILY / "draextended-000-named-by-class.scenario.json").read_text())
    pod = scenario["pending"][0]
    run = ScenarioRun(scenario, record=False, kube_version=kube_version("1.36"))
    plugin, state, info = _through_reserve(run, pod)

    def refused(*_: Any) -> dict[str, Any]:
        raise RuntimeError("add allocation and reservation to claim: refused")

    monkeypatch.setattr(plugin, "bind_claim", refused)
    status = plugin.pre_bind(state, info, "node-0")
    assert (status.code, status.message()) == (Code.ERROR, "add allocation and reservation to claim: refused")
    (created,) = run.cluster.list_objects(dm.RESOURCE_CLAIM)
    assert created["metadata"]["name"].startswith("gpu-0-extended-resources-")
    plugin.unreserve(state, info, "node-0")
    assert run.cluster.list_objects(dm.RESOURCE_CLAIM) == []
    assert not dra_manager_for(run.cluster).in_flight


def test_unreserve_before_pre_bind_only_drops_the_allocation_in_flight() -> None:
    scenario = json.loads((FAMILY / "draextended-000-named-by-class.scenario.json").read_text())
    run = ScenarioRun(scenario, record=False, kube_version=kube_version("1.36"))
    plugin, state, info = _through_reserve(run, scenario["pending"][0])
    manager = dra_manager_for(run.cluster)
    assert manager.in_flight
    plugin.unreserve(state, info, "node-0")
    assert not manager.in_flight
    assert run.cluster.list_objects(dm.RESOURCE_CLAIM) == []


def test_the_manager_s_mapping_follows_the_device_classes_it_is_told_of() -> None:
    """Built once and kept while no DeviceClass changes; every put or delete of one rebuilds it."""
    cluster = ClusterObjects()
    manager = dm.DraManager(cluster)
    assert manager.extended_resource_classes() == {}
    cluster.put_object(dm.DEVICE_CLASS, _class("gpu", "example.com/gpu"))
    first = manager.extended_resource_classes()
    assert set(first) == {DEVICE_CLASS_PREFIX + "gpu", "example.com/gpu"}
    assert manager.extended_resource_classes() is first  # kept, not built per pod
    cluster.put_object(dm.DEVICE_CLASS, _class("gpu", "example.com/tpu"))
    assert set(manager.extended_resource_classes()) == {DEVICE_CLASS_PREFIX + "gpu", "example.com/tpu"}
    cluster.delete_object(dm.DEVICE_CLASS, _class("gpu"))
    assert manager.extended_resource_classes() == {}

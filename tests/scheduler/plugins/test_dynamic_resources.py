"""DynamicResources as kube-scheduler v1.35 runs it: claims looked up (PreEnqueue, PreFilter), allocated claims
restricting nodes, the allocator picking devices, shared claims, Reserve/Unreserve, PostFilter's deallocation, the
firstAvailable score, and PreBind's writes (offline: rule R6-DRA; preemption victims: R5-DRA). Pods without claims
skip it; its args."""

from __future__ import annotations

import copy
from typing import Any

from kss_sim.kube.versions import kube_version
from kss_sim.scheduler.dra.dra_manager import dra_manager_for
from kss_sim.scheduler.framework import Code, CycleState, NodeScore, NodeToStatus
from kss_sim.scheduler.plugins.dynamic_resources import DynamicResources
from kss_sim.simulation.runner import ScenarioRun, run_scenario
from tests.scheduler.factories import make_handle, make_node, make_pod, node_info, pod_info

DRIVER = "gpu.example.com"


def _plugin() -> DynamicResources:
    handle = make_handle(nodes=[make_node(name="a"), make_node(name="b")])
    return DynamicResources(handle, DynamicResources.defaulted_args({}))


# --- scenario builders (stored form, as the golden dra family writes objects) ---------------------------------------
def _node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **labels}},
        "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}},
    }


def _device_class(name: str = "gpu.example.com", expression: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {}
    if expression is not None:
        spec["selectors"] = [{"cel": {"expression": expression}}]
    return {"metadata": {"name": name, "uid": f"uid-dc-{name}", "resourceVersion": "1"}, "spec": spec}


def _slice(node: str, devices: list[tuple[str, str]]) -> dict[str, Any]:
    """One pool per node, its devices (name, model)."""
    return {
        "metadata": {"name": f"{node}-gpus", "uid": f"uid-rs-{node}", "resourceVersion": "1"},
        "spec": {
            "driver": DRIVER,
            "nodeName": node,
            "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": n, "attributes": {"model": {"string": m}}} for n, m in devices],
        },
    }


def _claim(name: str, *, count: int = 1, selector: str | None = None, first_available: bool = False) -> dict[str, Any]:
    exactly: dict[str, Any] = {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": count}
    if selector is not None:
        exactly["selectors"] = [{"cel": {"expression": selector}}]
    request: dict[str, Any] = {"name": "gpu", "exactly": exactly}
    if first_available:
        request = {
            "name": "gpu",
            "firstAvailable": [
                {"name": "big", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2},
                {"name": "small", "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1},
            ],
        }
    return {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-rc-{name}", "resourceVersion": "1"},
        "spec": {"devices": {"requests": [request]}},
    }


def _allocated(claim: dict[str, Any], node: str, devices: list[str], *reserved: str) -> dict[str, Any]:
    out = copy.deepcopy(claim)
    out["status"] = {
        "allocation": {
            "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": node, "device": d} for d in devices]},
            "nodeSelector": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]
            },
        }
    }
    if reserved:
        out["status"]["reservedFor"] = [{"resource": "pods", "name": p, "uid": f"uid-{p}"} for p in reserved]
    return out


def _pod(name: str, *claims: str, node: str | None = None, priority: int = 0, cpu: str = "1") -> dict[str, Any]:
    pod: dict[str, Any] = {
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": {
            "priority": priority,
            "containers": [
                {
                    "name": "c",
                    "image": "x",
                    "resources": {"requests": {"cpu": cpu}, "claims": [{"name": c} for c in claims]},
                }
            ],
            "resourceClaims": [{"name": c, "resourceClaimName": c} for c in claims],
        },
    }
    if node is not None:
        pod["spec"]["nodeName"] = node
        pod["status"] = {"phase": "Running", "startTime": "2025-01-12T13:00:00Z"}
    return pod


def _scenario(**keys: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"nodes": [_node("node-a"), _node("node-b")], "pods": [], "pending": []}
    base.update(keys)
    return base


def _entries(scenario: dict[str, Any]) -> list[dict[str, Any]]:
    results: list[dict[str, Any]] = run_scenario(scenario, "full")["results"]
    return results


# --- pods without claims -------------------------------------------------------------------------------------------
def test_pod_without_claims_skips_prefilter_passes_filter_and_scores_zero() -> None:
    plugin = _plugin()
    state = CycleState()
    pod = pod_info(make_pod())
    nodes = plugin.handle.snapshot.node_info_list
    result, st = plugin.pre_filter(state, pod, nodes)
    assert result is None and st.code == Code.SKIP
    assert plugin.filter(state, pod, node_info(plugin.handle, "a")).code == Code.SUCCESS
    scores, st = plugin.score_nodes(state, pod, nodes)
    assert st.is_success() and scores == [0, 0]
    ns = [NodeScore("a", 0), NodeScore("b", 0)]
    assert plugin.normalize_score(state, pod, ns).is_success()
    assert [n.score for n in ns] == [0, 0]
    assert plugin.reserve(state, pod, "a").code == Code.SUCCESS
    assert plugin.pre_bind_pre_flight(state, pod, "a").code == Code.SKIP


def test_post_filter_without_claims_has_no_new_claims_to_deallocate() -> None:
    plugin = _plugin()
    state = CycleState()
    pod = pod_info(make_pod())
    plugin.pre_filter(state, pod, plugin.handle.snapshot.node_info_list)
    result, st = plugin.post_filter(state, pod, NodeToStatus())
    assert result is None
    assert (st.code, st.message()) == (Code.UNSCHEDULABLE, "no new claims to deallocate")


def test_post_filter_when_prefilter_never_ran_is_a_not_found_error() -> None:
    plugin = _plugin()
    _, st = plugin.post_filter(CycleState(), pod_info(make_pod()), NodeToStatus())
    assert (st.code, st.message()) == (Code.ERROR, "not found")


def test_args_default_filter_timeout_and_forbid_binding_timeout() -> None:
    # v1.36, the default, has DRADeviceBindingConditions and DRAResourceClaimDeviceStatus beta and on: bindingTimeout
    # is defaulted and allowed there; v1.35 has them off.
    assert DynamicResources.defaulted_args({}) == {"filterTimeout": "10s", "bindingTimeout": "10m0s"}
    assert DynamicResources.validate_args({"filterTimeout": "10s", "bindingTimeout": "5m"}) == []
    at_v1_35 = kube_version("1.35").effective_gates()
    assert DynamicResources.defaulted_args_under({}, at_v1_35) == {"filterTimeout": "10s"}
    assert DynamicResources.validate_args({"filterTimeout": "1m30s"}) == []
    assert DynamicResources.validate_args({"filterTimeout": "0"}) == []
    assert DynamicResources.validate_args({"filterTimeout": "-1s"}) == [
        ("filterTimeout", 'Invalid value: "-1s": must be zero or positive')
    ]
    assert DynamicResources.validate_args_under({"filterTimeout": "10s", "bindingTimeout": "5m"}, at_v1_35) == [
        (
            "bindingTimeout",
            "Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled",
        )
    ]
    assert [p for p, _ in DynamicResources.validate_args({"filterTimeout": "ten"})] == ["filterTimeout"]


# --- claims looked up ----------------------------------------------------------------------------------------------
def test_missing_claim_keeps_the_pod_out_of_scheduling_with_upstreams_message() -> None:
    (entry,) = _entries(_scenario(deviceClasses=[_device_class()], pending=[_pod("p", "c")]))
    assert entry["preEnqueue"] == 'DynamicResources: could not find ResourceClaim "default/c"'


def test_template_claim_not_generated_yet_and_claim_of_another_pod() -> None:
    pod = _pod("p")
    pod["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "t"}]
    (entry,) = _entries(_scenario(pending=[pod]))
    assert entry["preEnqueue"] == 'DynamicResources: pod "default/p": ResourceClaim not created yet'

    generated = _claim("p-gpu-x7k2q")
    generated["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "other", "uid": "uid-other", "controller": True}
    ]
    pod["status"] = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu-x7k2q"}]}
    (entry,) = _entries(_scenario(resourceClaims=[generated], pending=[pod]))
    assert entry["preEnqueue"] == (
        "DynamicResources: ResourceClaim default/p-gpu-x7k2q was not created for pod default/p (pod is not owner)"
    )


def test_unknown_device_class_is_unresolvable_in_prefilter() -> None:
    (entry,) = _entries(_scenario(resourceClaims=[_claim("c")], pending=[_pod("p", "c")]))
    assert entry["prefilter"]["DynamicResources"] == "request gpu: device class gpu.example.com does not exist"
    assert entry["boundTo"] is None
    assert entry["fitError"].startswith("0/2 nodes are available: request gpu: device class gpu.example.com does not")


# --- allocated claims ----------------------------------------------------------------------------------------------
def test_allocated_claim_restricts_nodes_and_the_pod_joins_reserved_for() -> None:
    claim = _allocated(_claim("shared"), "node-b", ["gpu-0"], "first")
    scenario = _scenario(
        deviceClasses=[_device_class()],
        resourceSlices=[_slice("node-b", [("gpu-0", "a100")])],
        resourceClaims=[claim],
        pods=[_pod("first", "shared", node="node-b")],
        pending=[_pod("second", "shared")],
    )
    run = ScenarioRun(scenario)
    ((att, _),) = run.run()
    assert att.bound_to == "node-b"
    assert att.filter["node-a"]["DynamicResources"] == "resourceclaim not available on the node"
    assert att.filter["node-b"]["DynamicResources"] == "passed"
    stored = run.cluster.get_object("ResourceClaim", "default", "shared")
    assert stored is not None
    assert [r["name"] for r in stored["status"]["reservedFor"]] == ["first", "second"]
    assert stored["status"]["allocation"] == claim["status"]["allocation"]
    (entry,) = _entries(scenario)
    assert entry["allocations"] == {"default/shared": "reserved"}


def test_post_filter_deallocates_an_unreserved_claim_that_is_unavailable_where_the_pod_could_go() -> None:
    claim = _allocated(_claim("c"), "node-a", ["gpu-0"])
    tainted = _node("node-a")
    tainted["spec"] = {"taints": [{"key": "busy", "value": "yes", "effect": "NoSchedule"}]}
    scenario = _scenario(
        nodes=[tainted, _node("node-b")],
        deviceClasses=[_device_class()],
        resourceSlices=[_slice("node-a", [("gpu-0", "a100")])],
        resourceClaims=[claim],
        pending=[_pod("p", "c")],
    )
    run = ScenarioRun(scenario)
    ((att, _),) = run.run()
    assert att.result == "unschedulable"
    # DynamicResources' PostFilter is Unschedulable after deallocating, so DefaultPreemption still runs after it.
    assert att.message == (
        "0/2 nodes are available: 1 node(s) had untolerated taint(s), 1 resourceclaim not available on the node. "
        "deallocation of ResourceClaim completed, preemption: 0/2 nodes are available: "
        "2 Preemption is not helpful for scheduling."
    )
    stored = run.cluster.get_object("ResourceClaim", "default", "c")
    assert stored is not None and "allocation" not in stored["status"]


def test_post_filter_keeps_a_claim_another_pod_uses() -> None:
    claim = _allocated(_claim("c"), "node-a", ["gpu-0"], "owner")
    scenario = _scenario(
        nodes=[_node("node-a"), _node("node-b")],
        deviceClasses=[_device_class()],
        resourceSlices=[_slice("node-a", [("gpu-0", "a100")])],
        resourceClaims=[claim],
        pods=[_pod("owner", "c", node="node-a", cpu="8")],
        pending=[_pod("p", "c")],
    )
    (entry,) = _entries(scenario)
    assert entry["boundTo"] is None
    assert entry["filterFail"] == {
        "node-a": "NodeResourcesFit: Insufficient cpu",
        "node-b": "DynamicResources: resourceclaim not available on the node",
    }
    assert entry["fitError"] == (
        "0/2 nodes are available: 1 Insufficient cpu, 1 resourceclaim not available on the node. "
        "still not schedulable, preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )


# --- allocation ----------------------------------------------------------------------------------------------------
def test_allocation_picks_a_matching_device_and_later_pods_see_it_taken() -> None:
    scenario = _scenario(
        deviceClasses=[_device_class()],
        resourceSlices=[_slice("node-a", [("gpu-0", "t4")]), _slice("node-b", [("gpu-0", "a100"), ("gpu-1", "a100")])],
        resourceClaims=[
            _claim("c1", selector='device.attributes["gpu.example.com"].model == "a100"'),
            _claim("c2", selector='device.attributes["gpu.example.com"].model == "a100"'),
            _claim("c3", selector='device.attributes["gpu.example.com"].model == "a100"'),
        ],
        pending=[_pod("p1", "c1"), _pod("p2", "c2"), _pod("p3", "c3")],
    )
    first, second, third = _entries(scenario)
    assert first["filter"]["node-a"]["DynamicResources"] == "cannot allocate all claims"
    assert first["boundTo"] == "node-b"
    assert first["allocations"]["default/c1"]["devices"]["results"] == [
        {"request": "gpu", "driver": DRIVER, "pool": "node-b", "device": "gpu-0"}
    ]
    assert first["allocations"]["default/c1"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"] == [
        "node-b"
    ]
    assert second["boundTo"] == "node-b"
    assert second["allocations"]["default/c2"]["devices"]["results"][0]["device"] == "gpu-1"
    assert third["boundTo"] is None
    assert third["filterFail"]["node-b"] == "DynamicResources: cannot allocate all claims"


def test_a_claim_shared_by_two_pending_pods_is_allocated_once_and_reserved_for_both() -> None:
    scenario = _scenario(
        deviceClasses=[_device_class()],
        resourceSlices=[_slice("node-a", [("gpu-0", "a100")]), _slice("node-b", [("gpu-0", "a100")])],
        resourceClaims=[_claim("shared")],
        pending=[_pod("p1", "shared"), _pod("p2", "shared")],
    )
    run = ScenarioRun(scenario)
    first, second = (att for att, _ in run.run())
    assert first.bound_to == "node-a"  # both nodes fit; ties go to the first name
    assert second.bound_to == "node-a"
    assert second.filter["node-b"]["DynamicResources"] == "resourceclaim not available on the node"
    stored = run.cluster.get_object("ResourceClaim", "default", "shared")
    assert stored is not None
    assert [r["name"] for r in stored["status"]["reservedFor"]] == ["p1", "p2"]
    assert stored["metadata"]["finalizers"] == ["resource.kubernetes.io/delete-protection"]
    entries = _entries(scenario)
    assert entries[0]["allocations"]["default/shared"]["devices"]["results"][0]["pool"] == "node-a"
    assert entries[1]["allocations"] == {"default/shared": "reserved"}


def test_reserve_marks_the_allocation_in_flight_and_unreserve_takes_it_back() -> None:
    scenario = _scenario(
        deviceClasses=[_device_class()],
        resourceSlices=[_slice("node-a", [("gpu-0", "a100")])],
        resourceClaims=[_claim("c")],
    )
    run = ScenarioRun(scenario)
    fwk = run.frameworks["default-scheduler"]
    plugin = fwk.plugins_by_name["DynamicResources"]
    assert isinstance(plugin, DynamicResources)
    pod = pod_info(_pod("p", "c"))
    state = CycleState()
    nodes = run.scheduler.snapshot.node_info_list
    _, st = plugin.pre_filter(state, pod, nodes)
    assert st.is_success()
    verdicts = {ni.name: plugin.filter(state, pod, ni).message() for ni in nodes}
    assert verdicts == {"node-a": "", "node-b": "cannot allocate all claims"}
    assert plugin.reserve(state, pod, "node-a").is_success()
    manager = dra_manager_for(run.cluster)
    assert manager.claim_has_pending_allocation("uid-rc-c")
    # A second pod sharing the claim waits while the allocation is in flight.
    _, st = plugin.pre_filter(CycleState(), pod_info(_pod("q", "c")), nodes)
    assert (st.code, st.message()) == (
        Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        "resource claim default/c is in the process of being allocated",
    )
    plugin.unreserve(state, pod, "node-a")
    assert not manager.claim_has_pending_allocation("uid-rc-c")
    assert plugin.pre_filter(CycleState(), pod_info(_pod("q", "c")), nodes)[1].is_success()


def test_first_available_scores_the_earlier_subrequest_higher() -> None:
    scenario = _scenario(
        deviceClasses=[_device_class()],
        resourceSlices=[
            _slice("node-a", [("gpu-0", "a100")]),
            _slice("node-b", [("gpu-0", "a100"), ("gpu-1", "a100")]),
        ],
        resourceClaims=[_claim("c", first_available=True)],
        pending=[_pod("p", "c")],
    )
    (entry,) = _entries(scenario)
    assert entry["score"]["node-a"]["DynamicResources"] == 7  # 8 - index of "small"
    assert entry["score"]["node-b"]["DynamicResources"] == 8  # "big" (two devices)
    assert entry["boundTo"] == "node-b"
    assert [r["request"] for r in entry["allocations"]["default/c"]["devices"]["results"]] == ["gpu/big", "gpu/big"]


def test_an_allocated_claim_before_one_to_allocate_fails_score_at_v1_35_and_scores_from_its_status_at_v1_36() -> None:
    # v1.35 indexes the node's allocation results (one per claim to allocate) by claim index, so the second claim
    # has none; v1.36 reads the allocated claim's result from its status (dra-multiclaim-003 of the golden corpus).
    held = _allocated(_claim("held"), "node-a", ["gpu-0"])
    both = {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-a", "node-b"]}
    held["status"]["allocation"]["nodeSelector"] = {"nodeSelectorTerms": [{"matchExpressions": [both]}]}
    scenario = _scenario(
        deviceClasses=[_device_class()],
        resourceSlices=[
            _slice("node-a", [("gpu-0", "a100"), ("gpu-1", "a100")]),
            _slice("node-b", [("gpu-0", "a100"), ("gpu-1", "a100")]),
        ],
        resourceClaims=[held, _claim("new", first_available=True)],
        pending=[_pod("p", "held", "new")],
    )
    (at_v1_35,) = run_scenario(scenario, "full", kube_version=kube_version("1.35"))["results"]
    assert at_v1_35["feasible"] == ["node-a", "node-b"]
    assert at_v1_35["boundTo"] is None
    assert at_v1_35["fitError"] == (
        'running Score plugins: plugin "DynamicResources" failed with: number of allocations 1 is smaller than '
        "number of claims"
    )
    (at_v1_36,) = run_scenario(scenario, "full", kube_version=kube_version("1.36"))["results"]
    # node-a has one free device left ("small"), node-b two ("big").
    assert {n: s["DynamicResources"] for n, s in at_v1_36["score"].items()} == {"node-a": 7, "node-b": 8}
    assert at_v1_36["boundTo"] == "node-b"


def test_a_node_without_devices_for_the_claim_is_no_preemption_candidate() -> None:
    # Filter's failures are UnschedulableAndUnresolvable (statusUnschedulable): preemption cannot free devices.
    scenario = _scenario(
        nodes=[_node("node-a")],
        deviceClasses=[_device_class()],
        resourceSlices=[_slice("node-a", [("gpu-0", "a100")])],
        resourceClaims=[_allocated(_claim("low"), "node-a", ["gpu-0"], "victim"), _claim("high")],
        pods=[_pod("victim", "low", node="node-a")],
        pending=[_pod("boss", "high", priority=100)],
    )
    (entry,) = _entries(scenario)
    assert entry["unresolvable"] == {"node-a": ["DynamicResources"]}
    assert entry["postfilter"]["victims"] == []


def test_preemption_victim_releases_its_claim_and_the_preemptor_gets_the_device() -> None:
    scenario = _scenario(
        nodes=[_node("node-a")],
        deviceClasses=[_device_class()],
        resourceSlices=[_slice("node-a", [("gpu-0", "a100"), ("gpu-1", "a100")])],
        resourceClaims=[_allocated(_claim("low"), "node-a", ["gpu-0"], "victim"), _claim("high")],
        pods=[_pod("victim", "low", node="node-a", cpu="8")],
        pending=[_pod("boss", "high", priority=100)],
    )
    run = ScenarioRun(scenario)
    first, second = (att for att, _ in run.run())
    assert first.message == "0/1 nodes are available: 1 Insufficient cpu."
    assert first.victims == ["default/victim"]
    # R5-DRA: the victim left reservedFor, and its claim, reserved by nobody, was deallocated before attempt 2.
    low = run.cluster.get_object("ResourceClaim", "default", "low")
    assert low is not None and low["status"] == {}
    assert second.attempt == 2 and second.bound_to == "node-a"
    high = run.cluster.get_object("ResourceClaim", "default", "high")
    assert high is not None
    assert [r["device"] for r in high["status"]["allocation"]["devices"]["results"]] == ["gpu-0"]
    assert high["status"]["reservedFor"] == [{"resource": "pods", "name": "boss", "uid": "uid-boss"}]


def test_dynamic_resource_allocation_gate_off_ignores_claims() -> None:
    # Off, the gate leaves DynamicResources out of the default plugins (applyFeatureGates), as v1.33 and v1.34 allow.
    scenario = _scenario(resourceClaims=[_claim("c")], pending=[_pod("p", "c")])
    (entry,) = run_scenario(scenario, "full", feature_gates={"DynamicResourceAllocation": False})["results"]
    assert "DynamicResources" not in entry["prefilter"]
    assert entry["boundTo"] is not None
    # Enabled by a configuration with the gate off, the plugin skips the pod.
    enabled = {"profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "DynamicResources"}]}}}]}
    (entry,) = run_scenario(
        {**scenario, "config": enabled}, "full", feature_gates={"DynamicResourceAllocation": False}
    )["results"]
    assert entry["prefilter"]["DynamicResources"] == "skip"
    assert entry["boundTo"] is not None


def test_a_scenarios_feature_gates_reach_the_plugin() -> None:
    scenario = _scenario(
        featureGates={"DRAPrioritizedList": False},
        deviceClasses=[_device_class()],
        resourceSlices=[_slice("node-a", [("gpu-0", "a100")])],
        resourceClaims=[_claim("c", first_available=True)],
        pending=[_pod("p", "c")],
    )
    (entry,) = _entries(scenario)
    assert entry["prefilter"]["DynamicResources"] == (
        "resource claim default/c, request gpu: has subrequests, but the DRAPrioritizedList feature is disabled"
    )

"""Generate the v1.36-only golden families `gangs`, `topology`, `declaredfeatures` and `draextended`:
tests/golden/v1.36/<family>/<name>.scenario.json.

    .venv/bin/python -m tools.golden.workload_scenarios            # (re)write the scenario files
    .venv/bin/python -m tools.golden.workload_scenarios --check    # fail if a file differs from what would be written

Each scenario checks one behaviour of v1.36: the PodGroup scheduling cycle (scheduling.k8s.io/v1alpha2 PodGroups,
pods joining by ``spec.schedulingGroup``) in `gangs` with GenericWorkload and GangScheduling on, `topology` with
TopologyAwareWorkloadScheduling too; `declaredfeatures` with the release's defaults (NodeDeclaredFeatures on:
pods needing a node feature) and `draextended` (DRAExtendedResource on: extended resources backed by a
DeviceClass). The reference program (kube-scheduler v1.36.2's framework, built outside the
repository) writes the matching ``<name>.expected.json.gz`` beside them; tests/golden/README.md describes the
group cycle's rules and the ``podGroup`` key of a result entry.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

OUT_DIR = Path(__file__).resolve().parents[2] / "tests" / "golden" / "v1.36"
GANG_GATES = {"GenericWorkload": True, "GangScheduling": True}
TOPOLOGY_GATES = {**GANG_GATES, "TopologyAwareWorkloadScheduling": True}
RACK = "example.com/rack"


def node(
    name: str, cpu: str = "2", labels: dict[str, str] | None = None, features: list[str] | None = None
) -> dict[str, Any]:
    alloc = {"cpu": cpu, "memory": "8Gi", "pods": "110"}
    status: dict[str, Any] = {
        "capacity": dict(alloc),
        "allocatable": dict(alloc),
        "conditions": [{"type": "Ready", "status": "True"}],
    }
    if features is not None:
        status["declaredFeatures"] = sorted(features)
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {
            "name": name,
            "uid": f"uid-node-{name}",
            "resourceVersion": "1",
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **(labels or {})},
        },
        "spec": {},
        "status": status,
    }


def pod(
    name: str,
    cpu: str,
    group: str | None = None,
    priority: int = 0,
    node_name: str | None = None,
    start: str = "2025-01-12T13:00:00Z",
    labels: dict[str, str] | None = None,
    never_preempt: bool = False,
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "c",
                "image": "registry.k8s.io/pause:3.9",
                "resources": {"requests": {"cpu": cpu, "memory": "256Mi"}},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "restartPolicy": "Always",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "securityContext": {},
        "schedulerName": "default-scheduler",
        "priority": priority,
        "enableServiceLinks": True,
        "preemptionPolicy": "Never" if never_preempt else "PreemptLowerPriority",
    }
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    status: dict[str, Any] = {"phase": "Pending"}
    if node_name is not None:
        spec["nodeName"] = node_name
        status = {"phase": "Running", "startTime": start}
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "uid": f"uid-pod-default-{name}"}
    metadata["resourceVersion"] = "1"
    if labels:
        metadata["labels"] = labels
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": metadata,
        "spec": spec,
        "status": status,
    }


RESTART_ALL = "RestartAllContainersOnContainerExits"
HOST_NETWORK_USERNS = "UserNamespacesHostNetworkSupport"


def restarting_all(p: dict[str, Any], init: bool = False) -> dict[str, Any]:
    """A container (or an init container) whose exit code 42 restarts every container: needs RESTART_ALL."""
    rule = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
    container = dict(p["spec"]["containers"][0], restartPolicy="Never", restartPolicyRules=[rule])
    if init:
        p["spec"]["initContainers"] = [dict(container, name="init")]
    else:
        p["spec"]["containers"] = [container]
    return p


def host_network_userns(p: dict[str, Any]) -> dict[str, Any]:
    """The host's network from a user namespace: needs HOST_NETWORK_USERNS."""
    p["spec"].update(hostNetwork=True, hostUsers=False)
    return p


def _policy(min_count: int | None) -> dict[str, Any]:
    return {"gang": {"minCount": min_count}} if min_count is not None else {"basic": {}}


def workload(name: str, template: str, min_count: int) -> dict[str, Any]:
    """A v1alpha2 Workload with one podGroupTemplate."""
    return {
        "kind": "Workload",
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-workload-{name}", "resourceVersion": "1"},
        "spec": {"podGroupTemplates": [{"name": template, "schedulingPolicy": _policy(min_count)}]},
    }


def pod_group(
    name: str,
    min_count: int | None = None,
    topology_key: str | None = None,
    template: tuple[str, str] | None = None,
    priority: int | None = None,
    disruption_mode: str | None = None,
) -> dict[str, Any]:
    """A v1alpha2 PodGroup: gang with ``min_count``, basic otherwise; optionally one topology constraint, the
    Workload template (workload, template) it was made from, and (WorkloadAwarePreemption's fields) its priority
    as admission resolves it and its disruptionMode."""
    spec: dict[str, Any] = {"schedulingPolicy": _policy(min_count)}
    if priority is not None:
        spec["priority"] = priority
    if disruption_mode is not None:
        spec["disruptionMode"] = disruption_mode
    if template is not None:
        spec["podGroupTemplateRef"] = {"workload": {"workloadName": template[0], "podGroupTemplateName": template[1]}}
    if topology_key is not None:
        spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
    return {
        "kind": "PodGroup",
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-podgroup-{name}", "resourceVersion": "1"},
        "spec": spec,
    }


@dataclass
class Scenario:
    family: str
    name: str
    description: str
    gates: dict[str, bool]
    nodes: list[dict[str, Any]]
    pending: list[dict[str, Any]]
    groups: list[dict[str, Any]] = field(default_factory=list)
    bound: list[dict[str, Any]] = field(default_factory=list)
    workloads: list[dict[str, Any]] = field(default_factory=list)
    dra: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    pdbs: list[dict[str, Any]] = field(default_factory=list)
    config: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "meta": {"description": self.description, "family": self.family, "name": self.name},
            **({"config": self.config} if self.config is not None else {}),
            **({"featureGates": dict(sorted(self.gates.items()))} if self.gates else {}),
            "nodes": self.nodes,
            "pods": self.bound,
            "pending": self.pending,
            "namespaces": [{"kind": "Namespace", "apiVersion": "v1", "metadata": {"name": "default"}}],
            "podGroups": self.groups,
            **({"workloads": self.workloads} if self.workloads else {}),
            **({"podDisruptionBudgets": self.pdbs} if self.pdbs else {}),
            **self.dra,
        }


def gangs() -> Iterator[Scenario]:
    def s(n: int, slug: str, description: str, **kw: Any) -> Scenario:
        return Scenario("gangs", f"gangs-{n:03d}-{slug}", description, GANG_GATES, **kw)

    yield s(
        0, "mincount-met", "a gang of 3 (minCount 3) on 3 nodes of 2 CPU: all three bound in one cycle",
        nodes=[node(f"node-{i}") for i in range(3)],
        groups=[pod_group("trio", 3)],
        pending=[pod(f"trio-{i}", "1500m", "trio") for i in range(3)],
    )  # fmt: skip
    yield s(
        1, "mincount-not-met", "a gang of 3 (minCount 3) where only two fit: none bound, the two that fitted rejected "
        "by the group (Permit's quorum message), the third with its own FitError",
        nodes=[node(f"node-{i}") for i in range(2)],
        groups=[pod_group("trio", 3)],
        pending=[pod(f"trio-{i}", "1500m", "trio") for i in range(3)],
    )  # fmt: skip
    yield s(
        2, "partial-fit", "a gang of 4 with minCount 2 where three fit: the three bound, the fourth fails alone",
        nodes=[node(f"node-{i}") for i in range(3)],
        groups=[pod_group("quad", 2)],
        pending=[pod(f"quad-{i}", "1500m", "quad") for i in range(4)],
    )  # fmt: skip
    yield s(
        3, "too-few-members", "minCount 3 with only two pods created: PreEnqueue holds both out of the queue",
        nodes=[node(f"node-{i}") for i in range(3)],
        groups=[pod_group("trio", 3)],
        pending=[pod(f"trio-{i}", "500m", "trio") for i in range(2)],
    )  # fmt: skip
    yield s(
        4, "member-priority", "members tried by priority (then queue order): the two high-priority ones take the "
        "room, the low-priority one listed first fails; minCount 2 met",
        nodes=[node(f"node-{i}") for i in range(2)],
        groups=[pod_group("mixed", 2)],
        pending=[pod("mixed-low", "1500m", "mixed", 0), pod("mixed-high", "1500m", "mixed", 100),
                 pod("mixed-mid", "1500m", "mixed", 50)],
    )  # fmt: skip
    yield s(
        5, "basic-policy", "a basic (not gang) PodGroup: its pods tried in one cycle, each that fits bound, one "
        "that does not fails on its own",
        nodes=[node(f"node-{i}") for i in range(2)],
        groups=[pod_group("loose")],
        pending=[pod(f"loose-{i}", "1500m", "loose") for i in range(3)],
    )  # fmt: skip
    yield s(
        6, "two-gangs", "two gangs whose pods interleave in the queue: the first group's cycle takes its later "
        "members with it; the second gang no longer fits and binds none",
        nodes=[node(f"node-{i}") for i in range(3)],
        groups=[pod_group("first", 2), pod_group("second", 2)],
        pending=[pod("first-0", "1500m", "first"), pod("second-0", "1500m", "second"),
                 pod("first-1", "1500m", "first"), pod("second-1", "1500m", "second")],
    )  # fmt: skip
    yield s(
        7, "loose-pod-between", "a pod of no group listed between a gang's members: the gang's cycle runs first "
        "with all its members, the loose pod after it",
        nodes=[node("node-0", cpu="4"), node("node-1", cpu="2")],
        groups=[pod_group("pair", 2)],
        pending=[pod("pair-0", "1", "pair"), pod("loner", "3"), pod("pair-1", "1", "pair")],
    )  # fmt: skip
    yield s(
        8, "missing-podgroup", "pods naming a PodGroup that does not exist wait in PreEnqueue",
        nodes=[node(f"node-{i}") for i in range(2)],
        groups=[],
        pending=[pod(f"ghost-{i}", "500m", "ghost") for i in range(2)],
    )  # fmt: skip
    yield s(
        9, "gang-unresolvable", "a gang member asking more CPU than any node has: the gang binds none",
        nodes=[node(f"node-{i}") for i in range(3)],
        groups=[pod_group("pair", 2)],
        pending=[pod("pair-0", "1", "pair"), pod("pair-1", "3", "pair")],
    )  # fmt: skip
    yield s(
        10, "late-member", "two members of a gang of 3 already run: the third meets the quorum alone and binds",
        nodes=[node(f"node-{i}") for i in range(3)],
        groups=[pod_group("trio", 3)],
        bound=[pod("trio-0", "1500m", "trio", node_name="node-0"), pod("trio-1", "1500m", "trio", node_name="node-1")],
        pending=[pod("trio-2", "1500m", "trio")],
    )  # fmt: skip
    yield s(
        11, "from-workload-template", "a PodGroup made from a Workload's podGroupTemplate (as the workload "
        "controller would): scheduled as its own gang",
        nodes=[node(f"node-{i}") for i in range(2)],
        workloads=[workload("train", "workers", 2)],
        groups=[pod_group("train-workers", 2, template=("train", "workers"))],
        pending=[pod(f"worker-{i}", "1500m", "train-workers") for i in range(2)],
    )  # fmt: skip


def topology() -> Iterator[Scenario]:
    def s(n: int, slug: str, description: str, **kw: Any) -> Scenario:
        return Scenario("topology", f"topology-{n:03d}-{slug}", description, TOPOLOGY_GATES, **kw)

    def racked(counts: dict[str, int], cpu: str = "2") -> list[dict[str, Any]]:
        return [
            node(f"{rack}-node-{i}", cpu=cpu, labels={RACK: rack})
            for rack, count in counts.items()
            for i in range(count)
        ]

    yield s(
        0, "only-one-rack-fits", "a gang of 4 (minCount 4) with a rack constraint: rack-a has room for 2, rack-b "
        "for 4: rack-b is the placement, every pod there",
        nodes=racked({"rack-a": 2, "rack-b": 4}),
        groups=[pod_group("job", 4, RACK)],
        pending=[pod(f"job-{i}", "1500m", "job") for i in range(4)],
    )  # fmt: skip
    yield s(
        1, "most-pods-wins", "a gang of 4 (minCount 2): rack-a fits 3, rack-b fits 2: PodGroupPodsCount prefers "
        "rack-a, the fourth pod fails there",
        nodes=racked({"rack-a": 3, "rack-b": 2}),
        groups=[pod_group("job", 2, RACK)],
        pending=[pod(f"job-{i}", "1500m", "job") for i in range(4)],
    )  # fmt: skip
    yield s(
        2, "no-placement", "a gang of 3 (minCount 3): each rack fits 2: 0/2 placements are available",
        nodes=racked({"rack-a": 2, "rack-b": 2}),
        groups=[pod_group("job", 3, RACK)],
        pending=[pod(f"job-{i}", "1500m", "job") for i in range(3)],
    )  # fmt: skip
    yield s(
        3, "unlabelled-nodes", "nodes without the topology key are in no placement: the gang fits only if spread "
        "over them, so it binds none",
        nodes=[*racked({"rack-a": 1}), node("free-0"), node("free-1")],
        groups=[pod_group("job", 3, RACK)],
        pending=[pod(f"job-{i}", "1500m", "job") for i in range(3)],
    )  # fmt: skip
    yield s(
        4, "no-constraint", "TopologyAwareWorkloadScheduling on, a gang without constraints: one placement, "
        "every node",
        nodes=racked({"rack-a": 1, "rack-b": 2}),
        groups=[pod_group("job", 3)],
        pending=[pod(f"job-{i}", "1500m", "job") for i in range(3)],
    )  # fmt: skip
    yield s(
        5, "basic-in-rack", "a basic PodGroup with a rack constraint: the rack taking most pods (rack-b, 3 of 3)",
        nodes=racked({"rack-a": 2, "rack-b": 3}),
        groups=[pod_group("job", None, RACK)],
        pending=[pod(f"job-{i}", "1500m", "job") for i in range(3)],
    )  # fmt: skip
    yield s(
        6, "running-member-fixes-rack", "a member already runs in rack-a: the only placement is rack-a, though "
        "rack-b has more room; the member that no longer fits there fails",
        nodes=racked({"rack-a": 2, "rack-b": 3}),
        groups=[pod_group("job", 2, RACK)],
        bound=[pod("job-0", "1500m", "job", node_name="rack-a-node-0")],
        pending=[pod(f"job-{i}", "1500m", "job") for i in range(1, 4)],
    )  # fmt: skip


def declared_features() -> Iterator[Scenario]:
    """NodeDeclaredFeatures, on by default from v1.36: a pod whose spec needs a node feature goes only to nodes that
    list it in ``status.declaredFeatures``."""

    def s(n: int, slug: str, description: str, **kw: Any) -> Scenario:
        return Scenario("declaredfeatures", f"declaredfeatures-{n:03d}-{slug}", description, {}, **kw)

    mixed = [node("node-a"), node("node-b", features=[RESTART_ALL]), node("node-c", features=[HOST_NETWORK_USERNS])]
    yield s(
        0, "restart-all", "a RestartAllContainers rule: only the node declaring the feature passes",
        nodes=mixed, pending=[restarting_all(pod("restarter", "500m"))],
    )  # fmt: skip
    yield s(
        1, "restart-all-in-init", "the rule on an init container needs the feature too",
        nodes=mixed, pending=[restarting_all(pod("restarter", "500m"), init=True)],
    )  # fmt: skip
    yield s(
        2, "nowhere", "no node declares the feature: unschedulable, unresolvable on every node",
        nodes=[node("node-a"), node("node-b", features=[HOST_NETWORK_USERNS])],
        pending=[restarting_all(pod("restarter", "500m"))],
    )  # fmt: skip
    yield s(
        3, "host-network-userns", "the host's network from a user namespace: only the node declaring it",
        nodes=mixed, pending=[host_network_userns(pod("netpod", "500m"))],
    )  # fmt: skip
    yield s(
        4, "both-needed", "a pod needing both features: only the node declaring both, not those with one",
        nodes=[*mixed, node("node-d", features=[RESTART_ALL, HOST_NETWORK_USERNS])],
        pending=[host_network_userns(restarting_all(pod("both", "500m")))],
    )  # fmt: skip
    yield s(
        5, "plain-pods", "pods needing no feature: NodeDeclaredFeatures skips, every node is a candidate",
        nodes=mixed, pending=[pod("plain-0", "500m"), pod("plain-1", "500m"), pod("plain-2", "500m")],
    )  # fmt: skip
    yield s(
        6, "full-feature-node", "the only declaring node is full: preemption finds its victim there, not on the "
        "node without the feature",
        nodes=[node("node-a", cpu="1"), node("node-b", cpu="1", features=[RESTART_ALL])],
        bound=[pod("low-a", "1", node_name="node-a"), pod("low-b", "1", node_name="node-b")],
        pending=[restarting_all(pod("restarter", "1", priority=100))],
    )  # fmt: skip


GPU_DRIVER = "gpu.example.com"


def device_class(name: str, extended_resource: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"selectors": [{"cel": {"expression": f'device.driver == "{GPU_DRIVER}"'}}]}
    if extended_resource is not None:
        spec["extendedResourceName"] = extended_resource
    return {
        "kind": "DeviceClass",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": name, "uid": f"uid-deviceclass-{name}", "resourceVersion": "1"},
        "spec": spec,
    }


def gpu_slice(node_name: str, count: int) -> dict[str, Any]:
    return {
        "kind": "ResourceSlice",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {"name": f"{node_name}-gpu", "uid": f"uid-resourceslice-{node_name}-gpu", "resourceVersion": "1"},
        "spec": {
            "driver": GPU_DRIVER,
            "pool": {"name": node_name, "generation": 1, "resourceSliceCount": 1},
            "nodeName": node_name,
            "devices": [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}} for i in range(count)],
        },
    }


def asking(p: dict[str, Any], resource: str, count: int) -> dict[str, Any]:
    """The pod's container asks ``count`` of an extended resource (requests = limits, as the API server stores)."""
    res = p["spec"]["containers"][0]["resources"]
    res["requests"][resource] = str(count)
    res.setdefault("limits", {})[resource] = str(count)
    return p


def scoring_config(strategy: dict[str, Any], balanced_resources: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A profile whose NodeResourcesFit scores with ``strategy`` (and BalancedAllocation on ``balanced_resources``)."""
    plugin_config: list[dict[str, Any]] = [{"name": "NodeResourcesFit", "args": {"scoringStrategy": strategy}}]
    if balanced_resources is not None:
        plugin_config.append({"name": "NodeResourcesBalancedAllocation", "args": {"resources": balanced_resources}})
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "pluginConfig": plugin_config}],
    }


def with_gpus(n: dict[str, Any], resource: str, count: int) -> dict[str, Any]:
    """The node lists ``count`` of ``resource`` in its capacity and allocatable (a device plugin's)."""
    status = n["status"]
    status["capacity"][resource] = str(count)
    status["allocatable"][resource] = str(count)
    return n


def earlier_claim(
    owner: dict[str, Any], suffix: str, count: int | None, device: tuple[str, str] | None
) -> dict[str, Any]:
    """The claim a scheduler made for ``owner``'s extended resources in an earlier attempt (annotated, owned by the
    pod): with a request of ``count`` devices (None: none yet) and allocated ``device`` (pool, device) or not."""
    meta = owner["metadata"]
    claim: dict[str, Any] = {
        "kind": "ResourceClaim",
        "apiVersion": "resource.k8s.io/v1",
        "metadata": {
            "name": f"{meta['name']}-extended-resources-{suffix}",
            "namespace": meta["namespace"],
            "uid": f"uid-resourceclaim-{meta['name']}-{suffix}",
            "resourceVersion": "1",
            "generateName": f"{meta['name']}-extended-resources-",
            "annotations": {"resource.kubernetes.io/extended-resource-claim": "true"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"], "controller": True}
            ],
        },
        "spec": {},
    }
    if count is not None:
        request = {"deviceClassName": GPU_DRIVER, "allocationMode": "ExactCount", "count": count}
        claim["spec"] = {"devices": {"requests": [{"name": "container-0-request-0", "exactly": request}]}}
    if device is not None:
        pool, name = device
        result = {"request": "container-0-request-0", "driver": GPU_DRIVER, "pool": pool, "device": name}
        selector = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [pool]}]}
        claim["metadata"]["finalizers"] = ["resource.kubernetes.io/delete-protection"]
        claim["status"] = {
            "allocation": {"devices": {"results": [result]}, "nodeSelector": {"nodeSelectorTerms": [selector]}}
        }
    return claim


def extended_resources() -> Iterator[Scenario]:
    """DRAExtendedResource, on by default from v1.36: an extended resource a DeviceClass names (or the class's own
    ``deviceclass.resource.kubernetes.io/<class>``) is allocated from ResourceSlices on nodes that do not list it."""

    def s(n: int, slug: str, description: str, **kw: Any) -> Scenario:
        return Scenario("draextended", f"draextended-{n:03d}-{slug}", description, {}, **kw)

    gpu = "example.com/gpu"
    racks = [node("node-0"), node("node-1")]
    slices = [gpu_slice("node-0", 1), gpu_slice("node-1", 2)]
    yield s(
        0, "named-by-class", "a DeviceClass's extendedResourceName: pods asking 1, 2, 2 GPUs of a node with 1 and "
        "one with 2 devices: the third finds no devices left",
        nodes=racks, dra={"deviceClasses": [device_class(GPU_DRIVER, gpu)], "resourceSlices": slices},
        pending=[asking(pod("gpu-0", "500m"), gpu, 1), asking(pod("gpu-1", "500m"), gpu, 2),
                 asking(pod("gpu-2", "500m"), gpu, 2)],
    )  # fmt: skip
    yield s(
        1, "implicit-class-name", "deviceclass.resource.kubernetes.io/<class>: every DeviceClass's own extended "
        "resource name",
        nodes=racks, dra={"deviceClasses": [device_class(GPU_DRIVER)], "resourceSlices": slices},
        pending=[asking(pod("gpu-0", "500m"), f"deviceclass.resource.kubernetes.io/{GPU_DRIVER}", 2)],
    )  # fmt: skip
    yield s(
        2, "device-plugin-node", "a node listing the extended resource in its allocatable (a device plugin's) is "
        "counted as before; the other is served from its ResourceSlice",
        nodes=[node("node-0"), dict(node("node-1"), status={**node("node-1")["status"],
               "allocatable": {**node("node-1")["status"]["allocatable"], gpu: "1"},
               "capacity": {**node("node-1")["status"]["capacity"], gpu: "1"}})],
        dra={"deviceClasses": [device_class(GPU_DRIVER, gpu)], "resourceSlices": [gpu_slice("node-0", 1)]},
        pending=[asking(pod("gpu-0", "500m"), gpu, 1), asking(pod("gpu-1", "500m"), gpu, 1),
                 asking(pod("gpu-2", "500m"), gpu, 1)],
    )  # fmt: skip
    yield s(
        3, "no-class", "no DeviceClass names the extended resource: Insufficient, as without DRA",
        nodes=racks, dra={"deviceClasses": [device_class(GPU_DRIVER)], "resourceSlices": slices},
        pending=[asking(pod("gpu-0", "500m"), gpu, 1)],
    )  # fmt: skip
    # Scoring: an extended resource in a scoring strategy's resources counts, on a node without it allocatable,
    # the node's devices of the class as allocatable and those already allocated as requested.
    three = [node("node-0", cpu="4"), node("node-1", cpu="4"), with_gpus(node("node-2", cpu="4"), gpu, 4)]
    three_slices = [gpu_slice("node-0", 4), gpu_slice("node-1", 2)]
    gpu_weighted = [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": gpu, "weight": 3}]
    yield s(
        4, "most-allocated", "MostAllocated with the GPU weighted 3: devices of the class count as the node's "
        "allocatable, allocated ones as requested, beside a node whose device plugin lists 4",
        nodes=three, config=scoring_config({"type": "MostAllocated", "resources": gpu_weighted}),
        dra={"deviceClasses": [device_class(GPU_DRIVER, gpu)], "resourceSlices": three_slices},
        pending=[asking(pod(f"gpu-{i}", "500m"), gpu, 1) for i in range(5)],
    )  # fmt: skip
    yield s(
        5, "least-allocated-balanced", "LeastAllocated with the GPU weighted 3 and BalancedAllocation on cpu and "
        "the GPU: both read the devices of the class on nodes without it allocatable (a class without selectors: "
        "v1.36.2's BalancedAllocation has no CEL cache and panics on one with a selector)",
        nodes=three,
        config=scoring_config({"type": "LeastAllocated", "resources": gpu_weighted},
                              [{"name": "cpu", "weight": 1}, {"name": gpu, "weight": 1}]),
        dra={"deviceClasses": [dict(device_class(GPU_DRIVER, gpu), spec={"extendedResourceName": gpu})],
             "resourceSlices": three_slices},
        pending=[asking(pod(f"gpu-{i}", "500m"), gpu, 2 if i % 2 else 1) for i in range(5)],
    )  # fmt: skip
    yield s(
        6, "requested-to-capacity-ratio", "RequestedToCapacityRatio on the GPU alone, peaking at half use",
        nodes=three,
        config=scoring_config({
            "type": "RequestedToCapacityRatio", "resources": [{"name": gpu, "weight": 1}],
            "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 50, "score": 10},
                                                   {"utilization": 100, "score": 0}]}}),
        dra={"deviceClasses": [device_class(GPU_DRIVER, gpu)], "resourceSlices": three_slices},
        pending=[asking(pod(f"gpu-{i}", "500m"), gpu, 1) for i in range(5)],
    )  # fmt: skip
    yield s(
        7, "implicit-name-scored", "the class's implicit name in a scoring strategy: MostAllocated counts its devices",
        nodes=racks,
        config=scoring_config({"type": "MostAllocated", "resources": [
            {"name": "cpu", "weight": 1}, {"name": f"deviceclass.resource.kubernetes.io/{GPU_DRIVER}", "weight": 2}]}),
        dra={"deviceClasses": [device_class(GPU_DRIVER)], "resourceSlices": slices},
        pending=[asking(pod(f"gpu-{i}", "500m"), f"deviceclass.resource.kubernetes.io/{GPU_DRIVER}", 1)
                 for i in range(3)],
    )  # fmt: skip
    # A claim left from an earlier attempt (a failed binding, a restarted scheduler).
    stale_owner = asking(pod("gpu-0", "500m"), gpu, 1)
    yield s(
        8, "earlier-claim-allocated", "the pod's claim from an earlier attempt, allocated: no node passes, PostFilter "
        "deletes the claim, and its device is free for the next pod",
        nodes=[node("node-0")],
        dra={"deviceClasses": [device_class(GPU_DRIVER, gpu)], "resourceSlices": [gpu_slice("node-0", 1)],
             "resourceClaims": [earlier_claim(stale_owner, "x7k2q", 1, ("node-0", "gpu-0"))]},
        pending=[stale_owner, asking(pod("gpu-1", "500m"), gpu, 1)],
    )  # fmt: skip
    stale_owner = asking(pod("gpu-0", "500m"), gpu, 1)
    yield s(
        9, "earlier-claim-requests", "the pod's claim from an earlier attempt with its requests but no allocation: "
        "unschedulable and deleted all the same",
        nodes=[node("node-0"), node("node-1")],
        dra={"deviceClasses": [device_class(GPU_DRIVER, gpu)], "resourceSlices": slices,
             "resourceClaims": [earlier_claim(stale_owner, "x7k2q", 1, None)]},
        pending=[stale_owner, asking(pod("gpu-1", "500m"), gpu, 1)],
    )  # fmt: skip
    reused_owner = asking(pod("gpu-0", "500m"), gpu, 2)
    yield s(
        10, "earlier-claim-reused", "the pod's claim from an earlier attempt, written without requests: it is "
        "reused, allocated and reserved under its own name",
        nodes=racks,
        dra={"deviceClasses": [device_class(GPU_DRIVER, gpu)], "resourceSlices": slices,
             "resourceClaims": [earlier_claim(reused_owner, "x7k2q", None, None)]},
        pending=[reused_owner, asking(pod("gpu-1", "500m"), gpu, 1)],
    )  # fmt: skip
    other_owner = asking(pod("gpu-0", "500m"), gpu, 1)
    yield s(
        11, "device-plugin-with-earlier-claim", "an earlier claim blocks the pod even where a device plugin "
        "serves the resource",
        nodes=[with_gpus(node("node-0"), gpu, 1), node("node-1")],
        dra={"deviceClasses": [device_class(GPU_DRIVER, gpu)], "resourceSlices": [gpu_slice("node-1", 1)],
             "resourceClaims": [earlier_claim(other_owner, "x7k2q", 1, ("node-1", "gpu-0"))]},
        pending=[other_owner, asking(pod("gpu-1", "500m"), gpu, 1)],
    )  # fmt: skip


WAP_GATES = {**GANG_GATES, "WorkloadAwarePreemption": True}


def started(minute: int) -> str:
    """A distinct startTime per running pod: the victims' order never rests on a tie (upstream breaks it at
    random)."""
    return f"2025-01-12T12:{minute:02d}:00Z"


def pdb(name: str, app: str, allowed: int) -> dict[str, Any]:
    return {
        "kind": "PodDisruptionBudget",
        "apiVersion": "policy/v1",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-pdb-{name}", "resourceVersion": "1"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
        "status": {"disruptionsAllowed": allowed, "currentHealthy": 1, "desiredHealthy": 1, "expectedPods": 1},
    }


def gang_preemption() -> Iterator[Scenario]:
    """Preemption in a PodGroup cycle: each pod's own PostFilter (DefaultPreemption) at v1.36's defaults, the pod
    assumed on its nominated node for the pods after it; with WorkloadAwarePreemption the group's PostFilter over
    the whole cluster instead, a running PodGroup with disruptionMode PodGroup evicted as one."""

    def s(n: int, slug: str, description: str, gates: dict[str, bool] = GANG_GATES, **kw: Any) -> Scenario:
        return Scenario("gangpreemption", f"gangpreemption-{n:03d}-{slug}", description, gates, **kw)

    def low(i: int, priority: int = 0, **kw: Any) -> dict[str, Any]:
        return pod(f"low-{i}", "1500m", priority=priority, node_name=f"node-{i}", start=started(i), **kw)

    two = [node(f"node-{i}") for i in range(2)]
    three = [node(f"node-{i}") for i in range(3)]
    yield s(
        0, "fits-by-preemption", "a gang of 2 (priority 100) fits only by evicting a low-priority pod on each node: "
        "each member preempts its own, the group waits for the preemption, each member nominated",
        nodes=two, bound=[low(0), low(1)], groups=[pod_group("pair", 2)],
        pending=[pod(f"pair-{i}", "1500m", "pair", 100) for i in range(2)],
    )  # fmt: skip
    yield s(
        1, "higher-priority-runs", "the running pods outrank the gang: no victims, the group unschedulable",
        nodes=two, bound=[low(0, 200), low(1, 200)], groups=[pod_group("pair", 2)],
        pending=[pod(f"pair-{i}", "1500m", "pair", 100) for i in range(2)],
    )  # fmt: skip
    yield s(
        2, "quorum-not-met", "a gang of 3: two members preempt, the third cannot (a higher-priority pod): the group "
        "unschedulable, the two turned back by the group with their nominations cleared (their victims are gone)",
        nodes=three, bound=[low(0), low(1), low(2, 200)], groups=[pod_group("trio", 3)],
        pending=[pod(f"trio-{i}", "1500m", "trio", 100) for i in range(3)],
    )  # fmt: skip
    yield s(
        3, "one-fits-one-preempts", "one member fits on a free node, the other only by preemption: the group waits "
        "for the preemption, the member that fitted turned back nominated to its node",
        nodes=two, bound=[low(1)], groups=[pod_group("pair", 2)],
        pending=[pod(f"pair-{i}", "1500m", "pair", 100) for i in range(2)],
    )  # fmt: skip
    yield s(
        4, "pdb-protected", "three nodes each running a low-priority pod, two of them protected by a PDB: the "
        "members preempt the unprotected one first",
        nodes=three, bound=[low(0, labels={"app": "guarded"}), low(1, labels={"app": "guarded"}), low(2)],
        pdbs=[pdb("guard", "guarded", 0)], groups=[pod_group("pair", 2)],
        pending=[pod(f"pair-{i}", "1500m", "pair", 100) for i in range(2)],
    )  # fmt: skip
    yield s(
        5, "preempt-never", "gang members with preemptionPolicy Never: not eligible, the group unschedulable",
        nodes=two, bound=[low(0), low(1)], groups=[pod_group("pair", 2)],
        pending=[pod(f"pair-{i}", "1500m", "pair", 100, never_preempt=True) for i in range(2)],
    )  # fmt: skip
    yield s(
        6, "loose-pod-after", "a pod of no group after a gang waiting for preemption: the gang's nominations keep "
        "its nodes from pods of lower priority, not from a loose pod of higher priority (150), which takes one",
        nodes=two, bound=[low(0), low(1)], groups=[pod_group("pair", 2)],
        pending=[pod("pair-0", "1500m", "pair", 100), pod("pair-1", "1500m", "pair", 100),
                 pod("loner", "1", None, 150)],
    )  # fmt: skip
    yield s(
        7, "workload-aware", "WorkloadAwarePreemption: the group preempts as one over the whole cluster (each "
        "member's own PostFilter stands aside), the victims the group's, the group waiting",
        gates=WAP_GATES, nodes=two, bound=[low(0), low(1)], groups=[pod_group("pair", 2, priority=100)],
        pending=[pod(f"pair-{i}", "1500m", "pair", 100) for i in range(2)],
    )  # fmt: skip
    old = [pod(f"old-{i}", "1500m", "old", 0, node_name=f"node-{i}", start=started(i)) for i in range(3)]
    yield s(
        8, "victim-gang-as-unit", "WorkloadAwarePreemption: a running gang with disruptionMode PodGroup is one "
        "victim: a pod group needing one node evicts all three of its pods",
        gates=WAP_GATES, nodes=three, bound=old,
        groups=[pod_group("old", 3, priority=0, disruption_mode="PodGroup"), pod_group("new", 1, priority=100)],
        pending=[pod("new-0", "1500m", "new", 100)],
    )  # fmt: skip
    yield s(
        9, "victim-gang-pod-mode", "WorkloadAwarePreemption: the same gang with disruptionMode Pod: its pods are "
        "victims one by one, the latest started evicted, the others reprieved",
        gates=WAP_GATES, nodes=three, bound=old,
        groups=[pod_group("old", 3, priority=0, disruption_mode="Pod"), pod_group("new", 1, priority=100)],
        pending=[pod("new-0", "1500m", "new", 100)],
    )  # fmt: skip
    yield s(
        10, "workload-aware-pdb", "WorkloadAwarePreemption: victims protected by a PDB reprieved first, the "
        "unprotected ones evicted",
        gates=WAP_GATES, nodes=three,
        bound=[low(0, labels={"app": "guarded"}), low(1, labels={"app": "guarded"}), low(2)],
        pdbs=[pdb("guard", "guarded", 0)], groups=[pod_group("pair", 2, priority=100)],
        pending=[pod(f"pair-{i}", "1500m", "pair", 100) for i in range(2)],
    )  # fmt: skip
    yield s(
        11, "workload-aware-no-victims", "WorkloadAwarePreemption with nothing of lower priority running: the "
        "group unschedulable, the preemption's reason appended to its message",
        gates=WAP_GATES, nodes=two, bound=[low(0, 200), low(1, 200)], groups=[pod_group("pair", 2, priority=100)],
        pending=[pod(f"pair-{i}", "1500m", "pair", 100) for i in range(2)],
    )  # fmt: skip


def scenarios() -> Iterator[Scenario]:
    yield from gangs()
    yield from gang_preemption()
    yield from topology()
    yield from declared_features()
    yield from extended_resources()


def render(scenario: Scenario) -> str:
    return json.dumps(scenario.to_json(), indent=1) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--check", action="store_true", help="only compare with the files on disk")
    p.add_argument("--out-dir", type=Path, default=OUT_DIR, help="the version directory (families beneath it)")
    args = p.parse_args(argv)
    stale = []
    for scenario in scenarios():
        path = args.out_dir / scenario.family / f"{scenario.name}.scenario.json"
        text = render(scenario)
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(str(path))
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    if stale:
        print("stale or missing:", *stale, sep="\n  ", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

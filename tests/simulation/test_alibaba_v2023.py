"""``kss convert``: Alibaba's 2023 GPU trace in the extended-resource and the DRA form, the same demand in both."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.simulation.alibaba_v2023 import (
    DEVICE_CLASS,
    DRIVER,
    EXTENDED_RESOURCE,
    MODEL_LABEL,
    POD_CLAIM_NAME_ANNOTATION,
    TraceError,
    Workload,
    convert,
    generated_claim_name,
    load_trace,
    read_pods,
)

KSS = Path(sys.executable).with_name("kss")
REAL_TRACE = Path(__file__).resolve().parents[2].parent / "shared" / "workloads" / "alibaba-gpu-trace-v2023"
FRACTION = "trace.kss.sigs.k8s.io/gpu-milli"

NODES_CSV = """sn,cpu_milli,memory_mib,gpu,model
cpu-node,32000,262144,0,
v100-node,96000,393216,4,V100M16
g2-node,104000,524288,8,G2
t4-node,64000,131072,2,T4
"""
# Rows out of creation order; one shared GPU, one constraint with the trace's duplicated model, one CPU-only pod.
PODS_CSV = """\
name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time
pod-late,8000,30517,4,1000,V100M16|V100M32|V100M32,LS,Running,500,900,500
pod-shared,6000,12288,1,460,,BE,Failed,100,400,120
pod-cpu,1500,5600,0,0,,BE,Succeeded,200,300,200
pod-t4,4000,8192,1,1000,T4,LS,Pending,300,800,
pod-t4-too,4000,8192,1,1000,T4,LS,Running,300,800,310
"""


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    (tmp_path / "openb_node_list_all_node.csv").write_text(NODES_CSV)
    (tmp_path / "openb_pod_list_gpuspec33.csv").write_text(PODS_CSV)
    return tmp_path


def _both(trace_dir: Path) -> tuple[Workload, Workload]:
    trace = load_trace(trace_dir, "gpuspec33")
    return convert(trace, "extended", "gpuspec33"), convert(trace, "dra", "gpuspec33")


def _by_name(objs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in objs}


def _selector_models(expression: str) -> list[str]:
    """The models listed in a selector written by the converter (and nothing else in it)."""
    m = re.fullmatch(r'device\.attributes\["gpu\.kss\.sigs\.k8s\.io"\]\.model in \[(.*)\]', expression)
    assert m, expression
    return [item.strip().strip('"') for item in m.group(1).split(",")]


def _extended_demand(pod: dict[str, Any]) -> tuple[int, list[str]]:
    container = pod["spec"]["containers"][0]["resources"]
    count = int(container["requests"].get(EXTENDED_RESOURCE, "0"))
    terms = (
        pod["spec"].get("affinity", {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    models = terms["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] if terms else []
    return count, models


def _dra_demand(pod: dict[str, Any], templates: dict[str, dict[str, Any]]) -> tuple[int, list[str]]:
    refs = pod["spec"].get("resourceClaims") or []
    if not refs:
        return 0, []
    (ref,) = refs
    (request,) = templates[ref["resourceClaimTemplateName"]]["spec"]["spec"]["devices"]["requests"]
    exactly = request["exactly"]
    assert exactly["deviceClassName"] == DEVICE_CLASS and exactly["allocationMode"] == "ExactCount"
    selectors = exactly.get("selectors") or []
    return exactly["count"], [m for s in selectors for m in _selector_models(s["cel"]["expression"])]


def test_pods_come_in_creation_order_with_each_model_once(trace_dir: Path) -> None:
    pods = read_pods(trace_dir / "openb_pod_list_gpuspec33.csv")
    assert [p.name for p in pods] == ["pod-shared", "pod-cpu", "pod-t4", "pod-t4-too", "pod-late"]
    assert pods[-1].gpu_spec == ("V100M16", "V100M32")
    assert pods[2].scheduled_time is None and pods[3].scheduled_time == 310


def test_extended_form_counts_gpus_on_nodes_and_constrains_models_by_affinity(trace_dir: Path) -> None:
    extended, _ = _both(trace_dir)
    nodes = _by_name(extended.nodes)
    assert EXTENDED_RESOURCE not in nodes["cpu-node"]["status"]["capacity"]
    assert MODEL_LABEL not in nodes["cpu-node"]["metadata"]["labels"]
    v100 = nodes["v100-node"]
    assert v100["status"]["allocatable"] == {"cpu": "96", "memory": "384Gi", "pods": "110", EXTENDED_RESOURCE: "4"}
    assert v100["metadata"]["labels"][MODEL_LABEL] == "V100M16"
    pods = _by_name(extended.pods)
    late = pods["pod-late"]["spec"]["containers"][0]["resources"]
    assert late == {
        "requests": {"cpu": "8", "memory": "30517Mi", EXTENDED_RESOURCE: "4"},
        "limits": {EXTENDED_RESOURCE: "4"},
    }
    assert _extended_demand(pods["pod-late"]) == (4, ["V100M16", "V100M32"])
    assert _extended_demand(pods["pod-cpu"]) == (0, [])
    assert "limits" not in pods["pod-cpu"]["spec"]["containers"][0]["resources"]
    assert extended.device_classes == extended.resource_slices == extended.claim_templates == []


def test_dra_form_publishes_one_node_local_slice_per_gpu_node(trace_dir: Path) -> None:
    _, dra = _both(trace_dir)
    (cls,) = dra.device_classes
    assert cls["metadata"]["name"] == DEVICE_CLASS
    assert cls["spec"]["selectors"] == [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]
    slices = {s["spec"]["nodeName"]: s for s in dra.resource_slices}
    assert sorted(slices) == ["g2-node", "t4-node", "v100-node"]  # the CPU-only node publishes nothing
    v100 = slices["v100-node"]["spec"]
    assert v100["driver"] == DRIVER and v100["pool"] == {"name": "v100-node", "generation": 1, "resourceSliceCount": 1}
    assert [d["name"] for d in v100["devices"]] == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert v100["devices"][0] == {
        "name": "gpu-0",
        "attributes": {"model": {"string": "V100M16"}},
        "capacity": {"memory": {"value": "16Gi"}},
    }
    # G2 is Alibaba's own code: its memory is not known, so no capacity is made up.
    assert slices["g2-node"]["spec"]["devices"][7] == {"name": "gpu-7", "attributes": {"model": {"string": "G2"}}}
    for node in dra.nodes:  # DRA nodes advertise no GPUs of their own
        assert EXTENDED_RESOURCE not in node["status"]["capacity"]


def test_dra_pods_share_one_template_per_demand_with_the_model_selector(trace_dir: Path) -> None:
    _, dra = _both(trace_dir)
    templates = _by_name(dra.claim_templates)
    assert sorted(templates) == ["gpu-1", "gpu-1-t4", "gpu-4-v100m16-v100m32"]
    exactly = templates["gpu-4-v100m16-v100m32"]["spec"]["spec"]["devices"]["requests"][0]["exactly"]
    assert exactly == {
        "deviceClassName": DEVICE_CLASS,
        "allocationMode": "ExactCount",
        "count": 4,
        "selectors": [
            {"cel": {"expression": 'device.attributes["gpu.kss.sigs.k8s.io"].model in ["V100M16", "V100M32"]'}}
        ],
    }
    pods = _by_name(dra.pods)
    assert pods["pod-t4"]["spec"]["resourceClaims"] == [{"name": "gpu", "resourceClaimTemplateName": "gpu-1-t4"}]
    assert pods["pod-t4"]["spec"]["containers"][0]["resources"]["claims"] == [{"name": "gpu"}]
    assert "resourceClaims" not in pods["pod-cpu"]["spec"]


def test_a_shared_gpu_is_one_whole_device_in_both_forms_with_the_fraction_annotated(trace_dir: Path) -> None:
    extended, dra = _both(trace_dir)
    for workload in (extended, dra):
        pods = _by_name(workload.pods)
        assert pods["pod-shared"]["metadata"]["annotations"][FRACTION] == "460"
        assert pods["pod-late"]["metadata"]["annotations"][FRACTION] == "1000"
        assert FRACTION not in pods["pod-cpu"]["metadata"]["annotations"]  # no GPU, no share
    templates = _by_name(dra.claim_templates)
    assert _extended_demand(_by_name(extended.pods)["pod-shared"]) == (1, [])
    assert _dra_demand(_by_name(dra.pods)["pod-shared"], templates) == (1, [])


def test_both_forms_describe_the_same_demand_and_supply(trace_dir: Path) -> None:
    extended, dra = _both(trace_dir)
    _assert_same_workload(extended, dra)


def _assert_same_workload(extended: Workload, dra: Workload) -> None:
    templates = _by_name(dra.claim_templates)
    assert [p["metadata"]["name"] for p in extended.pods] == [p["metadata"]["name"] for p in dra.pods]
    for ext_pod, dra_pod in zip(extended.pods, dra.pods, strict=True):
        assert _extended_demand(ext_pod) == _dra_demand(dra_pod, templates), ext_pod["metadata"]["name"]
        ext_requests = dict(ext_pod["spec"]["containers"][0]["resources"]["requests"])
        ext_requests.pop(EXTENDED_RESOURCE, None)
        assert ext_requests == dra_pod["spec"]["containers"][0]["resources"]["requests"]
        assert ext_pod["metadata"]["annotations"] == dra_pod["metadata"]["annotations"]
    slices = {s["spec"]["nodeName"]: s["spec"]["devices"] for s in dra.resource_slices}
    for node in extended.nodes:
        name, labels = node["metadata"]["name"], node["metadata"]["labels"]
        devices = slices.get(name, [])
        assert int(node["status"]["capacity"].get(EXTENDED_RESOURCE, "0")) == len(devices)
        assert {d["attributes"]["model"]["string"] for d in devices} == ({labels[MODEL_LABEL]} if devices else set())


def test_the_scenario_holds_the_claims_the_resourceclaim_controller_would_create(trace_dir: Path) -> None:
    _, dra = _both(trace_dir)
    scenario = dra.scenario()
    assert [p["metadata"]["name"] for p in scenario["pending"]] == [p["metadata"]["name"] for p in dra.pods]
    assert scenario["pods"] == []
    claims = {c["metadata"]["name"]: c for c in scenario["resourceClaims"]}
    assert len(claims) == 4  # every GPU pod, none for the CPU-only one
    templates = _by_name(scenario["resourceClaimTemplates"])
    for pod in scenario["pending"]:
        meta, spec = pod["metadata"], pod["spec"]
        assert meta["uid"] == f"uid-pod-paib-gpu-{meta['name']}" and spec["priority"] == 0
        if not spec.get("resourceClaims"):
            assert "resourceClaimStatuses" not in pod["status"]
            continue
        ((status),) = pod["status"]["resourceClaimStatuses"]
        claim = claims[status["resourceClaimName"]]
        assert status["name"] == "gpu"
        assert re.fullmatch(rf"{meta['name']}-gpu-[bcdfghjklmnpqrstvwxz2456789]{{5}}", claim["metadata"]["name"])
        assert claim["metadata"]["namespace"] == "paib-gpu"
        assert claim["metadata"]["uid"] == f"uid-resourceclaim-paib-gpu-{claim['metadata']['name']}"
        assert claim["metadata"]["annotations"] == {POD_CLAIM_NAME_ANNOTATION: "gpu"}
        assert claim["metadata"]["ownerReferences"] == [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ]
        assert claim["spec"] == templates[spec["resourceClaims"][0]["resourceClaimTemplateName"]]["spec"]["spec"]
        assert claim["status"] == {}
    assert scenario["resourceSlices"][0]["metadata"]["uid"] == "uid-resourceslice-v100-node-" + DRIVER
    # The same input gives the same file (deterministic claim names).
    assert dra.scenario() == scenario


def test_generated_claim_names_stay_within_63_characters_cut_in_proportion() -> None:
    name = generated_claim_name("p" * 60, "c" * 20)
    # 82 characters of base cut to 60*57//82 = 41 of the pod, a hyphen, 20*57//82 = 13 of the claim; the
    # controller then adds no hyphen of its own before apiserver's 5 characters.
    assert len(name) == 60
    assert name[:55] == "p" * 41 + "-" + "c" * 13 and re.fullmatch("[bcdfghjklmnpqrstvwxz2456789]{5}", name[55:])
    assert generated_claim_name("short", "gpu").startswith("short-gpu-")
    assert generated_claim_name("a", "gpu") != generated_claim_name("b", "gpu")


def test_the_extended_scenario_places_every_gpu_pod_on_a_node_of_an_allowed_model(trace_dir: Path) -> None:
    extended, _ = _both(trace_dir)
    path = trace_dir / "extended.json"
    path.write_text(json.dumps(extended.scenario()))
    proc = subprocess.run(
        [str(KSS), "simulate", "--detail", "placements", str(path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    placed = {r["pod"]: r["boundTo"] for r in json.loads(proc.stdout)["results"]}
    assert placed["paib-gpu/pod-late"] == "v100-node"  # the only V100 node, and it has 4 GPUs
    assert {placed["paib-gpu/pod-t4"], placed["paib-gpu/pod-t4-too"]} == {"t4-node"}
    assert placed["paib-gpu/pod-shared"] is not None


def test_the_extended_manifests_are_accepted_by_the_api(trace_dir: Path, store: ClusterStore) -> None:
    extended, _ = _both(trace_dir)
    for doc in yaml.safe_load_all(yaml.safe_dump_all(extended.manifests())):
        namespace = doc["metadata"].get("namespace")
        store.create(doc["kind"], doc, namespace)
    stored = store.get("Pod", "paib-gpu", "pod-late")
    assert stored is not None
    assert stored["spec"]["containers"][0]["resources"]["requests"][EXTENDED_RESOURCE] == "4"
    node = store.get("Node", None, "g2-node")
    assert node is not None and node["status"]["allocatable"][EXTENDED_RESOURCE] == "8"


def test_manifests_carry_templates_and_no_claims(trace_dir: Path) -> None:
    _, dra = _both(trace_dir)
    kinds = [d["kind"] for d in dra.manifests()]
    assert (
        kinds
        == ["Namespace", "DeviceClass"]
        + ["Node"] * 4
        + ["ResourceSlice"] * 3
        + ["ResourceClaimTemplate"] * 3
        + ["Pod"] * 5
    )
    assert all("uid" not in d["metadata"] and "status" not in d for d in dra.manifests() if d["kind"] != "Node")


def test_convert_command_writes_a_scenario_or_yaml_and_refuses_bad_input(trace_dir: Path) -> None:
    out = trace_dir / "dra.json"
    base = [str(KSS), "convert", "--trace-dir", str(trace_dir), "--pods", "gpuspec33"]
    proc = subprocess.run([*base, "--form", "dra", "--limit", "2", "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    scenario = json.loads(out.read_text())
    assert [p["metadata"]["name"] for p in scenario["pending"]] == ["pod-shared", "pod-cpu"]
    assert len(scenario["resourceClaims"]) == 1 and len(scenario["resourceSlices"]) == 3
    proc = subprocess.run([*base, "--form", "extended"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert [d["kind"] for d in yaml.safe_load_all(proc.stdout)].count("Pod") == 5
    bad = subprocess.run([*base, "--form", "dra", "--limit", "-1"], capture_output=True, text=True)
    assert bad.returncode == 2 and "--limit" in bad.stderr
    missing = subprocess.run([*base[:3], str(trace_dir / "nope"), "--form", "dra"], capture_output=True, text=True)
    assert missing.returncode == 2 and "No such file" in missing.stderr and "Traceback" not in missing.stderr
    assert len(missing.stderr.splitlines()) == 1 and "--trace-dir" in missing.stderr


def test_a_malformed_row_is_named_by_file_and_line(trace_dir: Path) -> None:
    (trace_dir / "openb_pod_list_gpuspec33.csv").write_text(PODS_CSV.replace("pod-cpu,1500", "pod-cpu,lots"))
    with pytest.raises(TraceError, match=r"openb_pod_list_gpuspec33\.csv:4: cpu_milli must be an integer"):
        load_trace(trace_dir, "gpuspec33")


@pytest.mark.skipif(not REAL_TRACE.exists(), reason="the shared Alibaba trace is not present")
def test_the_whole_gpuspec33_trace_asks_for_the_same_gpus_in_both_forms() -> None:
    trace = load_trace(REAL_TRACE, "gpuspec33")
    extended, dra = convert(trace, "extended", "gpuspec33"), convert(trace, "dra", "gpuspec33")
    _assert_same_workload(extended, dra)
    assert len(dra.pods) == 8152 and len(dra.resource_slices) == 1523 - 310
    templates = _by_name(dra.claim_templates)
    demands = [_dra_demand(p, templates) for p in dra.pods]
    assert sum(count for count, _ in demands) == 6989 + 8 * 44 + 2 * 16 + 4 * 15
    assert sum(1 for _, models in demands if models) == 2360 + 12 + 9 + 7  # gpu_spec rows (all have GPUs)
    assert sum(len(s["spec"]["devices"]) for s in dra.resource_slices) == sum(n.gpus for n in trace.nodes)


def _node_admits_extended(pod: dict[str, Any], node: dict[str, Any]) -> bool:
    """The GPU part of the extended form's verdict: enough nvidia.com/gpu and, if constrained, an allowed model."""
    count, models = _extended_demand(pod)
    if int(node["status"]["allocatable"].get(EXTENDED_RESOURCE, "0")) < count:
        return False
    return not models or node["metadata"]["labels"].get(MODEL_LABEL) in models


def test_the_dra_allocator_picks_exactly_the_nodes_the_extended_form_allows(trace_dir: Path) -> None:
    """Per pod and node, DRA's structured allocator finds devices for the claim iff the extended form fits."""
    pytest.importorskip("kss_sim.kube.dra.cel", reason="the CEL module of issue #18 is not there yet")
    from kss_sim.scheduler.dra import (
        AllocatedState,
        Allocator,
        DeviceMatchCache,
        NodeAllocationError,
        features_from_gates,
    )

    extended, dra = _both(trace_dir)
    scenario = dra.scenario()
    claims = {c["metadata"]["name"]: c for c in scenario["resourceClaims"]}
    classes = {c["metadata"]["name"]: c for c in scenario["deviceClasses"]}
    allocator = Allocator(
        features_from_gates({}), AllocatedState(), classes, scenario["resourceSlices"], DeviceMatchCache()
    )
    ext_nodes = _by_name(extended.nodes)
    ext_pods = _by_name(extended.pods)
    verdicts = 0
    for pod in scenario["pending"]:
        statuses = pod["status"].get("resourceClaimStatuses")
        if not statuses:
            continue
        claim = claims[statuses[0]["resourceClaimName"]]
        for node in scenario["nodes"]:
            try:
                results = allocator.allocate(node, [claim])
            except NodeAllocationError:
                results = None
            name = node["metadata"]["name"]
            assert (results is not None) == _node_admits_extended(ext_pods[pod["metadata"]["name"]], ext_nodes[name])
            if results is not None:
                (result,) = results
                devices = result["devices"]["results"]
                assert len(devices) == claim["spec"]["devices"]["requests"][0]["exactly"]["count"]
                assert {(d["driver"], d["pool"]) for d in devices} == {(DRIVER, name)}
            verdicts += 1
    assert verdicts == 4 * 4  # four GPU pods on four nodes


def test_the_dra_manifests_are_stored_as_the_scenario_has_them(trace_dir: Path, store: ClusterStore) -> None:
    from kss_sim.cluster.kinds.registry import BY_KIND

    if "ResourceClaimTemplate" not in BY_KIND:
        pytest.skip("the cluster does not serve resource.k8s.io/v1 yet")
    _, dra = _both(trace_dir)
    for doc in yaml.safe_load_all(yaml.safe_dump_all(dra.manifests())):
        store.create(doc["kind"], doc, doc["metadata"].get("namespace"))
    scenario = dra.scenario()
    for key, kind in (
        ("deviceClasses", "DeviceClass"),
        ("resourceSlices", "ResourceSlice"),
        ("resourceClaimTemplates", "ResourceClaimTemplate"),
    ):
        for obj in scenario[key]:
            stored = store.get(kind, obj["metadata"].get("namespace"), obj["metadata"]["name"])
            assert stored is not None and stored["spec"] == obj["spec"], (kind, obj["metadata"]["name"])
    for pod in scenario["pending"]:
        stored = store.get("Pod", "paib-gpu", pod["metadata"]["name"])
        assert stored is not None
        assert stored["spec"].get("resourceClaims") == pod["spec"].get("resourceClaims")
        assert stored["spec"]["containers"] == pod["spec"]["containers"]

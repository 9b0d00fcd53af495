"""v1.37's Workload API (scheduling.k8s.io/v1beta1) in ``kss simulate``: ported, not measured. kss schedules v1.37's
PodGroups as v1.36 does (docs/versions.md lists v1.37's changes it does not port), so each of v1.36's measured
workload scenarios, its objects written in v1beta1 and its gates as v1.37 has them (GangScheduling and
WorkloadAwarePreemption went into GenericWorkload), places every pod as at v1.36, for the same reasons; an error of
the group's preemption says where it came from, as v1.37's does."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kss_sim.cluster.kinds.registry import POD_GROUP_V1BETA1, WORKLOAD_V1BETA1
from kss_sim.cluster.kinds.workload_v1beta1 import in_stored_version, to_view
from kss_sim.kube.versions import kube_version
from kss_sim.scheduler import podgroup_cycle
from kss_sim.scheduler.framework import Code, Status
from kss_sim.scheduler.preemption_podgroup import PodGroupPreemption
from kss_sim.simulation.runner import run_scenario

V136 = Path(__file__).resolve().parents[1] / "golden" / "v1.36"
FAMILIES = ("gangs", "gangpreemption", "topology")
# Folded into GenericWorkload at v1.37 (kubernetes/kubernetes#139520): unknown gates there.
MERGED = ("GangScheduling", "WorkloadAwarePreemption")


def _as_v1_37_has_its_gates(scenario: dict[str, Any]) -> dict[str, Any]:
    """The v1.36 scenario with the gates that went into GenericWorkload set as it is (what v1.37 runs)."""
    out = copy.deepcopy(scenario)
    gates = dict(out.get("featureGates") or {})
    out["featureGates"] = {**gates, **dict.fromkeys(MERGED, bool(gates.get("GenericWorkload")))}
    return out


def _at_v1_37(scenario: dict[str, Any]) -> dict[str, Any]:
    """The scenario as a v1.37 cluster would hold it: its Workload API objects in v1beta1, no merged gates."""
    out = copy.deepcopy(scenario)
    out["featureGates"] = {k: v for k, v in (out.get("featureGates") or {}).items() if k not in MERGED}
    for key, view in (("podGroups", POD_GROUP_V1BETA1), ("workloads", WORKLOAD_V1BETA1)):
        out[key] = [
            to_view(view, obj) if obj.get("apiVersion") == "scheduling.k8s.io/v1alpha2" else obj
            for obj in out.get(key) or []
        ]
    return out


def _scenarios() -> list[Any]:
    paths = sorted(p for family in FAMILIES for p in (V136 / family).glob("*.scenario.json"))
    return [pytest.param(p, id=p.name.removesuffix(".scenario.json")) for p in paths]


@pytest.mark.parametrize("path", _scenarios())
def test_v1_37_schedules_v1beta1_groups_as_v1_36_schedules_v1alpha2_ones(path: Path) -> None:
    scenario = _as_v1_37_has_its_gates(json.loads(path.read_text()))
    v137 = _at_v1_37(scenario)
    # (gangs-008's members name a PodGroup that does not exist.)
    assert all(o["apiVersion"] == "scheduling.k8s.io/v1beta1" for o in v137.get("podGroups") or [])
    at_v136 = run_scenario(scenario, "full", kube_version=kube_version("1.36"))["results"]
    at_v137 = run_scenario(v137, "full", kube_version=kube_version("1.37"))["results"]
    assert at_v137 == at_v136


def test_the_v1beta1_forms_round_trip_to_the_stored_ones() -> None:
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {
            "podGroupTemplateRef": {"workload": {"workloadName": "w", "podGroupTemplateName": "t"}},
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "disruptionMode": "PodGroup",
        },
    }
    served = to_view(POD_GROUP_V1BETA1, group)
    assert served["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert served["spec"] == {
        "workloadRef": {"workloadName": "w", "templateName": "t"},
        "schedulingPolicy": {"gang": {"minCount": 2}},
        "disruptionMode": {"all": {}},
    }
    assert in_stored_version(served) == group
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {
            "podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}}, "disruptionMode": {"single": {}}}],
            # CompositePodGroup's field, its alpha gate off in v1.37: dropped, as kube-apiserver drops it.
            "compositePodGroupTemplates": [{"name": "c"}],
        },
    }
    stored = in_stored_version(workload)
    assert stored["apiVersion"] == "scheduling.k8s.io/v1alpha2"
    assert stored["spec"] == {
        "podGroupTemplates": [{"name": "t", "schedulingPolicy": {"basic": {}}, "disruptionMode": "Pod"}]
    }


@pytest.mark.parametrize(("version", "prefix"), [("1.36", ""), ("1.37", "pod group preemption: ")])
def test_an_error_of_pod_group_preemption_is_the_groups_and_says_so_from_v1_37(
    version: str, prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # kubernetes/kubernetes#139218 (v1.37): the error is wrapped as pod-by-pod preemption wraps its own.
    def failing(*_args: Any, **_kwargs: Any) -> PodGroupPreemption:
        return PodGroupPreemption(Status(Code.ERROR, "deleting a victim failed"), [])

    monkeypatch.setattr(podgroup_cycle, "preempt_pod_group", failing)
    scenario = _as_v1_37_has_its_gates(
        json.loads((V136 / "gangpreemption/gangpreemption-007-workload-aware.scenario.json").read_text())
    )
    if version == "1.37":
        scenario = _at_v1_37(scenario)
    first = run_scenario(scenario, "full", kube_version=kube_version(version))["results"][0]
    assert first["podGroup"]["outcome"] == "SchedulerError"
    assert first["podGroup"]["message"] == f"{prefix}deleting a victim failed"

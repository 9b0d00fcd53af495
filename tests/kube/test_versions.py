"""The Kubernetes versions kss simulates: each release's gate defaults, what it refuses, its default plugins."""

from __future__ import annotations

import pytest

from kss_sim.kube import versions
from kss_sim.kube.versions import DEFAULT_KUBE_VERSION, VERSIONS, gate_enabled, kube_version


def test_the_supported_versions_are_the_reference_patch_releases() -> None:
    assert {name: v.git_version for name, v in VERSIONS.items()} == {
        "1.33": "v1.33.3",
        "1.34": "v1.34.7",
        "1.35": "v1.35.4",
        "1.36": "v1.36.2",
        "1.37": "v1.37.0",
    }


def test_the_default_is_the_newest_version_measured() -> None:
    # A version added later moves the default only when it is measured and the constant is changed with it: this
    # fails first, and an unmeasured version (v1.37) never becomes the default.
    newest_measured = max((v for v in VERSIONS.values() if v.measured), key=lambda v: v.minor)
    assert newest_measured.name == DEFAULT_KUBE_VERSION
    assert kube_version().name == DEFAULT_KUBE_VERSION
    assert kube_version(None) is VERSIONS[DEFAULT_KUBE_VERSION]


def test_v1_37_is_ported_and_never_shown_as_measured() -> None:
    # No reference program of v1.37 exists: every surface names it "ported, not measured against kube-scheduler".
    assert [name for name, v in VERSIONS.items() if not v.measured] == ["1.37"]
    v137 = kube_version("1.37")
    assert v137.fidelity == "ported, not measured against kube-scheduler"
    assert kube_version("1.36").fidelity == "measured against kube-scheduler"
    assert kube_version("1.36").unmeasured_note() is None
    assert "1.37 is ported, not measured against kube-scheduler" in (v137.unmeasured_note() or "")
    assert versions.versions_help() == (
        "1.33, 1.34, 1.35, 1.36, 1.37 (1.37: ported, not measured against kube-scheduler)"
    )
    assert versions.version_label("1.37", False) == "1.37 (ported, not measured against kube-scheduler)"
    assert versions.version_label("1.36", True) == versions.version_label("1.36", None) == "1.36"


@pytest.mark.parametrize("given", ["1.34", "v1.34", "v1.34.7", "1.34.0", " 1.34 "])
def test_a_version_is_named_by_its_minor_release_with_or_without_v_and_patch(given: str) -> None:
    assert kube_version(given).name == "1.34"


@pytest.mark.parametrize("given", ["1.32", "1.38", "2.0", "latest", "1", ""])
def test_an_unsupported_version_is_refused_naming_the_supported_ones(given: str) -> None:
    supported = r"\(supported: 1\.33, 1\.34, 1\.35, 1\.36, 1\.37\)"
    with pytest.raises(ValueError, match=rf"unsupported Kubernetes version .*{supported}"):
        kube_version(given)


def test_each_release_has_upstreams_defaults_for_the_gates_it_has() -> None:
    v133, v134, v135, v136 = (kube_version(v).gate_defaults() for v in ("1.33", "1.34", "1.35", "1.36"))
    # DRA: beta and off in v1.33, GA from v1.34; the prioritized list alpha in v1.33.
    assert v133["DynamicResourceAllocation"] is False and v134["DynamicResourceAllocation"] is True
    assert v133["DRAPrioritizedList"] is False and v134["DRAPrioritizedList"] is True
    assert "DRASchedulerFilterTimeout" not in v133 and v134["DRASchedulerFilterTimeout"] is True
    # The Workload API and gangs exist from v1.35, off; v1.36's workload-aware gates from v1.36.
    assert "GenericWorkload" not in v134 and v135["GenericWorkload"] is False
    assert "TopologyAwareWorkloadScheduling" not in v135 and v136["TopologyAwareWorkloadScheduling"] is False
    # v1.36 turns on partitionable devices, device taints, consumable capacity, extended resources and binding
    # conditions (beta), and NodeDeclaredFeatures.
    for gate in ("DRAPartitionableDevices", "DRADeviceTaints", "DRAConsumableCapacity", "DRAExtendedResource",
                 "DRADeviceBindingConditions", "NodeDeclaredFeatures"):  # fmt: skip
        assert v135[gate] is False and v136[gate] is True, gate
    assert v134["ClearingNominatedNodeNameAfterBinding"] is False and v135["ClearingNominatedNodeNameAfterBinding"]
    assert all(d["SchedulerPopFromBackoffQ"] for d in (v133, v134, v135, v136))


def test_v1_37s_gates_are_its_versioned_specs() -> None:
    v136, v137 = kube_version("1.36"), kube_version("1.37")
    d136, d137 = v136.gate_defaults(), v137.gate_defaults()
    # GA in v1.37, locked on: DRA's prioritized list, claim device status, extended resources; NodeDeclaredFeatures.
    for gate in ("DRAPrioritizedList", "DRAResourceClaimDeviceStatus", "DRAExtendedResource", "NodeDeclaredFeatures"):
        assert d137[gate] is True, gate
        with pytest.raises(ValueError, match=f"cannot set feature gate {gate} to false, feature is locked to true"):
            v137.check_gates({gate: False})
        v136.check_gates({gate: False})  # settable in v1.36
    # GA and on, not locked: device taints and DeviceTaintRules (off by default until v1.37).
    assert d136["DRADeviceTaintRules"] is False and d137["DRADeviceTaintRules"] is True
    v137.check_gates({"DRADeviceTaints": False, "DRADeviceTaintRules": False})
    # The Workload API went beta, still off; GangScheduling and WorkloadAwarePreemption were folded into it.
    assert d137["GenericWorkload"] is False and d137["TopologyAwareWorkloadScheduling"] is False
    assert "GangScheduling" not in d137 and "WorkloadAwarePreemption" not in d137
    with pytest.raises(ValueError, match=r"^unrecognized feature gate: GangScheduling \(Kubernetes v1\.37 knows: "):
        v137.check_gates({"GangScheduling": True})
    # Everything else is v1.36's.
    assert {g: d for g, d in d137.items() if d136.get(g) != d} == {"DRADeviceTaintRules": True}


def test_a_gate_folded_into_another_follows_it() -> None:
    # GenericWorkload enables gang scheduling and workload-aware preemption from v1.37 (kubernetes#139520).
    gates = kube_version("1.37").effective_gates({"GenericWorkload": True})
    assert gates["GangScheduling"] is True and gates["WorkloadAwarePreemption"] is True
    assert kube_version("1.37").effective_gates({})["GangScheduling"] is False
    assert _names(kube_version("1.37").default_multi_point({"GenericWorkload": True}))[-1] == "GangScheduling"
    # Before v1.37 they are gates of their own.
    assert kube_version("1.36").effective_gates({"GenericWorkload": True})["GangScheduling"] is False


def test_v1_37s_workload_scheduling_gates_are_accepted() -> None:
    # Its API is served in scheduling.k8s.io/v1beta1 and its groups scheduled as v1.36 schedules them (ported, not
    # measured); TopologyAwareWorkloadScheduling still needs GenericWorkload.
    for gates in ({"GenericWorkload": True}, {"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True}):
        kube_version("1.37").check_gates(gates)
    with pytest.raises(ValueError, match=r"^feature gate TopologyAwareWorkloadScheduling requires GenericWorkload"):
        kube_version("1.37").check_gates({"TopologyAwareWorkloadScheduling": True})


def test_the_default_versions_gates_are_what_gate_enabled_falls_back_to() -> None:
    assert gate_enabled({}, "DRAPrioritizedList") is True
    assert gate_enabled({}, "DRADeviceTaints") is True  # beta and on from v1.36
    assert gate_enabled({"DRADeviceTaints": False}, "DRADeviceTaints") is False
    assert gate_enabled({}, "DRADeviceTaintRules") is False  # beta but off in v1.36
    assert gate_enabled({}, "TopologyAwareWorkloadScheduling") is False  # alpha in v1.36: off
    defaults = VERSIONS[DEFAULT_KUBE_VERSION].gate_defaults()
    assert all(gate_enabled({}, gate) is on for gate, on in defaults.items())


def test_effective_gates_name_every_gate_with_the_versions_default_or_the_one_given() -> None:
    gates = kube_version("1.34").effective_gates({"DRADeviceTaints": True})
    assert gates["DRADeviceTaints"] is True
    assert gates["DRAPrioritizedList"] is True
    assert gates["GenericWorkload"] is False  # v1.34 has no such gate: off


def test_a_gate_the_release_does_not_have_is_refused_as_kube_does() -> None:
    with pytest.raises(ValueError, match=r"^unrecognized feature gate: GenericWorkload \(Kubernetes v1\.34 knows: "):
        kube_version("1.34").check_gates({"GenericWorkload": True})
    with pytest.raises(ValueError, match="unrecognized feature gate: Bogus"):
        kube_version("1.36").check_gates({"Bogus": False})
    kube_version("1.35").check_gates({"GenericWorkload": True, "GangScheduling": True})


def test_a_gate_locked_to_its_default_cannot_be_set_otherwise() -> None:
    with pytest.raises(ValueError, match="cannot set feature gate DynamicResourceAllocation to false, feature is "
                                         "locked to true"):  # fmt: skip
        kube_version("1.35").check_gates({"DynamicResourceAllocation": False})
    kube_version("1.34").check_gates({"DynamicResourceAllocation": False})  # GA, not yet locked
    kube_version("1.35").check_gates({"DynamicResourceAllocation": True})


def test_a_gate_needs_the_gates_it_depends_on() -> None:
    with pytest.raises(ValueError, match="feature gate GangScheduling requires GenericWorkload=true"):
        kube_version("1.35").check_gates({"GangScheduling": True})


def test_a_gate_kss_does_not_simulate_cannot_be_turned_on(monkeypatch: pytest.MonkeyPatch) -> None:
    on = {"GenericWorkload": True, "GangScheduling": True, "WorkloadAwarePreemption": True}
    # Workload-aware preemption and topology-aware placement are simulated.
    kube_version("1.36").check_gates(on)
    kube_version("1.36").check_gates({"GenericWorkload": True, "TopologyAwareWorkloadScheduling": True})
    monkeypatch.setattr(versions, "UNPORTED_GATES", frozenset({"WorkloadAwarePreemption"}))
    with pytest.raises(ValueError, match=r"feature gate WorkloadAwarePreemption \(Kubernetes v1\.36\) is not "):
        kube_version("1.36").check_gates(on)
    kube_version("1.36").check_gates({"WorkloadAwarePreemption": False})


def _names(plugins: list[dict[str, object]]) -> list[object]:
    return [p["name"] for p in plugins]


def test_the_default_plugins_follow_each_releases_get_default_plugins() -> None:
    v133, v134, v135, v136 = (kube_version(v) for v in ("1.33", "1.34", "1.35", "1.36"))
    # v1.33: DRA is off by default, so DynamicResources is not among them; turned on it comes without a weight.
    assert "DynamicResources" not in _names(v133.default_multi_point({}))
    dra133 = next(
        p for p in v133.default_multi_point({"DynamicResourceAllocation": True}) if p["name"] == "DynamicResources"
    )
    assert dra133 == {"name": "DynamicResources"}
    # From v1.34, with weight 2, before DefaultPreemption.
    names134 = _names(v134.default_multi_point({}))
    assert names134.index("DynamicResources") == names134.index("DefaultPreemption") - 1
    assert {"name": "DynamicResources", "weight": 2} in v134.default_multi_point({})
    # v1.35: GangScheduling appended when its gate is on; v1.36: NodeDeclaredFeatures by default, and the
    # topology-aware plugins with their gate.
    assert _names(v135.default_multi_point({"GenericWorkload": True, "GangScheduling": True}))[-1] == "GangScheduling"
    assert "NodeDeclaredFeatures" not in _names(v135.default_multi_point({}))
    assert "NodeDeclaredFeatures" in _names(v136.default_multi_point({}))
    assert _names(v136.default_multi_point({"TopologyAwareWorkloadScheduling": True}))[-2:] == [
        "TopologyPlacementGenerator",
        "PodGroupPodsCount",
    ]


def test_each_releases_in_tree_plugins() -> None:
    assert "GangScheduling" not in kube_version("1.34").in_tree_plugins()
    assert {"GangScheduling", "NodeDeclaredFeatures"} <= kube_version("1.35").in_tree_plugins()
    assert {"TopologyPlacementGenerator", "PodGroupPodsCount"} <= kube_version("1.36").in_tree_plugins()
    assert "PodGroupPodsCount" not in kube_version("1.35").in_tree_plugins()


def test_version_info_is_what_slash_version_answers() -> None:
    info = kube_version("1.36").version_info()
    assert (info["major"], info["minor"], info["gitVersion"], info["goVersion"]) == ("1", "36", "v1.36.2", "go1.26.0")
    info = kube_version("1.37").version_info()
    assert (info["major"], info["minor"], info["gitVersion"], info["goVersion"]) == ("1", "37", "v1.37.0", "go1.26.4")

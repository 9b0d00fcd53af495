"""``--runtime-config`` beyond resource.k8s.io: every group's registered versions per release (an unregistered one
refused in kube-apiserver's words), alpha APIs off by default (the workload-scheduling kinds need the flag besides
their gate), registered versions kss does not serve accepted."""

from __future__ import annotations

import pytest

from kss_sim.cluster.kinds.registry import BY_RESOURCE, api_served
from kss_sim.kube.api_enablement import (
    REGISTERED_VERSIONS,
    api_enabled,
    check_runtime_config,
    parse_runtime_config,
    workload_api_note,
)


@pytest.mark.parametrize(
    ("text", "minor", "message"),
    [
        ("apps/v2=true", 36, "group version apps/v2 that has not been registered"),
        (
            "scheduling.k8s.io/v1alpha2=true",
            35,
            "group version scheduling.k8s.io/v1alpha2 that has not been registered",
        ),
        (
            "scheduling.k8s.io/v1alpha1=true",
            36,
            "group version scheduling.k8s.io/v1alpha1 that has not been registered",
        ),
        ("autoscaling/v2beta2=true", 36, "group version autoscaling/v2beta2 that has not been registered"),
        (
            "networking.k8s.io/v1alpha1=true",
            34,
            "group version networking.k8s.io/v1alpha1 that has not been registered",
        ),
        (
            "storagemigration.k8s.io/v1beta1=true",
            34,
            "group version storagemigration.k8s.io/v1beta1 that has not been registered",
        ),
        ("batch/v2alpha1/cronjobs=false", 33, "group version batch/v2alpha1 that has not been registered"),
    ],
)
def test_an_unregistered_version_of_any_group_is_refused(text: str, minor: int, message: str) -> None:
    # (MergeAPIResourceConfigs' check, once the option validation has passed)
    with pytest.raises(ValueError) as raised:
        check_runtime_config(parse_runtime_config(text), minor)
    assert str(raised.value) == message


@pytest.mark.parametrize(
    ("text", "minor"),
    [
        ("apps/v1beta1=true,extensions/v1beta1=true", 36),  # registered, not served: accepted, nothing changes
        ("autoscaling/v2beta2=true,networking.k8s.io/v1alpha1=true", 33),
        ("storagemigration.k8s.io/v1alpha1=true", 34),
        ("scheduling.k8s.io/v1alpha1=true", 35),
        ("scheduling.k8s.io/v1alpha2/podgroups=true", 36),
    ],
)
def test_registered_versions_are_accepted(text: str, minor: int) -> None:
    check_runtime_config(parse_runtime_config(text), minor)


def test_each_release_registers_what_its_k8s_io_api_has() -> None:
    assert REGISTERED_VERSIONS[35]["scheduling.k8s.io"] == ("v1", "v1beta1", "v1alpha1")
    assert REGISTERED_VERSIONS[36]["scheduling.k8s.io"] == ("v1", "v1beta1", "v1alpha2")
    assert (
        "v2beta2" in REGISTERED_VERSIONS[35]["autoscaling"] and "v2beta2" not in REGISTERED_VERSIONS[36]["autoscaling"]
    )
    assert "v1" not in REGISTERED_VERSIONS[33]["resource.k8s.io"]
    # v1.37 (ported): the Workload API moved to v1beta1 (registered since PriorityClass's beta) and v1alpha3
    # (CompositePodGroup); v1alpha2 was dropped, so asking for it is refused as kube-apiserver refuses it.
    assert REGISTERED_VERSIONS[37]["scheduling.k8s.io"] == ("v1", "v1beta1", "v1alpha3")
    with pytest.raises(ValueError, match=r"group version scheduling\.k8s\.io/v1alpha2 that has not been registered"):
        check_runtime_config(parse_runtime_config("scheduling.k8s.io/v1alpha2=true"), 37)


@pytest.mark.parametrize(("minor", "version"), [(35, "v1alpha1"), (36, "v1alpha2")])
def test_the_alpha_workload_api_needs_the_runtime_config_besides_its_gate(minor: int, version: str) -> None:
    workloads = BY_RESOURCE[("scheduling.k8s.io", version, "workloads")]
    gate = {"GenericWorkload": True}
    assert not api_enabled("scheduling.k8s.io", version, "workloads", minor)
    assert not api_served(workloads, gate, minor)
    assert not api_served(workloads, {}, minor, {f"scheduling.k8s.io/{version}": "true"})
    for config in ({f"scheduling.k8s.io/{version}": "true"}, {"api/alpha": "true"}, {"api/all": "true"}):
        assert api_served(workloads, gate, minor, config), config
    assert not api_served(workloads, gate, minor, {"api/alpha": "true", f"scheduling.k8s.io/{version}": "false"})
    # Stable versions stay on by default, and off only when the flag says so.
    assert api_enabled("scheduling.k8s.io", "v1", "priorityclasses", minor)
    assert not api_enabled("scheduling.k8s.io", "v1", "priorityclasses", minor, {"api/ga": "false"})


def test_the_beta_workload_api_of_v1_37_needs_the_runtime_config_besides_its_gate() -> None:
    workloads = BY_RESOURCE[("scheduling.k8s.io", "v1beta1", "workloads")]
    pod_groups = BY_RESOURCE[("scheduling.k8s.io", "v1beta1", "podgroups")]
    gate = {"GenericWorkload": True}
    assert not api_served(workloads, gate, 37)  # a beta API: off by default (KEP-3136)
    for config in ({"scheduling.k8s.io/v1beta1": "true"}, {"api/beta": "true"}):
        assert api_served(workloads, gate, 37, config) and api_served(pod_groups, gate, 37, config), config
    assert not api_served(workloads, {}, 37, {"scheduling.k8s.io/v1beta1": "true"})
    assert not api_served(workloads, gate, 37, {"api/alpha": "true"})
    # v1.36 has no Workload API in v1beta1, and v1.37 none in v1alpha2 (the store's form of both).
    assert not api_served(workloads, gate, 36, {"scheduling.k8s.io/v1beta1": "true"})
    stored = BY_RESOURCE[("scheduling.k8s.io", "v1alpha2", "workloads")]
    assert not api_served(stored, gate, 37, {"api/all": "true"})


def test_kss_serve_says_when_the_gate_is_on_and_the_workload_api_is_not_served() -> None:
    gate = {"GenericWorkload": True}
    assert workload_api_note(gate, 36, {}) == (
        "note: GenericWorkload is on but scheduling.k8s.io/v1alpha2 is not served (an alpha API, off by default as on "
        "kube-apiserver): add --runtime-config scheduling.k8s.io/v1alpha2=true to serve the Workload API"
    )
    assert workload_api_note(gate, 37, {}) == (
        "note: GenericWorkload is on but scheduling.k8s.io/v1beta1 is not served (a beta API, off by default as on "
        "kube-apiserver): add --runtime-config scheduling.k8s.io/v1beta1=true to serve the Workload API"
    )
    assert workload_api_note(gate, 37, {"api/beta": "true"}) is None
    assert workload_api_note(gate, 35, {"api/alpha": "false"}) is not None
    assert workload_api_note(gate, 35, {"scheduling.k8s.io/v1alpha1": "true"}) is None
    assert workload_api_note({}, 36, {}) is None
    assert workload_api_note(gate, 34, {}) is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("example.com/v1=true", "unknown api groups example.com/v1"),
        ("b.example/v1=true,a.example/v2/things=false,apps/v1=true", "unknown api groups a.example/v2,b.example/v1"),
        ("api/v1=false", "unknown api groups api/v1"),  # the core group's key is "/v1"
        ("v1=true", "runtime-config invalid key v1"),
        ("apps/v1/deployments/scale=true", "runtime-config invalid key apps/v1/deployments/scale"),
        ("api/all=false", "invalid runtime-config with only api/all=false"),
        ("apps/=true", "group version apps/ that has not been registered"),
        ("/v2=true", "group version v2 that has not been registered"),
    ],
)
def test_kube_apiserver_s_option_validation_refuses_unknown_groups_and_malformed_keys(text: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        check_runtime_config(parse_runtime_config(text), 36)
    assert str(raised.value) == message
    check_runtime_config(parse_runtime_config("api/all=false,apps/v1=true,/v1=true"), 36)  # not api/all=false alone

"""The scheduler at each Kubernetes version: the release's in-tree plugins and default profile, plugins kss has not
ported, and DynamicResources, which scores nodes only from v1.35."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.kube.versions import kube_version
from kss_sim.scheduler import kube_scheduler_configuration
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError, defaulted_document, left_out_note, parse_config
from kss_sim.scheduler.profiles import expand_points, plugins_in_effect
from kss_sim.simulation.runner import run_scenario
from tests.scheduler.plugins.test_dynamic_resources import _claim, _device_class, _pod, _scenario, _slice


def _multi_point(version: str, gates: dict[str, bool] | None = None) -> list[dict[str, Any]]:
    config = parse_config(None, gates or {}, kube_version(version))
    return config.profiles[0].plugins["multiPoint"]["enabled"]


def test_the_default_profile_is_the_releases() -> None:
    assert "DynamicResources" not in [p["name"] for p in _multi_point("1.33")]
    assert {"name": "DynamicResources", "weight": 2} in _multi_point("1.34")
    assert {"name": "DynamicResources", "weight": 2} in _multi_point("1.35")
    gang = {"GenericWorkload": True, "GangScheduling": True}
    assert _multi_point("1.35", gang)[-1] == {"name": "GangScheduling"}


def test_a_plugin_of_a_later_release_does_not_exist_at_an_earlier_one() -> None:
    doc = {"profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "GangScheduling"}]}}}]}
    with pytest.raises(ConfigError, match="'GangScheduling': plugin does not exist"):
        parse_config(doc, {}, kube_version("1.34"))
    assert parse_config(doc, {}, kube_version("1.35")).kube_version.name == "1.35"


def test_a_plugin_kss_has_not_ported_is_refused_with_a_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    doc = {"profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "PodGroupPodsCount"}]}}}]}
    assert parse_config(doc, {}, kube_version("1.36")).kube_version.name == "1.36"  # v1.36's, ported
    with pytest.raises(ConfigError, match="'PodGroupPodsCount': plugin does not exist"):
        parse_config(doc, {}, kube_version("1.35"))
    # Were it not ported: refused.
    monkeypatch.setattr(kube_scheduler_configuration, "UNPORTED_PLUGINS", frozenset({"PodGroupPodsCount"}))
    with pytest.raises(ConfigError, match=r"kube-scheduler v1\.36's plugin PodGroupPodsCount is not ported to kss yet"):
        parse_config(doc, {}, kube_version("1.36"))


def test_v1_36_default_profile_runs_node_declared_features() -> None:
    v136 = kube_version("1.36")
    config = parse_config(None, v136.effective_gates({}), v136)
    assert config.left_out == []
    assert config.profiles[0].plugins["multiPoint"]["enabled"][-1] == {"name": "NodeDeclaredFeatures"}
    assert left_out_note(v136.effective_gates({}), v136) is None
    points = dict(plugins_in_effect(config.profiles[0], v136))
    assert "NodeDeclaredFeatures" in [name for name, _ in points["preFilter"]]
    assert "NodeDeclaredFeatures" in [name for name, _ in points["filter"]]
    # v1.35 has the plugin, behind its alpha gate.
    v135 = kube_version("1.35")
    assert "NodeDeclaredFeatures" not in [p["name"] for p in _multi_point("1.35")]
    assert {"name": "NodeDeclaredFeatures"} in _multi_point("1.35", {"NodeDeclaredFeatures": True})
    assert parse_config(None, v135.effective_gates({}), v135).left_out == []


def test_topology_aware_scheduling_adds_the_placement_plugins_to_the_default_profile() -> None:
    v136 = kube_version("1.36")
    gates = {**v136.effective_gates({}), "TopologyAwareWorkloadScheduling": True}
    config = parse_config(None, gates, v136)
    assert config.left_out == []
    enabled = config.profiles[0].plugins["multiPoint"]["enabled"]
    assert enabled[-2:] == [{"name": "TopologyPlacementGenerator"}, {"name": "PodGroupPodsCount", "weight": 1}]
    assert left_out_note(gates, v136) is None


def test_an_unported_default_plugin_is_left_out_and_said_so(monkeypatch: pytest.MonkeyPatch) -> None:
    # No default plugin is unported today: as if v1.36's placement plugins were not.
    unported = frozenset({"TopologyPlacementGenerator", "PodGroupPodsCount"})
    monkeypatch.setattr(kube_scheduler_configuration, "UNPORTED_PLUGINS", unported)
    v136 = kube_version("1.36")
    gates = {**v136.effective_gates({}), "TopologyAwareWorkloadScheduling": True}
    config = parse_config(None, gates, v136)
    assert config.left_out == ["TopologyPlacementGenerator", "PodGroupPodsCount"]
    enabled = [p["name"] for p in config.profiles[0].plugins["multiPoint"]["enabled"]]
    assert "TopologyPlacementGenerator" not in enabled and "PodGroupPodsCount" not in enabled
    assert left_out_note(gates, v136) == (
        "note: Kubernetes v1.36's default plugins TopologyPlacementGenerator, PodGroupPodsCount are not ported to "
        "kss: the default profile runs without them"
    )


def test_dynamic_resources_scores_from_v1_35_only() -> None:
    plugins = parse_config(None, {}, kube_version("1.35")).profiles[0].plugins
    assert "DynamicResources" in expand_points(plugins, version=kube_version("1.35"))["score"]
    assert "DynamicResources" in expand_points(plugins, version=kube_version("1.35"))["filter"]
    assert "DynamicResources" not in expand_points(plugins, version=kube_version("1.34"))["score"]
    assert "DynamicResources" in expand_points(plugins, version=kube_version("1.34"))["filter"]
    points = dict(plugins_in_effect(parse_config(None, {}, kube_version("1.34")).profiles[0], kube_version("1.34")))
    assert "DynamicResources" not in [name for name, _ in points["score"]]
    # The defaulted document still lists it with its weight, as v1.34's --write-config-to does.
    doc = defaulted_document(parse_config(None, {}, kube_version("1.34")))
    assert {"name": "DynamicResources", "weight": 2} in doc["profiles"][0]["plugins"]["multiPoint"]["enabled"]


def _first_available() -> dict[str, Any]:
    # node-b can give the claim its first choice (two devices), node-a only its second.
    return _scenario(
        deviceClasses=[_device_class()],
        resourceSlices=[
            _slice("node-a", [("gpu-0", "a100")]),
            _slice("node-b", [("gpu-0", "a100"), ("gpu-1", "a100")]),
        ],
        resourceClaims=[_claim("c", first_available=True)],
        pending=[_pod("p", "c")],
    )


def test_at_v1_34_the_earlier_subrequest_gets_no_score_and_both_nodes_tie() -> None:
    (at135,) = run_scenario(_first_available(), "full", kube_version=kube_version("1.35"))["results"]
    assert at135["score"]["node-b"]["DynamicResources"] == 8 and at135["boundTo"] == "node-b"
    (at134,) = run_scenario(_first_available(), "full", kube_version=kube_version("1.34"))["results"]
    assert all("DynamicResources" not in scores for scores in at134["score"].values())
    assert at134["total"]["node-a"] == at134["total"]["node-b"]
    assert sorted(at134["selected"]) == ["node-a", "node-b"]  # a tie, broken at random: no preference for node-b


def _tainted(name: str, key: str, value: str | None, effect: str) -> dict[str, Any]:
    taint = {"key": key, "effect": effect, **({"value": value} if value is not None else {})}
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"taints": [taint]},
        "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}},
    }


@pytest.mark.parametrize("detail", ["placements", "full"])
def test_v1_33_names_the_untolerated_taint_and_later_releases_do_not(detail: str) -> None:
    scenario = {
        "nodes": [
            _tainted("a", "gpu", "true", "NoSchedule"),
            _tainted("b", "dedicated", None, "NoExecute"),
            _tainted("c", "gpu", "true", "NoSchedule"),
        ],
        "pods": [],
        "pending": [{"metadata": {"name": "p", "namespace": "default", "uid": "u"},
                     "spec": {"containers": [{"name": "c", "image": "x"}]}}],
    }  # fmt: skip
    (at133,) = run_scenario(scenario, detail, kube_version=kube_version("1.33"))["results"]
    assert at133["fitError"].startswith(
        "0/3 nodes are available: 1 node(s) had untolerated taint {dedicated: }, "
        "2 node(s) had untolerated taint {gpu: true}. "
    )
    (at134,) = run_scenario(scenario, detail, kube_version=kube_version("1.34"))["results"]
    assert at134["fitError"].startswith("0/3 nodes are available: 3 node(s) had untolerated taint(s). ")
    if detail == "full":
        assert at133["filter"]["b"]["TaintToleration"] == "node(s) had untolerated taint {dedicated: }"


def test_from_v1_36_the_images_of_image_volumes_count_for_image_locality() -> None:
    def node(name: str, images: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "8", "memory": "8Gi", "pods": "110"}, "images": images},
        }

    model = {"names": ["registry.example/model:v1"], "sizeBytes": 800 * 1024 * 1024}
    pod = {
        "metadata": {"name": "p", "namespace": "default", "uid": "u"},
        "spec": {
            "containers": [{"name": "c", "image": "busybox"}],
            "volumes": [{"name": "weights", "image": {"reference": "registry.example/model:v1"}}],
        },
    }
    scenario = {"nodes": [node("with-model", [model]), node("bare", [])], "pods": [], "pending": [pod]}
    (at135,) = run_scenario(scenario, "full", kube_version=kube_version("1.35"))["results"]
    assert {n: s["ImageLocality"] for n, s in at135["score"].items()} == {"with-model": 0, "bare": 0}
    (at136,) = run_scenario(scenario, "full", kube_version=kube_version("1.36"))["results"]
    # 800 MiB held by one node of two: 400 MiB, scaled over [23 MiB, 1000 MiB] for one container.
    assert at136["score"]["with-model"]["ImageLocality"] == 100 * (400 - 23) // (1000 - 23)
    assert at136["score"]["bare"]["ImageLocality"] == 0
    assert at136["boundTo"] == "with-model"
    # v1.37 (ported from kubernetes#138951) counts the image volume in the maximum too: two images, 2000 MiB.
    for detail in ("full", "placements"):
        (at137,) = run_scenario(scenario, detail, kube_version=kube_version("1.37"))["results"]
        assert at137["boundTo"] == "with-model"
    assert _image_locality_scores_at_v1_37(scenario) == {"with-model": 100 * (400 - 23) // (2000 - 23), "bare": 0}


def _image_locality_scores_at_v1_37(scenario: dict[str, Any]) -> dict[str, int]:
    (result,) = run_scenario(scenario, "full", kube_version=kube_version("1.37"))["results"]
    return {n: s["ImageLocality"] for n, s in result["score"].items()}


@pytest.mark.parametrize("detail", ["placements", "full"])
def test_from_v1_34_a_request_above_the_nodes_allocatable_is_no_preemption_candidate(detail: str) -> None:
    node = {
        "metadata": {"name": "a", "labels": {"kubernetes.io/hostname": "a"}},
        "status": {"allocatable": {"cpu": "2", "memory": "8Gi", "pods": "110"}},
    }

    def pod(name: str, cpu: str, priority: int, node_name: str | None = None) -> dict[str, Any]:
        container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
        spec: dict[str, Any] = {"priority": priority, "containers": [container]}
        if node_name:
            spec["nodeName"] = node_name
        return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec}

    scenario = {"nodes": [node], "pods": [pod("low", "1", 0, "a")], "pending": [pod("big", "4", 100)]}
    (at133,) = run_scenario(scenario, detail, kube_version=kube_version("1.33"))["results"]
    # v1.33: Insufficient cpu is Unschedulable, so preemption tries the node (and finds evicting "low" is not enough).
    assert at133["fitError"] == (
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 Insufficient cpu."
    )
    (at134,) = run_scenario(scenario, detail, kube_version=kube_version("1.34"))["results"]
    assert at134["fitError"].endswith(
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
    if detail == "full":
        assert at133["unresolvable"] == {} and at134["unresolvable"] == {"a": ["NodeResourcesFit"]}


def test_from_v1_36_balanced_allocation_scores_the_improvement_in_balance() -> None:
    def node(name: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
        }

    def pod(name: str, cpu: str, memory: str, node_name: str | None = None) -> dict[str, Any]:
        container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
        spec: dict[str, Any] = {"containers": [container], **({"nodeName": node_name} if node_name else {})}
        return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec}

    # On "busy" (cpu 2/4, memory 1/8 Gi) the pod's 3 Gi evens the fractions out (0.5, 0.5); on "empty" it skews them.
    scenario = {
        "nodes": [node("busy"), node("empty")],
        "pods": [pod("running", "2", "1Gi", "busy")],
        "pending": [pod("p", "0", "3Gi")],
    }
    (at135,) = run_scenario(scenario, "full", kube_version=kube_version("1.35"))["results"]
    (at136,) = run_scenario(scenario, "full", kube_version=kube_version("1.36"))["results"]
    # v1.35: the balance with the pod, 100 x (1 - std): busy 100, empty 100 x (1 - 0.1875) = 81.
    assert {n: s["NodeResourcesBalancedAllocation"] for n, s in at135["score"].items()} == {"busy": 100, "empty": 81}
    # v1.36: 50 + (50 + with - without) / 2: busy 50 + (50 + 100 - 81) / 2 = 84, empty 50 + (50 + 81 - 100) / 2 = 65.
    assert {n: s["NodeResourcesBalancedAllocation"] for n, s in at136["score"].items()} == {"busy": 84, "empty": 65}
    # v1.37 (ported, not measured) scores as v1.36: upstream's scorer did not change.
    (at137,) = run_scenario(scenario, "full", kube_version=kube_version("1.37"))["results"]
    assert {n: s["NodeResourcesBalancedAllocation"] for n, s in at137["score"].items()} == {"busy": 84, "empty": 65}
    # The batch path (no recording) places the pod as the per-node one does, at every version.
    for version, full in (("1.35", at135), ("1.36", at136), ("1.37", at137)):
        (fast,) = run_scenario(scenario, "placements", kube_version=kube_version(version))["results"]
        assert fast["boundTo"] == full["boundTo"]


def _pod_level_scenario() -> dict[str, Any]:
    node = {
        "metadata": {"name": "a", "labels": {"kubernetes.io/hostname": "a"}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }

    def pod(name: str, cpu: str, pod_level_cpu: str | None, node_name: str | None = None) -> dict[str, Any]:
        container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": cpu}}}
        spec: dict[str, Any] = {"containers": [container]}
        if pod_level_cpu is not None:
            spec["resources"] = {"requests": {"cpu": pod_level_cpu}}
        if node_name:
            spec["nodeName"] = node_name
        return {"metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"}, "spec": spec}

    # "running" holds 3 cpu at pod level (100m in its container); "p" asks 2 cpu of its container, "q" 3 at pod level.
    return {
        "nodes": [node],
        "pods": [pod("running", "100m", "3", "a")],
        "pending": [pod("p", "2", None), pod("q", "500m", "3")],
    }


@pytest.mark.parametrize("detail", ["placements", "full"])
def test_at_v1_33_pod_level_requests_count_nowhere_unless_the_gate_is_on(detail: str) -> None:
    scenario = _pod_level_scenario()
    at133 = run_scenario(scenario, detail, kube_version=kube_version("1.33"))["results"]
    # PodLevelResources is off at v1.33: the node holds 100m for "running", "p" fits, then "q" asks its 500m only.
    assert [r["boundTo"] for r in at133] == ["a", "a"]
    if detail == "full":
        # BalancedAllocation counts 500m for "q" on 2.1 cpu in use: fractions 0.65 and 0: 100 x (1 - 0.325) = 67.
        assert at133[1]["score"]["a"]["NodeResourcesBalancedAllocation"] == 67
    for gates, version in (({"PodLevelResources": True}, "1.33"), ({}, "1.35")):
        results = run_scenario(scenario, detail, feature_gates=gates, kube_version=kube_version(version))["results"]
        # Counted: 3 cpu in use, so neither 2 (container) nor 3 (pod level) more fit in 4.
        assert [r["boundTo"] for r in results] == [None, None], (version, gates)
    at135_off = run_scenario(
        scenario, detail, feature_gates={"PodLevelResources": False}, kube_version=kube_version("1.35")
    )["results"]
    assert [r["boundTo"] for r in at135_off] == ["a", "a"]


def _dra_args(version: str) -> list[dict[str, Any]]:
    at = kube_version(version)
    doc = defaulted_document(parse_config(None, at.effective_gates({"DynamicResourceAllocation": True}), at))
    return [pc["args"] for pc in doc["profiles"][0]["pluginConfig"] if pc["name"] == "DynamicResources"]


def test_dynamic_resources_args_are_defaulted_as_each_release_does() -> None:
    typed = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "DynamicResourcesArgs"}
    assert _dra_args("1.33") == []  # no DynamicResourcesArgs kind yet
    assert _dra_args("1.34") == [{**typed, "filterTimeout": "10s"}]
    assert _dra_args("1.35") == [{**typed, "filterTimeout": "10s"}]
    # v1.36 turns on DRADeviceBindingConditions: bindingTimeout is defaulted (600 s) and may be set.
    assert _dra_args("1.36") == [{**typed, "filterTimeout": "10s", "bindingTimeout": "10m0s"}]
    assert _dra_args("1.37") == _dra_args("1.36")  # the same gates on at v1.37 (ported)


@pytest.mark.parametrize(
    ("version", "timeout", "problem"),
    [
        (
            "1.35",
            "30s",
            "Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled",
        ),
        ("1.36", "500ms", 'Invalid value: "500ms": must be at least 1 second'),
        ("1.36", "30s", None),
    ],
)
def test_binding_timeout_is_validated_under_the_releases_gates(version: str, timeout: str, problem: str | None) -> None:
    at = kube_version(version)
    doc = {"profiles": [{"pluginConfig": [{"name": "DynamicResources", "args": {"bindingTimeout": timeout}}]}]}
    if problem is None:
        config = parse_config(doc, at.effective_gates({}), at)
        assert config.profiles[0].plugin_config["DynamicResources"]["bindingTimeout"] == timeout
        return
    with pytest.raises(ConfigError) as err:
        parse_config(doc, at.effective_gates({}), at)
    assert err.value.field == "profiles[0].pluginConfig[0].args.bindingTimeout"
    assert err.value.detail == problem

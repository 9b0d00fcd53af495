"""v1.36's ``placementGenerate`` and ``placementScore`` in a KubeSchedulerConfiguration profile: decoded and merged
as upstream's mergePlugins does, expanded with multiPoint as NewFramework expands every point, at most one
PlacementGenerate plugin, PlacementScore weights from the point's own entry first; unknown before v1.36."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.kube.versions import kube_version
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.framework import Handle, Placement, PlacementGeneratePlugin, Status
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError, defaulted_document, parse_config
from kss_sim.scheduler.plugins import register
from kss_sim.scheduler.profiles import build_framework, plugins_in_effect

V136 = kube_version("1.36")
GATES = {**V136.effective_gates({}), "TopologyAwareWorkloadScheduling": True}


def _config(plugins: dict[str, Any], gates: dict[str, bool] = GATES) -> Any:
    return parse_config({"profiles": [{"schedulerName": "default-scheduler", "plugins": plugins}]}, gates, V136)


def _framework(plugins: dict[str, Any], gates: dict[str, bool] = GATES) -> Any:
    handle = Handle(ClusterObjects())
    handle.kube_version = V136
    handle.feature_gates = dict(gates)
    return build_framework(_config(plugins, gates).profiles[0], handle)


def test_a_profile_disables_the_default_placement_plugins_at_their_own_points() -> None:
    fwk = _framework({"placementGenerate": {"disabled": [{"name": "*"}]}})
    assert fwk.placement_generate == []
    assert [p.name for p in fwk.placement_score] == ["PodGroupPodsCount"]
    fwk = _framework({"placementScore": {"disabled": [{"name": "PodGroupPodsCount"}]}})
    assert [p.name for p in fwk.placement_generate] == ["TopologyPlacementGenerator"]
    assert fwk.placement_score == []


def test_a_placement_score_weight_of_the_point_comes_before_multi_points() -> None:
    plugins = {"placementScore": {"enabled": [{"name": "PodGroupPodsCount", "weight": 3}]}}
    fwk = _framework(plugins)
    assert [p.name for p in fwk.placement_score] == ["PodGroupPodsCount"] and fwk.weights["PodGroupPodsCount"] == 3
    points = dict(plugins_in_effect(_config(plugins).profiles[0], V136))
    assert points["placementGenerate"] == [("TopologyPlacementGenerator", None)]
    assert points["placementScore"] == [("PodGroupPodsCount", 3)]
    assert "PodGroupPodsCount" not in [name for name, _ in points["score"]]


def test_without_the_gate_a_profile_enables_the_placement_plugins_by_name() -> None:
    gates = V136.effective_gates({})
    plugins = {
        "placementGenerate": {"enabled": [{"name": "TopologyPlacementGenerator"}]},
        "placementScore": {"enabled": [{"name": "PodGroupPodsCount", "weight": 2}]},
    }
    fwk = _framework(plugins, gates)
    assert [p.name for p in fwk.placement_generate] == ["TopologyPlacementGenerator"]
    assert [p.name for p in fwk.placement_score] == ["PodGroupPodsCount"] and fwk.weights["PodGroupPodsCount"] == 2
    assert _framework({}, gates).placement_generate == []  # the default profile has none without the gate
    document = defaulted_document(_config(plugins, gates))
    assert document["profiles"][0]["plugins"]["placementScore"] == {
        "enabled": [{"name": "PodGroupPodsCount", "weight": 2}]
    }


@register
class KssWholeCluster(PlacementGeneratePlugin):
    """A user's PlacementGenerate plugin: the parent placement alone."""

    name = "KssWholeCluster"

    def generate_placements(self, namespace: str, pod_group: str, parent: Placement) -> tuple[list[Placement], Status]:
        return [parent], Status()


def test_at_most_one_placement_generate_plugin() -> None:
    # The gate's default already has TopologyPlacementGenerator (through multiPoint).
    with pytest.raises(ConfigError) as err:
        _framework({"placementGenerate": {"enabled": [{"name": "KssWholeCluster"}]}})
    assert str(err.value) == (
        "plugins.placementGenerate: at most one placement generate plugin is allowed for profile with scheduler "
        "name 'default-scheduler'"
    )
    replaced = {"placementGenerate": {"enabled": [{"name": "KssWholeCluster"}], "disabled": [{"name": "*"}]}}
    assert [p.name for p in _framework(replaced).placement_generate] == ["KssWholeCluster"]


def test_a_plugin_at_a_placement_point_must_implement_it() -> None:
    with pytest.raises(ConfigError) as err:
        _framework({"placementScore": {"enabled": [{"name": "NodeResourcesFit"}]}})
    assert str(err.value) == "plugins.placementScore: plugin 'NodeResourcesFit' does not extend placementScore plugin"


def test_before_v1_36_the_config_api_has_no_placement_points() -> None:
    v135 = kube_version("1.35")
    document = {"profiles": [{"plugins": {"placementScore": {"enabled": [{"name": "PodGroupPodsCount"}]}}}]}
    with pytest.raises(ConfigError) as err:
        parse_config(document, {}, v135)
    assert err.value.field == "profiles[0].plugins.placementScore"
    assert [point for point, _ in plugins_in_effect(parse_config(None, {}, v135).profiles[0], v135)][-1] == "postBind"

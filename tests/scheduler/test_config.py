"""KubeSchedulerConfiguration: v1.35 defaults, merging, multiPoint expansion, validation."""

from __future__ import annotations

import pytest

from app.scheduler.config import ConfigError, build_framework, parse_config
from app.scheduler.framework import ClusterObjects, Handle

DEFAULT_FILTERS = [
    "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
    "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
    "InterPodAffinity", "DynamicResources",
]  # fmt: skip
DEFAULT_SCORES = [
    "TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread",
    "InterPodAffinity", "DynamicResources", "NodeResourcesBalancedAllocation", "ImageLocality",
]  # fmt: skip


def framework_for(source: str | None, profile: int = 0):  # type: ignore[no-untyped-def]
    config = parse_config(source)
    return build_framework(config.profiles[profile], Handle(ClusterObjects()))


def test_defaults_match_kube_scheduler_v135_plugin_order_and_weights() -> None:
    fwk = framework_for(None)
    names = fwk.plugin_names()
    assert names["filter"] == DEFAULT_FILTERS
    assert names["score"] == DEFAULT_SCORES
    assert names["postFilter"] == ["DynamicResources", "DefaultPreemption"]
    assert names["preEnqueue"] == ["SchedulingGates", "DynamicResources", "DefaultPreemption"]
    assert names["queueSort"] == ["PrioritySort"] and names["bind"] == ["DefaultBinder"]
    assert fwk.weights == {
        "TaintToleration": 3, "NodeAffinity": 2, "NodeResourcesFit": 1, "VolumeBinding": 1,
        "PodTopologySpread": 2, "InterPodAffinity": 2, "DynamicResources": 2,
        "NodeResourcesBalancedAllocation": 1, "ImageLocality": 1,
    }  # fmt: skip


def test_multipoint_weight_replaces_default_in_place() -> None:
    fwk = framework_for(
        "profiles: [{schedulerName: default-scheduler, plugins: {multiPoint: {enabled: "
        "[{name: ImageLocality, weight: 5}]}}}]"
    )
    assert fwk.weights["ImageLocality"] == 5
    assert fwk.plugin_names()["score"] == DEFAULT_SCORES  # order kept


def test_score_point_weight_wins_over_multipoint() -> None:
    fwk = framework_for("profiles: [{plugins: {score: {enabled: [{name: TaintToleration, weight: 7}]}}}]")
    assert fwk.weights["TaintToleration"] == 7
    # An explicitly configured score plugin moves to the front, as in expandMultiPointPlugins.
    assert fwk.plugin_names()["score"][0] == "TaintToleration"


def test_disable_star_removes_every_default_at_that_point() -> None:
    fwk = framework_for(
        "profiles: [{plugins: {score: {disabled: [{name: '*'}], enabled: [{name: NodeResourcesFit}]}}}]"
    )
    assert fwk.plugin_names()["score"] == ["NodeResourcesFit"]
    assert fwk.plugin_names()["filter"] == DEFAULT_FILTERS


def test_several_profiles_by_scheduler_name() -> None:
    config = parse_config(
        "profiles: [{schedulerName: default-scheduler}, {schedulerName: packer, pluginConfig: "
        "[{name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated}}}]}]"
    )
    assert [p.scheduler_name for p in config.profiles] == ["default-scheduler", "packer"]
    assert config.profiles[1].plugin_config["NodeResourcesFit"]["scoringStrategy"]["type"] == "MostAllocated"


@pytest.mark.parametrize(
    ("source", "field"),
    [
        ("percentageOfNodesToScore: 101", "percentageOfNodesToScore"),
        ("podInitialBackoffSeconds: 0", "podInitialBackoffSeconds"),
        ("podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2", "podMaxBackoffSeconds"),
        ("profiles: [{schedulerName: a}, {schedulerName: a}]", "profiles[1].schedulerName"),
        (
            "profiles: [{plugins: {filter: {enabled: [{name: NoSuchPlugin}]}}}]",
            "profiles[0].plugins.filter.enabled[0].name",
        ),
        (
            "profiles: [{plugins: {score: {enabled: [{name: ImageLocality, weight: -1}]}}}]",
            "profiles[0].plugins.score.enabled[0].weight",
        ),
        (
            "profiles: [{pluginConfig: [{name: InterPodAffinity, args: {hardPodAffinityWeight: 101}}]}]",
            "profiles[0].pluginConfig[0].args.hardPodAffinityWeight",
        ),
        ("apiVersion: kubescheduler.config.k8s.io/v1beta3", "apiVersion"),
        ("bogusField: 1", "bogusField"),
        ("profiles: [{plugins: {filter: ", "<document>"),
    ],
)
def test_invalid_configuration_names_the_field(source: str, field: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(source)
    assert err.value.field == field

"""KubeSchedulerConfiguration: v1.35 defaults, merging, multiPoint expansion, validation."""

from __future__ import annotations

import pytest

from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.framework import Handle
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError, defaulted_document, parse_config
from kss_sim.scheduler.profiles import build_framework, plugins_in_effect

DEFAULT_FILTERS = [
    "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts", "NodeResourcesFit",
    "VolumeRestrictions", "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread",
    "InterPodAffinity", "DynamicResources",
    "NodeDeclaredFeatures",  # v1.36 (the default): its gate is beta and on, so the plugin is a default
]  # fmt: skip
DEFAULT_SCORES = [
    "TaintToleration", "NodeAffinity", "NodeResourcesFit", "VolumeBinding", "PodTopologySpread",
    "InterPodAffinity", "DynamicResources", "NodeResourcesBalancedAllocation", "ImageLocality",
]  # fmt: skip


def framework_for(source: str | None, profile: int = 0):  # type: ignore[no-untyped-def]
    config = parse_config(source)
    return build_framework(config.profiles[profile], Handle(ClusterObjects()))


def test_defaults_match_kube_scheduler_v136_plugin_order_and_weights() -> None:
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


# SetDefaults_*Args of kubescheduler.config.k8s.io/v1 (pkg/scheduler/apis/config/v1/defaults.go), by plugin.
UPSTREAM_DEFAULT_ARGS = {
    "DefaultPreemption": {"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100},
    # bindingTimeout: v1.36 has DRADeviceBindingConditions and DRAResourceClaimDeviceStatus beta and on.
    "DynamicResources": {"filterTimeout": "10s", "bindingTimeout": "10m0s"},
    "InterPodAffinity": {"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": False},
    "NodeAffinity": {},
    "NodeResourcesBalancedAllocation": {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]},
    "NodeResourcesFit": {
        "scoringStrategy": {
            "type": "LeastAllocated",
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        }
    },
    "PodTopologySpread": {"defaultingType": "System"},
    "VolumeBinding": {"bindTimeoutSeconds": 600},
}

CUSTOM = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 40
leaderElection: {leaderElect: false}
profiles:
- schedulerName: packer
  plugins:
    score:
      enabled: [{name: NodeResourcesFit, weight: 5}]
      disabled: [{name: ImageLocality}]
    multiPoint:
      disabled: [{name: InterPodAffinity}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""


def test_the_defaulted_document_is_kube_schedulers() -> None:
    doc = defaulted_document(parse_config(None))
    assert (doc["parallelism"], doc["percentageOfNodesToScore"]) == (16, 0)
    assert (doc["podInitialBackoffSeconds"], doc["podMaxBackoffSeconds"]) == (1, 10)
    assert doc["leaderElection"]["leaderElect"] is True and doc["leaderElection"]["resourceLock"] == "leases"
    assert doc["clientConnection"]["qps"] == 50 and doc["clientConnection"]["burst"] == 100
    [profile] = doc["profiles"]
    assert profile["schedulerName"] == "default-scheduler"
    assert list(profile["plugins"]) == ["multiPoint"], "only the points with entries"
    multi = profile["plugins"]["multiPoint"]["enabled"]
    assert [p["name"] for p in multi][:4] == ["SchedulingGates", "PrioritySort", "NodeUnschedulable", "NodeName"]
    assert {p["name"]: p.get("weight") for p in multi}["TaintToleration"] == 3
    # Args for every enabled plugin with an args kind, by name, typed, with upstream's defaults.
    assert [c["name"] for c in profile["pluginConfig"]] == sorted(UPSTREAM_DEFAULT_ARGS)
    for entry in profile["pluginConfig"]:
        args = dict(entry["args"])
        assert args.pop("apiVersion") == "kubescheduler.config.k8s.io/v1"
        assert args.pop("kind") == entry["name"] + "Args"
        args.pop("defaultConstraints", None)  # [] here, omitted (nil) upstream: the same (System) defaulting
        assert args == UPSTREAM_DEFAULT_ARGS[entry["name"]], entry["name"]


def test_the_defaulted_document_keeps_what_was_given_and_fills_the_rest() -> None:
    doc = defaulted_document(parse_config(CUSTOM))
    assert doc["percentageOfNodesToScore"] == 40
    assert doc["leaderElection"]["leaderElect"] is False and doc["leaderElection"]["leaseDuration"] == "15s"
    [profile] = doc["profiles"]
    assert profile["plugins"]["score"] == {
        "enabled": [{"name": "NodeResourcesFit", "weight": 5}],
        "disabled": [{"name": "ImageLocality"}],
    }
    assert profile["plugins"]["multiPoint"]["disabled"] == [{"name": "InterPodAffinity"}]
    assert "InterPodAffinity" not in [p["name"] for p in profile["plugins"]["multiPoint"]["enabled"]]
    names = [c["name"] for c in profile["pluginConfig"]]
    # The given args first (defaulted: resources filled in), then the defaults of the others; none for a plugin
    # that no point enables.
    assert names[0] == "NodeResourcesFit" and names[1:] == sorted(
        set(UPSTREAM_DEFAULT_ARGS) - {names[0], "InterPodAffinity"}
    )
    fit = profile["pluginConfig"][0]["args"]["scoringStrategy"]
    assert fit == {
        "type": "MostAllocated",
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
    }


@pytest.mark.parametrize("source", [None, CUSTOM])
def test_the_defaulted_document_reads_back_as_the_same_configuration(source: str | None) -> None:
    config = parse_config(source)
    again = parse_config(defaulted_document(config))
    assert defaulted_document(again) == defaulted_document(config)
    assert [plugins_in_effect(p) for p in again.profiles] == [plugins_in_effect(p) for p in config.profiles]


def test_plugins_in_effect_are_what_the_framework_runs() -> None:
    for source in (None, CUSTOM):
        config = parse_config(source)
        fwk = build_framework(config.profiles[0], Handle(ClusterObjects()))
        in_effect = plugins_in_effect(config.profiles[0])
        # v1.36's placementGenerate and placementScore points are listed even when empty; the framework's are not.
        named = {point: [name for name, _ in plugins] for point, plugins in in_effect if plugins}
        assert named == {point: names for point, names in fwk.plugin_names().items() if names}
        score_weights = {name: weight for point, plugins in in_effect if point == "score" for name, weight in plugins}
        assert score_weights == {name: fwk.weights[name] for name in fwk.plugin_names()["score"]}
    score = dict(plugins_in_effect(parse_config(CUSTOM).profiles[0]))["score"]
    assert score[0] == ("NodeResourcesFit", 5)
    assert "ImageLocality" not in dict(score) and "InterPodAffinity" not in dict(score)


def test_args_typed_as_another_kind_are_refused() -> None:
    with pytest.raises(ConfigError) as err:
        parse_config(
            {"profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {"kind": "VolumeBindingArgs"}}]}]}
        )
    assert err.value.field == "profiles[0].pluginConfig[0].args"
    assert err.value.detail == (
        "args for plugin NodeResourcesFit were not of type NodeResourcesFitArgs.kubescheduler.config.k8s.io, "
        "got VolumeBindingArgs.kubescheduler.config.k8s.io"
    )
    typed = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "VolumeBindingArgs", "bindTimeoutSeconds": 30}
    config = parse_config({"profiles": [{"pluginConfig": [{"name": "VolumeBinding", "args": typed}]}]})
    assert config.profiles[0].plugin_config["VolumeBinding"]["bindTimeoutSeconds"] == 30

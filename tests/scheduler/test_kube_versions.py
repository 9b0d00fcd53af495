"""The scheduler at each Kubernetes version: the release's in-tree plugins and default profile, plugins kss has not
ported, and DynamicResources, which scores nodes only from v1.35."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.kube.versions import kube_version
from kss_sim.scheduler.kube_scheduler_configuration import (
    ConfigError,
    defaulted_document,
    expand_points,
    left_out_note,
    parse_config,
    plugins_in_effect,
)
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


def test_a_plugin_kss_has_not_ported_is_refused_with_a_clear_line() -> None:
    doc = {"profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "PodGroupPodsCount"}]}}}]}
    with pytest.raises(ConfigError, match=r"kube-scheduler v1\.36's plugin PodGroupPodsCount is not ported to kss yet"):
        parse_config(doc, {}, kube_version("1.36"))
    with pytest.raises(ConfigError, match="'PodGroupPodsCount': plugin does not exist"):
        parse_config(doc, {}, kube_version("1.35"))


def test_an_unported_default_plugin_is_left_out_and_said_so() -> None:
    v136 = kube_version("1.36")
    config = parse_config(None, v136.effective_gates({}), v136)
    assert config.left_out == ["NodeDeclaredFeatures"]
    assert "NodeDeclaredFeatures" not in [p["name"] for p in config.profiles[0].plugins["multiPoint"]["enabled"]]
    assert left_out_note(v136.effective_gates({}), v136) == (
        "note: Kubernetes v1.36's default plugins NodeDeclaredFeatures are not ported to kss: the default profile "
        "runs without them"
    )
    v135 = kube_version("1.35")
    assert parse_config(None, v135.effective_gates({}), v135).left_out == []
    assert left_out_note(v135.effective_gates({}), v135) is None


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

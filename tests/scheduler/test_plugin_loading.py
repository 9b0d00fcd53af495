"""Users' plugins: plugin modules (``--plugin-module``) and ``kss.plugins`` entry points, enabled by name."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from kss_sim.scheduler import plugins as registry
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.framework import CycleState, FilterPlugin, Handle, Plugin, success
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError, parse_config
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from tests.plugin_sources import (
    config_enabling,
    labelled_node,
    unique_module_name,
    write_distribution,
    write_plugin_module,
    write_scenario,
)

KSS = Path(sys.executable).with_name("kss")


pytestmark = pytest.mark.usefixtures("fresh_plugin_registry")


def simulate(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(KSS), "simulate", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def test_a_plugin_module_from_the_current_directory_filters_and_scores(tmp_path: Path) -> None:
    module = unique_module_name()
    write_plugin_module(tmp_path, module)
    scenario = write_scenario(
        tmp_path / "s.scenario.json", config_enabling(filters=["RejectLabelled"], scores=["PreferFast"])
    )
    proc = simulate("--plugin-module", module, str(scenario), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)["results"]
    assert result["filter"]["n0"]["RejectLabelled"] == "node(s) labelled reject"
    assert result["filter"]["n1"]["RejectLabelled"] == "passed"
    assert result["boundTo"] == "n1"  # PreferFast: n1 is fast, n2 is not


def test_kss_plugin_modules_is_the_setting_for_simulate(tmp_path: Path) -> None:
    module = unique_module_name()
    write_plugin_module(tmp_path, module)
    scenario = write_scenario(tmp_path / "s.scenario.json", config_enabling(filters=["RejectLabelled"]))
    proc = simulate(str(scenario), cwd=tmp_path, env={"KSS_PLUGIN_MODULES": f" {module} ,"})
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)["results"]
    assert result["filter"]["n0"]["RejectLabelled"] == "node(s) labelled reject"


def test_without_the_module_the_plugin_does_not_exist(tmp_path: Path) -> None:
    scenario = write_scenario(tmp_path / "s.scenario.json", config_enabling(filters=["RejectLabelled"]))
    proc = simulate(str(scenario), cwd=tmp_path)
    assert proc.returncode == 1
    assert "profiles[0].plugins.filter.enabled[0].name" in proc.stderr and "plugin does not exist" in proc.stderr


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def broken(:\n", "SyntaxError"),
        ("import no_such_module_for_kss\n", "No module named 'no_such_module_for_kss'"),
        (
            "from kss.framework import FilterPlugin, success\n\n\nclass Unregistered(FilterPlugin):\n"
            "    name = 'Unregistered'\n\n    def filter(self, state, pod, node_info):\n        return success()\n",
            "it registers no plugin: decorate each plugin class with @register",
        ),
    ],
)
def test_a_module_that_fails_to_import_stops_start_up_clearly(tmp_path: Path, source: str, message: str) -> None:
    module = unique_module_name()
    (tmp_path / f"{module}.py").write_text(source)
    scenario = write_scenario(tmp_path / "s.scenario.json", config_enabling(filters=[]))
    proc = simulate("--plugin-module", module, str(scenario), cwd=tmp_path)
    assert proc.returncode == 2
    assert f"plugin module {module!r} failed to load" in proc.stderr and message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_an_entry_point_loads_by_name_and_a_broken_one_names_its_package(tmp_path: Path) -> None:
    site = tmp_path / "site"
    write_distribution(site, unique_module_name("kss_ep"))
    env = {"PYTHONPATH": str(site)}
    good = write_scenario(tmp_path / "good.scenario.json", config_enabling(filters=["OnlyFast"]))
    proc = simulate(str(good), cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    (result,) = json.loads(proc.stdout)["results"]
    assert result["filter"]["n2"]["OnlyFast"] == "node(s) not fast"
    assert result["boundTo"] in ("n0", "n1")
    # A broken package breaks only a run that names its plugin.
    bad = write_scenario(tmp_path / "bad.scenario.json", config_enabling(filters=["BrokenPlugin"]))
    proc = simulate(str(bad), cwd=tmp_path, env=env)
    assert proc.returncode == 1
    assert "profiles[0].plugins.filter.enabled[0].name" in proc.stderr
    assert "package kss-test-plugins 1.0" in proc.stderr
    assert "RuntimeError: the broken plugin cannot start" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_broken_entry_point_is_refused_on_the_field_that_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    write_distribution(site, unique_module_name("kss_ep"))
    monkeypatch.syspath_prepend(str(site))
    assert {"OnlyFast", "BrokenPlugin"} <= set(registry.known_plugins())
    config = config_enabling(filters=["OnlyFast"])
    config["profiles"][0]["plugins"]["multiPoint"] = {"enabled": [{"name": "BrokenPlugin"}]}
    with pytest.raises(ConfigError) as info:
        parse_config(config)
    assert info.value.field == "profiles[0].plugins.multiPoint.enabled[0].name"
    assert "package kss-test-plugins" in info.value.detail and "RuntimeError" in info.value.detail
    assert registry.plugin_class("OnlyFast").name == "OnlyFast"


def test_an_in_tree_name_or_a_taken_one_is_refused_at_registration() -> None:
    class Impostor(FilterPlugin):
        name = "NodeName"

        def filter(self, state, pod, node_info):  # type: ignore[no-untyped-def]
            return success()

    with pytest.raises(registry.PluginLoadError, match="has the name of an in-tree plugin"):
        registry.register(Impostor)

    class First(FilterPlugin):
        name = "Mine"

        def filter(self, state, pod, node_info):  # type: ignore[no-untyped-def]
            return success()

    class Second(First):
        pass

    registry.register(First)
    registry.register(First)  # the same class again (a reload) is fine
    with pytest.raises(registry.PluginLoadError, match="already registered by"):
        registry.register(Second)
    with pytest.raises(registry.PluginLoadError, match="not a plugin class"):
        registry.register(object)  # type: ignore[arg-type]


def _verdict(cls: type[Plugin]) -> str:
    plugin = cls(Handle(ClusterObjects()), {})
    assert isinstance(plugin, FilterPlugin)
    node = NodeInfo(labelled_node("n", **{"kss.test/reject": "yes"}))
    return plugin.filter(CycleState(), PodInfo({"metadata": {"name": "p"}}), node).message()


def test_reloading_picks_up_an_edit_and_a_failed_reload_keeps_the_classes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # a .pyc cached, as users have it
    module = unique_module_name()
    path = write_plugin_module(tmp_path, module)
    registry.load_plugin_modules([module])
    registry.load_plugin_modules([module])  # loaded once
    first = registry.plugin_class("RejectLabelled")
    assert registry.plugin_class("PreferFast").name == "PreferFast"
    assert _verdict(first) == "node(s) labelled reject"
    write_plugin_module(tmp_path, module, reason="node(s) LABELLED REJECT")  # same second, same size: still seen
    registry.reload_plugin_modules()
    second = registry.plugin_class("RejectLabelled")
    assert second is not first and _verdict(second) == "node(s) LABELLED REJECT"
    path.write_text("def broken(:\n")
    with pytest.raises(registry.PluginLoadError, match=f"plugin module '{module}' failed to reload: SyntaxError"):
        registry.reload_plugin_modules()
    assert registry.plugin_class("RejectLabelled") is second
    # A class the file no longer defines is gone after a reload.
    path.write_text("PLUGINS = []\n")
    registry.reload_plugin_modules()
    assert "RejectLabelled" not in registry.known_plugins()

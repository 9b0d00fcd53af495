"""Sources of users' plugin modules and a tiny installed distribution, written by the plugin-loading tests."""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# A Filter plugin rejecting nodes labelled ``kss.test/reject`` (registered by decorator) and a Score plugin
# preferring nodes labelled ``kss.test/fast`` (listed in PLUGINS). {reason} lets a test edit the verdict.
PLUGIN_MODULE = """\
from kss.framework import FilterPlugin, ScorePlugin, register, success, unschedulable


@register
class RejectLabelled(FilterPlugin):
    name = "RejectLabelled"

    def filter(self, state, pod, node_info):
        if "kss.test/reject" in node_info.labels:
            return unschedulable("{reason}")
        return success()


class PreferFast(ScorePlugin):
    name = "PreferFast"

    def score(self, state, pod, node_info):
        return (100 if "kss.test/fast" in node_info.labels else 0), success()


PLUGINS = [PreferFast]
"""

ENTRY_POINT_MODULE = """\
from kss.framework import FilterPlugin, success, unschedulable


class OnlyFast(FilterPlugin):
    name = "OnlyFast"

    def filter(self, state, pod, node_info):
        return success() if "kss.test/fast" in node_info.labels else unschedulable("node(s) not fast")
"""


def unique_module_name(prefix: str = "kss_user_plugins") -> str:
    """Each test its own module name: plugin modules stay in ``sys.modules`` for the process."""
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def write_plugin_module(directory: Path, module: str, reason: str = "node(s) labelled reject") -> Path:
    path = directory / f"{module}.py"
    path.write_text(PLUGIN_MODULE.replace("{reason}", reason))
    return path


def write_distribution(site: Path, module: str, package: str = "kss-test-plugins") -> None:
    """An installed distribution in ``site``: ``module`` with OnlyFast, entry points OnlyFast and Broken (a module
    that raises on import)."""
    site.mkdir(parents=True, exist_ok=True)
    (site / f"{module}.py").write_text(ENTRY_POINT_MODULE)
    (site / f"{module}_broken.py").write_text('raise RuntimeError("the broken plugin cannot start")\n')
    dist_info = site / f"{package.replace('-', '_')}-1.0.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: 1.0\n")
    (dist_info / "entry_points.txt").write_text(
        f"[kss.plugins]\nOnlyFast = {module}:OnlyFast\nBrokenPlugin = {module}_broken:Broken\n"
    )


def labelled_node(name: str, **labels: str) -> dict[str, Any]:
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "uid": f"uid-{name}", "labels": {"kubernetes.io/hostname": name, **labels}},
        "spec": {},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def config_enabling(*, filters: Sequence[str], scores: Sequence[str] = ()) -> dict[str, Any]:
    plugins: dict[str, Any] = {"filter": {"enabled": [{"name": n} for n in filters]}}
    if scores:
        plugins["score"] = {"enabled": [{"name": n, "weight": 5} for n in scores]}
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": plugins}],
    }


def write_scenario(path: Path, config: dict[str, Any]) -> Path:
    """Three nodes (one labelled reject, one fast, one plain) and one pending pod."""
    pod = {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": "p0", "namespace": "default", "uid": "uid-p0"},
        "spec": {
            "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}],
            "schedulerName": "default-scheduler",
            "priority": 0,
        },
        "status": {"phase": "Pending"},
    }
    scenario = {
        "meta": {"name": path.stem},
        "nodes": [
            labelled_node("n0", **{"kss.test/reject": "yes", "kss.test/fast": "yes"}),
            labelled_node("n1", **{"kss.test/fast": "yes"}),
            labelled_node("n2"),
        ],
        "pods": [],
        "pending": [pod],
        "config": config,
    }
    path.write_text(json.dumps(scenario))
    return path

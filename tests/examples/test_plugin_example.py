"""The example plugin package of docs/plugins.md, installed with pip as a user would, found through its
``kss.plugins`` entry points: enabled by a configuration, its verdicts and scores in ``kss simulate``'s output,
the results API, the pod's annotations and the pod's page."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.factories import node, pod
from tests.plugin_sources import labelled_node

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "kss-plugin-example"
KSS = Path(sys.executable).with_name("kss")
CONFIG_URL = "/simulator/v1/schedulerconfiguration"

CONFIG: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "filter": {"enabled": [{"name": "MaxPodsPerNode"}]},
                "score": {"enabled": [{"name": "PreferNodeLabel", "weight": 2}]},
            },
            "pluginConfig": [
                {"name": "MaxPodsPerNode", "args": {"maxPods": 1}},
                {"name": "PreferNodeLabel", "args": {"label": "example.com/fast"}},
            ],
        }
    ],
}


pytestmark = pytest.mark.usefixtures("fresh_plugin_registry")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example package installed by pip (its own build, entry points and all) into a directory of its own."""
    target = tmp_path_factory.mktemp("site")
    source = tmp_path_factory.mktemp("src") / EXAMPLE.name  # a copy: the build leaves files beside the sources
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(target), str(source)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert list(target.glob("kss_plugin_example-*.dist-info/entry_points.txt"))
    return target


def _pod(name: str, node_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": "100m"}}}],
        "schedulerName": "default-scheduler",
        "priority": 0,
    }
    status: dict[str, Any] = {"phase": "Pending"}
    if node_name:
        spec["nodeName"] = node_name
        status = {"phase": "Running", "startTime": "2025-01-12T13:46:40Z"}
    return {
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}"},
        "spec": spec,
        "status": status,
    }


def test_kss_simulate_runs_the_installed_example_by_its_entry_points(site: Path, tmp_path: Path) -> None:
    scenario = tmp_path / "example.scenario.json"
    scenario.write_text(
        json.dumps(
            {
                "meta": {"name": "example"},
                "config": CONFIG,
                # full-fast already runs a pod (maxPods 1); fast and plain are empty, only fast has the label.
                "nodes": [
                    labelled_node("full-fast", **{"example.com/fast": "true"}),
                    labelled_node("fast", **{"example.com/fast": "true"}),
                    labelled_node("plain"),
                ],
                "pods": [_pod("running", "full-fast")],
                "pending": [_pod("p0")],
            }
        )
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    proc = subprocess.run(
        [str(KSS), "simulate", "--detail", "full", str(scenario)], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert "MaxPodsPerNode" in result["plugins"]["filter"]
    assert result["weights"]["PreferNodeLabel"] == 2
    (entry,) = result["results"]
    assert entry["filter"]["full-fast"]["MaxPodsPerNode"] == "node(s) already run 1 pods"
    assert entry["filter"]["fast"]["MaxPodsPerNode"] == "passed"
    assert entry["feasible"] == ["fast", "plain"]
    assert entry["score"]["fast"]["PreferNodeLabel"] == 100
    assert entry["score"]["plain"]["PreferNodeLabel"] == 0
    assert entry["finalscore"]["fast"]["PreferNodeLabel"] == 200
    assert entry["boundTo"] == "fast"

    # The package is not on the path: the same configuration names plugins that do not exist.
    proc = subprocess.run(
        [str(KSS), "simulate", "--detail", "summary", str(scenario)],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"},
    )
    assert proc.returncode != 0
    assert "MaxPodsPerNode" in proc.stderr and "Traceback" not in proc.stderr


@pytest.fixture
async def app(tmp_path: Path, site: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FastAPI]:
    monkeypatch.syspath_prepend(str(site))
    application = create_app(
        Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", seed=7, plugin_metrics_sample_percent=100)
    )
    async with application.router.lifespan_context(application):
        yield application


async def test_kss_serve_records_and_shows_the_example_plugins(app: FastAPI) -> None:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://kss.test") as client:
        for name, labels in (("full-fast", {"example.com/fast": "true"}), ("fast", {"example.com/fast": "true"})):
            assert (await client.post("/api/v1/nodes", json=node(name, labels=labels))).status_code == 201
        assert (await client.post("/api/v1/nodes", json=node("plain"))).status_code == 201
        running = pod("running", cpu="100m")
        running["spec"]["nodeName"] = "full-fast"
        assert (await client.post("/api/v1/namespaces/default/pods", json=running)).status_code == 201

        r = await client.put(CONFIG_URL, json=CONFIG)
        assert r.status_code == 200, r.text
        assert (await client.post("/api/v1/namespaces/default/pods", json=pod("p0", cpu="100m"))).status_code == 201
        assert await asyncio.to_thread(app.state.scheduler.wait_idle, 20.0)
        app.state.results.flush()

        attempts = (await client.get("/simulator/v1/namespaces/default/pods/p0/results")).json()["attempts"]
        assert attempts[0]["boundTo"] == "fast"
        assert attempts[0]["rejections"] == {"MaxPodsPerNode": {"node(s) already run 1 pods": 1}}
        detail = (await client.get("/simulator/v1/namespaces/default/pods/p0/results/1")).json()
        text = json.dumps(detail)
        assert "PreferNodeLabel" in text and "MaxPodsPerNode" in text

        stored = (await client.get("/api/v1/namespaces/default/pods/p0")).json()
        annotations = stored["metadata"]["annotations"]
        filter_result = json.loads(annotations["kube-scheduler-simulator.sigs.k8s.io/filter-result"])
        assert filter_result["full-fast"]["MaxPodsPerNode"] == "node(s) already run 1 pods"
        score_result = json.loads(annotations["kube-scheduler-simulator.sigs.k8s.io/score-result"])
        assert score_result["fast"]["PreferNodeLabel"] == "100"
        assert stored["spec"]["nodeName"] == "fast"

        metrics = (await client.get("/metrics")).text
        timed = [
            line
            for line in metrics.splitlines()
            if line.startswith("scheduler_plugin_execution_duration_seconds_count")
        ]
        for plugin, point in (("MaxPodsPerNode", "Filter"), ("PreferNodeLabel", "Score")):
            assert any(f'plugin="{plugin}"' in line and f'extension_point="{point}"' in line for line in timed), timed

        page = await client.get("/ui/pods/default/p0")
        assert page.status_code == 200
        assert "MaxPodsPerNode" in page.text and "PreferNodeLabel" in page.text

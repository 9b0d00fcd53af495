"""A scheduler configuration applied at runtime is acknowledged, so it survives a restart; reset undoes it."""

from __future__ import annotations

from pathlib import Path

import httpx

from tests.conftest import start_server

MOST_ALLOCATED = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"""


def _strategy(url: str) -> str | None:
    doc = httpx.get(f"{url}/simulator/v1/schedulerconfiguration").json()
    for profile in doc.get("profiles") or []:
        for pc in profile.get("pluginConfig") or []:
            if pc.get("name") == "NodeResourcesFit":
                return str(pc["args"]["scoringStrategy"]["type"])
    return None


def test_runtime_configuration_survives_a_restart_until_reset(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'kss.db'}"
    server = start_server(tmp_path, url)
    try:
        r = httpx.put(
            f"{server.url}/simulator/v1/schedulerconfiguration",
            content=MOST_ALLOCATED,
            headers={"content-type": "application/yaml"},
        )
        assert r.status_code == 200, r.text
    finally:
        server.stop(kill=True)  # no graceful shutdown: the acknowledgement alone must be enough

    restarted = start_server(tmp_path, url)
    try:
        assert _strategy(restarted.url) == "MostAllocated"
        assert httpx.post(f"{restarted.url}/simulator/v1/reset").status_code == 200
        assert _strategy(restarted.url) is None
    finally:
        restarted.stop()

    again = start_server(tmp_path, url)
    try:
        assert _strategy(again.url) is None  # the reset is remembered too
    finally:
        again.stop()

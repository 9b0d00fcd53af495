"""The same drain under a PodDisruptionBudget in ``kss serve`` (the real kubectl) and in ``kss replay`` (a drain event
on the virtual clock): a 3-replica Deployment all on n1, ``minAvailable: 2``, n1 drained with n2 free. Both move every
pod to n2 one at a time, each eviction 5 s (kubectl's retry) after the one before, the others refused with the
eviction API's 429 meanwhile, and both leave n1 cordoned and empty."""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kss_sim.replay.engine import Replay
from kss_sim.replay.model import DRAIN, EVICTED, RUNNING
from kss_sim.replay.workload import parse_workload
from tests.cluster.factories import node
from tests.conftest import KUBECTL, KubectlRunner, Server, start_server

BUDGET_MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."

DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {
        "replicas": 3,
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {
                "terminationGracePeriodSeconds": 1,
                "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
            },
        },
    },
}
BUDGET: dict[str, Any] = {
    "apiVersion": "policy/v1",
    "kind": "PodDisruptionBudget",
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}},
}


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Server]:
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'kss.db'}")
    yield server
    server.stop()


def steps(times: list[float]) -> list[int]:
    """Each time as whole 5 s steps after the first (kubectl's retry period)."""
    return [round((t - times[0]) / 5) for t in times]


def in_serve(server: Server) -> tuple[list[float], int, list[str]]:
    """The drain with kubectl: the evictions' times (the replacements' creation), the 429s, the web pods' nodes."""
    kubectl = KubectlRunner(server.kubeconfig)
    for name in ("n1", "n2"):
        assert httpx.post(f"{server.url}/api/v1/nodes", json=node(name)).status_code == 201
    kubectl("cordon", "n2")  # the Deployment's three pods all on n1
    kubectl("apply", "-f", "-", input=yaml.safe_dump(DEPLOYMENT))
    kubectl("rollout", "status", "deployment/web", "--timeout=60s")
    kubectl("uncordon", "n2")
    kubectl("apply", "-f", "-", input=yaml.safe_dump(BUDGET))
    start = time.monotonic()
    while (
        json.loads(kubectl("get", "pdb", "web", "-o", "json").stdout).get("status", {}).get("disruptionsAllowed") != 1
    ):
        assert time.monotonic() - start < 60
        time.sleep(0.2)
    before = {p["metadata"]["name"] for p in json.loads(kubectl("get", "pods", "-o", "json").stdout)["items"]}
    drained = kubectl("drain", "n1", "--ignore-daemonsets", "--timeout=120s", timeout=180)
    assert "node/n1 drained" in drained.stdout
    pods = json.loads(kubectl("get", "pods", "-l", "app=web", "-o", "json").stdout)["items"]
    created = sorted(
        datetime.fromisoformat(p["metadata"]["creationTimestamp"].replace("Z", "+00:00")).timestamp()
        for p in pods
        if p["metadata"]["name"] not in before
    )
    assert json.loads(kubectl("get", "node", "n1", "-o", "json").stdout)["spec"]["unschedulable"] is True
    return created, drained.stderr.count(BUDGET_MESSAGE), sorted(p["spec"].get("nodeName") or "" for p in pods)


def in_replay(caplog: pytest.LogCaptureFixture) -> tuple[list[float], int, list[str]]:
    """The same in ``kss replay``: the evictions' times, the 429s (logged), the running web pods' nodes."""
    n1, n2 = node("n1"), node("n2")
    events = [
        {"at": 0, "create": DEPLOYMENT},
        {"at": 10, "create": n2},
        {"at": 10, "create": BUDGET},
        {"at": 20, "drain": "n1"},
    ]
    doc = {"kind": "TimedWorkload", "metadata": {"name": "drain"}, "spec": {"start": [n1], "events": events}}
    with caplog.at_level(logging.INFO, logger="kss.replay"):
        run = Replay(parse_workload(json.dumps(doc)))
        pods = run.run().pods
    evicted = sorted(p.evicted_at for p in pods if p.outcome == EVICTED and p.reason == DRAIN and p.evicted_at)
    assert all(p.node == "n1" for p in pods if p.outcome == EVICTED)
    refused = sum(BUDGET_MESSAGE in r.getMessage() for r in caplog.records)
    assert run.objects.nodes["n1"]["spec"]["unschedulable"] is True
    return evicted, refused, sorted(p.node or "" for p in pods if p.outcome == RUNNING)


@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")
def test_a_drain_under_a_budget_moves_the_same_pods_in_the_same_steps_in_serve_and_in_replay(
    live: Server, caplog: pytest.LogCaptureFixture
) -> None:
    serve_times, serve_refused, serve_nodes = in_serve(live)
    replay_times, replay_refused, replay_nodes = in_replay(caplog)
    assert serve_nodes == replay_nodes == ["n2", "n2", "n2"]  # every web pod moved off n1
    assert replay_times == [20.0, 25.0, 30.0]
    assert steps(serve_times) == steps(replay_times) == [0, 1, 2]  # one at a time, 5 s apart
    # the evictions beyond the budget were refused (429) and asked again: two in the first round, one in the second
    assert replay_refused == 3
    assert serve_refused >= 2

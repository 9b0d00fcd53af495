"""The ``kss serve`` scheduler thread's CPU while nothing can be scheduled, with and without SchedulerPopFromBackoffQ.

Usage: ``.venv/bin/python bench/serve_idle_cpu.py [--seconds 5] [--gates on,off]``.
For each gate setting a fresh in-process server (``create_app``, SQLite in a temporary directory, controllers and
kubelet on as in ``kss serve``) is brought into one state at a time, left alone for ``--seconds``, and the CPU time
of its ``scheduler`` thread over that window is read from the thread's own CPU clock. The states:

- ``empty``: two nodes, nothing pending;
- ``unschedulable``: a pod too big for any node, in the unschedulable pool;
- ``backoff``: a new pod too big, with a backoff of 10 s, woken by a node update just after its attempt: in backoffQ
  without the gate; popped at once with it (activeQ is empty), then back in the pool;
- ``error-backoff``: a pod whose Filter plugin raises, in the error backoffQ (never popped early);
- ``permit-wait``: two pods held in Permit for a quorum of three (timeout 10 min);
- ``stuck-gang``: a Coscheduling gang of two of which only one fits: the one that fits waits in Permit, the other
  fails and rejects it, both go back (not idle: the attempts per second are printed with the CPU);
- ``gang-pg-backoff``: the same gang with Coscheduling's ``podGroupBackoffSeconds: 10``.

Idle should cost about nothing; the stuck gang shows what the gate does to a group that can never be placed.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from kss_sim.config import Settings
from kss_sim.main import create_app
from kss_sim.scheduler.framework import Code, CycleState, FilterPlugin, PermitPlugin, Status
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins import register

PODS = "/api/v1/namespaces/default/pods"
CONFIG_URL = "/simulator/v1/schedulerconfiguration"
PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"


@register
class BenchRaises(FilterPlugin):
    """Raises for pods labelled ``raise``: their attempts are errors, so they wait in the error backoffQ."""

    name = "BenchRaises"

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        if pod.labels.get("raise"):
            raise RuntimeError("boom")
        return Status()


@register
class BenchQuorum(PermitPlugin):
    """Holds pods labelled ``team`` in Permit for 10 minutes (no quorum ever comes)."""

    name = "BenchQuorum"

    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        if pod.labels.get("team"):
            return Status(Code.WAIT), 600.0
        return Status(), 0


def _node(name: str, cpu: str = "1") -> dict[str, Any]:
    capacity = {"cpu": cpu, "memory": "4Gi", "pods": "110"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": capacity, "allocatable": capacity},
    }


def _pod(name: str, cpu: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels or {}},
        "spec": {"containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}]},
    }


def _config(plugins: list[dict[str, Any]], queue_sort: str | None = None, backoff_seconds: int = 0) -> dict[str, Any]:
    profile: dict[str, Any] = {"schedulerName": "default-scheduler", "plugins": {"multiPoint": {"enabled": plugins}}}
    if queue_sort:
        profile["plugins"]["queueSort"] = {"enabled": [{"name": queue_sort}], "disabled": [{"name": "*"}]}
    config: dict[str, Any] = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
    config["profiles"] = [profile]
    if backoff_seconds:
        config["podInitialBackoffSeconds"] = config["podMaxBackoffSeconds"] = backoff_seconds
    return config


def _scheduler_clock() -> int:
    thread = next(t for t in threading.enumerate() if t.name == "scheduler")
    assert thread.ident is not None
    return time.pthread_getcpuclockid(thread.ident)


async def _attempt_count(client: httpx.AsyncClient, names: list[str]) -> int:
    total = 0
    for name in names:
        got = (await client.get(f"/simulator/v1/namespaces/default/pods/{name}/results")).json()
        total += len(got.get("attempts") or [])
    return total


async def _window(app: Any, client: httpx.AsyncClient, seconds: float, pods: list[str]) -> tuple[float, int]:
    """CPU seconds of the scheduler thread over ``seconds`` of wall time, and the attempts recorded meanwhile."""
    clock = _scheduler_clock()
    app.state.results.flush()
    before = await _attempt_count(client, pods)
    cpu0 = time.clock_gettime(clock)
    await asyncio.sleep(seconds)
    cpu = time.clock_gettime(clock) - cpu0
    app.state.results.flush()
    return cpu, await _attempt_count(client, pods) - before


async def _settle(app: Any) -> None:
    await asyncio.to_thread(app.state.scheduler.wait_idle, 20.0)
    await asyncio.sleep(1.5)  # past the first backoff window, so the window measures the resting state


async def _run(gates: dict[str, bool], seconds: float) -> list[tuple[str, float, int, dict[str, int]]]:
    rows: list[tuple[str, float, int, dict[str, int]]] = []
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(Settings(database_url=f"sqlite:///{Path(tmp) / 'kss.db'}", seed=1, feature_gates=gates))
        async with app.router.lifespan_context(app):
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://kss.bench") as client:
                service = app.state.scheduler

                async def measure(state: str, pods: list[str]) -> None:
                    cpu, attempts = await _window(app, client, seconds, pods)
                    counts = {**service.queue.pending_counts(), "permit": len(service.waiting())}
                    rows.append((state, cpu, attempts, counts))

                for name in ("n0", "n1"):
                    await client.post("/api/v1/nodes", json=_node(name))
                await _settle(app)
                await measure("empty", [])

                await client.post(PODS, json=_pod("big", cpu="4"))
                await _settle(app)
                await measure("unschedulable", ["big"])

                # Backoff of 10 s: a node update just after the pod's attempt sends it to backoffQ, where it stays
                # without the gate; with it, activeQ being empty, it is popped at once and goes back to the pool.
                await client.put(CONFIG_URL, json=_config([], backoff_seconds=10))
                await client.delete(f"{PODS}/big")
                await client.post(PODS, json=_pod("big2", cpu="4"))
                await asyncio.to_thread(service.wait_idle, 20.0)
                await client.patch(
                    "/api/v1/nodes/n0",
                    json={"metadata": {"labels": {"touched": "yes"}}},
                    headers={"Content-Type": "application/merge-patch+json"},
                )
                await asyncio.sleep(0.3)
                await measure("backoff", ["big2"])
                await client.delete(f"{PODS}/big2")

                await client.put(CONFIG_URL, json=_config([{"name": "BenchRaises"}]))
                await client.post(PODS, json=_pod("raises", cpu="100m", labels={"raise": "yes"}))
                await _settle(app)
                await measure("error-backoff", ["raises"])
                await client.delete(f"{PODS}/raises")

                await client.put(CONFIG_URL, json=_config([{"name": "BenchQuorum"}]))
                for name in ("held-a", "held-b"):
                    await client.post(PODS, json=_pod(name, cpu="100m", labels={"team": "red"}))
                await _settle(app)
                await measure("permit-wait", ["held-a", "held-b"])
                for name in ("held-a", "held-b"):
                    await client.delete(f"{PODS}/{name}")

                # A gang of two 800m pods on nodes of 1 CPU, one of them full: only one member can ever fit.
                await client.post(PODS, json=_pod("filler", cpu="1"))
                await client.put(CONFIG_URL, json=_config([{"name": "Coscheduling"}], queue_sort="Coscheduling"))
                group = {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup"}
                await client.post(PODGROUPS, json={**group, "metadata": {"name": "g"}, "spec": {"minMember": 2}})
                label = {"scheduling.x-k8s.io/pod-group": "g"}
                for name in ("g-0", "g-1"):
                    await client.post(PODS, json=_pod(name, cpu="800m", labels=label))
                await asyncio.sleep(2.0)
                await measure("stuck-gang", ["g-0", "g-1"])

                # The same gang with Coscheduling's group backoff: refused in PreFilter for 10 s after each failure.
                config = _config([{"name": "Coscheduling"}], queue_sort="Coscheduling")
                config["profiles"][0]["pluginConfig"] = [
                    {"name": "Coscheduling", "args": {"podGroupBackoffSeconds": 10}}
                ]
                await client.put(CONFIG_URL, json=config)
                await asyncio.sleep(2.0)
                await measure("gang-pg-backoff", ["g-0", "g-1"])
    return rows


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0, help="length of each measured window")
    p.add_argument("--gates", default="on,off", help="SchedulerPopFromBackoffQ settings to run, in this order")
    args = p.parse_args()
    logging.getLogger("kss").setLevel(logging.CRITICAL)  # the raising plugin's tracebacks
    print(f"load average before: {os.getloadavg()}")
    for setting in args.gates.split(","):
        gates = {"SchedulerPopFromBackoffQ": setting.strip() == "on"}
        print(f"\nSchedulerPopFromBackoffQ={setting.strip()}: scheduler thread CPU over {args.seconds:g} s")
        print(f"{'state':<15}{'CPU ms':>9}{'attempts':>10}  queue")
        for state, cpu, attempts, counts in asyncio.run(_run(gates, args.seconds)):
            print(f"{state:<15}{cpu * 1000:>9.1f}{attempts:>10}  {counts}")
    print(f"\nload average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()

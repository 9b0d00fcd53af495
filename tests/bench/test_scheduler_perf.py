"""bench/scheduler_perf.py's churn cases (PreemptionAsync, SchedulingWithMixedChurn) at a tiny scale: what their
generators create, that the churn reaches the engine offline and the API through the server."""

from __future__ import annotations

import importlib.util
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest

from kss_sim.scheduler.loop import SchedulingLoop

BENCH = Path(__file__).resolve().parents[2] / "bench" / "scheduler_perf.py"


@pytest.fixture(scope="module")
def perf() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scheduler_perf_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def case(perf: ModuleType, prefix: str) -> Any:
    return next(c for c in perf.CASES if c.name.startswith(prefix))


def cpu_of(p: dict[str, Any]) -> str:
    return str(p["spec"]["containers"][0]["resources"]["requests"]["cpu"])


def test_preemption_async_objects(perf: ModuleType) -> None:
    c = case(perf, "PreemptionAsync/")
    assert (c.threshold, c.churn.mode, c.churn.interval_ms, c.churn_every()) == (570, "create", 200, 114)
    nodes, init, measured = c.objects(0.002)
    assert (len(nodes), len(init), len(measured)) == (10, 40, 10)
    assert {cpu_of(p) for p in init} == {"900m"}
    assert all(p["spec"].get("priority") is None and p["spec"]["terminationGracePeriodSeconds"] == 0 for p in init)
    assert {cpu_of(p) for p in measured} == {"100m"}
    assert {p["metadata"]["namespace"] for p in init + measured} == {"namespace-1", "namespace-3"}
    # Every tick creates one more preemptor, never deletes.
    for t in (1, 2):
        [(verb, preemptor)] = c.churn.tick(t)
        assert (verb, preemptor["kind"], preemptor["metadata"]["namespace"]) == ("create", "Pod", "namespace-2")
        assert (preemptor["spec"]["priority"], cpu_of(preemptor)) == (10, "3000m")
        assert preemptor["metadata"]["name"] == f"churn-0-{t:05d}"


def test_mixed_churn_recreates_what_it_made(perf: ModuleType) -> None:
    c = case(perf, "SchedulingWithMixedChurn/")
    assert (c.threshold, c.init_pods, c.measure_pods, c.churn_every()) == (710, 0, 10000, 710)
    first, second, third = c.churn.tick(1), c.churn.tick(2), c.churn.tick(3)
    assert [(verb, o["kind"]) for verb, o in first] == [("create", "Node"), ("create", "Pod"), ("create", "Service")]
    assert [verb for verb, _ in second] == ["delete"] * 3
    assert [o["metadata"]["name"] for _, o in second] == [o["metadata"]["name"] for _, o in first]
    assert {o["metadata"]["name"] for _, o in third}.isdisjoint(o["metadata"]["name"] for _, o in first)
    node, pod, _ = (o for _, o in first)
    assert node["status"]["allocatable"] == {"pods": "0"}
    assert (pod["spec"]["priority"], cpu_of(pod), "limits" in pod["spec"]["containers"][0]["resources"]) == (
        10,
        "9",
        False,
    )


def test_offline_pending_places_the_churn_pods_at_their_ticks(perf: ModuleType) -> None:
    c = case(perf, "PreemptionAsync/")
    _, init, measured = c.objects(0.002)
    names = [p["metadata"]["name"] for p in perf.offline_pending(c, init, measured, 3)]
    assert names[:40] == [p["metadata"]["name"] for p in init]
    # Ticks after measured pods 3, 6 and 9; none after the last one (10).
    assert names[40:] == [
        *("pod-000000", "pod-000001", "pod-000002", "churn-0-00001"),
        *("pod-000003", "pod-000004", "pod-000005", "churn-0-00002"),
        *("pod-000006", "pod-000007", "pod-000008", "churn-0-00003"),
        "pod-000009",
    ]


def test_offline_preemption_async_preempts_at_each_tick(perf: ModuleType) -> None:
    c = case(perf, "PreemptionAsync/")
    out = perf.run_offline(c, 0.002, churn_every=2)  # 10 full nodes, 10 measured pods, ticks after 2, 4, 6, 8
    assert out.bound == 10
    assert (out.churn_created, out.churn_deleted, out.churn_tried, out.churn_bound) == (4, 0, 4, 4)
    assert out.preempted >= 3 * 4  # 3 CPU fits a node of four 900m pods once three of them are gone


def test_offline_mixed_churn_adds_and_removes_through_the_engine(
    perf: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[str, str, str]] = []
    handle = SchedulingLoop.handle

    def recorded(self: SchedulingLoop, event_type: str, kind: str, obj: dict[str, Any]) -> bool:
        events.append((event_type, kind, obj["metadata"]["name"]))
        return handle(self, event_type, kind, obj)

    monkeypatch.setattr(SchedulingLoop, "handle", recorded)
    c = case(perf, "SchedulingWithMixedChurn/")
    out = perf.run_offline(c, 0.002, churn_every=4)  # 10 nodes, 20 measured pods: ticks after 4, 8, 12, 16
    assert out.bound == 20
    assert (out.churn_created, out.churn_deleted, out.churn_tried, out.churn_bound) == (6, 6, 2, 0)
    churned = [e for e in events if e[2].startswith("churn-")]
    assert churned == [
        ("ADDED", "Node", "churn-0-00001"),
        ("ADDED", "Service", "churn-2-00001"),
        ("DELETED", "Node", "churn-0-00001"),
        ("DELETED", "Service", "churn-2-00001"),
        ("ADDED", "Node", "churn-0-00002"),
        ("ADDED", "Service", "churn-2-00002"),
        ("DELETED", "Node", "churn-0-00002"),
        ("DELETED", "Service", "churn-2-00002"),
    ]


@pytest.fixture(scope="module")
def served(perf: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    from _serve import start  # bench/ is on the path once the module is loaded

    server = start(tmp_path_factory.mktemp("perf"), {"KSS_CONTROLLERS": "false", "KSS_KUBELET": "false"})
    try:
        yield server
    finally:
        server.stop()


def test_churn_client_creates_and_deletes_through_the_api(perf: ModuleType, served: Any) -> None:
    churn = perf.Churn("recreate", 50, [perf.churn_node, perf.high_priority_large_cpu_pod, perf.churn_service])
    with httpx.Client(base_url=served.url, timeout=30) as client:
        for obj in (
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "namespace-1"}},
            perf.priority_class(),
        ):
            assert client.post(perf.path_of(obj), json=obj).status_code == 201
        churner = perf.ChurnClient(served.url, churn)
        deadline = time.monotonic() + 30
        while churner.deleted < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        churner.stop()
        assert churner.error is None
        assert churner.created >= 3 and churner.deleted >= 3
        made = churner.created // 3
        left = 1 if churner.created > churner.deleted else 0  # the last tick's objects, if it was a create
        nodes = [n["metadata"]["name"] for n in client.get("/api/v1/nodes").json()["items"]]
        services = client.get("/api/v1/namespaces/namespace-1/services").json()["items"]
        assert sorted(n for n in nodes if n.startswith("churn-")) == [f"churn-0-{made:05d}"] * left
        assert len(services) == left
        pod = client.get("/api/v1/namespaces/namespace-1/pods/churn-1-00001")
        assert pod.status_code == 404  # recreated: the first tick's pod was deleted by the second


def test_serve_preemption_async_at_a_tiny_scale(perf: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    class FirstTickFirst(perf.ChurnClient):  # type: ignore[name-defined,misc]
        """The churn's first tick done before the measured pods are created: 20 pods bind faster than a tick."""

        def __init__(self, url: str, churn: Any) -> None:
            super().__init__(url, churn)
            assert self.ticked.wait(60)

    monkeypatch.setattr(perf, "ChurnClient", FirstTickFirst)
    tiny = perf.Case(
        "PreemptionAsync/tiny",
        570,
        perf._n(10),
        40,
        20,
        init=perf.low_priority_pod,
        measure_namespace="namespace-3",
        # Two preemptors at most: each takes three of the forty 100m places the full nodes have left.
        churn=perf.Churn("create", 20, [perf.high_priority_pod], namespace="namespace-2", number=2),
    )
    out = perf.run_serve(tiny, 1.0, 4, 120)
    assert out.bound == 20
    assert 1 <= out.churn_created <= 2 and out.churn_deleted == 0
    assert out.churn_bound <= out.churn_created

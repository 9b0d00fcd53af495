"""Repeated Events are one Event with a count (and a series for kube-scheduler's), as the recorders make them."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from kss_sim.cluster.storage.store import ClusterStore
from tests.conftest import KUBECTL, KubectlRunner, start_server

POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default", "uid": "u1"}}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 24, 10, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clocked() -> tuple[ClusterStore, Clock]:
    clock = Clock()
    return ClusterStore(None, clock=clock), clock


def _events(store: ClusterStore) -> list[dict[str, Any]]:
    return store.list("Event", "default")[0]


def test_a_scheduler_event_repeated_within_six_minutes_is_one_event_with_a_series(
    clocked: tuple[ClusterStore, Clock],
) -> None:
    store, clock = clocked
    first = store.create_event(POD, "FailedScheduling", "0/1 nodes are available.", type="Warning", action="Scheduling")
    clock.now += timedelta(minutes=2)
    store.create_event(POD, "FailedScheduling", "0/1 nodes are available.", type="Warning", action="Scheduling")
    clock.now += timedelta(minutes=5)  # 5 minutes after the last repeat: still the same series
    third = store.create_event(POD, "FailedScheduling", "0/1 nodes are available.", type="Warning", action="Scheduling")
    [event] = _events(store)
    assert third["metadata"]["name"] == first["metadata"]["name"] == event["metadata"]["name"]
    assert event["count"] == 3
    assert event["firstTimestamp"] == "2026-11-24T10:00:00Z"
    assert event["lastTimestamp"] == "2026-11-24T10:07:00Z"
    assert event["series"] == {"count": 3, "lastObservedTime": "2026-11-24T10:07:00.000000Z"}


def test_a_different_message_reason_or_object_or_a_late_repeat_is_a_new_event(
    clocked: tuple[ClusterStore, Clock],
) -> None:
    store, clock = clocked
    store.create_event(POD, "FailedScheduling", "0/1 nodes are available.", type="Warning", action="Scheduling")
    store.create_event(POD, "FailedScheduling", "0/2 nodes are available.", type="Warning", action="Scheduling")
    store.create_event(POD, "Scheduled", "0/1 nodes are available.", action="Scheduling")
    other = {**POD, "metadata": {"name": "q", "namespace": "default", "uid": "u2"}}
    store.create_event(other, "FailedScheduling", "0/1 nodes are available.", type="Warning", action="Scheduling")
    clock.now += timedelta(minutes=7)
    store.create_event(POD, "FailedScheduling", "0/1 nodes are available.", type="Warning", action="Scheduling")
    events = _events(store)
    assert len(events) == 5
    assert all(e["count"] == 1 and "series" not in e for e in events)


def test_a_controller_event_repeated_counts_without_a_series(clocked: tuple[ClusterStore, Clock]) -> None:
    store, clock = clocked
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r", "namespace": "default", "uid": "r1"}}
    store.create_event(rs, "FailedCreate", "quota", type="Warning", component="replicaset-controller")
    clock.now += timedelta(seconds=30)
    store.create_event(rs, "FailedCreate", "quota", type="Warning", component="replicaset-controller")
    [event] = _events(store)
    assert event["count"] == 2 and "series" not in event
    assert event["lastTimestamp"] == "2026-11-24T10:00:30Z"


def test_a_deleted_event_is_recorded_afresh(clocked: tuple[ClusterStore, Clock]) -> None:
    store, _ = clocked
    first = store.create_event(POD, "FailedScheduling", "m", type="Warning", action="Scheduling")
    store.delete("Event", "default", first["metadata"]["name"])
    store.create_event(POD, "FailedScheduling", "m", type="Warning", action="Scheduling")
    [event] = _events(store)
    assert event["count"] == 1


NODE = """
apiVersion: v1
kind: Node
metadata: {name: es-node}
status:
  capacity: {cpu: "1", memory: 1Gi, pods: "10"}
---
apiVersion: v1
kind: Pod
metadata: {name: es-big, namespace: default}
spec:
  containers:
  - name: c
    image: busybox
    resources: {requests: {cpu: "2"}}
"""


SMALL = """
apiVersion: v1
kind: Pod
metadata: {{name: es-small-{i}, namespace: default}}
spec:
  nodeName: es-node
  containers:
  - name: c
    image: busybox
    resources: {{requests: {{cpu: 100m}}}}
"""


@pytest.fixture
def kubectl_scheduling(tmp_path: Path) -> Iterator[KubectlRunner]:
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'kss.db'}", env={"KSS_CONTROLLERS": "false"})
    try:
        yield KubectlRunner(server.kubeconfig)
    finally:
        server.stop()


@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")
def test_kube_scheduler_s_repeated_failures_show_as_one_event_in_kubectl_describe(
    kubectl_scheduling: KubectlRunner,
) -> None:
    kubectl = kubectl_scheduling
    kubectl("apply", "-f", "-", input=NODE)

    def failed() -> list[dict[str, Any]]:
        out = kubectl("get", "events", "-n", "default", "--field-selector", "reason=FailedScheduling", "-o", "json")
        return list(json.loads(out.stdout)["items"])

    deadline = time.monotonic() + 30
    while not failed() and time.monotonic() < deadline:
        time.sleep(0.2)
    # An assigned pod deleted from the node moves it back to the queue (NodeResourcesFit's queueing hint: it may
    # free room; a label change would not): the same failure again.
    for i in range(2):
        before = failed()[0].get("count")
        kubectl("apply", "-f", "-", input=SMALL.format(i=i))
        kubectl("delete", "pod", f"es-small-{i}", "--grace-period=0")
        deadline = time.monotonic() + 30
        while failed()[0].get("count") == before and time.monotonic() < deadline:
            time.sleep(0.2)
    [event] = failed()
    assert event["count"] == 3
    assert event["series"]["count"] == 3
    described = kubectl("describe", "pod", "es-big").stdout
    assert "(x3 over" in described
    assert described.count("FailedScheduling") == 1

"""A binding the store refuses (the pod bound by someone else while its binding cycle ran, or while it waited in
Permit), in a real ``kss serve`` with the scheduler in a thread and in a process of its own
(``KSS_SCHEDULER_PROCESS``): both conclude a failed binding cycle, the attempt an error naming the refusal, no
Scheduled event for it, and the pod left as the other binder put it."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.cluster.factories import node, pod
from tests.conftest import Server, start_server
from tests.plugin_sources import unique_module_name

# Holds the binding cycle of the pod named "raced" long enough for the test to bind it first.
# Holds the pod named "waits" in Permit until the pod named "trigger" reaches Permit.
MODULE = """\
import time

from kss.framework import Code, PermitPlugin, PreBindPlugin, Status, success


class Slow(PreBindPlugin):
    name = "Slow"

    def pre_bind(self, state, pod, node_name):
        if pod.name == "raced":
            time.sleep(3.0)
        return success()


class HoldUntilTrigger(PermitPlugin):
    name = "HoldUntilTrigger"

    def permit(self, state, pod, node_name):
        if pod.name == "waits":
            return Status(Code.WAIT), 60.0
        if pod.name == "trigger":
            self.handle.iterate_over_waiting_pods(lambda waiting: waiting.allow(self.name))
        return success(), 0.0


PLUGINS = [Slow, HoldUntilTrigger]
"""


def _config(point: str, plugin: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler", "plugins": {point: {"enabled": [{"name": plugin}]}}}],
    }


BINDING_TO_N1 = {
    "apiVersion": "v1",
    "kind": "Binding",
    "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
}


@pytest.fixture(params=["thread", "process"])
def serve(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Server]:
    module = unique_module_name()
    (tmp_path / f"{module}.py").write_text(MODULE)
    env = {
        "KSS_PLUGIN_MODULES": module,
        "KSS_CONTROLLERS": "false",
        "KSS_KUBELET": "false",
        "KSS_SCHEDULER_PROCESS": "true" if request.param == "process" else "false",
    }
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'kss.db'}", env=env)
    try:
        yield server
    finally:
        server.stop()


def _attempts(api: httpx.Client, name: str) -> list[dict[str, Any]]:
    attempts: list[dict[str, Any]] = (
        api.get(f"/simulator/v1/namespaces/default/pods/{name}/results").json().get("attempts") or []
    )
    return attempts


def test_a_binding_refused_by_the_store_is_a_failed_binding_cycle(serve: Server) -> None:
    api = httpx.Client(base_url=serve.url, timeout=30)
    for name in ("n0", "n1"):
        assert api.post("/api/v1/nodes", json=node(name)).status_code == 201
    assert api.put("/simulator/v1/schedulerconfiguration", json=_config("preBind", "Slow")).status_code == 200
    assert api.post("/api/v1/namespaces/default/pods", json=pod("raced", cpu="100m")).status_code == 201
    time.sleep(1.0)  # the scheduler is in Slow's PreBind
    binding = {**BINDING_TO_N1, "metadata": {"name": "raced", "namespace": "default"}}
    r = api.post("/api/v1/namespaces/default/pods/raced/binding", json=binding)
    assert r.status_code == 201, r.text

    _assert_failed_binding_cycle(api, "raced")


def test_a_refused_binding_does_not_forget_the_pod_the_other_binder_placed(serve: Server) -> None:
    """kube-scheduler's ForgetPod forgets only a pod still assumed: the other binder's placement, seen by the
    scheduler before the refusal (the process host learns of the refusal after the change log told it of the
    binding), keeps the pod's resources counted on its node."""
    api = httpx.Client(base_url=serve.url, timeout=30)
    assert api.post("/api/v1/nodes", json=node("n1", cpu="1")).status_code == 201
    assert api.put("/simulator/v1/schedulerconfiguration", json=_config("preBind", "Slow")).status_code == 200
    assert api.post("/api/v1/namespaces/default/pods", json=pod("raced", cpu="600m")).status_code == 201
    time.sleep(1.0)  # the scheduler is in Slow's PreBind
    binding = {**BINDING_TO_N1, "metadata": {"name": "raced", "namespace": "default"}}
    assert api.post("/api/v1/namespaces/default/pods/raced/binding", json=binding).status_code == 201
    deadline = time.monotonic() + 30
    while not _attempts(api, "raced"):
        assert time.monotonic() < deadline, "the raced pod's attempt was not recorded"
        time.sleep(0.2)
    assert _attempts(api, "raced")[0]["result"] == "error"

    assert api.post("/api/v1/namespaces/default/pods", json=pod("after", cpu="600m")).status_code == 201
    deadline = time.monotonic() + 30
    while not _attempts(api, "after"):
        assert time.monotonic() < deadline, "the pod created after was not tried"
        time.sleep(0.2)
    attempt = _attempts(api, "after")[0]
    assert attempt["result"] == "unschedulable", attempt
    assert "Insufficient cpu" in attempt["message"], attempt["message"]


def test_a_binding_refused_after_a_wait_in_permit_is_a_failed_binding_cycle(serve: Server) -> None:
    api = httpx.Client(base_url=serve.url, timeout=30)
    for name in ("n0", "n1"):
        assert api.post("/api/v1/nodes", json=node(name)).status_code == 201
    config = _config("permit", "HoldUntilTrigger")
    assert api.put("/simulator/v1/schedulerconfiguration", json=config).status_code == 200
    assert api.post("/api/v1/namespaces/default/pods", json=pod("waits", cpu="100m")).status_code == 201
    deadline = time.monotonic() + 30
    while "kss_permit_waiting_pods 1.0" not in api.get("/metrics").text:
        assert time.monotonic() < deadline, "the pod did not come to wait in Permit"
        time.sleep(0.2)
    binding = {**BINDING_TO_N1, "metadata": {"name": "waits", "namespace": "default"}}
    r = api.post("/api/v1/namespaces/default/pods/waits/binding", json=binding)
    assert r.status_code == 201, r.text
    # The trigger allows the waiting pod: its binding, made only now, is refused.
    assert api.post("/api/v1/namespaces/default/pods", json=pod("trigger", cpu="100m")).status_code == 201

    _assert_failed_binding_cycle(api, "waits")


def _assert_failed_binding_cycle(api: httpx.Client, name: str) -> None:
    """``name``'s one attempt is a failed binding cycle and its node is freed for the next pod."""
    deadline = time.monotonic() + 30
    attempts = _attempts(api, name)
    while not attempts and time.monotonic() < deadline:
        time.sleep(0.2)
        attempts = _attempts(api, name)
    (attempt,) = attempts
    assert attempt["result"] == "error", attempt
    assert attempt.get("boundTo") is None
    assert attempt["message"].startswith("binding rejected: "), attempt["message"]

    # The other binder's node stands; the scheduler reported no Scheduled event of its own for the pod.
    assert api.get(f"/api/v1/namespaces/default/pods/{name}").json()["spec"]["nodeName"] == "n1"
    events = api.get("/api/v1/namespaces/default/events").json()["items"]
    assert not [e for e in events if e["reason"] == "Scheduled" and e["involvedObject"]["name"] == name]
    # Its node freed: a pod created now is scheduled and recorded.
    assert api.post("/api/v1/namespaces/default/pods", json=pod("after", cpu="100m")).status_code == 201
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not _attempts(api, "after"):
        time.sleep(0.2)
    assert _attempts(api, "after")[0]["result"] == "scheduled"

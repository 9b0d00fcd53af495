"""Failing and healing a node from its page, in real headless Chromium against a real ``kss serve``: the Ready
condition the buttons write is the one ``kss node fail|heal`` writes, and the node lifecycle controller's taints
follow on the page (screenshots in ``test-artifacts/screenshots/``)."""

from __future__ import annotations

import html
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import KubectlRunner, Server, start_server
from tests.web.chromium import MARKS, shot

pytestmark = MARKS
# How long the page may wait for the node lifecycle controller's taints to come or go (its period, then the swap).
CONTROLLER_WAIT_MS = 60_000

NODE = """apiVersion: v1
kind: Node
metadata:
  name: worker-1
  labels: {kubernetes.io/hostname: worker-1}
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
  conditions: [{type: Ready, status: "True", reason: KubeletReady}]
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  nodeName: worker-1
  containers: [{name: app, image: nginx}]
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, KubectlRunner]]:
    workdir = tmp_path_factory.mktemp("kss-node-report")
    srv = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}", env={"KSS_SCHEDULER_ENABLED": "true"})
    kubectl = KubectlRunner(srv.kubeconfig)
    kubectl("apply", "-f", "-", input=NODE)
    yield srv, kubectl
    srv.stop()


def node(kubectl: KubectlRunner) -> dict[str, Any]:
    return dict(json.loads(kubectl("get", "node", "worker-1", "-o", "json").stdout))


def ready(obj: dict[str, Any]) -> tuple[str, str]:
    cond = next(c for c in obj["status"]["conditions"] if c["type"] == "Ready")
    return cond["status"], cond["reason"]


def taint_keys(obj: dict[str, Any]) -> set[str]:
    return {f"{t['key']}:{t['effect']}" for t in obj["spec"].get("taints") or []}


def test_fail_and_heal_a_node_from_its_page(page: Any, cluster: tuple[Server, KubectlRunner]) -> None:
    server, kubectl = cluster
    page.goto(f"{server.url}/ui/nodes/worker-1")
    form = page.get_by_test_id("node-report")
    form.get_by_role("button", name="Fail (NotReady)").click()

    # The body swaps in place: NotReady, the condition as `kss node fail` writes it, then the controller's taints.
    page.locator("#node-body .badge.bad", has_text="NotReady").wait_for()
    assert ready(node(kubectl)) == ("False", "KubeletNotReady")
    # The taints are the node lifecycle controller's, on its own period: slower than a swap on a loaded machine.
    page.locator("#node-body td", has_text="node.kubernetes.io/not-ready").first.wait_for(timeout=CONTROLLER_WAIT_MS)
    assert {"node.kubernetes.io/not-ready:NoExecute", "node.kubernetes.io/not-ready:NoSchedule"} <= taint_keys(
        node(kubectl)
    )
    assert page.get_by_test_id("node-report").get_by_role("button", name="Fail (NotReady)").count() == 0
    shot(page, "node-failed")

    page.get_by_test_id("node-report").get_by_role("button", name="Heal").click()
    page.locator("#node-body .badge.ok", has_text="Ready").wait_for()
    assert ready(node(kubectl)) == ("True", "KubeletReady")
    deadline = time.monotonic() + CONTROLLER_WAIT_MS / 1000
    while taint_keys(node(kubectl)):
        assert time.monotonic() < deadline, taint_keys(node(kubectl))
        time.sleep(0.1)
    page.wait_for_function(
        "() => !document.querySelector('#node-body').innerText.includes('not-ready')", timeout=CONTROLLER_WAIT_MS
    )
    assert page.url.endswith("/ui/nodes/worker-1")  # swapped in place, no navigation
    # The pod tolerated not-ready for its default 300 s: still there.
    assert kubectl("get", "pod", "web", "-o", "name").stdout.strip() == "pod/web"


def test_unreachable_from_the_page_without_javascript(cluster: tuple[Server, KubectlRunner]) -> None:
    server, kubectl = cluster
    with httpx.Client(base_url=server.url) as client:
        answer = client.post("/ui/nodes/worker-1/ready", data={"report": "unreachable"})
        assert answer.status_code == 303 and answer.headers["location"] == "/ui/nodes/worker-1"
        assert ready(node(kubectl)) == ("Unknown", "NodeStatusUnknown")
        wrong = client.post("/ui/nodes/worker-1/ready", data={"report": "explode"})
        assert wrong.status_code == 422 and 'Unsupported value: "explode"' in html.unescape(wrong.text)
        assert ready(node(kubectl)) == ("Unknown", "NodeStatusUnknown")
        missing = client.post("/ui/nodes/nope/ready", data={"report": "fail"})
        assert missing.status_code == 404
        client.post("/ui/nodes/worker-1/ready", data={"report": "heal"})
    assert ready(node(kubectl)) == ("True", "KubeletReady")

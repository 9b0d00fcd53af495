"""End to end in real headless Chromium against a real ``kss serve``: the web UI as people use it.

Screenshots of every page go to ``test-artifacts/screenshots/``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import KubectlRunner, Server, start_server
from tests.web.chromium import MARKS, shot

pytestmark = MARKS


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("kss-ui")
    srv = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}", env={"KSS_SCHEDULER_ENABLED": "true"})
    yield srv
    srv.stop()


def api(server: Server, path: str) -> httpx.Response:
    return httpx.get(f"{server.url}{path}", timeout=10)


def pod_json(server: Server, name: str) -> dict[str, Any]:
    response = api(server, f"/api/v1/namespaces/default/pods/{name}")
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def create_from_editor(page: Any, server: Server, kind: str, text: str) -> None:
    page.goto(f"{server.url}/ui/new?kind=Namespace")
    page.get_by_role("link", name=kind, exact=True).click()  # the template, swapped in by htmx
    page.wait_for_url(re.compile(f"kind={kind}$"))  # pushed after the swap
    page.wait_for_function(f"document.querySelector('#yaml-text').value.includes('kind: {kind}')")
    page.fill("#yaml-text", text)
    page.get_by_role("button", name="Create").click()


NODE = """apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}, pool: {pool}}}
status:
  capacity: {{cpu: "4", memory: 32Gi, pods: "110"}}
"""
POD = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
spec:
  nodeSelector: {{pool: {pool}}}
  containers:
  - name: app
    image: nginx
    resources:
      requests: {{cpu: "{cpu}", memory: {memory}}}
"""


def test_create_node_and_pod_from_the_ui_then_see_the_binding_and_breakdown(page: Any, ui_server: Server) -> None:
    create_from_editor(page, ui_server, "Node", NODE.format(name="ui-node-1", pool="ui"))
    page.wait_for_url(re.compile(r"/ui/nodes/ui-node-1$"))
    assert page.locator("h1").inner_text().endswith("ui-node-1")
    create_from_editor(page, ui_server, "Node", NODE.format(name="ui-node-2", pool="ui"))
    page.wait_for_url(re.compile(r"/ui/nodes/ui-node-2$"))
    create_from_editor(page, ui_server, "Pod", POD.format(name="ui-pod", pool="ui", cpu="1", memory="2Gi"))
    page.wait_for_url(re.compile(r"/ui/pods/default/ui-pod$"))
    # Bound by the scheduler; the page follows without a reload (SSE, or its poll while nothing is recorded).
    node = page.locator('[data-testid="pod-node"]')
    node.wait_for()
    assert node.inner_text() in ("ui-node-1", "ui-node-2")
    assert pod_json(ui_server, "ui-pod")["spec"]["nodeName"] == node.inner_text()
    matrix = page.locator('[data-testid="filter-matrix"]')
    matrix.wait_for()
    assert matrix.locator("tbody tr").count() >= 2
    scores = page.locator('[data-testid="score-table"]')
    assert "NodeResourcesFit" in scores.inner_text()
    assert scores.locator("tr.selected td.node").inner_text().startswith(node.inner_text())
    assert page.locator('[data-testid="heatmap"] tbody tr').count() >= 2
    shot(page, "pod-detail")
    # The matrix controls swap only the matrices.
    page.fill('input[name="fnode"]', "ui-node-2")
    page.wait_for_function("document.querySelectorAll('[data-testid=filter-matrix] tbody tr').length === 1")
    page.goto(f"{ui_server.url}/ui/nodes/{node.inner_text()}")
    assert "ui-pod" in page.locator("#node-body").inner_text()
    shot(page, "node-detail")
    page.goto(f"{ui_server.url}/ui/cluster")
    assert page.locator("#node-ui-node-1").count() == 1
    shot(page, "cluster")


def test_invalid_yaml_shows_the_error_inline_and_saves_nothing(page: Any, ui_server: Server) -> None:
    before = _pod_versions(ui_server)
    bad_name = POD.format(name="Bad_Name", pool="ui", cpu="1", memory="1Gi")
    create_from_editor(page, ui_server, "Pod", bad_name)
    error = page.locator('[data-testid="editor-error"]')
    error.wait_for()
    assert "metadata.name" in error.inner_text() and "Nothing was saved." in error.inner_text()
    assert page.input_value("#yaml-text") == bad_name  # the text stays for fixing
    assert page.url.endswith("/ui/new?kind=Pod")
    shot(page, "editor-error")
    page.fill("#yaml-text", "kind: Pod\nmetadata:\n  name: [oops\n")
    page.get_by_role("button", name="Create").click()
    page.get_by_text("could not be parsed").wait_for()
    assert _pod_versions(ui_server) == before
    assert api(ui_server, "/api/v1/namespaces/default/pods/Bad_Name").status_code == 404


def _pod_versions(server: Server) -> dict[str, str]:
    """Every pod's resourceVersion by name. Not the list's own resourceVersion: that is the cluster's, which other
    writers (node leases, Events of earlier tests' pods) move while the editor is rejecting the text."""
    items = api(server, "/api/v1/pods").json()["items"]
    return {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p["metadata"]["resourceVersion"] for p in items}


def test_a_pod_created_with_kubectl_appears_live(page: Any, ui_server: Server) -> None:
    page.goto(f"{ui_server.url}/ui/pods")
    page.evaluate("window.__sameDocument = true")
    page.wait_for_function("document.getElementById('live').classList.contains('on')")
    kubectl = KubectlRunner(ui_server.kubeconfig)
    overrides = {"spec": {"nodeSelector": {"pool": "none"}, "containers": [{"name": "c", "image": "nginx"}]}}
    kubectl("run", "from-kubectl", "--image=nginx", "--overrides", json.dumps(overrides))
    row = page.locator('tr[data-pod="default/from-kubectl"]')
    row.wait_for()
    # It cannot be placed (no node in that pool): the reason from kube-scheduler's message shows up live too.
    page.wait_for_function(
        "(document.querySelector('tr[data-pod=\"default/from-kubectl\"] td.reason') || {}).innerText"
        "?.includes(\"didn't match Pod's node affinity/selector\")"
    )
    assert page.evaluate("window.__sameDocument") is True  # no reload happened
    shot(page, "pods")
    kubectl("delete", "pod", "from-kubectl", "--wait=false")
    row.wait_for(state="detached")
    assert page.evaluate("window.__sameDocument") is True


MOST_ALLOCATED = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
        resources:
        - {name: cpu, weight: 1}
        - {name: memory, weight: 1}
"""


def test_switching_to_most_allocated_places_the_next_pod_on_the_fuller_node(page: Any, ui_server: Server) -> None:
    kubectl = KubectlRunner(ui_server.kubeconfig)
    nodes = "\n---\n".join(NODE.format(name=n, pool="pack") for n in ("pack-a", "pack-b"))
    kubectl("apply", "-f", "-", input=nodes)
    kubectl("apply", "-f", "-", input=POD.format(name="pack-first", pool="pack", cpu="2", memory="16Gi"))
    page.goto(f"{ui_server.url}/ui/pods/default/pack-first")
    page.locator('[data-testid="pod-node"]').wait_for()
    fuller = pod_json(ui_server, "pack-first")["spec"]["nodeName"]

    page.goto(f"{ui_server.url}/ui/scheduler")
    # Invalid first: the field is named and the running configuration stays.
    page.fill("#config-text", MOST_ALLOCATED.replace("MostAllocated", "Sideways"))
    page.get_by_role("button", name="Apply").click()
    error = page.locator('[data-testid="config-error"]')
    error.wait_for()
    assert "scoringStrategy" in error.inner_text()
    shot(page, "scheduler-config-error")
    page.goto(f"{ui_server.url}/ui/scheduler")
    assert "Sideways" not in page.input_value("#config-text")
    defaulted = page.locator('[data-testid="defaulted-config"]')
    assert "type: LeastAllocated" in (defaulted.text_content() or "")
    page.get_by_text("MostAllocated (bin packing)").click()
    page.get_by_role("button", name="Apply").click()
    page.locator('[data-testid="config-applied"]').wait_for()
    # What is in effect follows without a reload (swapped out of band with the form's answer).
    assert "type: MostAllocated" in (defaulted.text_content() or "")
    page.get_by_text("Defaulted configuration").click()
    assert defaulted.is_visible()
    assert page.locator('tr[data-point="score"] td').inner_text().startswith("TaintToleration ×3")
    shot(page, "scheduler-config")
    try:
        # Under the default LeastAllocated this pod would go to the emptier node; bin packing picks the fuller one.
        kubectl("apply", "-f", "-", input=POD.format(name="pack-next", pool="pack", cpu="1", memory="8Gi"))
        page.goto(f"{ui_server.url}/ui/pods/default/pack-next")
        placed = page.locator('[data-testid="pod-node"]')
        placed.wait_for()
        assert placed.inner_text() == fuller
        assert pod_json(ui_server, "pack-next")["spec"]["nodeName"] == fuller
        page.locator('[data-testid="score-table"]').wait_for()
        shot(page, "pod-detail-most-allocated")
    finally:
        page.goto(f"{ui_server.url}/ui/scheduler")
        page.get_by_text("default", exact=True).click()
        page.get_by_role("button", name="Apply").click()
        page.locator('[data-testid="config-applied"]').wait_for()


def test_every_page_renders_and_is_captured(page: Any, ui_server: Server) -> None:
    for name, path in (
        ("objects", "/ui/objects?kind=Namespace"),
        ("editor-templates", "/ui/new?kind=Node"),
        ("operations", "/ui/operations"),
        ("pods-pending", "/ui/pods?state=pending"),
    ):
        page.goto(f"{ui_server.url}{path}")
        page.locator("main h1").wait_for()
        shot(page, name)
    page.goto(f"{ui_server.url}/ui/cluster")
    page.fill('input[name="q"]', "pool=pack")
    page.wait_for_url(re.compile(r"q=pool%3Dpack"))  # hx-push-url keeps the search in the address
    page.wait_for_function("document.querySelectorAll('#cluster-body tbody tr').length === 2")
    shot(page, "cluster-search")

"""The DRA pages in real headless Chromium against a real ``kss serve``: a node's devices and the claim holding each,
a ResourceClaim's page, the Devices overview, a pod's claims, and, on a pod DynamicResources refused, kube-scheduler's
message per node with the simulator's per-request explanation beneath it (screenshots in
``test-artifacts/screenshots/``)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import KubectlRunner, Server, start_server
from tests.controllers.test_dra_kubectl import DEVICES, DRIVER, NODES, template_and_pod
from tests.web.chromium import MARKS, fresh_page, shot

pytestmark = MARKS

# Two A100s wanted where gpu-node-0 has one (held by trainer) and gpu-node-1 none.
TWO_A100 = f"""---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: two-a100}}
spec:
  devices:
    requests:
    - name: gpus
      exactly:
        deviceClassName: gpu.example.com
        count: 2
        selectors:
        - cel: {{expression: 'device.attributes["{DRIVER}"].model == "a100"'}}
---
apiVersion: v1
kind: Pod
metadata: {{name: greedy}}
spec:
  resourceClaims: [{{name: gpus, resourceClaimName: two-a100}}]
  containers:
  - name: train
    image: busybox
    resources: {{claims: [{{name: gpus}}]}}
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    """Two GPU nodes; trainer bound with the A100 of gpu-node-0, greedy pending (wants two A100s). Yields the server
    and the name of trainer's generated claim."""
    workdir = tmp_path_factory.mktemp("kss-dra-pages")
    srv = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}", env={"KSS_SCHEDULER_ENABLED": "true"})
    kubectl = KubectlRunner(srv.kubeconfig)
    kubectl("apply", "-f", "-", input=NODES + DEVICES)
    kubectl("apply", "-f", "-", input=template_and_pod("trainer", "a100"))
    deadline = time.monotonic() + 30
    while not (pod := json.loads(kubectl("get", "pod", "trainer", "-o", "json").stdout))["spec"].get("nodeName"):
        assert time.monotonic() < deadline, "trainer was not bound"
        time.sleep(0.2)
    kubectl("apply", "-f", "-", input=TWO_A100)
    while "FailedScheduling" not in kubectl("describe", "pod", "greedy").stdout:
        assert time.monotonic() < deadline + 30, "greedy was not tried"
        time.sleep(0.2)
    yield srv, pod["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    srv.stop()


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    with fresh_page(chromium) as pg:
        console: list[str] = []
        pg.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
        yield pg
        assert console == [], console


def test_the_node_page_lists_its_devices_and_the_claim_holding_each(page: Any, cluster: tuple[Server, str]) -> None:
    server, claim = cluster
    page.goto(f"{server.url}/ui/nodes/gpu-node-0")
    devices = page.get_by_test_id("node-devices")
    devices.wait_for()
    assert "1 of 2 allocated" in devices.locator("h2").inner_text()
    held = devices.locator('tr[data-device="gpu-node-0/gpu-0"]')
    assert held.locator("td").nth(0).inner_text() == DRIVER
    assert "model=a100" in held.inner_text() and "memory=80Gi" in held.inner_text()
    assert held.get_by_test_id("device-holder").inner_text().strip() == f"default/{claim}"
    free = devices.locator('tr[data-device="gpu-node-0/gpu-1"]')
    assert free.get_by_test_id("device-holder").inner_text().strip() == "free"
    shot(page, "dra-node-devices")

    # The holder links to the claim's page: allocation, node selector, reservedFor and owner pod, with links.
    held.get_by_role("link", name=f"default/{claim}").click()
    page.wait_for_url(f"**/ui/claims/default/{claim}")
    assert page.get_by_test_id("claim-state").inner_text().strip() == "allocated"
    assert page.get_by_test_id("claim-owner").inner_text().startswith("trainer (from ResourceClaimTemplate a100-gpu)")
    assert page.get_by_test_id("claim-reserved-for").inner_text().strip() == "trainer"
    assert page.get_by_test_id("claim-node-selector").inner_text() == "metadata.name In [gpu-node-0]"
    rows = page.get_by_test_id("claim-allocation").locator("tbody tr")
    assert rows.count() == 1 and rows.first.inner_text().split("\t")[:4] == ["gpu", DRIVER, "gpu-node-0", "gpu-0"]
    assert 'device.attributes["gpu.example.com"].model == "a100"' in page.get_by_test_id("claim-requests").inner_text()
    shot(page, "dra-claim")
    page.get_by_test_id("claim-reserved-for").get_by_role("link", name="trainer").click()
    page.wait_for_url("**/ui/pods/default/trainer")
    claims = page.get_by_test_id("pod-claims")
    assert claim in claims.inner_text() and "gpu.example.com/gpu-node-0/gpu-0" in claims.inner_text()


def test_the_devices_page_lists_classes_nodes_and_claims(page: Any, cluster: tuple[Server, str]) -> None:
    server, claim = cluster
    page.goto(f"{server.url}/ui/cluster")
    page.get_by_role("link", name="Devices").click()
    page.wait_for_url("**/ui/dra")
    assert 'device.driver == "gpu.example.com"' in page.get_by_test_id("device-classes").inner_text()
    nodes = page.get_by_test_id("node-devices-summary").locator("tbody tr")
    assert [nodes.nth(i).inner_text().split("\t") for i in range(nodes.count())] == [
        ["gpu-node-0", DRIVER, "gpu-node-0-gpus", "1", "2"],
        ["gpu-node-1", DRIVER, "gpu-node-1-gpus", "0", "2"],
    ]
    claims = page.get_by_test_id("claims").inner_text()
    assert f"default/{claim}\tallocated\tgpu-node-0/gpu-0\ttrainer\ttrainer" in claims
    assert "default/two-a100\tpending" in claims
    shot(page, "dra-overview")


def test_a_refused_pod_shows_kube_scheduler_s_message_and_the_simulator_s_explanation(
    page: Any, cluster: tuple[Server, str]
) -> None:
    server, _ = cluster
    page.goto(f"{server.url}/ui/pods/default/greedy")
    rejections = page.get_by_test_id("dra-rejections")
    rejections.wait_for()
    by_node = {}
    for i in range(rejections.locator(".dra-node").count()):
        node = rejections.locator(".dra-node").nth(i)
        message = node.get_by_test_id("dra-message").inner_text()
        cells = node.get_by_test_id("dra-explanation").locator("tbody tr").first.locator("td").all_inner_texts()
        by_node[node.get_attribute("data-node")] = (message, cells)
    assert "The simulator's explanation" in rejections.inner_text()
    assert by_node == {
        # kube-scheduler's words, then: claim, request, class, wanted, on node, of class, matching, free, verdict.
        "gpu-node-0": (
            "cannot allocate all claims",
            ["default/two-a100", "gpus", DRIVER, "2", "2", "2", "1", "0",
             "only 0 of 1 matching devices free, 2 wanted"],
        ),
        "gpu-node-1": (
            "cannot allocate all claims",
            ["default/two-a100", "gpus", DRIVER, "2", "2", "2", "0", "0",
             f'no device matches selector device.attributes["{DRIVER}"].model == "a100"'],
        ),
    }  # fmt: skip
    shot(page, "dra-pod-refused")

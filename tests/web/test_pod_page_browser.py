"""The pod page in real headless Chromium against a real ``kss serve``: a tie among equal nodes in words, why a pod is
pending in amounts, and long node names shown whole (screenshots in ``test-artifacts/screenshots/``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import KubectlRunner, Server, start_server
from tests.web.chromium import MARKS, shot

pytestmark = MARKS

NODE = """apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}, pool: {pool}}}
spec:
  taints: {taints}
status:
  capacity: {{cpu: "{cpu}", memory: {memory}, pods: "110"}}
"""
POD = """apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
spec:
  nodeSelector: {selector}
  containers:
  - name: app
    image: nginx
    resources:
      requests: {{cpu: "{cpu}", memory: 1Gi}}
"""
GPU_TAINT = "[{key: dedicated, value: gpu, effect: NoSchedule}]"
CPU_NODES = [f"openb-node-004{i}" for i in range(8)]
GPU_NODES = ["openb-node-0048", "openb-node-0049"]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Eight identical nodes (a pod that fits them ties on all eight) and two big tainted ones."""
    workdir = tmp_path_factory.mktemp("kss-pod-page")
    srv = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}", env={"KSS_SCHEDULER_ENABLED": "true"})
    nodes = [NODE.format(name=n, pool="cpu", taints="[]", cpu="8", memory="64Gi") for n in CPU_NODES]
    nodes += [NODE.format(name=n, pool="gpu", taints=GPU_TAINT, cpu="64", memory="256Gi") for n in GPU_NODES]
    kubectl = KubectlRunner(srv.kubeconfig)
    kubectl("apply", "-f", "-", input="\n---\n".join(nodes))
    pods = [POD.format(name="tied", selector="{}", cpu="1"), POD.format(name="huge", selector="{pool: gpu}", cpu="88")]
    kubectl("apply", "-f", "-", input="\n---\n".join(pods))
    yield srv
    srv.stop()


def fully_shown(page: Any, selector: str) -> list[str]:
    """The text of each element matched whose content overflows its box or its scrolling container (cut off)."""
    return list(
        page.evaluate(
            """(sel) => [...document.querySelectorAll(sel)].filter((el) => {
                 if (el.scrollWidth > el.clientWidth + 1) return true;
                 const box = el.getBoundingClientRect();
                 const clip = el.closest('.scroll');
                 return clip ? box.right > clip.getBoundingClientRect().right + 1 : false;
               }).map((el) => el.innerText)""",
            selector,
        )
    )


def test_a_tie_says_the_node_was_drawn_among_the_tied_nodes_and_names_show_whole(page: Any, cluster: Server) -> None:
    page.goto(f"{cluster.url}/ui/pods/default/tied")
    page.locator('[data-testid="pod-node"]').wait_for()
    bound = page.locator('[data-testid="pod-node"]').inner_text()
    assert bound in CPU_NODES
    selection = page.locator('[data-testid="attempt-selection"]')
    selection.wait_for()
    assert selection.inner_text().startswith("(drawn at random among 8 nodes tied at total ")
    # One node selected, the seven others marked as tied, in the score table and the filter matrix alike.
    scores = page.locator('[data-testid="score-table"]')
    assert scores.locator("tr.selected td.node a").inner_text() == bound
    assert scores.locator(".badge.tie").count() == 7
    matrix = page.locator('[data-testid="filter-matrix"]')
    assert matrix.locator(".badge.sel").count() == 1 and matrix.locator(".badge.tie").count() == 7
    # Top nodes per plugin: whole names (eight bars per plugin), the winner marked.
    bars = page.locator('[data-testid="plugin-bars"] .pbar-node')
    names = set(bars.all_inner_texts())
    assert names == set(CPU_NODES)
    assert fully_shown(page, '[data-testid="plugin-bars"] .pbar-node') == []
    assert page.locator('[data-testid="plugin-bars"] .pbar.selected .pbar-node').first.inner_text() == bound
    # The filter matrix's Verdict column is whole, in view without scrolling sideways.
    assert fully_shown(page, '[data-testid="filter-matrix"] td.verdict') == []
    assert fully_shown(page, '[data-testid="filter-matrix"] th.verdict') == []
    shot(page, "pod-tie")
    # Narrower (the matrix fits 900 px now that plugins not run share one column), it scrolls sideways; the Verdict
    # column stays whole at its right edge.
    page.set_viewport_size({"width": 640, "height": 800})
    assert page.evaluate(
        "(() => { const s = document.querySelector('.matrices .scroll'); return s.scrollWidth > s.clientWidth; })()"
    )
    assert fully_shown(page, '[data-testid="filter-matrix"] td.verdict') == []
    assert fully_shown(page, '[data-testid="plugin-bars"] .pbar-node') == []
    shot(page, "pod-tie-narrow")


def test_a_pod_that_fits_nowhere_shows_its_requests_beside_the_roomiest_nodes(page: Any, cluster: Server) -> None:
    page.goto(f"{cluster.url}/ui/pods/default/huge")
    why = page.locator('[data-testid="why-pending"]')
    why.wait_for()
    cpu = page.locator('[data-testid="need-cpu"]').inner_text()
    assert cpu.startswith("cpu 88 requested; the roomiest node has 64 free (openb-node-0048), ")
    assert cpu.endswith("the largest 64 allocatable: no node of this cluster can ever hold it")
    memory = page.locator('[data-testid="need-memory"]').inner_text()
    assert memory.startswith("memory 1Gi requested; the roomiest node has 256Gi free")
    assert memory.endswith("10 nodes have that much free")
    obstacles = page.locator('[data-testid="obstacle"]').all_inner_texts()
    assert obstacles == [
        "2 nodes have taint dedicated=gpu:NoSchedule the pod does not tolerate",
        "8 of 10 nodes lack label pool=gpu (nodeSelector)",
    ]
    assert "0/10 nodes are available" in page.locator('[data-testid="pending-reason"]').inner_text()
    assert fully_shown(page, '[data-testid="filter-matrix"] td.verdict') == []
    shot(page, "pod-why-pending")

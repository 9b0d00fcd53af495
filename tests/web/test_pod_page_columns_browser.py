"""The pod page's matrices in real headless Chromium against a real ``kss serve`` with a user's plugins, an extender
and a DRA claim: every plugin's and extender's column in view at 1400 px, every header and reason whole, an
extender's failure with its message, and score cells with the legend's four numbers (screenshots in
``test-artifacts/screenshots/``)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import KubectlRunner, Server, start_server
from tests.extender_server import ExtenderServer, extender_server, node_names
from tests.web.chromium import MARKS, shot

pytestmark = MARKS

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXTENDER_REASON = "node is reserved for the batch team by the extender"
PLUGINS = """\
from kss.framework import FilterPlugin, ScorePlugin, success, unschedulable


class MaxPodsPerNode(FilterPlugin):
    name = "MaxPodsPerNode"

    def filter(self, state, pod, node_info):
        if len(node_info.pods) >= 1:
            return unschedulable("node(s) already run 1 pods, the most MaxPodsPerNode allows")
        return success()


class PreferNodeLabel(ScorePlugin):
    name = "PreferNodeLabel"

    def score(self, state, pod, node_info):
        return (100 if node_info.labels.get("topology.kubernetes.io/zone") == "zone-a" else 0), success()


PLUGINS = [MaxPodsPerNode, PreferNodeLabel]
"""
CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    filter: {{enabled: [{{name: MaxPodsPerNode}}]}}
    score: {{enabled: [{{name: PreferNodeLabel, weight: 2}}]}}
extenders:
- urlPrefix: {url}
  filterVerb: filter
  prioritizeVerb: prioritize
  weight: 2
  nodeCacheCapable: true
"""
POD = """\
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers:
  - name: app
    image: nginx
    resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}
"""


def extender_filter(body: dict[str, Any]) -> tuple[int, Any]:
    """Fails the nodes whose name ends in 2 or b (cpu-2, gpu-node-b), with a reason of its own."""
    names = node_names(body)
    failed = {n: EXTENDER_REASON for n in names if n[-1] in "2b"}
    return 200, {"NodeNames": [n for n in names if n not in failed], "FailedNodes": failed, "Error": ""}


def extender_prioritize(body: dict[str, Any]) -> tuple[int, Any]:
    return 200, [{"Host": n, "Score": 3 * i % 11} for i, n in enumerate(node_names(body))]


@pytest.fixture(scope="module")
def extender() -> Iterator[ExtenderServer]:
    with extender_server({"filter": extender_filter, "prioritize": extender_prioritize}) as server:
        yield server


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, extender: ExtenderServer) -> Iterator[Server]:
    """The example cluster and DRA objects (seven nodes), a user's Filter and Score plugin, an extender; web-0 and
    the like bound, others pending."""
    workdir = tmp_path_factory.mktemp("kss-pod-columns")
    (workdir / "columns_plugins.py").write_text(PLUGINS)
    (workdir / "scheduler.yaml").write_text(CONFIG.format(url=extender.url))
    env = {
        "KSS_SCHEDULER_ENABLED": "true",
        "KSS_PLUGIN_MODULES": "columns_plugins",
        "KSS_SCHEDULER_CONFIG": str(workdir / "scheduler.yaml"),
    }
    srv = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}", env=env)
    kubectl = KubectlRunner(srv.kubeconfig)
    kubectl("apply", "-f", str(EXAMPLES / "cluster" / "nodes.yaml"), "-f", str(EXAMPLES / "dra"))
    kubectl("wait", "--for=jsonpath={.spec.nodeName}", "pod/training", "--timeout=30s")
    kubectl("apply", "-f", "-", input=POD.format(name="first", cpu="1"))
    kubectl("wait", "--for=jsonpath={.spec.nodeName}", "pod/first", "--timeout=30s")
    yield srv
    srv.stop()


def overflowing(page: Any, selector: str) -> list[str]:
    """The text of each cell matched whose content is wider than its box (cut off or drawn over its neighbour)."""
    return list(
        page.evaluate(
            """(sel) => [...document.querySelectorAll(sel)]
                 .filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => el.innerText)""",
            selector,
        )
    )


def hidden_columns(page: Any, table: str) -> list[str]:
    """The headers of ``table`` not wholly in view between its sticky Node column and the sticky right column (or the
    scrolling container's edges): under a sticky column, or scrolled out."""
    return list(
        page.evaluate(
            """(table) => {
                 const t = document.querySelector(table);
                 const clip = t.closest('.scroll').getBoundingClientRect();
                 const heads = [...t.querySelectorAll('thead th')];
                 const left = heads[0].getBoundingClientRect().right;
                 const last = heads[heads.length - 1].getBoundingClientRect();
                 const right = Math.min(last.left, clip.right);
                 return heads.slice(1, -1).filter((th) => {
                   const box = th.getBoundingClientRect();
                   return box.left < left - 1 || box.right > right + 1;
                 }).map((th) => th.title || th.innerText);
               }""",
            table,
        )
    )


def test_every_plugin_and_extender_column_is_in_view_with_every_reason_whole(
    page: Any, cluster: Server, extender: ExtenderServer
) -> None:
    # The second pod: MaxPodsPerNode rejects first's node, the extender cpu-2 and gpu-node-b, the taint the GPU nodes.
    KubectlRunner(cluster.kubeconfig)("apply", "-f", "-", input=POD.format(name="second", cpu="1"))
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{cluster.url}/ui/pods/default/second")
    matrix = page.locator('[data-testid="filter-matrix"]')
    matrix.wait_for()
    headers = matrix.locator("thead th.plugin").evaluate_all("els => els.map(e => e.title)")
    extender_column = f"Extender({extender.url})"
    assert "MaxPodsPerNode" in headers and extender_column in headers
    # The plugins that ran on no node (PreFilter: Skip; the pod has no claim, no volume) share one narrow column.
    idle = matrix.get_by_test_id("idle-plugins").get_attribute("title")
    assert idle.startswith("not run on any node here (PreFilter: Skip): ") and "DynamicResources" in idle
    assert hidden_columns(page, '[data-testid="filter-matrix"]') == []
    assert overflowing(page, '[data-testid="filter-matrix"] th, [data-testid="filter-matrix"] td') == []
    assert page.evaluate(
        "(() => { const s = document.querySelector('.matrices .scroll'); return s.scrollWidth <= s.clientWidth; })()"
    )
    # The extender's failure shows its message; the user's plugin's reason is whole, from its first word.
    rejected = matrix.locator("tbody tr", has=page.locator("td.node", has_text="cpu-2"))
    assert EXTENDER_REASON in rejected.locator("td.verdict").inner_text()
    assert rejected.locator("td.verdict .badge").first.inner_text().startswith("rejected at Extender 127.0.0.1:")
    reasons = matrix.locator('[data-testid="filter-reason"]').all_inner_texts()
    assert any(r.startswith("node(s) already run 1 pods, the most MaxPodsPerNode allows") for r in reasons), reasons
    # A failed cell is a mark with its reason in the tooltip; where the scheduler stopped is an inset border, which
    # (unlike an outline) is never painted over the sticky columns as stray red lines.
    stopped = matrix.locator("td.cell.stopped").first
    assert stopped.inner_text().strip() == "■"
    assert page.evaluate(
        "[...document.querySelectorAll('[data-testid=filter-matrix] td.cell')]"
        ".every((td) => getComputedStyle(td).outlineStyle === 'none')"
    )
    shot(page, "pod-columns-filter-1400")

    # At 1024 px too the user's plugin and the extender are in view without scrolling sideways; were the matrix
    # wider, it would scroll under a sticky Node column.
    page.set_viewport_size({"width": 1024, "height": 800})
    hidden = hidden_columns(page, '[data-testid="filter-matrix"]')
    assert [h for h in hidden if h.startswith(("Extender", "MaxPodsPerNode"))] == [], hidden
    page.evaluate("document.querySelector('.matrices .scroll').scrollLeft = 100000")
    node_cell = matrix.locator("tbody td.node").first.bounding_box()
    scroll_box = page.locator(".matrices .scroll").first.bounding_box()
    assert abs(node_cell["x"] - scroll_box["x"]) <= 1
    shot(page, "pod-columns-filter-1024")


def test_score_cells_show_raw_normalized_weight_and_final(page: Any, cluster: Server, extender: ExtenderServer) -> None:
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{cluster.url}/ui/pods/default/first")
    table = page.locator('[data-testid="score-table"]')
    table.wait_for()
    assert hidden_columns(page, '[data-testid="score-table"]') == []
    assert overflowing(page, '[data-testid="score-table"] th, [data-testid="score-table"] td') == []
    cells = table.locator("td.score").all_inner_texts()
    assert cells
    for text in cells:
        match = re.fullmatch(r"(-?\d+) → (-?\d+) ×(\d+)\s*= (-?\d+)", text.strip())
        assert match, text
        normalized, weight, final = (int(match[i]) for i in (2, 3, 4))
        assert normalized * weight == final, text
    # The extender's prioritize score (0-10) is normalized to the plugins' 0-100 before its weight.
    column = table.locator("thead th").evaluate_all("els => els.findIndex((e) => e.title.startsWith('Extender('))")
    assert column > 0
    for text in table.locator(f"tbody td:nth-child({column + 1})").all_inner_texts():
        raw, normalized = (int(n) for n in re.findall(r"-?\d+", text)[:2])
        assert normalized == 10 * raw, text
    shot(page, "pod-columns-scores-1400")


def test_dra_why_pending_leads_with_the_claim_and_groups_nodes_refused_alike(page: Any, cluster: Server) -> None:
    # examples/dra/40-unsatisfiable.yaml: an H100 that no node has; the GPU nodes' slices offer A100s and a T4.
    page.set_viewport_size({"width": 1400, "height": 900})
    page.goto(f"{cluster.url}/ui/pods/default/wants-h100")
    why = page.get_by_test_id("why-pending")
    why.wait_for()
    first = why.locator("li").first
    assert first.get_attribute("data-testid") == "need-claim"
    assert first.inner_text() == (
        "claim default/h100, request gpu: 1 device of class gpu.example.com where "
        'device.attributes["gpu.example.com"].model == "h100"; the cluster\'s nodes can use 3 of the class '
        "(on 2 nodes), 0 matching (on 0), 0 of them free: none of the 3 devices of class gpu.example.com matches "
        "the selector"
    )
    # Per node, the nodes refused alike once: the two GPU nodes (their devices, no H100) first, then the five
    # nodes no ResourceSlice serves as one group.
    groups = page.get_by_test_id("dra-rejections").locator(".dra-node")
    verdicts = [
        (g.get_attribute("data-node"), g.get_by_test_id("dra-explanation").locator("td.verdict").all_inner_texts())
        for g in groups.all()
    ]
    no_h100 = 'no device matches selector device.attributes["gpu.example.com"].model == "h100"'
    assert sorted(verdicts[:2]) == [("gpu-node-a", [no_h100]), ("gpu-node-b", [no_h100])]
    assert verdicts[2:] == [("cpu-1,cpu-2,cpu-3,gpu-1,gpu-2", ["no ResourceSlice offers this node any device"])]
    assert groups.nth(2).get_by_test_id("dra-group-count").inner_text() == "5 nodes"
    # The claim's pod too shows every column (DynamicResources run, the user's plugin) and every reason whole.
    matrix = '[data-testid="filter-matrix"]'
    headers = page.locator(f"{matrix} thead th.plugin").evaluate_all("els => els.map(e => e.title)")
    assert "DynamicResources" in headers and "MaxPodsPerNode" in headers
    assert hidden_columns(page, matrix) == []
    assert overflowing(page, f"{matrix} th, {matrix} td") == []
    shot(page, "pod-dra-why-pending")


def test_score_table_and_heat_map_fit_at_1024(page: Any, cluster: Server, extender: ExtenderServer) -> None:
    """At 1024 px the score table and the heat map show every column, the extender's too, and every header whole:
    the heat map takes the width its columns need and the per-plugin bars go under it when it does not leave them
    enough."""
    page.set_viewport_size({"width": 1024, "height": 800})
    page.goto(f"{cluster.url}/ui/pods/default/first")
    heatmap = page.locator('[data-testid="heatmap"]')
    heatmap.wait_for()
    for table in ('[data-testid="score-table"]', '[data-testid="heatmap"]'):
        assert hidden_columns(page, table) == [], table
        assert overflowing(page, f"{table} th, {table} td") == [], table
        assert page.evaluate(
            "(t) => { const s = document.querySelector(t).closest('.scroll'); return s.scrollWidth <= s.clientWidth; }",
            table,
        ), table
    heads = heatmap.locator("thead th.plugin").evaluate_all("els => els.map(e => e.title)")
    assert f"Extender({extender.url})" in heads and "PreferNodeLabel" in heads
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    shot(page, "pod-columns-scores-1024")


@pytest.mark.parametrize("name", ["training", "wants-h100"])
def test_a_claims_pod_page_shows_every_column_and_reason_whole_at_1024(
    page: Any, cluster: Server, extender: ExtenderServer, name: str
) -> None:
    """A pod with a DRA claim, bound (examples/dra/30-training.yaml: scores and heat map too) or pending on a device
    no node has: at 1024 px every column of every matrix is in view (DynamicResources, the user's plugins, the
    extender), every header and reason whole, and the page does not scroll sideways."""
    page.set_viewport_size({"width": 1024, "height": 800})
    page.goto(f"{cluster.url}/ui/pods/default/{name}")
    matrix = '[data-testid="filter-matrix"]'
    page.locator(matrix).wait_for()
    tables = [matrix] + (['[data-testid="score-table"]', '[data-testid="heatmap"]'] if name == "training" else [])
    for table in tables:
        assert page.locator(table).count() == 1, table
        assert hidden_columns(page, table) == [], table
        assert overflowing(page, f"{table} th, {table} td") == [], table
        assert page.evaluate(
            "(t) => { const s = document.querySelector(t).closest('.scroll'); return s.scrollWidth <= s.clientWidth; }",
            table,
        ), table
    heads = page.locator(f"{matrix} thead th.plugin").evaluate_all("els => els.map(e => e.title)")
    assert "DynamicResources" in heads and "MaxPodsPerNode" in heads, heads
    if name == "training":
        assert f"Extender({extender.url})" in heads, heads
        scored = page.locator('[data-testid="heatmap"] thead th.plugin').evaluate_all("els => els.map(e => e.title)")
        assert "DynamicResources" in scored and "PreferNodeLabel" in scored, scored
    reasons = page.locator(f'{matrix} [data-testid="filter-reason"]').all_inner_texts()
    assert reasons and all(r.strip() for r in reasons), reasons
    # The DRA explanation's headers and class names are whole words: a cell on more lines than it has words was
    # broken inside one (the fixed layout's columns once broke "gpu.example.com" and "Matching" at 1024 px).
    broken = page.evaluate(
        """() => [...document.querySelectorAll('.dra-explain th, .dra-explain td:nth-child(3)')].filter(e => {
            const range = document.createRange(); range.selectNodeContents(e);
            const lines = new Set([...range.getClientRects()].map(r => Math.round(r.top))).size;
            return lines > e.innerText.trim().split(/\\s+/).length; }).map(e => e.innerText)"""
    )
    assert broken == [], broken
    assert page.evaluate("document.documentElement.scrollWidth <= document.documentElement.clientWidth")
    shot(page, f"pod-dra-{name}-1024")

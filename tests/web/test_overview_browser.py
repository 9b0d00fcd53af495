"""In real headless Chromium against a real ``kss serve``: the cluster page's overview at 5,000 nodes, extended
resource names in full, and the pods page's state chips. Screenshots go to ``test-artifacts/screenshots/``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.db import make_engine, upgrade_database
from tests.conftest import Server, start_server
from tests.web.big_cluster import GPU_MEM, big_node, big_pod
from tests.web.chromium import MARKS, shot
from tests.web.conftest import node, pod, wait_for

pytestmark = MARKS
NODES = 5000


def prefilled(database_url: str) -> None:
    """Write 5,000 nodes and a pod on each into a new database through the store (an import over HTTP of as many
    objects takes minutes on this machine; what the page reads is the same)."""
    engine = make_engine(database_url, sqlite_synchronous="NORMAL")
    upgrade_database(engine)
    store = ClusterStore.open(engine)
    with store.deferred() as pending:
        for i in range(NODES):
            store.create("Node", big_node(i))
        for i in range(NODES):
            store.create("Pod", big_pod(i))
    pending.wait()
    engine.dispose()


@pytest.fixture(scope="module")
def big_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("kss-big")
    url = f"sqlite:///{workdir / 'kss.db'}"
    prefilled(url)
    srv = start_server(workdir, url, env={"KSS_SCHEDULER_ENABLED": "false", "KSS_CONTROLLERS": "false"})
    yield srv
    srv.stop()


def legend_counts(page: Any) -> dict[str, int]:
    found: dict[str, int] = page.eval_on_selector_all(
        ".legend-band", "els => Object.fromEntries(els.map(e => [e.dataset.band, +e.querySelector('b').textContent]))"
    )
    return found


def test_the_overview_shows_5000_nodes_and_filters_and_recolours_in_place(page: Any, big_server: Server) -> None:
    page.goto(f"{big_server.url}/ui/cluster")
    grid = page.locator('[data-testid="node-cells"] a')
    assert grid.count() == NODES
    assert sum(legend_counts(page).values()) == NODES
    assert page.locator("table.nodes tbody tr").count() == 25
    cell = page.locator('[data-testid="node-cells"] a[href="/ui/nodes/big-00007"]')
    assert cell.get_attribute("title") == "big-00007 · cpu 7 / 10 (70%) · cordoned"
    shot(page, "cluster-overview-5000")

    # Colour by an extended resource, busiest first: the body is swapped and the URL says so.
    page.select_option('[data-testid="node-resource"]', GPU_MEM)
    page.wait_for_function("document.querySelector('.legend-band[data-band=none]') !== null")  # swapped in
    assert "resource=alibabacloud.com" in page.url
    page.select_option('[data-testid="node-sort"]', "allocated")
    page.wait_for_function("document.querySelector('table.nodes tbody tr').id === 'node-big-00008'")
    assert "sort=allocated" in page.url
    assert legend_counts(page)["none"] == NODES * 3 // 4  # only every fourth node offers GPU memory
    label = page.locator("#node-big-00008 .bar-label", has_text="gpu-mem")
    assert label.inner_text().split() == ["alibabacloud.com/", "gpu-mem"]
    assert label.evaluate("el => el.scrollWidth <= el.clientWidth && el.scrollHeight <= el.clientHeight")
    shot(page, "cluster-overview-gpu-mem")

    # One band of the legend, then the cordoned nodes only; a cell opens its node.
    full = legend_counts(page)["h10"]
    assert full > 0
    page.locator('.legend-band[data-band="h10"]').click()
    page.wait_for_function(f"document.querySelectorAll('[data-testid=node-cells] a').length === {full}")
    assert "band=h10" in page.url
    assert page.locator("table.nodes tbody tr").count() == 25
    page.locator('.legend-band[data-band="h10"].current').click()  # again: every band
    page.wait_for_function(f"document.querySelectorAll('[data-testid=node-cells] a').length === {NODES}")
    page.select_option('[data-testid="node-state"]', "cordoned")
    page.wait_for_function("document.querySelectorAll('[data-testid=node-cells] a').length === 100")
    assert page.locator('[data-testid="map-count"]').inner_text() == f"100 of {NODES} nodes"
    shot(page, "cluster-overview-cordoned")
    page.locator('[data-testid="node-cells"] a').first.click()
    page.wait_for_url(re.compile("/ui/nodes/big-00007$"))
    bars = page.locator(".bars.big .bar-label")
    assert bars.all_inner_texts() == ["cpu", "memory", "pods"]  # big-00007 offers no GPU


def test_node_page_shows_extended_resource_names_uncut(page: Any, big_server: Server) -> None:
    page.goto(f"{big_server.url}/ui/nodes/big-00008")
    labels = page.locator(".bars.big .bar-label")
    assert [t.split() for t in labels.all_inner_texts()][3:] == [
        ["alibabacloud.com/", "gpu-count"],
        ["alibabacloud.com/", "gpu-mem"],
    ]
    clipped = labels.evaluate_all("els => els.filter(e => e.scrollWidth > e.clientWidth).length")
    assert clipped == 0
    shot(page, "node-extended-resources")


# ---------------------------------------------------------------------------------------------- pods page


@pytest.fixture(scope="module")
def sched_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("kss-pods")
    srv = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}", env={"KSS_SCHEDULER_ENABLED": "true"})
    yield srv
    srv.stop()


def create(server: Server, body: dict[str, Any]) -> None:
    ns = body["metadata"].get("namespace")
    path = f"/api/v1/namespaces/{ns}/pods" if body["kind"] == "Pod" else "/api/v1/nodes"
    response = httpx.post(f"{server.url}{path}", json=body, timeout=10)
    assert response.status_code == 201, response.text


def test_pods_page_puts_unschedulable_pods_first_and_filters_by_state_chips(page: Any, sched_server: Server) -> None:
    create(sched_server, node("small", cpu="2"))
    for i in range(30):
        create(sched_server, pod(f"fits-{i:02d}", cpu="10m", memory="10Mi"))
    create(sched_server, pod("zz-too-big", cpu="64"))
    create(sched_server, pod("zz-other-ns", cpu="64", namespace="team-b"))

    def stuck(namespace: str, name: str) -> bool:
        got = httpx.get(f"{sched_server.url}/api/v1/namespaces/{namespace}/pods/{name}", timeout=10).json()
        return any(c.get("reason") == "Unschedulable" for c in got["status"].get("conditions") or [])

    wait_for(lambda: stuck("default", "zz-too-big") and stuck("team-b", "zz-other-ns"), timeout=20)
    page.goto(f"{sched_server.url}/ui/pods")
    rows = page.locator("table.pods tbody tr")
    assert rows.nth(0).get_attribute("data-pod") == "default/zz-too-big"  # unschedulable first, as kubectl orders
    assert rows.nth(1).get_attribute("data-pod") == "team-b/zz-other-ns"
    assert rows.nth(2).get_attribute("data-state") == "bound"
    chips = page.locator('[data-testid="pod-states"] a')
    assert chips.all_inner_texts()[:3] == ["32 pods", "2 pending", "2 unschedulable"]
    shot(page, "pods-pending-first")

    page.locator('[data-testid="pod-states"] a[data-state="unschedulable"]').click()
    page.wait_for_url(re.compile("state=unschedulable"))
    page.wait_for_function("document.querySelectorAll('table.pods tbody tr').length === 2")
    # Another filter keeps the chosen state: the state's hidden input belongs to the filters form.
    page.select_option('select[name="namespace"]', "team-b")
    page.wait_for_url(re.compile("namespace=team-b"))
    page.wait_for_function("document.querySelectorAll('table.pods tbody tr').length === 1")
    assert "state=unschedulable" in page.url
    assert chips.all_inner_texts() == ["1 pod", "1 pending", "1 unschedulable", "0 bound"]  # of team-b's pods
    assert rows.first.get_attribute("data-pod") == "team-b/zz-other-ns"
    shot(page, "pods-unschedulable-chip")

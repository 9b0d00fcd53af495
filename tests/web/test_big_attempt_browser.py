"""In real headless Chromium against a real ``kss serve`` with 5,000 nodes: the pod page of a pod every node rejected,
a rejection count clicked to list its nodes, the next page of them, and back to every node (issue #20). Screenshots
go to ``test-artifacts/screenshots/``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.db import make_engine, upgrade_database
from tests.conftest import Server, start_server
from tests.web.chromium import MARKS, shot
from tests.web.conftest import node, pod, wait_for

pytestmark = MARKS
NODES = 5000
TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}


def tainted(i: int) -> bool:
    return i % 3 == 0


def prefilled(database_url: str) -> None:
    """5,000 nodes of 4 cores, a third tainted, written through the store (faster than 5,000 API requests)."""
    engine = make_engine(database_url, sqlite_synchronous="NORMAL")
    upgrade_database(engine)
    store = ClusterStore.open(engine)
    with store.deferred() as pending:
        for i in range(NODES):
            spec: dict[str, Any] = {"taints": [TAINT]} if tainted(i) else {}
            store.create("Node", node(f"n-{i:04d}", cpu="4", **spec))
    pending.wait()
    engine.dispose()


@pytest.fixture(scope="module")
def big_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """kss serve with its scheduler over the 5,000 nodes, and a pod asking 64 cores, tried once."""
    workdir = tmp_path_factory.mktemp("kss-big-attempt")
    url = f"sqlite:///{workdir / 'kss.db'}"
    prefilled(url)
    srv = start_server(workdir, url, env={"KSS_SCHEDULER_ENABLED": "true", "KSS_CONTROLLERS": "false"})
    created = httpx.post(f"{srv.url}/api/v1/namespaces/default/pods", json=pod("huge", cpu="64"), timeout=30)
    assert created.status_code == 201, created.text
    results = f"{srv.url}/simulator/v1/namespaces/default/pods/huge/results"
    wait_for(lambda: httpx.get(results, timeout=30).json().get("attempts"), timeout=60)
    yield srv
    srv.stop()


def shown_nodes(page: Any) -> list[str]:
    nodes: list[str] = page.eval_on_selector_all(
        '[data-testid="filter-matrix"] td.node a', "els => els.map(e => e.textContent.trim())"
    )
    return nodes


def test_a_count_of_5000_rejections_lists_its_nodes_page_by_page(page: Any, big_server: Server) -> None:
    page.goto(f"{big_server.url}/ui/pods/default/huge")
    chips = page.locator('[data-testid="rejection"]')
    assert sorted(chips.all_inner_texts()) == [
        "NodeResourcesFit: 3333 × Insufficient cpu",
        "TaintToleration: 1667 × node(s) had untolerated taint(s)",
    ]
    untainted = [f"n-{i:04d}" for i in range(NODES) if not tainted(i)]
    assert shown_nodes(page) == untainted[:50]
    shot(page, "big-attempt-every-node-rejected")

    page.locator('[data-testid="rejection"][data-plugin="TaintToleration"]').click()
    page.wait_for_selector('[data-testid="matrix-filtered"]')
    taint_nodes = [f"n-{i:04d}" for i in range(NODES) if tainted(i)]
    assert shown_nodes(page) == taint_nodes[:50]
    assert page.locator('select[name="fplugin"]').input_value() == "TaintToleration"
    page.locator("#matrices .pager a", has_text="next").first.click()
    page.wait_for_function("document.querySelector('#matrices .pager-page').textContent.includes('page 2 /')")
    assert shown_nodes(page) == taint_nodes[50:100]
    assert "51–100 of 1667" in page.locator("#matrices .pager-count").first.inner_text()
    shot(page, "big-attempt-taint-rejections-page-2")

    page.locator('[data-testid="matrix-filtered"] a', has_text="every node").click()
    page.wait_for_selector('[data-testid="matrix-filtered"]', state="detached")
    assert shown_nodes(page) == untainted[:50]
    assert page.locator('select[name="fplugin"]').input_value() == ""

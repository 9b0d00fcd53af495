"""A 5,000-node attempt on the pod page (issue #20): the rejection counts of every node, the filter matrix 50 rows
at a time with any page on request, and each count one click from the nodes it counts."""

from __future__ import annotations

import html as html_text
import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.cluster.storage.store import ClusterStore
from tests.web.conftest import htmx, node, pod, wait_for

NODES = 5000
TAINT = {"key": "gpu", "value": "true", "effect": "NoSchedule"}


def tainted(i: int) -> bool:
    """A third of the nodes carry a taint the pods do not tolerate."""
    return i % 3 == 0


def matrix_nodes(fragment: str) -> list[str]:
    """The nodes of the filter matrix's rows, in order."""
    matrix = fragment[fragment.index('data-testid="filter-matrix"') :]
    matrix = matrix[: matrix.index("</table>")]
    return re.findall(r'<td class="node"><a href="/ui/nodes/([^"]+)">', matrix)


@pytest.fixture
async def big_cluster(sched_app: FastAPI) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """5,000 nodes of 4 cores, a third tainted, and a pod asking 64 cores that every one of them rejects."""
    store: ClusterStore = sched_app.state.store
    with store.deferred() as pending:
        for i in range(NODES):
            spec: dict[str, Any] = {"taints": [TAINT]} if tainted(i) else {}
            store.create("Node", node(f"n-{i:04d}", cpu="4", **spec))
    pending.wait()
    store.create("Pod", pod("huge", cpu="64"))
    results = sched_app.state.results
    wait_for(lambda: results.flush() or results.list_attempts("default", "huge"), timeout=60)
    transport = httpx.ASGITransport(app=sched_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as client:
        yield sched_app, client


async def test_a_5000_node_attempt_shows_every_rejection_counted_and_pages_the_matrix_on_request(
    big_cluster: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    _, client = big_cluster
    page = (await client.get("/ui/pods/default/huge")).text
    assert f"0 of {NODES} nodes passed every filter plugin" in page
    chips = {
        html_text.unescape(text)
        for text in re.findall(r'<a class="chip bad" data-testid="rejection"[^>]*>([^<]+)</a>', page)
    }
    untainted = sum(1 for i in range(NODES) if not tainted(i))
    assert chips == {
        f"NodeResourcesFit: {untainted} × Insufficient cpu",
        f"TaintToleration: {NODES - untainted} × node(s) had untolerated taint(s)",
    }
    # Rejected first: by the plugin that stopped the node (NodeResourcesFit before TaintToleration), then by name.
    order = [f"n-{i:04d}" for i in range(NODES) if not tainted(i)] + [f"n-{i:04d}" for i in range(NODES) if tainted(i)]
    assert matrix_nodes(page) == order[:50]
    assert f"1–50 of {NODES}" in page and "page 1 / 100" in page
    # Any page on request: the one where NodeResourcesFit's nodes end and TaintToleration's begin.
    later = await client.get("/ui/pods/default/huge", params={"attempt": 1, "fpage": 67}, headers=htmx("matrices"))
    assert later.text.lstrip().startswith('<div id="matrices"')
    assert matrix_nodes(later.text) == order[3300:3350]
    assert f"3301–3350 of {NODES}" in later.text


async def test_a_rejection_count_lists_the_nodes_it_counts_and_every_node_is_one_click_back(
    big_cluster: tuple[FastAPI, httpx.AsyncClient],
) -> None:
    _, client = big_cluster
    page = (await client.get("/ui/pods/default/huge")).text
    link = re.search(r'data-plugin="TaintToleration" href="[^"]*" hx-get="([^"]+)" hx-target="#attempt"', page)
    assert link is not None
    answer = await client.get(html_text.unescape(link.group(1)), headers=htmx("attempt"))
    assert answer.text.lstrip().startswith('<section id="attempt"')
    shown = matrix_nodes(answer.text)
    taint_nodes = [f"n-{i:04d}" for i in range(NODES) if tainted(i)]
    assert shown == taint_nodes[:50]
    assert f"1–50 of {len(taint_nodes)}" in answer.text
    # The select shows the filter the count set, so the other controls keep it; one click goes back to every node.
    assert '<option value="TaintToleration" selected>' in answer.text
    note = answer.text[answer.text.index('data-testid="matrix-filtered"') :]
    assert note.startswith(f'data-testid="matrix-filtered">The {len(taint_nodes)} nodes TaintToleration rejected;')
    back = re.search(r'hx-get="([^"]+)" hx-target="#attempt"', note)
    assert back is not None
    every = await client.get(html_text.unescape(back.group(1)), headers=htmx("attempt"))
    assert f"1–50 of {NODES}" in every.text and 'data-testid="matrix-filtered"' not in every.text

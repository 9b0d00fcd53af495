"""The pod page and the Shadow page in real headless Chromium for pods another scheduler bound through ``kss serve``
(``--shadow``): the external scheduler's matrices, kss's judgement beside them, and the differences listed
(screenshots in ``test-artifacts/screenshots/``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Server
from tests.engine_host.test_external_scheduler import (
    EXTERNAL,
    bind_as_external,
    create_pod,
    debuggable_annotations,
    recorded,
    start_shadow_server,
    with_nodes,
)
from tests.web.chromium import MARKS, shot

pytestmark = MARKS


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """Three nodes; one pod bound where kss would bind it (with result annotations), one on the worst node."""
    srv = start_shadow_server(tmp_path_factory)
    try:  # a failure while filling it must not leave the server running
        core = with_nodes(srv)
        create_pod(core, "agreed")
        bind_as_external(core, "agreed", "n-big", debuggable_annotations("n-big", worst="n-small"))
        create_pod(core, "forced")
        bind_as_external(core, "forced", "n-small", debuggable_annotations("n-small", worst="n-mid"))
        recorded(srv, "agreed")
        recorded(srv, "forced")
        yield srv
    finally:
        srv.stop()


def test_the_pod_page_shows_the_external_matrices_and_kss_judgement(page: Any, cluster: Server) -> None:
    page.goto(f"{cluster.url}/ui/pods/default/agreed")
    block = page.locator('[data-testid="external-binding"]')
    block.wait_for()
    assert page.locator('[data-testid="external-binder"]').inner_text() == EXTERNAL
    assert page.locator('[data-testid="attempt-selection"]').inner_text() == f"(chosen by {EXTERNAL})"
    assert page.locator('[data-testid="shadow-verdict"]').inner_text() == "agrees"
    assert page.locator('[data-testid="shadow-node"]').inner_text() == "n-big"
    # The external scheduler's own verdicts fill the same filter matrix kss's attempts have.
    matrix = page.locator('[data-testid="filter-matrix"]')
    assert "Insufficient cpu" in matrix.inner_text()
    assert page.locator('[data-testid="external-warning"]').count() == 0
    shot(page, "external-pod-agrees")
    page.goto(f"{cluster.url}/ui/pods/default/forced")
    page.locator('[data-testid="shadow-verdict"]').wait_for()
    assert page.locator('[data-testid="shadow-verdict"]').inner_text() == "differs"
    rows = page.locator('[data-testid="shadow-rows"] tr[data-node]')
    assert sorted(rows.evaluate_all("(trs) => trs.map((tr) => tr.dataset.node)")) == ["n-big", "n-small"]
    shot(page, "external-pod-differs")


def test_the_shadow_page_lists_the_differences_and_switches_to_every_judgement(page: Any, cluster: Server) -> None:
    page.goto(f"{cluster.url}/ui/cluster")
    page.get_by_role("link", name="Shadow").click()
    page.wait_for_url("**/ui/shadow")
    assert page.locator("nav.nav a[aria-current=page]").inner_text() == "Shadow"
    cards = page.locator('[data-testid="shadow-judgement"]')
    assert cards.evaluate_all("(cs) => cs.map((c) => c.dataset.pod)") == ["default/forced"]
    assert page.locator('[data-testid="shadow-judged"]').inner_text() == "2"
    assert page.locator('[data-testid="shadow-differ"]').inner_text() == "1"
    assert cards.first.locator('[data-testid="shadow-node"]').inner_text() == "n-big"
    shot(page, "shadow-differing")
    page.get_by_role("link", name="All judged").click()
    page.wait_for_url("**/ui/shadow?all=1")
    page.wait_for_function("document.querySelectorAll('[data-testid=shadow-judgement]').length === 2")
    assert sorted(cards.evaluate_all("(cs) => cs.map((c) => c.dataset.pod)")) == ["default/agreed", "default/forced"]
    shot(page, "shadow-all")
    page.locator('[data-pod="default/forced"] h2 a').click()
    page.wait_for_url("**/ui/pods/default/forced?attempt=1")
    page.locator('[data-testid="external-binding"]').wait_for()

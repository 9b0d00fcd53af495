"""A gang's preemption in real headless Chromium against ``kss serve --kube-version 1.36`` (GenericWorkload,
GangScheduling): a gang that fits only by its members' preemption shows it waits for the victims (which, each, where,
in which attempt, the grace period left), the victim's gang and pod pages say who preempted them, and once the
victims are gone the page turns to "bound after preempting" by itself, over the event stream.

Screenshots go to ``test-artifacts/screenshots/`` (group-v1alpha2-preemption*.png).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import Server, start_server
from tests.web.chromium import MARKS, shot

pytestmark = MARKS

PODGROUPS = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default/podgroups"
PODS = "/api/v1/namespaces/default/pods"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("kss-gang-preemption")
    env = {
        "KSS_KUBE_VERSION": "1.36",
        "KSS_FEATURE_GATES": "GenericWorkload=true,GangScheduling=true",
        "KSS_RUNTIME_CONFIG": "scheduling.k8s.io/v1alpha2=true",
        "KSS_CONTROLLERS": "false",
    }
    srv = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}", env=env)
    yield srv
    srv.stop()


def post(server: Server, path: str, body: dict[str, Any]) -> None:
    response = httpx.post(f"{server.url}{path}", json=body, timeout=10)
    assert response.status_code == 201, response.text


def pod_group(name: str, min_count: int, priority_class: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}


def member(name: str, group: str, priority_class: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {
        "schedulingGroup": {"podGroupName": group},
        "terminationGracePeriodSeconds": 120,  # the victims terminate until the test ends their grace period
        "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1500m"}}}],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec}


def text_of(page: Any, selector: str) -> str:
    return str(page.locator(selector).inner_text())


def test_a_gang_waiting_for_its_preemption_shows_its_victims_and_binds_when_they_are_gone(
    page: Any, server: Server
) -> None:
    srv = server
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    post(srv, "/apis/scheduling.k8s.io/v1/priorityclasses", high)
    for name in ("node-a", "node-b", "node-c"):
        capacity = {"cpu": "2", "memory": "8Gi", "pods": "110"}
        post(
            srv,
            "/api/v1/nodes",
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"capacity": capacity}},
        )
    post(srv, PODGROUPS, pod_group("batch", 3))
    for i in range(3):
        post(srv, PODS, member(f"batch-{i}", "batch"))
    page.goto(f"{srv.url}/ui/groups/default/PodGroup.v1alpha2/batch")
    page.wait_for_function("document.querySelector('[data-testid=gang-state]').dataset.state === 'bound'")

    post(srv, PODGROUPS, pod_group("training", 3, "high"))
    for i in range(3):
        post(srv, PODS, member(f"training-{i}", "training", "high"))
    page.goto(f"{srv.url}/ui/groups/default/PodGroup.v1alpha2/training")
    page.wait_for_function(
        "(document.querySelector('[data-testid=gang-preemption]') || {dataset: {}}).dataset.status === 'waiting'",
        timeout=30_000,
    )
    state = text_of(page, '[data-testid="gang-state"]')
    assert "waiting for preemption" in state and "3 victims terminating" in state and "left" in state
    status = text_of(page, '[data-testid="preemption-status"]')
    assert "deleted them gracefully" in status and "3 are still terminating" in status
    assert "each member preempts for itself (DefaultPreemption)" in text_of(page, ".gang-preemption h3")
    rows = page.locator('[data-testid="preemptions"] tbody tr')
    assert rows.count() == 3
    victims = {row.get_attribute("data-victim"): row.inner_text() for row in rows.all()}
    assert set(victims) == {"default/batch-0", "default/batch-1", "default/batch-2"}
    for text in victims.values():
        assert "terminating" in text and "of grace left" in text and "of pod group default/batch" in text
        assert "nominated to node-" in text and "#1" in text
    nominated = text_of(page, '[data-testid="nominated"]')
    assert all(f"training-{i}" in nominated for i in range(3))
    pending = page.locator('tr[data-state="pending"] td.member-state').all_inner_texts()
    assert len(pending) == 3 and all("nominated to node-" in text for text in pending)
    shot(page, "group-v1alpha2-preemption-waiting")
    page.screenshot(path="/tmp/gang32-preemption-waiting-1440.png", full_page=True)
    page.set_viewport_size({"width": 1024, "height": 900})
    page.screenshot(path="/tmp/gang32-preemption-waiting-1024.png", full_page=True)
    page.set_viewport_size({"width": 1440, "height": 900})

    # The victims' side: their gang and a victim's own page name the gang that preempted them.
    page.goto(f"{srv.url}/ui/groups/default/PodGroup.v1alpha2/batch")
    others = text_of(page, '[data-testid="preempted-members"]')
    assert others.count("preempted by pod group default/training for pod default/training-") == 3
    page.goto(f"{srv.url}/ui/pods/default/batch-0")
    by = text_of(page, '[data-testid="preempted-by"]')
    assert "by pod group default/training for pod default/training-" in by and "Deleted gracefully" in by

    # The victims' grace periods end: the gang's page turns to bound by itself, still naming them, now gone.
    page.goto(f"{srv.url}/ui/groups/default/PodGroup.v1alpha2/training")
    page.locator('[data-testid="gang-preemption"]').wait_for()
    page.evaluate("window.__sameDocument = true")
    page.wait_for_function("document.getElementById('live').classList.contains('on')")
    for i in range(3):
        gone = httpx.request("DELETE", f"{srv.url}{PODS}/batch-{i}", json={"gracePeriodSeconds": 0}, timeout=10)
        assert gone.status_code == 200, gone.text
    page.wait_for_function(
        "document.querySelector('[data-testid=gang-preemption]').dataset.status === 'bound'", timeout=30_000
    )
    assert page.evaluate("window.__sameDocument") is True
    assert "bound" in text_of(page, '[data-testid="gang-state"]')
    states = page.locator('[data-testid="preemptions"] tbody tr').evaluate_all("rows => rows.map(r => r.dataset.state)")
    # Every victim named is gone. There may be more than the first three: while they terminate, a member that fits
    # in a group cycle that cannot complete loses its nomination (clearNominatedNode, as v1.36's
    # submitPodGroupAlgorithmResult does) and preempts again; v1.37 stops that (kubernetes#138710, not ported).
    assert len(states) >= 3 and set(states) == {"gone"}, states
    shot(page, "group-v1alpha2-preemption-bound")
    page.screenshot(path="/tmp/gang32-preemption-bound-1440.png", full_page=True)

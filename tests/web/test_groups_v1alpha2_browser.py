"""The gangs page for v1.36's PodGroups (scheduling.k8s.io/v1alpha2) in real headless Chromium against ``kss serve
--kube-version 1.36`` with GenericWorkload, GangScheduling and TopologyAwareWorkloadScheduling: the list names the
kind; a gang's own page shows its PodGroupScheduled condition, its last PodGroup scheduling cycle (the pods tried
together, in order, what each came to, the placement) and why it did not fit.

Screenshots go to ``test-artifacts/screenshots/`` (groups-v1alpha2*.png, group-v1alpha2-*.png).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import Server, start_server
from tests.web.chromium import MARKS, shot

pytestmark = MARKS

V1ALPHA2 = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default/podgroups"
RACK = "example.com/rack"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("kss-gangs-v1alpha2")
    env = {
        "KSS_KUBE_VERSION": "1.36",
        "KSS_FEATURE_GATES": "GenericWorkload=true,GangScheduling=true,TopologyAwareWorkloadScheduling=true",
        "KSS_RUNTIME_CONFIG": "scheduling.k8s.io/v1alpha2=true",
        "KSS_CONTROLLERS": "false",
        "KSS_KUBELET": "false",
    }
    srv = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}", env=env)
    yield srv
    srv.stop()


def post(server: Server, path: str, body: dict[str, Any]) -> None:
    response = httpx.post(f"{server.url}{path}", json=body, timeout=10)
    assert response.status_code == 201, response.text


def node(name: str, rack: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {RACK: rack}},
        "status": {"capacity": {"cpu": "1", "memory": "4Gi", "pods": "110"}},
    }


def pod_group(name: str, min_count: int, *, topology: bool = False) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if topology:
        spec["schedulingConstraints"] = {"topology": [{"key": RACK}]}
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}


def member(name: str, group: str, cpu: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulingGroup": {"podGroupName": group},
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
        },
    }


def test_v1_36_pod_groups_show_their_cycle_and_why_they_did_not_fit(page: Any, server: Server) -> None:
    srv = server
    for name, rack in (("a0", "a"), ("a1", "a"), ("b0", "b"), ("b1", "b"), ("b2", "b")):
        post(srv, "/api/v1/nodes", node(name, rack))
    # "trio" must share a rack: only rack b holds three 600m pods. "wide" has a member no node can hold.
    post(srv, V1ALPHA2, pod_group("trio", 3, topology=True))
    post(srv, V1ALPHA2, pod_group("wide", 3))
    for i in range(3):
        post(srv, "/api/v1/namespaces/default/pods", member(f"trio-{i}", "trio", "600m"))
    for name, cpu in (("wide-0", "600m"), ("wide-1", "600m"), ("wide-2", "2")):
        post(srv, "/api/v1/namespaces/default/pods", member(name, "wide", cpu))

    page.goto(f"{srv.url}/ui/groups")
    trio = page.locator('tr[data-gang="default/trio"] [data-testid="gang-state"]')
    page.wait_for_function(
        "(document.querySelector('tr[data-gang=\"default/trio\"] [data-testid=gang-state]') || {}).innerText"
        "?.includes('bound')",
        timeout=30_000,
    )
    assert "3 of 3 on nodes" in trio.inner_text()
    wide = page.locator('tr[data-gang="default/wide"]')
    assert "PodGroup (scheduling.k8s.io/v1alpha2)" in wide.inner_text()
    page.wait_for_function(
        "(document.querySelector('tr[data-gang=\"default/wide\"] [data-testid=gang-state]') || {}).innerText"
        "?.includes('rejected')",
        timeout=30_000,
    )
    shot(page, "groups-v1alpha2")

    # The gang that did not fit: the group's condition, its last cycle pod by pod, and the folded reasons.
    page.get_by_role("link", name="wide", exact=True).click()
    page.wait_for_url(re.compile(r"/ui/groups/default/PodGroup\.v1alpha2/wide$"))
    condition = page.locator('[data-testid="podgroup-condition"]')
    condition.wait_for()
    assert "PodGroupScheduled=False" in condition.inner_text()
    assert "Unschedulable" in condition.inner_text() and "pod group is unschedulable" in condition.inner_text()
    cycle = page.locator('[data-testid="podgroup-cycle"]')
    assert "Unschedulable" in cycle.locator("h3").inner_text()
    tried = cycle.locator("li")
    assert tried.count() == 3
    texts = {li.get_attribute("data-pod"): li.inner_text() for li in tried.all()}
    assert set(texts) == {"default/wide-0", "default/wide-1", "default/wide-2"}
    assert "Insufficient cpu" in texts["default/wide-2"]
    for fits in ("default/wide-0", "default/wide-1"):
        assert "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled" in texts[fits]
    rejections = page.locator('[data-testid="rejections"]').inner_text()
    assert "Insufficient cpu" in rejections and "waiting for minCount pods" in rejections
    assert page.locator('tr[data-state="waiting"]').count() == 0  # nobody held in Permit
    shot(page, "group-v1alpha2-unschedulable")
    # Live: a change to the PodGroup alone (its SSE event is "podgroup.v1alpha2") refreshes the page.
    page.evaluate("window.__sameDocument = true")
    page.wait_for_function("document.getElementById('live').classList.contains('on')")
    patched = httpx.patch(
        f"{srv.url}{V1ALPHA2}/wide",
        json={"metadata": {"labels": {"team": "ml"}}},
        headers={"Content-Type": "application/merge-patch+json"},
        timeout=10,
    )
    assert patched.status_code == 200, patched.text
    page.wait_for_function("document.querySelector('pre.yaml').textContent.includes('team: ml')")
    assert page.evaluate("window.__sameDocument") is True
    # (Members' status writes refresh it too: the PodGroup's own event name, with its dot, must reach htmx as is.)
    page.wait_for_function(
        """() => {
            const el = document.getElementById('group-body');
            let fired = false;
            el.addEventListener('htmx:beforeRequest', () => { fired = true; }, {once: true});
            htmx.trigger(el, 'sse:podgroup.v1alpha2');
            return fired;
        }"""
    )

    # The gang that fitted: condition True, the cycle on placement "b", its topology constraint.
    page.goto(f"{srv.url}/ui/groups/default/PodGroup.v1alpha2/trio")
    condition = page.locator('[data-testid="podgroup-condition"]')
    condition.wait_for()
    assert "PodGroupScheduled=True" in condition.inner_text() and "Scheduled" in condition.inner_text()
    cycle = page.locator('[data-testid="podgroup-cycle"]')
    heading = cycle.locator("h3").inner_text()
    assert "Scheduled" in heading and "on placement b" in heading
    assert page.locator('[data-testid="topology"]').inner_text() == f"one {RACK} domain"
    bound = page.locator('tr[data-state="bound"] td.member-state').all_inner_texts()
    assert len(bound) == 3 and all(re.search(r"to b[012]$", text.strip()) for text in bound), bound
    shot(page, "group-v1alpha2-scheduled")

"""The gangs page in real headless Chromium against a real ``kss serve`` running Coscheduling: a PodGroup waits in
Permit for its last member, live, then binds all at once; another times out; the pods pages say who waits.

Screenshots go to ``test-artifacts/screenshots/`` (groups-*.png).
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

pytest.importorskip("kss.plugins.coscheduling")

COSCHEDULING = """apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      # Keep the gang waiting while its last member cannot be placed (no optimistic rejection in PostFilter).
      podGroupRejectPercentage: 100
"""
GROUP = "scheduling.x-k8s.io/pod-group"


def node(name: str, pool: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "pool": pool}},
        "status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"}},
    }


def pod_group(name: str, min_member: int, timeout: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member, "scheduleTimeoutSeconds": timeout},
    }


def member(name: str, group: str, pool: str = "gang") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {GROUP: group}},
        "spec": {
            "nodeSelector": {"pool": pool},
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}],
        },
    }


def workload_pod(name: str) -> dict[str, Any]:
    body = member(name, "")
    del body["metadata"]["labels"]
    body["spec"]["workloadRef"] = {"name": "job", "podGroup": "workers"}
    return body


@pytest.fixture(scope="module")
def gang_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("kss-gangs")
    env = {
        "KSS_SCHEDULER_ENABLED": "true",
        "KSS_KUBE_VERSION": "1.35",  # v1.35's Workload (scheduling.k8s.io/v1alpha1, pods' spec.workloadRef)
        "KSS_FEATURE_GATES": "GenericWorkload=true,GangScheduling=true",
        "KSS_RUNTIME_CONFIG": "scheduling.k8s.io/v1alpha1=true",
    }
    srv = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}", env=env)
    yield srv
    srv.stop()


def post(server: Server, path: str, body: dict[str, Any]) -> None:
    response = httpx.post(f"{server.url}{path}", json=body, timeout=10)
    assert response.status_code == 201, response.text


def create_pod(server: Server, body: dict[str, Any]) -> None:
    post(server, "/api/v1/namespaces/default/pods", body)


def row_state(page: Any, gang: str) -> Any:
    return page.locator(f'tr[data-gang="default/{gang}"] [data-testid="gang-state"]')


def test_a_gang_waits_in_permit_live_then_binds_all_at_once(page: Any, gang_server: Server) -> None:
    srv = gang_server
    page.goto(f"{srv.url}/ui/groups")
    page.get_by_text("No gang yet").wait_for()
    assert "kind: PodGroup" in page.locator('[data-testid="groups-howto"]').inner_text()
    shot(page, "groups-empty")

    response = httpx.put(
        f"{srv.url}/simulator/v1/schedulerconfiguration",
        content=COSCHEDULING,
        headers={"Content-Type": "application/yaml"},
        timeout=10,
    )
    assert response.status_code == 200, response.text
    page.evaluate("window.__sameDocument = true")
    page.wait_for_function("document.getElementById('live').classList.contains('on')")
    for name in ("gang-1", "gang-2"):
        post(srv, "/api/v1/nodes", node(name, "gang"))
    post(srv, "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups", pod_group("train", 3, 120))
    post(srv, "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups", pod_group("short", 4, 60))
    post(
        srv,
        "/apis/scheduling.k8s.io/v1alpha1/namespaces/default/workloads",
        {
            "apiVersion": "scheduling.k8s.io/v1alpha1",
            "kind": "Workload",
            "metadata": {"name": "job", "namespace": "default"},
            "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 3}}}]},
        },
    )
    # The last member of "train" needs a node of a pool that does not exist yet: the other two wait for it.
    create_pod(srv, member("train-2", "train", pool="late"))
    create_pod(srv, member("train-0", "train"))
    create_pod(srv, member("train-1", "train"))
    for name in ("short-0", "short-1"):
        create_pod(srv, member(name, "short"))
    for name in ("job-0", "job-1"):
        create_pod(srv, workload_pod(name))

    # Live, without a reload: the gang waits for its quorum, its time left ticking down in the browser.
    train = row_state(page, "train")
    train.wait_for()
    page.wait_for_function(
        "(document.querySelector('tr[data-gang=\"default/train\"] [data-testid=gang-state]') || {}).innerText"
        "?.includes('waiting for quorum 2 of 3 reserved')",
        timeout=30_000,
    )
    ticking = 'tr[data-gang="default/train"] .ticking'
    first = page.locator(ticking).inner_text()
    assert re.fullmatch(r"\d+ (s|min \d+ s|min)", first), first
    page.wait_for_function(f"document.querySelector('{ticking}').innerText !== {first!r}")
    assert row_state(page, "short").inner_text() == "too few members 2 of 4 exist"
    assert row_state(page, "job / workers").get_attribute("title") == "too few members: 2 of 3 exist"
    cells = page.locator('tr[data-gang="default/train"] td.num').all_inner_texts()
    assert cells == ["3", "3", "0", "2", "1"]  # quorum, members, bound, waiting, pending
    assert page.evaluate("window.__sameDocument") is True
    shot(page, "groups")

    # The gang's own page: who waits where, held by which plugin, and why the last member does not fit.
    page.get_by_role("link", name="train", exact=True).click()
    page.wait_for_url(re.compile(r"/ui/groups/default/PodGroup/train$"))
    waiting_rows = page.locator('tr[data-state="waiting"]')
    waiting_rows.first.wait_for()
    assert waiting_rows.count() == 2
    held = waiting_rows.first.locator("td.member-state").inner_text()
    assert "Waiting (Permit)" in held and "held in Permit on gang-" in held and "by Coscheduling" in held
    pending = page.locator('tr[data-pod="default/train-2"] td.member-state').inner_text()
    assert "didn't match Pod's node affinity/selector" in pending
    rejections = page.locator('[data-testid="rejections"]')
    assert "didn't match Pod's node affinity/selector" in rejections.inner_text()
    shot(page, "group-waiting")

    # The pods pages say the same.
    waiting = httpx.get(f"{srv.url}/simulator/v1/waitingpods", timeout=10).json()["items"]
    assert sorted(w["pod"] for w in waiting) == ["default/train-0", "default/train-1"]
    assert all(w["pendingPlugins"] == ["Coscheduling"] and w["remainingSeconds"] > 0 for w in waiting)
    page.goto(f"{srv.url}/ui/pods?state=waiting")
    assert page.locator('[data-testid="waiting-badge"]').count() == 2
    assert "held in Permit" in page.locator('tr[data-pod="default/train-0"] td.reason').inner_text()
    shot(page, "pods-waiting")
    page.goto(f"{srv.url}/ui/pods/default/train-0")
    permit = page.locator('[data-testid="permit-wait"]')
    permit.wait_for()
    assert "held in Permit on gang-" in permit.inner_text() and "by Coscheduling" in permit.inner_text()
    assert "Waiting (Permit)" in page.locator('[data-testid="pod-state"]').inner_text()
    assert "held in Permit" in page.locator('[data-testid="attempt-in-progress"]').inner_text()
    shot(page, "pod-waiting")
    node_name = next(w["node"] for w in waiting if w["pod"] == "default/train-0")
    page.goto(f"{srv.url}/ui/nodes/{node_name}")
    assert "default/train-0" in page.locator('[data-testid="held-in-permit"]').inner_text()
    shot(page, "node-held-in-permit")

    # A node the last member fits on: the quorum is reached and all three are bound, live.
    page.goto(f"{srv.url}/ui/groups/default/PodGroup/train")
    page.evaluate("window.__sameDocument = true")
    page.wait_for_function("document.getElementById('live').classList.contains('on')")
    post(srv, "/api/v1/nodes", node("late-1", "late"))
    page.wait_for_function("document.querySelectorAll('tr[data-state=\"bound\"]').length === 3", timeout=30_000)
    assert page.locator('[data-testid="gang-state"]').first.inner_text() == "bound 3 of 3 on nodes"
    assert page.evaluate("window.__sameDocument") is True
    assert "allowed" in page.locator('tr[data-pod="default/train-0"] td.last-attempt').inner_text()
    shot(page, "group-bound")


def test_a_gang_that_times_out_says_so(page: Any, gang_server: Server) -> None:
    srv = gang_server
    post(srv, "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups", pod_group("quick", 2, 3))
    create_pod(srv, member("quick-1", "quick", pool="never"))
    create_pod(srv, member("quick-0", "quick"))
    page.goto(f"{srv.url}/ui/groups/default/PodGroup/quick")
    rejections = page.locator('[data-testid="rejections"]')
    page.wait_for_function(
        "(document.querySelector('[data-testid=rejections]') || {}).innerText"
        "?.includes('rejected due to timeout after waiting 3s at plugin Coscheduling')",
        timeout=30_000,
    )
    assert "0/1 nodes are available: 1 rejected due to timeout" in rejections.inner_text()
    shot(page, "group-timeout")
    page.goto(f"{srv.url}/ui/groups")
    page.locator('tr[data-gang="default/quick"]').wait_for()
    shot(page, "groups-after")


def test_a_pod_group_created_from_the_gangs_page_opens_on_its_own_page(page: Any, gang_server: Server) -> None:
    page.goto(f"{gang_server.url}/ui/groups")
    page.get_by_role("link", name="New PodGroup").click()
    page.wait_for_function("document.querySelector('#yaml-text').value.includes('kind: PodGroup')")
    page.get_by_role("button", name="Create").click()
    page.wait_for_url(re.compile(r"/ui/groups/default/PodGroup/training$"))
    state = page.locator('[data-testid="gang-state"]')
    assert state.inner_text() == "no members yet quorum 4"
    assert "scheduling.x-k8s.io/pod-group: training" in page.locator("#group-body").inner_text()
    shot(page, "group-new")

"""The Runs and Compare pages in real headless Chromium against a real ``kss serve``, with runs recorded into its
database by real replays (``Replay`` + ``Metrics`` + ``RunRecorder``, as ``kss replay --record-db`` does): the list,
a run's charts drawn by ``static/replay-charts.js``, its pods filtered by outcome, a pod's attempts in the run, and
two runs under different scoring compared (screenshots in ``test-artifacts/screenshots/``)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from kss_sim.kube.versions import kube_version
from kss_sim.replay.engine import Replay
from kss_sim.replay.metrics import Metrics, summarize
from kss_sim.replay.model import PodRecord
from kss_sim.replay.recording import RunRecorder
from kss_sim.replay.workload import parse_workload
from tests.conftest import KubectlRunner, Server, start_server
from tests.web.chromium import MARKS, fresh_page, shot

pytestmark = MARKS


def _node(name: str, cpu: int, gpus: int) -> str:
    gpu = f", nvidia.com/gpu: '{gpus}'" if gpus else ""
    return f"""
  - apiVersion: v1
    kind: Node
    metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
    status:
      allocatable: {{cpu: '{cpu}', memory: 32Gi, pods: '110'{gpu}}}
      capacity: {{cpu: '{cpu}', memory: 32Gi, pods: '110'{gpu}}}"""


def _pod(i: int, at: int, cpu: str, gpus: int, run_for: str) -> str:
    gpu = f", nvidia.com/gpu: '{gpus}'" if gpus else ""
    return f"""
  - at: {at}
    runFor: {run_for}
    create:
      apiVersion: v1
      kind: Pod
      metadata: {{name: job-{i:02d}, namespace: team}}
      spec:
        containers:
        - name: main
          image: busybox
          resources: {{requests: {{cpu: '{cpu}', memory: 1Gi{gpu}}}, limits: {{cpu: '{cpu}', memory: 1Gi{gpu}}}}}"""


# Three nodes (two with two GPUs each); pods arriving every 10 minutes for 3 hours, each running 2-4 hours; a pod too
# big for any node (never scheduled); pods wanting two GPUs every 30 minutes, so some wait for others to finish.
WORKLOAD = (
    """
apiVersion: kss.sigs.k8s.io/v1alpha1
kind: TimedWorkload
metadata: {name: small-gpu}
spec:
  start:"""
    + _node("gpu-a", 8, 2)
    + _node("gpu-b", 8, 2)
    + _node("cpu-c", 16, 0)
    + """
  events:"""
    + "".join(_pod(i, 600 * i, "1500m", 2 if i % 3 == 0 else 0, f"{2 + i % 3}h") for i in range(18))
    + _pod(90, 1800, "64", 0, "1h")
    + "\n"
)

# Pack pods onto the fullest nodes instead of spreading them: other nodes for the same pods.
PACKING: dict[str, Any] = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "pluginConfig": [
                {
                    "name": "NodeResourcesFit",
                    "args": {
                        "scoringStrategy": {
                            "type": "MostAllocated",
                            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
                        }
                    },
                }
            ],
        }
    ],
}


def pod_rows(pods: list[PodRecord]) -> list[dict[str, Any]]:
    """pods.csv's rows (docs/replay.md) from the run's records."""
    return [
        {
            "pod": p.key,
            "uid": p.uid,
            "owner": p.owner,
            "priority": p.priority,
            "arrival": p.arrival,
            "firstAttempt": p.first_attempt,
            "bound": p.bound_at,
            "wait": p.wait,
            "node": p.node or "",
            "attempts": p.attempts,
            "preemptions": p.preemptions,
            "finished": p.finished_at,
            "outcome": p.outcome,
            "lastMessage": p.last_message,
        }
        for p in pods
    ]


def record(db: str, name: str, config: dict[str, Any] | None, group: str) -> tuple[int, list[PodRecord]]:
    """One replay of ``WORKLOAD`` recorded into ``db``, every attempt with its verdicts; the run's id and pods."""
    workload = parse_workload(WORKLOAD)
    metrics = Metrics(600, workload=workload)
    with RunRecorder(db, name=name, workload=workload.name, seed=0, config=config, compare_group=group) as recorder:
        observers = [metrics, recorder]
        result = Replay(workload, scheduler_config=config, sample_interval=600, observers=observers, record=True).run()
        recorder.finish(summarize(result, metrics), metrics.table(), pod_rows(result.pods))
        assert recorder.run_id is not None and not recorder.errors
        return recorder.run_id, result.pods


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, dict[str, Any]]]:
    """A ``kss serve`` (one live pod with the same name as a run's) and two runs recorded into its database while
    it runs: spreading (the default profile) and packing."""
    workdir = tmp_path_factory.mktemp("kss-runs-pages")
    db = workdir / "kss.db"
    srv = start_server(workdir, f"sqlite:///{db}", env={"KSS_SCHEDULER_ENABLED": "true"})
    kubectl = KubectlRunner(srv.kubeconfig)
    kubectl("create", "namespace", "team")
    kubectl("run", "job-00", "-n", "team", "--image=busybox")  # no node: pending, one failed attempt live
    spread, spread_pods = record(str(db), "spread", None, "cmp-1")
    pack, pack_pods = record(str(db), "pack", PACKING, "cmp-1")
    runs = {"spread": spread, "pack": pack, "spread_pods": spread_pods, "pack_pods": pack_pods}
    yield srv, runs
    srv.stop()


def test_runs_list_shows_both_runs_with_their_figures(served: tuple[Server, dict[str, Any]], chromium: Any) -> None:
    srv, runs = served
    with fresh_page(chromium) as page:
        page.goto(f"{srv.url}/ui/cluster")
        page.click("nav.nav >> text=Runs")
        page.wait_for_url("**/ui/runs")
        rows = page.locator("[data-testid=runs] tbody tr")
        assert rows.count() == 2
        spread = page.locator(f"tr[data-run='{runs['spread']}']")
        cells = spread.locator("td").all_inner_texts()
        # pods, scheduled, never scheduled: 19 pods, the 64-core one never placed
        assert cells[5:8] == ["19", "18", "1"]
        assert cells[9].endswith("%") and "done" in cells[10]
        shot(page, "runs-list")
        page.check(f"input[name=runs][value='{runs['spread']}']")
        page.check(f"input[name=runs][value='{runs['pack']}']")
        page.click("[data-testid=compare-selected]")
        page.wait_for_selector("[data-testid=compare-summary]")
        assert f"runs={runs['spread']}" in page.url and f"runs={runs['pack']}" in page.url


def test_run_page_draws_the_charts_and_filters_pods(served: tuple[Server, dict[str, Any]], chromium: Any) -> None:
    srv, runs = served
    run_id = runs["spread"]
    with fresh_page(chromium) as page:
        page.goto(f"{srv.url}/ui/runs/{run_id}")
        charts = page.locator("[data-testid=run-charts] figure.kss-chart")
        charts.first.wait_for()
        ids = charts.evaluate_all("els => els.map(e => e.dataset.chart)")
        assert "waits" in ids and len(ids) >= 4, ids
        # Each chart's canvas has pixels drawn on it (not a blank area).
        painted = page.evaluate(
            """() => [...document.querySelectorAll('[data-testid=run-charts] canvas')].map(c => {
                 const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                 let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; })"""
        )
        assert painted and all(n > 500 for n in painted), painted
        summary = page.locator("[data-testid=run-summary]").inner_text()
        assert "Never scheduled\n1" in summary
        assert f"Kubernetes version\n{kube_version().name}" in summary  # the default version the run was at
        assert page.locator("[data-testid=run-pods] tbody tr").count() == 19
        shot(page, "run-page")
        page.select_option("[data-testid=outcome-filter]", "pending")
        page.wait_for_function("document.querySelectorAll('[data-testid=run-pods] tbody tr').length == 1")
        assert page.locator("[data-testid=run-pods] tbody tr").get_attribute("data-pod") == "team/job-90"
        assert "outcome=pending" in page.url
        # The never-scheduled pod's attempts in this run, with kube-scheduler's message.
        page.click("[data-testid=run-pods] tbody tr >> a")
        page.wait_for_selector("[data-testid=attempt]")
        assert page.locator("[data-testid=run-pod-outcome]").inner_text() == "pending"
        message = page.locator("[data-testid=attempt-message]").inner_text()
        assert "0/3 nodes are available" in message and "Insufficient cpu" in message
        assert page.locator("[data-testid=filter-matrix] tbody tr").count() == 3
        shot(page, "run-pod")


def test_a_pods_attempt_in_a_run_is_not_the_live_pods(served: tuple[Server, dict[str, Any]], chromium: Any) -> None:
    srv, runs = served
    run_id = runs["spread"]
    spread = {p.key: p for p in runs["spread_pods"]}
    job = spread["team/job-00"]
    with fresh_page(chromium) as page:
        page.goto(f"{srv.url}/ui/runs/{run_id}/pods/team/job-00")
        page.wait_for_selector("[data-testid=attempt]")
        assert page.locator("[data-testid=attempt-bound-to]").inner_text().startswith(str(job.node))
        assert page.locator("[data-testid=attempts] li").count() == job.attempts
        # The filter matrix's node names are the run's nodes, not links to the live cluster's node pages.
        assert page.locator("[data-testid=filter-matrix] td.node a[href]").count() == 0
    # The live pod of the same name has its own attempts only (failed: the live cluster has no node).
    live = httpx.get(f"{srv.url}/simulator/v1/namespaces/team/pods/job-00/results").json()["attempts"]
    assert live and {(a["result"], a["message"]) for a in live} == {
        ("unschedulable", "no nodes available to schedule pods")
    }
    page_text = httpx.get(f"{srv.url}/ui/pods/team/job-00").text
    assert "no nodes available" in page_text and str(job.node) not in page_text
    assert httpx.get(f"{srv.url}/ui/runs/{run_id}/pods/team/nobody").status_code == 404
    assert httpx.get(f"{srv.url}/ui/runs/9999").status_code == 404


def test_compare_overlays_runs_and_links_each_sides_attempts(
    served: tuple[Server, dict[str, Any]], chromium: Any
) -> None:
    srv, runs = served
    spread = {p.key: p for p in runs["spread_pods"]}
    pack = {p.key: p for p in runs["pack_pods"]}
    differ = sorted(k for k in spread if (spread[k].node, spread[k].outcome) != (pack[k].node, pack[k].outcome))
    assert differ, "packing and spreading placed every pod alike: the workload does not tell them apart"
    with fresh_page(chromium) as page:
        page.goto(f"{srv.url}/ui/compare?group=cmp-1")
        page.locator("[data-testid=compare-charts] figure.kss-chart").first.wait_for()
        # Overlaid: the allocation chart has a series per run for the same resource.
        labels = page.locator("[data-testid=compare-charts] figure.kss-chart").first.locator(".u-legend .u-label")
        texts = labels.all_inner_texts()
        assert any("spread" in t for t in texts) and any("pack" in t for t in texts), texts
        header = page.locator("[data-testid=compare-summary] thead").inner_text()
        assert header.index("spread") < header.index("pack")
        rows = page.locator("[data-testid=compare-pods] tbody tr")
        assert rows.evaluate_all("els => els.map(e => e.dataset.pod)") == differ[:50]
        shot(page, "compare")
        first = differ[0]
        side = page.locator(f"tr[data-pod='{first}'] a[data-side='{runs['pack']}']")
        assert side.inner_text() == (pack[first].node or "not bound")
        side.click()
        page.wait_for_selector("[data-testid=attempt]")
        assert f"/ui/runs/{runs['pack']}/pods/{first}" in page.url
        if pack[first].node:
            assert page.locator("[data-testid=attempt-bound-to]").inner_text().startswith(pack[first].node)
    # Fewer than two runs: the page says so.
    alone = httpx.get(f"{srv.url}/ui/compare?runs={runs['spread']}")
    assert alone.status_code == 200 and "compare-needs-two" in alone.text
    assert httpx.get(f"{srv.url}/ui/compare?runs={runs['spread']},4242").status_code == 404

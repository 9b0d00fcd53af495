"""UI render benchmark: the cluster, pods and pod pages at 5,000 nodes / 50,000 pods, through the ASGI app.

Usage: ``.venv/bin/python bench/ui_render.py [--nodes 5000] [--pods 50000] [--pending 5000] [--runs 5]``.
Objects go straight into a memory-only ``ClusterStore`` (no HTTP for loading); a scheduler service takes them in
and schedules only two probe pods of its own profile (``record_attempts``), whose 5,000-node attempts it records
through the application's results service as ``kss serve`` does. Each page is then requested through
``httpx.ASGITransport`` (routing, view model, Jinja2 rendering; no network) with node allocation from the
scheduler cache and, again, from summing the pods in the store (the scheduler off); then the probe pods' pages
(the pod page with its latest attempt, the matrices' fragments, an earlier attempt, the editor, the API and the
results API it links to). Prints the median and worst time of each request.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from kss_sim.cluster.storage.store import ClusterStore  # noqa: E402
from kss_sim.config import Settings  # noqa: E402
from kss_sim.engine_host.scheduler_thread import SchedulerService  # noqa: E402
from kss_sim.engine_host.view import EngineView  # noqa: E402
from kss_sim.main import create_app  # noqa: E402
from kss_sim.results.attempts import ResultsService  # noqa: E402
from kss_sim.scheduler.kube_scheduler_configuration import parse_config  # noqa: E402

ZONES = 10
REASON = (
    "0/{n} nodes are available: {n} Insufficient cpu. "
    "preemption: 0/{n} nodes are available: {n} No preemption victims found for incoming pod."
)


def build_store(nodes: int, pods: int, pending: int) -> ClusterStore:
    """``nodes`` nodes in ``ZONES`` zones; ``pods - pending`` pods bound round-robin, ``pending`` unschedulable."""
    store = ClusterStore.open(None, watch_window=1000)
    for i in range(nodes):
        name = f"node-{i:05d}"
        store.create(
            "Node",
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        "kubernetes.io/hostname": name,
                        "topology.kubernetes.io/zone": f"zone-{i % ZONES}",
                        "node.kubernetes.io/instance-type": "m5.4xlarge" if i % 3 else "p3.8xlarge",
                    },
                },
                "spec": {"taints": [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]} if i % 3 == 0 else {},
                "status": {
                    "capacity": {
                        "cpu": "16",
                        "memory": "64Gi",
                        "pods": "110",
                        **({"nvidia.com/gpu": "4"} if i % 3 == 0 else {}),
                    },
                },
            },
        )
    for j in range(pods):
        bound = j < pods - pending
        spec: dict[str, Any] = {
            "containers": [
                {"name": "app", "image": "nginx", "resources": {"requests": {"cpu": "250m", "memory": "512Mi"}}}
            ]
        }
        if bound:
            spec["nodeName"] = f"node-{j % nodes:05d}"
        store.create(
            "Pod",
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"pod-{j:06d}", "namespace": f"team-{j % 20}", "labels": {"app": f"app-{j % 50}"}},
                "spec": spec,
            },
        )
        if not bound:
            status = {
                "phase": "Pending",
                "conditions": [
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": REASON.format(n=nodes),
                    }
                ],
            }
            store.update_pod_status(f"team-{j % 20}", f"pod-{j:06d}", status)
    return store


PROBE_SCHEDULER = "probe-scheduler"
PROBE_NAMESPACE = "probes"
FITS, TOO_BIG = "probe-fits", "probe-too-big"


def _probe_pod(name: str, cpu: str, *, tolerate: bool) -> dict[str, Any]:
    """A pod for the probe profile; ``tolerate``: of the GPU nodes' taint (a fitting pod is then scored on every
    node; an untolerated taint rejects a third of the nodes before NodeResourcesFit sees them)."""
    tolerations = [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}] if tolerate else []
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": PROBE_NAMESPACE},
        "spec": {
            "schedulerName": PROBE_SCHEDULER,
            "tolerations": tolerations,
            "containers": [{"name": "app", "image": "nginx", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}],
        },
    }


def _await_attempts(results: ResultsService, name: str, count: int, timeout: float = 600) -> None:
    """Wait until probe pod ``name`` has ``count`` recorded attempts (the scheduler takes changes in its own time)."""
    deadline = time.monotonic() + timeout
    while len(results.list_attempts(PROBE_NAMESPACE, name)) < count:
        if time.monotonic() > deadline:
            raise SystemExit(f"{PROBE_NAMESPACE}/{name}: no attempt {count} recorded in {timeout:.0f} s")
        time.sleep(0.05)
        results.flush()


def record_attempts(store: ClusterStore, results: ResultsService, *, retries: int = 3) -> SchedulerService:
    """Attempts at full size, scheduled and recorded as ``kss serve`` does: a scheduler service over ``store``
    writing through ``results`` (the annotations, the Events, the attempts' rows), with one profile,
    ``probe-scheduler``, scoring every feasible node (``percentageOfNodesToScore: 100``). Only the probe pods
    are its own, so the pending pods of ``build_store`` stay pending. ``probes/probe-fits`` is placed after every
    node was filtered and scored; ``probes/probe-too-big`` (64 cores, no toleration) is rejected by every node
    (a third by TaintToleration, the rest by NodeResourcesFit), ``retries``
    times (deleted and created again, as its attempt numbers continue). Returns the service, started."""
    config = parse_config({"percentageOfNodesToScore": 100, "profiles": [{"schedulerName": PROBE_SCHEDULER}]})
    scheduler = SchedulerService(store, results=results, config=config, seed=1, per_node_annotations_max_nodes=50)
    scheduler.start()
    if not scheduler.wait_idle(timeout=300):
        raise SystemExit("the scheduler did not take the cluster in")
    store.create("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": PROBE_NAMESPACE}})
    store.create("Pod", _probe_pod(FITS, "250m", tolerate=True))
    _await_attempts(results, FITS, 1)
    for attempt in range(1, retries + 1):
        if attempt > 1:
            store.delete("Pod", PROBE_NAMESPACE, TOO_BIG)
        store.create("Pod", _probe_pod(TOO_BIG, "64", tolerate=False))
        _await_attempts(results, TOO_BIG, attempt)
    results.flush()
    return scheduler


async def timed(label: str, runs: int, request: Callable[[], Awaitable[httpx.Response]]) -> None:
    """Request ``runs`` times; print median and worst (ms) and the response size."""
    times = []
    size = 0
    for _ in range(runs):
        start = time.perf_counter()
        response = await request()
        times.append((time.perf_counter() - start) * 1000)
        if response.status_code != 200:
            raise SystemExit(f"{label}: HTTP {response.status_code}")
        size = len(response.content)
    print(
        f"  {label:<52} median {statistics.median(times):7.1f} ms   worst {max(times):7.1f} ms   {size / 1024:6.0f} KiB"
    )


ATTEMPT_PAGES: tuple[tuple[str, str | None, dict[str, Any], str], ...] = (
    (f"/ui/pods/{PROBE_NAMESPACE}/{TOO_BIG}", None, {}, "pod page, latest attempt: every node rejected"),
    (f"/ui/pods/{PROBE_NAMESPACE}/{FITS}", None, {}, "pod page, placed: every node filtered and scored"),
    (f"/ui/pods/{PROBE_NAMESPACE}/{TOO_BIG}", "matrices", {"attempt": 1, "fpage": 40}, "matrices, a later page"),
    (f"/ui/pods/{PROBE_NAMESPACE}/{TOO_BIG}", "matrices", {"attempt": 1, "fnode": "node-049"}, "matrices, node search"),
    (f"/ui/pods/{PROBE_NAMESPACE}/{FITS}", "matrices", {"fsort": "name", "spage": 20}, "matrices by name, score p. 20"),
    (f"/ui/pods/{PROBE_NAMESPACE}/{TOO_BIG}", "pod-live", {"attempt": 2}, "pod-live: an earlier attempt"),
    (f"/ui/edit/Pod/{FITS}", None, {"namespace": PROBE_NAMESPACE}, "editor (the annotations in full)"),
    (f"/api/v1/namespaces/{PROBE_NAMESPACE}/pods/{FITS}", None, {}, "the pod in the API"),
    (f"/simulator/v1/namespaces/{PROBE_NAMESPACE}/pods/{TOO_BIG}/results", None, {}, "results API: attempts list"),
    (f"/simulator/v1/namespaces/{PROBE_NAMESPACE}/pods/{TOO_BIG}/results/3", None, {}, "results API: one attempt"),
)


async def attempt_pages(client: httpx.AsyncClient, runs: int) -> None:
    """The probe pods' pages: the pod page with its latest attempt, its htmx fragments, the pages it links to."""
    print("a pod's attempts (5,000-node attempts recorded by the scheduler):")
    for path, target, params, label in ATTEMPT_PAGES:
        headers = {"HX-Request": "true", "HX-Target": target} if target else {}

        def request(path: str = path, params: dict[str, Any] = params, headers: dict[str, str] = headers) -> Any:
            return client.get(path, params=params, headers=headers)

        await timed(f"{label}{' (fragment)' if target else ''}", runs, request)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pods", type=int, default=50000)
    parser.add_argument("--pending", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    start = time.perf_counter()
    store = build_store(args.nodes, args.pods, args.pending)
    print(
        f"store: {args.nodes:,} nodes, {args.pods:,} pods ({args.pending:,} pending) "
        f"built in {time.perf_counter() - start:.1f} s"
    )

    with tempfile.TemporaryDirectory() as tmp:
        # The lifespan's own scheduler runs on its (empty) database store; the pages read the swapped-in ones.
        settings = Settings(database_url=f"sqlite:///{Path(tmp) / 'kss.db'}", scheduler_enabled=True)
        app = create_app(settings)
        async with app.router.lifespan_context(app):
            app.state.store = store
            start = time.perf_counter()
            probes = record_attempts(store, app.state.results)
            print(f"scheduler started and probe pods recorded in {time.perf_counter() - start:.1f} s")
            app.state.scheduler = probes
            app.state.scheduler_view = EngineView(probes)
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://kss.bench") as client:
                fragment = {"HX-Request": "true"}

                def get(path: str, **params: Any) -> Callable[[], Awaitable[httpx.Response]]:
                    return lambda: client.get(path, params=params)

                def frag(path: str, target: str, **params: Any) -> Callable[[], Awaitable[httpx.Response]]:
                    return lambda: client.get(path, params=params, headers={**fragment, "HX-Target": target})

                start = time.perf_counter()
                await client.get("/ui/cluster")
                print(f"first request (builds the pod index): {(time.perf_counter() - start) * 1000:.0f} ms")
                for source, enabled in (("scheduler cache", True), ("pods in the store", False)):
                    app.state.settings = settings.model_copy(update={"scheduler_enabled": enabled})
                    if not enabled:
                        start = time.perf_counter()
                        await client.get("/ui/cluster")
                        print(
                            "first fallback request (sums every pod's requests once): "
                            f"{(time.perf_counter() - start) * 1000:.0f} ms"
                        )
                    print(f"cluster page, allocation from the {source}:")
                    await timed("/ui/cluster (first page, whole page)", args.runs, get("/ui/cluster"))
                    await timed(
                        "/ui/cluster?q=zone-7 (search, fragment)",
                        args.runs,
                        frag("/ui/cluster", "cluster-body", q="zone-7"),
                    )
                    await timed(
                        "/ui/cluster?q=node-04 (search by name)",
                        args.runs,
                        frag("/ui/cluster", "cluster-body", q="node-04"),
                    )
                    await timed(
                        "/ui/cluster?page=40 (a later page)", args.runs, frag("/ui/cluster", "cluster-body", page=40)
                    )
                    await timed(
                        "/ui/cluster?sort=cpu (busiest first)",
                        args.runs,
                        frag("/ui/cluster", "cluster-body", sort="cpu"),
                    )
                print("pods page:")
                await timed("/ui/pods (first page, whole page)", args.runs, get("/ui/pods"))
                await timed(
                    "/ui/pods?q=app=app-7 (search by label)", args.runs, frag("/ui/pods", "pod-table", q="app=app-7")
                )
                await timed(
                    "/ui/pods?q=pod-0123 (search by name)", args.runs, frag("/ui/pods", "pod-table", q="pod-0123")
                )
                await timed("/ui/pods?page=400 (a later page)", args.runs, frag("/ui/pods", "pod-table", page=400))
                await timed(
                    "/ui/pods?state=pending (with reasons)", args.runs, frag("/ui/pods", "pod-table", state="pending")
                )
                await timed(
                    "/ui/pods?sort=node&desc=true", args.runs, frag("/ui/pods", "pod-table", sort="node", desc="true")
                )
                await timed("/ui/nodes/node-00042", args.runs, get("/ui/nodes/node-00042"))
                await attempt_pages(client, args.runs)

                async def after_change() -> httpx.Response:
                    # One pod changes between two requests: the index re-reads that pod only.
                    store.patch("Pod", "team-1", "pod-000001", {"metadata": {"labels": {"touched": str(time.time())}}})
                    return await client.get("/ui/pods", headers={**fragment, "HX-Target": "pod-table"})

                await timed("/ui/pods after one pod changed (live refresh)", args.runs, after_change)


if __name__ == "__main__":
    asyncio.run(main())

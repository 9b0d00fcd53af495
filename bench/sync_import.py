"""Time the one-shot import (``kss import --kubeconfig``) of the 1,200-node Alibaba GPU workload, or of a
generated production-like cluster (``--synthetic NODES PODS``).

A second ``kss serve`` plays the production cluster: the workload is loaded into it with the official client
(its own scheduler off, or on with ``--source-scheduler`` so pods arrive bound as existing load), then
``kss import`` copies it into a fresh simulator. Prints the load time, the import time (and rate) and what
arrived.

``--synthetic NODES PODS`` generates the cluster instead (``bench/synthetic_cluster.py``): nodes as a cloud
provider's kubelet registers them (~5 kB each), pods as Deployments make them (~3 kB each), nearly all bound and
Running, a few hundred pending. It is loaded into the source in one request per few thousand objects through the
simulator's bulk create (``POST /simulator/v1/import?mode=create``, each object with its status; the source runs
no scheduler, controllers or kubelet,
so it keeps what it is given, as a production API server shows it). Then the import is timed, the counts are
checked against the source, and the figures include the target's RSS and how long its scheduler took to place the
pending pods after the import.

``--baseline DIR`` runs the simulator and ``kss import`` from another tree (``git archive <commit> | tar -x -C
DIR``; put first on ``PYTHONPATH``) while the source keeps this tree's code, so old and new code are compared on
the same generated cluster, loaded as fast.

Usage: ``.venv/bin/python bench/sync_import.py [--nodes FILE] [--pods FILE] [--synthetic NODES PODS]
[--pending N] [--page-size N] [--qps Q] [--burst B] [--workers W] [--source-scheduler] [--baseline DIR]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import yaml

REPO = Path(__file__).resolve().parent.parent
for _path in (REPO, REPO / "bench"):
    if str(_path) not in sys.path:
        sys.path.insert(0, str(_path))

import synthetic_cluster  # noqa: E402
from _serve import Profiler  # noqa: E402

from syncer.kinds import BY_NAME  # noqa: E402
from syncer.kube import AlreadyExists, KubeTarget, api_client  # noqa: E402

WORKLOADS = REPO.parent / "shared" / "workloads" / "alibaba-gpu-trace"
KSS = Path(sys.executable).with_name("kss")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Served:
    """A ``kss serve`` subprocess."""

    url: str
    process: subprocess.Popen[bytes]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()


def serve(workdir: Path, name: str, env: dict[str, str] | None = None) -> Served:
    """Start ``kss serve`` with its own port and SQLite file; wait until it answers."""
    port = _free_port()
    environ = {
        **os.environ,
        "KSS_DATABASE_URL": f"sqlite:///{workdir / f'{name}.db'}",
        "KSS_PORT": str(port),
        **(env or {}),
    }
    log = (workdir / f"{name}.log").open("wb")
    process = subprocess.Popen([str(KSS), "serve"], env=environ, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return Served(url, process)
        except httpx.HTTPError:
            time.sleep(0.1)
    process.kill()
    raise SystemExit(f"kss serve ({name}) did not start")


def load(url: str, files: list[Path], workers: int = 16) -> tuple[int, float]:
    """Create every object of the YAML files through the API (parallel within a file); (objects, seconds)."""
    target = KubeTarget(api_client(url=url))
    start = time.perf_counter()
    total = 0
    for path in files:
        docs = [d for d in yaml.load_all(path.read_text(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) if d]

        def create(doc: dict[str, Any]) -> None:
            with contextlib.suppress(AlreadyExists):  # a document repeated in the file
                target.create(BY_NAME[doc["kind"]], doc)

        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(create, docs))
        total += len(docs)
    return total, time.perf_counter() - start


def count(url: str, plural: str) -> tuple[int, int]:
    """(objects, of which bound pods) of a cluster-wide list."""
    items = httpx.get(f"{url}/api/v1/{plural}", timeout=120).json()["items"]
    return len(items), sum(1 for i in items if (i.get("spec") or {}).get("nodeName"))


@dataclass
class Figures:
    """What one run measured."""

    loaded: int
    load_seconds: float
    import_seconds: float
    import_output: str
    source_nodes: int
    source_pods: int
    target_nodes: int
    target_pods: int
    target_bound_at_import: int

    def lines(self) -> list[str]:
        rate = (self.source_nodes + self.source_pods) / self.import_seconds if self.import_seconds else 0.0
        return [
            f"source: {self.loaded} documents loaded in {self.load_seconds:.1f} s "
            f"({self.source_nodes} nodes, {self.source_pods} pods)",
            f"import: {self.import_seconds:.1f} s wall ({rate:,.0f} objects/s)",
            f"simulator: {self.target_nodes} nodes, {self.target_pods} pods "
            f"({self.target_bound_at_import} bound right after the import)",
        ]


def load_snapshot(url: str, cluster: Any, chunk: int = 5000) -> tuple[int, float]:
    """Create the generated cluster in the source through the simulator's bulk create (``POST
    /simulator/v1/import?mode=create``, each object with its status, ``chunk`` objects a request); (objects,
    seconds). Every object must be created."""
    start = time.perf_counter()
    objects: list[dict[str, Any]] = [{"kind": "Namespace", "apiVersion": "v1", **ns} for ns in cluster.namespaces]
    objects += [{"kind": "Node", "apiVersion": "v1", **n} for n in cluster.nodes]
    objects += [{"kind": "Pod", "apiVersion": "v1", **p} for p in cluster.pods]
    with httpx.Client(timeout=600) as http:
        for i in range(0, len(objects), chunk):
            answer = http.post(
                f"{url}/simulator/v1/import",
                params={"mode": "create"},
                content=orjson.dumps({"apiVersion": "v1", "kind": "List", "items": objects[i : i + chunk]}),
                headers={"Content-Type": "application/json"},
            )
            if answer.status_code != 200 or answer.json()["failed"]:
                raise SystemExit(f"loading the source failed ({answer.status_code}): {answer.text[:2000]}")
    return len(objects), time.perf_counter() - start


def rss_mb(pid: int) -> float:
    """Resident memory of a process now, in MB (``VmRSS``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def wait_placed(url: str, expected_bound: int, timeout: float = 600) -> float:
    """Seconds until ``expected_bound`` pods are bound in the simulator (or the timeout)."""
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        _, bound = count(url, "pods")
        if bound >= expected_bound:
            break
        time.sleep(0.5)
    return time.monotonic() - start


@dataclass
class SyntheticFigures:
    """What a ``--synthetic`` run measured."""

    nodes: int
    pods: int
    pending: int
    load_seconds: float
    import_seconds: float
    import_output: str
    source_nodes: int
    source_pods: int
    source_bound: int
    target_nodes: int
    target_pods: int
    target_bound_at_import: int
    placed_seconds: float
    target_bound_after: int
    target_rss_mb: float
    target_peak_rss_mb: float
    client_cpu_seconds: float
    target_cpu_seconds: float
    source_cpu_seconds: float

    def lines(self) -> list[str]:
        objects = self.source_nodes + self.source_pods
        rate = objects / self.import_seconds if self.import_seconds else 0.0
        same = self.target_nodes == self.source_nodes and self.target_pods == self.source_pods
        return [
            f"source: {self.source_nodes} nodes, {self.source_pods} pods ({self.source_bound} bound) loaded in "
            f"{self.load_seconds:.1f} s",
            f"import: {self.import_seconds:.1f} s wall ({rate:,.0f} objects/s), client CPU "
            f"{self.client_cpu_seconds:.1f} s, simulator CPU {self.target_cpu_seconds:.1f} s, source CPU "
            f"{self.source_cpu_seconds:.1f} s (production's, on this machine's two cores too)",
            f"simulator: {self.target_nodes} nodes, {self.target_pods} pods "
            f"({'the same counts' if same else 'COUNTS DIFFER FROM THE SOURCE'}); "
            f"{self.target_bound_at_import} bound right after the import",
            f"pending placed: {self.target_bound_after}/{self.source_pods} bound "
            f"{self.placed_seconds:.1f} s after the import",
            f"simulator RSS: {self.target_rss_mb:.0f} MB (peak {self.target_peak_rss_mb:.0f} MB)",
        ]


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system) of a process so far, its ended threads included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    """Peak resident memory of a process, in MB (``VmHWM``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def run_synthetic(
    workdir: Path,
    nodes: int,
    pods: int,
    *,
    pending: int = 300,
    page_size: int = 500,
    qps: float = 20,
    burst: int = 50,
    workers: int = 8,
    progress: bool = False,
    extra: list[str] | None = None,
    py_spy: Path | None = None,
    images: bool = True,
    baseline: Path | None = None,
) -> SyntheticFigures:
    """Generate the cluster, load the source, time the import into a fresh simulator (scheduler on), count."""
    cluster = synthetic_cluster.generate(nodes, pods, pending=pending, images=images)
    # The source stands in for production: only its API is used, its durability is not measured. Its snapshot
    # import waits for a commit per write; synchronous=NORMAL (no fsync per commit in WAL mode) loads faster.
    quiet = {
        "KSS_SCHEDULER_ENABLED": "false",
        "KSS_CONTROLLERS": "false",
        "KSS_KUBELET": "false",
        "KSS_SQLITE_SYNCHRONOUS": "NORMAL",
    }
    # The code under test: this tree's, or the baseline's first on the path of the simulator and of kss import.
    code = {"PYTHONPATH": os.pathsep.join([str(baseline), os.environ.get("PYTHONPATH", "")])} if baseline else {}
    source = serve(workdir, "source", quiet)
    try:
        target = serve(workdir, "simulator", code)
    except BaseException:
        source.stop()
        raise
    try:
        _, load_seconds = load_snapshot(source.url, cluster)
        del cluster
        config = workdir / "source.kubeconfig"
        config.write_text(subprocess.check_output([str(KSS), "kubeconfig", "--server", source.url], text=True))
        command = [str(KSS), "import", "--kubeconfig", str(config), "--target-url", target.url]
        command += ["--page-size", str(page_size), "--qps", str(qps), "--burst", str(burst)]
        command += ["--workers", str(workers)] + ([] if progress else ["--no-progress"]) + (extra or [])
        profiler = Profiler(target.process.pid, py_spy) if py_spy else None
        target_cpu_before = process_cpu(target.process.pid)
        source_cpu_before = process_cpu(source.process.pid)
        usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(
            command,
            stderr=None if progress else subprocess.PIPE,
            text=True,
            timeout=3600,
            env={**os.environ, **code},
        )
        import_seconds = time.perf_counter() - start
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        target_cpu = process_cpu(target.process.pid) - target_cpu_before
        source_cpu = process_cpu(source.process.pid) - source_cpu_before
        if profiler is not None:
            profiler.stop(target_cpu)
        client_cpu = usage.ru_utime + usage.ru_stime - usage_before.ru_utime - usage_before.ru_stime
        if done.returncode != 0:
            raise SystemExit(f"kss import failed ({done.returncode}):\n{done.stderr}")
        source_nodes, _ = count(source.url, "nodes")
        source_pods, source_bound = count(source.url, "pods")
        target_nodes, _ = count(target.url, "nodes")
        target_pods, bound = count(target.url, "pods")
        placed = 0.0 if bound >= source_pods else wait_placed(target.url, source_pods)
        _, bound_after = count(target.url, "pods")
        return SyntheticFigures(
            nodes=nodes,
            pods=pods,
            pending=pending,
            load_seconds=load_seconds,
            import_seconds=import_seconds,
            import_output=done.stderr or "",
            source_nodes=source_nodes,
            source_pods=source_pods,
            source_bound=source_bound,
            target_nodes=target_nodes,
            target_pods=target_pods,
            target_bound_at_import=bound,
            placed_seconds=placed,
            target_bound_after=bound_after,
            target_rss_mb=rss_mb(target.process.pid),
            target_peak_rss_mb=peak_rss_mb(target.process.pid),
            client_cpu_seconds=client_cpu,
            target_cpu_seconds=target_cpu,
            source_cpu_seconds=source_cpu,
        )
    finally:
        target.stop()
        source.stop()


def run(
    workdir: Path,
    *,
    nodes: Path = WORKLOADS / "nodes-1200.yaml",
    pods: Path = WORKLOADS / "pods-1200.yaml",
    page_size: int = 500,
    qps: float = 20,
    burst: int = 50,
    workers: int = 8,
    source_scheduler: bool = False,
    progress: bool = False,
) -> Figures:
    """Start both servers, load the source, import, count; always stops the servers."""
    source = serve(workdir, "source", {"KSS_SCHEDULER_ENABLED": "true" if source_scheduler else "false"})
    target = serve(workdir, "simulator")
    try:
        loaded, load_seconds = load(source.url, [nodes, pods])
        if source_scheduler:
            _wait_bound(source.url)
        config = workdir / "source.kubeconfig"
        config.write_text(subprocess.check_output([str(KSS), "kubeconfig", "--server", source.url], text=True))
        command = [str(KSS), "import", "--kubeconfig", str(config), "--target-url", target.url]
        command += ["--page-size", str(page_size), "--qps", str(qps), "--burst", str(burst)]
        command += ["--workers", str(workers)] + ([] if progress else ["--no-progress"])
        start = time.perf_counter()
        done = subprocess.run(command, stderr=None if progress else subprocess.PIPE, text=True, timeout=3600)
        import_seconds = time.perf_counter() - start
        if done.returncode != 0:
            raise SystemExit(f"kss import failed ({done.returncode}):\n{done.stderr}")
        source_nodes, _ = count(source.url, "nodes")
        source_pods, _ = count(source.url, "pods")
        target_nodes, _ = count(target.url, "nodes")
        target_pods, bound = count(target.url, "pods")
        return Figures(
            loaded,
            load_seconds,
            import_seconds,
            done.stderr or "",
            source_nodes,
            source_pods,
            target_nodes,
            target_pods,
            bound,
        )
    finally:
        target.stop()
        source.stop()


def _wait_bound(url: str, timeout: float = 1800) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        total, bound = count(url, "pods")
        if bound == total:
            return
        time.sleep(2)


def main() -> int:
    """Parse arguments, run once, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=Path, default=WORKLOADS / "nodes-1200.yaml")
    parser.add_argument("--pods", type=Path, default=WORKLOADS / "pods-1200.yaml")
    parser.add_argument(
        "--synthetic",
        nargs=2,
        type=int,
        metavar=("NODES", "PODS"),
        help="import a generated production-like cluster of NODES nodes and PODS pods instead of the Alibaba files",
    )
    parser.add_argument("--pending", type=int, default=300, help="--synthetic: pods not yet bound in the source")
    parser.add_argument("--no-images", action="store_true", help="--synthetic: nodes list no container images")
    parser.add_argument(
        "--py-spy",
        type=Path,
        metavar="DIR",
        help="--synthetic: profile the simulator into DIR (bench/serve_profile.py)",
    )
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--qps", type=float, default=20, help="requests per second to the source (0: no limit)")
    parser.add_argument("--burst", type=int, default=50)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--source-scheduler", action="store_true", help="bind pods in the source first")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument(
        "--baseline",
        type=Path,
        metavar="DIR",
        help="--synthetic: run the simulator and kss import from DIR (another commit's tree), the source from this one",
    )
    args = parser.parse_args()
    if args.synthetic:
        with tempfile.TemporaryDirectory() as tmp:
            synthetic = run_synthetic(
                Path(tmp),
                *args.synthetic,
                pending=args.pending,
                page_size=args.page_size,
                qps=args.qps,
                burst=args.burst,
                workers=args.workers,
                progress=not args.json,
                py_spy=args.py_spy,
                images=not args.no_images,
                baseline=args.baseline.resolve() if args.baseline else None,
            )
        if args.json:
            print(json.dumps(synthetic.__dict__, indent=2))
        else:
            print("\n".join(synthetic.lines()))
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        figures = run(
            Path(tmp),
            nodes=args.nodes,
            pods=args.pods,
            page_size=args.page_size,
            qps=args.qps,
            burst=args.burst,
            workers=args.workers,
            source_scheduler=args.source_scheduler,
            progress=not args.json,
        )
    if args.json:
        print(json.dumps(figures.__dict__, indent=2))
    else:
        print("\n".join(figures.lines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

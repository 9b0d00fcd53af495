"""Time the one-shot import (``kss import --kubeconfig``) of the 1,200-node Alibaba GPU workload.

A second ``kss serve`` plays the production cluster: the workload is loaded into it with the official client
(its own scheduler off, or on with ``--source-scheduler`` so pods arrive bound as existing load), then
``kss import`` copies it into a fresh simulator. Prints the load time, the import time (and rate) and what
arrived.

Usage: ``.venv/bin/python bench/sync_import.py [--nodes FILE] [--pods FILE] [--page-size N] [--qps Q]
[--burst B] [--workers W] [--source-scheduler]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
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
import yaml

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

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
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--qps", type=float, default=20, help="requests per second to the source (0: no limit)")
    parser.add_argument("--burst", type=int, default=50)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--source-scheduler", action="store_true", help="bind pods in the source first")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args()
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

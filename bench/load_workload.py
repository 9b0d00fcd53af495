"""Time loading a workload (nodes, then pods) into ``kss serve`` through the Kubernetes API with kubectl.

Usage: ``.venv/bin/python bench/load_workload.py [--server URL] [--nodes FILE] [--pods FILE]``.
Without ``--server`` it starts ``kss serve`` on a free port with a fresh SQLite file and stops it afterwards.
Prints one line per file (objects, seconds, objects per second) and the total.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
WORKLOADS = REPO.parent / "shared" / "workloads" / "alibaba-gpu-trace"
KUBECTL = "/usr/bin/kubectl"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(workdir: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    env = {**os.environ, "KSS_DATABASE_URL": f"sqlite:///{workdir / 'kss.db'}", "KSS_PORT": str(port)}
    kss = Path(sys.executable).with_name("kss")
    log = (workdir / "kss.log").open("wb")
    proc = subprocess.Popen([str(kss), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("kss serve did not start")


def _count(path: Path) -> int:
    return sum(1 for line in path.read_text().splitlines() if line.startswith("kind:"))


def load(url: str, files: list[Path], workdir: Path) -> float:
    """Apply each file with kubectl; print and return the total seconds."""
    config = workdir / "kubeconfig"
    config.write_text(subprocess.run([str(Path(sys.executable).with_name("kss")), "kubeconfig", "--server", url],
                                     capture_output=True, text=True, check=True).stdout)  # fmt: skip
    env = {**os.environ, "KUBECACHEDIR": str(workdir / "kubecache")}
    total = 0.0
    for path in files:
        start = time.perf_counter()
        subprocess.run([KUBECTL, "--kubeconfig", str(config), "apply", "-f", str(path)], check=True, env=env,
                       stdout=subprocess.DEVNULL)  # fmt: skip
        seconds = time.perf_counter() - start
        total += seconds
        n = _count(path)
        print(f"{path.name}: {n} objects in {seconds:.1f} s ({n / seconds:.0f} objects/s)")
    print(f"total: {total:.1f} s")
    return total


def main() -> int:
    """Parse arguments, start a server if needed, load the files, print the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server", help="URL of a running kss serve (default: start one)")
    parser.add_argument("--nodes", type=Path, default=WORKLOADS / "nodes-1200.yaml")
    parser.add_argument("--pods", type=Path, default=WORKLOADS / "pods-1200.yaml")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        proc = None
        url = args.server
        if url is None:
            proc, url = _start(workdir)
        try:
            load(url, [args.nodes, args.pods], workdir)
        finally:
            if proc is not None:
                proc.terminate()
                proc.wait(timeout=30)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""CPU a ``kss`` process spends before it does its work: each command's start, this tree against another one.

Usage: ``.venv/bin/python bench/startup.py [--runs 5] [--baseline DIR] [--commands help,serve,...] [--cold]``.

Every command runs as a real subprocess (this virtualenv's ``kss`` console script); its CPU (user + system) is read
from the kernel: for the one-shot commands from ``wait4``'s resource usage when it exits, for ``kss serve`` from
``/proc`` (the server and any process it started) at the moment ``/healthz`` first answers, on a fresh SQLite file
(so the migrations run, as in the tests), after which the server is stopped. With ``--baseline DIR`` (an older tree,
e.g. from ``git archive``) each run of this tree is followed by one of DIR's (``PYTHONPATH=DIR``), so both see the
same machine; the median and minimum of each are printed, with the load average before and after.

Both trees' modules are byte-compiled first (``compileall``), as an installed package's are: with
``PYTHONDONTWRITEBYTECODE=1`` (this machine's agents, the Dockerfile) an editable install otherwise compiles every
``app`` module from source at each start. ``--cold`` leaves the bytecode as it is, to measure that case.
"""

from __future__ import annotations

import argparse
import compileall
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _serve import KSS, free_port

REPO = Path(__file__).resolve().parent.parent

# name -> the command line after `kss`
ONE_SHOT: dict[str, list[str]] = {
    "help": ["--help"],
    "simulate-help": ["simulate", "--help"],
    "replay-help": ["replay", "--help"],
    "kubeconfig": ["kubeconfig"],
    "export-help": ["export", "--help"],
    "sync-help": ["sync", "--help"],
}
COMMANDS = [*ONE_SHOT, "serve"]


def _environment(tree: Path | None, workdir: Path) -> dict[str, str]:
    env = {**os.environ, "KSS_DATABASE_URL": f"sqlite:///{workdir / 'kss.db'}"}
    env.pop("PYTHONPATH", None)
    if tree is not None:
        env["PYTHONPATH"] = str(tree)
    return env


def one_shot_cpu(argv: list[str], env: dict[str, str], cwd: Path) -> float:
    """CPU seconds of ``kss ARGV`` from start to exit."""
    proc = subprocess.Popen([str(KSS), *argv], env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        error = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"kss {' '.join(argv)} exited {proc.returncode}: {error}")
    return usage.ru_utime + usage.ru_stime


def _tree_cpu(pid: int) -> float:
    """CPU seconds of process ``pid`` and of every live descendant."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0.0
    pending = [pid]
    while pending:
        current = pending.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / ticks
            for task in Path(f"/proc/{current}/task").iterdir():
                pending += [int(child) for child in (task / "children").read_text().split()]
        except OSError:  # it ended meanwhile
            continue
    return total


def serve_cpu(env: dict[str, str], cwd: Path) -> float:
    """CPU seconds of ``kss serve`` (and its children) when ``/healthz`` first answers."""
    port = free_port()
    proc = subprocess.Popen(
        [str(KSS), "serve", "--port", str(port)], env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    url = f"http://127.0.0.1:{port}/healthz"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise SystemExit(f"kss serve exited: {proc.stderr.read().decode() if proc.stderr else ''}")
            try:
                if httpx.get(url, timeout=1).status_code == 200:
                    return _tree_cpu(proc.pid)
            except httpx.HTTPError:
                time.sleep(0.05)
        raise SystemExit("kss serve did not answer /healthz in 120 s")
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="an older tree to run alternately (PYTHONPATH=DIR)")
    parser.add_argument("--commands", default=",".join(COMMANDS), help=f"comma-separated, of {', '.join(COMMANDS)}")
    parser.add_argument("--cold", action="store_true", help="do not byte-compile the trees first")
    args = parser.parse_args()
    trees: list[tuple[str, Path | None]] = [("this", None)]
    if args.baseline is not None:
        trees.append(("base", args.baseline.resolve()))
    if not args.cold:
        for _, tree in trees:
            root = tree or REPO
            for package in ("app", "syncer", "kss"):
                compileall.compile_dir(str(root / package), quiet=1)
    print(f"load before: {_load()}", flush=True)
    for command in args.commands.split(","):
        cpu: dict[str, list[float]] = {label: [] for label, _ in trees}
        for _ in range(args.runs):
            for label, tree in trees:
                with tempfile.TemporaryDirectory() as tmp:
                    env = _environment(tree, Path(tmp))
                    if command == "serve":
                        cpu[label].append(serve_cpu(env, Path(tmp)))
                    else:
                        cpu[label].append(one_shot_cpu(ONE_SHOT[command], env, Path(tmp)))
        for label, _ in trees:
            figures = cpu[label]
            print(
                f"{command:14} {label}: CPU median {statistics.median(figures):.2f} s, min {min(figures):.2f} s",
                flush=True,
            )
    print(f"load after: {_load()}")


if __name__ == "__main__":
    main()

"""Where ``kss serve``'s time goes: the split of a ``bench/serve_trace.py --py-spy DIR`` profile, by area.

Usage: ``.venv/bin/python bench/serve_profile.py DIR [--rate 100]``.

Reads what ``serve_trace.py --py-spy`` wrote: ``gil.txt`` (py-spy raw stacks of the thread holding the GIL, one
sample each 1/rate s), ``all.txt`` (every thread's stack at each sample, idle ones included) and ``threads.json``
(each thread's CPU seconds over the run, from ``/proc``). Prints three tables:

- each thread's CPU seconds, the seconds it held the GIL, and the seconds it was runnable without running (its
  stack not parked in a wait, a select or a sleep; mostly waiting for the GIL, also for the store lock, which shows
  as a stack in ``with self._lock``: counted apart);
- the GIL-held time by area (the server is one core of Python: this is the serial budget), areas being matched on
  each stack from the most specific to the least (see ``AREAS``).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

# (area, thread name prefix or None for any, substrings any of which in the stack matches); first match wins.
AREAS: list[tuple[str, str | None, tuple[str, ...]]] = [
    ("store listeners: copies for each listener", None, ("StoredObject.copy (kss_sim/cluster/kinds/stored.py",)),
    ("store listeners: callbacks (inbox, wake)", "kss-store-committer", ("ChangeLog._notify",)),
    ("store commit: SQL write-through", "kss-store-committer", ("write_changes", "Engine.begin", "_commit_loop")),
    (
        "managedFields (every write)",
        None,
        ("kss_sim/cluster/admission/managed_fields.py", "kss_sim/cluster/admission/field_sets.py"),
    ),
    ("scheduler: Events", "scheduler", ("create_event",)),
    (
        "scheduler: writes (bind, status, annotations)",
        "scheduler",
        ("kss_sim/cluster/", "kss_sim/engine_host/store_actions"),
    ),
    ("scheduler: taking in changes (cache, queue)", "scheduler", ("_drain_inbox", "_apply_change")),
    ("scheduler: results annotations and record hand-off", "scheduler", ("kss_sim/results/",)),
    ("scheduler: cycle (engine)", "scheduler", ("kss_sim/scheduler/",)),
    ("scheduler: loop and rest", "scheduler", ("",)),
    ("results writer thread (SQL of attempts)", "results-writer", ("",)),
    ("kubelet: status writes", "kubelet", ("kss_sim/cluster/",)),
    ("kubelet: rest", "kubelet", ("",)),
    ("node leases", "node-lease", ("",)),
    ("controllers (kube-controller-manager's)", "-controller", ("",)),
    ("controllers (kube-controller-manager's)", "garbage-collector", ("",)),
    (
        "HTTP: store writes (validation, defaults, admission)",
        "MainThread",
        (
            "(kss_sim/cluster/storage/store.py",
            "(kss_sim/cluster/storage/writes.py",
            "(kss_sim/cluster/storage/versions.py",
            "apply.py",
        ),
    ),
    ("HTTP: watch streams", "MainThread", ("kss_sim/cluster/api/watch.py",)),
    ("HTTP: ASGI, routing, JSON, asyncio", "MainThread", ("",)),
    ("HTTP: reads in the thread pool", "AnyIO worker", ("",)),
    ("GC policy (freeze)", None, ("gc_policy.py",)),
    ("other", None, ("",)),
]

# A stack whose innermost frame is one of these is parked (waiting for work, I/O or a timer), not runnable.
PARKED = re.compile(
    r"^(Condition\.wait|Event\.wait|Runner\.run|sleep|select|"
    r"SchedulerService\._run \(kss_sim/engine_host/scheduler_thread\.py|"
    r"_worker|Queue\.get|.*\.recv|DefaultDialect\.do_(execute|executemany|commit))"
)


def parse(path: Path) -> list[tuple[int, str, list[str], int]]:
    """py-spy raw lines as (thread id, thread name, frames outermost first, count)."""
    rows: list[tuple[int, str, list[str], int]] = []
    for line in path.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        head, *frames = stack.split(";")
        match = re.match(r"thread \((\d+)\)(?:: (.*))?", head)
        if match is None:
            continue
        rows.append((int(match.group(1)), match.group(2) or "?", frames, int(count)))
    return rows


def area_of(thread: str, frames: list[str]) -> str:
    """The first area of ``AREAS`` whose thread and substrings match this stack."""
    text = ";".join(frames)
    for area, prefix, needles in AREAS:
        if prefix is not None and prefix not in thread:
            continue
        if any(n in text for n in needles):
            return area
    return "other"


def lock_lines(repo: Path) -> set[str]:
    """``file:line`` of every ``with self._lock:`` in the store's modules (a stack parked there waits for it)."""
    found: set[str] = set()
    for path in (repo / "app" / "cluster").rglob("*.py"):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if "with self._lock" in line:
                found.add(f"{path.relative_to(repo).as_posix()}:{number}")
    return found


def main() -> int:
    """Print the per-thread and per-area tables."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("dir", type=Path)
    p.add_argument("--rate", type=float, default=100.0, help="py-spy's sampling rate (serve_trace uses 100)")
    p.add_argument(
        "--source",
        type=Path,
        default=Path(__file__).resolve().parent.parent,
        help="the source tree the profiled server ran (its store lock lines; default: this one)",
    )
    args = p.parse_args()
    summary = json.loads((args.dir / "threads.json").read_text())
    gil, every = parse(args.dir / "gil.txt"), parse(args.dir / "all.txt")
    names: dict[int, str] = {}
    for tid, name, _, _ in gil + every:
        names.setdefault(tid, name)
    locks = lock_lines(args.source)

    held: Counter[str] = Counter()
    areas: Counter[str] = Counter()
    for _tid, name, frames, count in gil:
        held[name] += count
        areas[area_of(name, frames)] += count
    runnable: Counter[str] = Counter()
    lock_wait: Counter[str] = Counter()
    for _, name, frames, count in every:
        leaf = frames[-1] if frames else ""
        if any(leaf.endswith(f"{where})") for where in locks):
            lock_wait[name] += count
        elif not PARKED.match(leaf):
            runnable[name] += count
    cpu: defaultdict[str, float] = defaultdict(float)
    for tid, seconds in summary["threads"].items():
        cpu[names.get(int(tid), f"thread {tid}")] += seconds

    wall, rate = summary["wall"], args.rate
    total_held = sum(held.values())
    print(f"run: wall {wall:.1f} s, server CPU {summary['process_cpu']:.1f} s, GIL held {total_held / rate:.1f} s")
    print()
    print("| thread | CPU s | GIL held s | runnable, not holding the GIL s | waiting for the store lock s |")
    print("| --- | --- | --- | --- | --- |")
    for name in sorted(set(cpu) | set(held), key=lambda n: -cpu.get(n, 0.0)):
        if cpu.get(name, 0.0) < 0.05 and held[name] < 5:
            continue
        waiting = max(0.0, runnable[name] - held[name]) / rate
        row = [cpu.get(name, 0.0), held[name] / rate, waiting, lock_wait[name] / rate]
        print(f"| {name} | " + " | ".join(f"{v:.1f}" for v in row) + " |")
    print()
    print("| area (GIL held) | s | share |")
    print("| --- | --- | --- |")
    for area, count in areas.most_common():
        print(f"| {area} | {count / rate:.1f} | {100 * count / max(1, total_held):.0f} % |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

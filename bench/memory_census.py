"""Where a ``kss serve`` process keeps its memory: a census of live objects by holder (issue #20).

Usage: ``.venv/bin/python bench/memory_census.py [--trace | --nodes 5000 --pods 50000] [--no-scheduler]``.
Builds the application in this process as ``kss serve`` wires it (``create_app``: the store on a fresh SQLite
file, the scheduler, its results writer, the controllers and the kubelet), creates the nodes and then the pods
through the store (``create`` as the API router calls it, 8 threads), waits until every pod is bound or marked
unschedulable, collects, and walks the live objects from each holder in turn (``gc.get_referents``, counting
``sys.getsizeof``): an object reachable from several holders is counted once, under the first. Holders, in order:
the store's current objects (their dicts; those held packed, Events, as held, never decoded; their JSON), the watch
log (what it holds beyond the current objects), the scheduler service, the controllers, the results service, the
benchmark's own input objects (shown apart, not in the total), then what else the process holds (every object the
collector tracks, less what was counted, plus what those reach). Prints MB per holder and bytes per pod, the
process's RSS and peak RSS (input objects included), pymalloc's arenas and how many objects the collector tracks.

``--trace``: the 1,213-node / 7,064-pod Alibaba trace of ``bench/serve_trace.py``; otherwise ``bench/serve_big``'s
generated nodes and pods.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import os
import sys
import tempfile
import threading
import time
import types
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # kss_sim is imported late (or not at all): the tree to measure is chosen at run time
    from kss_sim.kube.objects import Obj


sys.path.insert(0, str(Path(__file__).resolve().parent))

from _serve import WORKLOADS

# Shared by everything, owned by nothing in particular: not walked.
_SKIP = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.CodeType, types.FrameType)


def deep_size(roots: Iterable[Any], seen: set[int], by_type: dict[str, int] | None = None) -> int:
    """Bytes of everything reachable from ``roots`` not yet in ``seen`` (which it extends); ``by_type`` gets
    them per type name."""
    total = 0
    stack = list(roots)
    while stack:
        o = stack.pop()
        i = id(o)
        if i in seen:
            continue
        seen.add(i)
        if isinstance(o, _SKIP):
            continue
        size = sys.getsizeof(o)
        total += size
        if by_type is not None:
            name = type(o).__name__
            by_type[name] = by_type.get(name, 0) + size
        stack.extend(gc.get_referents(o))
    return total


def rss_mb() -> tuple[float, float]:
    """(VmRSS, VmHWM) of this process in MB."""
    values = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(("VmRSS:", "VmHWM:")):
            values[line.split(":")[0]] = int(line.split()[1]) / 1024.0
    return values["VmRSS"], values["VmHWM"]


def trimmed_rss_mb() -> float:
    """VmRSS after glibc's ``malloc_trim(0)`` hands the free parts of its heaps back to the system: what RSS held
    that no object did (memory freed after the peak, kept by the allocator)."""
    ctypes.CDLL("libc.so.6").malloc_trim(0)
    return rss_mb()[0]


def rss_by_mapping() -> dict[str, float]:
    """RSS in MB by what is mapped (``/proc/self/smaps``): the C heap (``[heap]`` and anonymous mappings, where
    pymalloc's arenas, large objects and the C libraries' allocations live), thread stacks, shared libraries and
    other files (code of the interpreter and of compiled extensions, read-only)."""
    out: dict[str, float] = {}
    name = ""
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()
        if not head:
            continue
        if "-" in head[0] and len(head) >= 5 and not head[0].endswith(":"):
            path = head[5] if len(head) > 5 else ""
            if path == "[heap]" or not path:
                name = "heap and anonymous"
            elif path.startswith("[stack"):
                name = "stacks"
            elif ".so" in path:
                name = "shared libraries"
            else:
                name = "other files"
        elif head[0] == "Rss:":
            out[name] = out.get(name, 0.0) + int(head[1]) / 1024.0
    return out


def pymalloc_mb() -> dict[str, float]:
    """pymalloc's arenas (``sys._debugmallocstats``): MB in arenas, in blocks in use, in free blocks and pools."""
    with tempfile.TemporaryFile() as out:
        saved = os.dup(2)
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode()
    figures: dict[str, float] = {}
    for line in text.splitlines():
        head, _, value = line.rpartition("=")
        value = value.strip().replace(",", "")
        if not value.isdigit():
            continue
        if "arenas *" in head:
            figures["arenas"] = int(value) / 1e6
        elif "bytes in allocated blocks" in head:
            figures["blocks in use"] = int(value) / 1e6
        elif "bytes in available blocks" in head:
            figures["free blocks"] = int(value) / 1e6
        elif "unused pools" in head:
            figures["free pools"] = int(value) / 1e6
    return figures


def load_objects(args: argparse.Namespace) -> tuple[list[Obj], list[Obj]]:
    """The nodes and pods to create."""
    if args.trace:
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        trace = WORKLOADS / "alibaba-gpu-trace"
        nodes = [d for d in yaml.load_all((trace / "nodes-1200.yaml").read_text(), Loader=loader) if d]
        pods = [d for d in yaml.load_all((trace / "pods-1200.yaml").read_text(), Loader=loader) if d]
        return nodes, pods
    from serve_big import node_object, pod_objects

    return [node_object(i) for i in range(args.nodes)], pod_objects(args.pods, seed=1)


def create_all(store: Any, kind: str, objects: list[Obj], threads: int) -> None:
    """Create ``objects`` through ``store.create`` from ``threads`` threads, as concurrent API clients would."""
    next_index = iter(range(len(objects)))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work() -> None:
        while True:
            with lock:
                i = next(next_index, None)
            if i is None or errors:
                return
            obj = objects[i]
            try:
                store.create(kind, obj, obj["metadata"].get("namespace"), manager="kubectl-create")
            except BaseException as exc:
                errors.append(exc)

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    if errors:
        raise errors[0]


def settled(store: Any) -> int:
    """Pods bound or marked unschedulable."""
    count = 0
    for entry in store.select("Pod").items:
        pod = entry.obj
        if (pod.get("spec") or {}).get("nodeName"):
            count += 1
            continue
        for c in (pod.get("status") or {}).get("conditions") or []:
            if c.get("type") == "PodScheduled" and c.get("status") == "False":
                count += 1
                break
    return count


def census(app: Any, app_state: Any, inputs: list[Obj]) -> list[tuple[str, int]]:
    """(holder, bytes) in walk order."""
    gc.collect()
    store = app_state.store
    seen: set[int] = set()
    seen.add(id(seen))  # the census's own bookkeeping is not the server's memory
    rows: list[tuple[str, int]] = []
    # The store's own containers are counted with the objects, not reached through the services that hold it.
    entries = [e for bucket in store._committer.objects.values() for e in bucket.values()]
    by_kind: dict[str, list[Any]] = {}
    packed: list[Any] = []  # entries held as their JSON only (Events): counted as held, never decoded
    for kind, bucket in store._committer.objects.items():
        label = kind if kind in ("Pod", "Node") else "other kinds"
        for e in bucket.values():
            decoded = e.decoded
            if decoded is None:
                packed.append(e)
            else:
                by_kind.setdefault(label, []).append(decoded)
    pods = by_kind.pop("Pod", [])
    # A pod's dict part by part, managedFields first (they are what writes add to every object).
    managed = [p["metadata"].get("managedFields") for p in pods]
    rows.append((f"store dicts: Pod metadata.managedFields ({len(pods)})", deep_size(managed, seen)))
    for part in ("spec", "status"):
        rows.append((f"store dicts: Pod {part}", deep_size([p.get(part) for p in pods], seen)))
    # The scheduler's result annotations (per-node filter and score maps up to KSS_RESULTS_NODE_ANNOTATIONS_MAX_NODES).
    annotations = [p["metadata"].get("annotations") for p in pods]
    rows.append(("store dicts: Pod metadata.annotations", deep_size(annotations, seen)))
    rows.append(("store dicts: Pod the rest (metadata)", deep_size(pods, seen)))
    for kind, objs in sorted(by_kind.items()):
        rows.append((f"store dicts: {kind} ({len(objs)})", deep_size(objs, seen)))
    rows.append((f"store: packed entries, JSON + key (Events: {len(packed)})", deep_size(packed, seen)))
    rows.append(("store: current objects, JSON + entries", deep_size([*entries, store._committer.objects], seen)))
    log = store._changes._log
    rows.append((f"watch log ({len(log)} events) beyond the current objects", deep_size([log], seen)))
    services = [getattr(app_state, name, None) for name in ("scheduler", "controllers", "results")]
    # Holders are walked attribute by attribute, never back up through one another or the application.
    labels = ("scheduler service", "controllers and kubelet", "results service")
    seen.update(id(o) for o in (store, store._changes, app_state.engine, app_state, app, *services) if o is not None)
    # The scheduler's pod journal is counted after the services: what it holds beyond the cache (superseded versions).
    columns = getattr(getattr(getattr(services[0], "cache", None), "snapshot", None), "_columns", None)
    journal: list[Any] = getattr(columns, "journal", None) or []
    seen.add(id(journal))
    for label, service in zip(labels, services, strict=True):
        if service is None:
            continue
        sizes = [(name, deep_size([value], seen)) for name, value in vars(service).items()]
        sizes.sort(key=lambda item: -item[1])
        for name, size in sizes[:4]:
            rows.append((f"{label}: .{name}", size))
        rows.append((f"{label}: the rest", sum(size for _, size in sizes[4:])))
    rows.append((f"scheduler: pod journal ({len(journal)} entries) beyond the cache", sys.getsizeof(journal)
                 + deep_size(list(journal), seen)))  # fmt: skip
    seen.discard(id(app_state.engine))
    rows.append(("SQLAlchemy engine", deep_size([app_state.engine], seen)))
    rows.append(("store: shared values no object holds any more", deep_size([store._versions.shared], seen)))
    rest = list(vars(store).values())
    rows.append(("store: the rest", deep_size(rest, seen)))
    rows.append(("this benchmark's input objects (not the server's)", deep_size(inputs, seen)))
    by_type: dict[str, int] = {}
    rows.append(("everything else the collector tracks", deep_size(gc.get_objects(), seen, by_type)))
    top = sorted(by_type.items(), key=lambda item: -item[1])[:6]
    rows += [(f"  of which {name}", size) for name, size in top]
    return rows


def main() -> int:
    """Build the server, load the cluster, print the census."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--trace", action="store_true", help="the 1,213-node / 7,064-pod trace")
    p.add_argument("--nodes", type=int, default=5000)
    p.add_argument("--pods", type=int, default=50000)
    p.add_argument("--threads", type=int, default=8, help="creating threads (8)")
    p.add_argument("--no-scheduler", action="store_true", help="leave the scheduler off (no bindings)")
    p.add_argument("--event-ttl", type=float, help="KSS_EVENT_TTL_SECONDS (default: the server's, 1 h)")
    args = p.parse_args()
    nodes, pods = load_objects(args)
    from starlette.testclient import TestClient

    from kss_sim.config import Settings
    from kss_sim.main import create_app

    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        settings = Settings(
            database_url=f"sqlite:///{tmp}/kss.db",
            scheduler_enabled=not args.no_scheduler,
            sqlite_synchronous="NORMAL",
            **({} if args.event_ttl is None else {"event_ttl_seconds": args.event_ttl}),
        )
        app = create_app(settings)
        with TestClient(app):
            state = app.state
            gc.collect()
            base_rss = rss_mb()[0]
            t0 = time.perf_counter()
            create_all(state.store, "Node", nodes, args.threads)
            create_all(state.store, "Pod", pods, args.threads)
            t_create = time.perf_counter() - t0
            if not args.no_scheduler:
                while settled(state.store) < len(pods):
                    time.sleep(1.0)
                state.controllers.wait_idle(600.0)  # the kubelet's status writes too: every pod as it stays
                state.scheduler.stop()  # nothing moves while the census walks
            t_all = time.perf_counter() - t0
            rss, hwm = rss_mb()
            trimmed = trimmed_rss_mb()
            arenas = pymalloc_mb()
            mappings = rss_by_mapping()
            tracked = len(gc.get_objects())  # what every full collection walks
            rows = census(app, state, [*nodes, *pods])
            total = sum(size for name, size in rows if not name.startswith((" ", "this benchmark")))
            print(f"{len(nodes)} nodes, {len(pods)} pods: created in {t_create:.1f} s, settled in {t_all:.1f} s")
            print(f"RSS {rss:.0f} MB (peak {hwm:.0f} MB; {base_rss:.0f} MB after start-up)")
            print(f"RSS after malloc_trim(0): {trimmed:.0f} MB (free C heap glibc had kept)")
            print("RSS by mapping: " + ", ".join(f"{name} {mb:.0f} MB" for name, mb in mappings.items()))
            print("pymalloc: " + ", ".join(f"{name} {mb:.0f} MB" for name, mb in arenas.items()))
            print(f"objects the collector tracks: {tracked:,} ({tracked / len(pods):.0f} per pod)")
            print("| holder | MB | bytes per pod |")
            print("| --- | --- | --- |")
            for name, size in rows:
                print(f"| {name} | {size / 1e6:.1f} | {size / len(pods):,.0f} |")
            print(f"| total counted (the server's) | {total / 1e6:.1f} | {total / len(pods):,.0f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

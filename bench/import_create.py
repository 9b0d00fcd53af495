"""CPU per object of the simulator's bulk create (``POST /simulator/v1/import?mode=create``), in one process.

    .venv/bin/python bench/import_create.py [--nodes 200] [--pods 4000] [--rounds 4] [--baseline DIR] [--profile]

The pages are what ``kss import`` sends: a generated production-like cluster (``bench/synthetic_cluster.py``)
created in a source store as a ``kss serve`` would hold it, then each object turned into its create body by the
syncer's rules (``syncer.translate.desired``; a bound pod keeps its node and status), in pages of 500 as
``List`` text. Each round creates them all through ``OperationsService.create_objects`` on a fresh store written
through to SQLite (no scheduler, controllers or kubelet: the create path alone) and prints the CPU per object of
the thread that handles the request (decode, defaults, admission, managedFields, validation, staging), and of the
whole process (the committer's SQL and the encoding included).

``--baseline DIR`` alternates rounds of this tree and of ``DIR`` (``git archive <commit> | tar -x -C DIR``), each
round in its own child process on the same pages, and prints both. ``--profile`` prints cProfile's top functions
of one round of this tree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # kss_sim is imported late (or not at all): the tree to measure is chosen at run time
    from kss_sim.kube.objects import Obj


REPO = Path(__file__).resolve().parent.parent
PAGE = 500


def make_pages(nodes: int, pods: int, pending: int) -> list[bytes]:
    """The pages ``kss import`` sends for a generated cluster, kind by kind (namespaces, nodes, pods)."""
    import orjson

    sys.path[:0] = [str(REPO), str(REPO / "bench")]
    import synthetic_cluster

    from kss_sim.cluster.storage.store import ClusterStore
    from syncer import translate
    from syncer.kinds import BY_NAME

    cluster = synthetic_cluster.generate(nodes, pods, pending=pending)
    source = ClusterStore(None)
    pages: list[bytes] = []
    for kind, objs in (("Namespace", cluster.namespaces), ("Node", cluster.nodes), ("Pod", cluster.pods)):
        bodies = []
        for obj in objs:
            namespace = obj["metadata"].get("namespace")
            stored = source.create(kind, obj, namespace, keep_status=True)
            want = translate.desired(BY_NAME[kind], stored, keep_binding=True, pvc_uid=lambda _ns, _name: None)
            if kind == "Pod" and not translate.is_scheduled(want):
                want.pop("status", None)
            bodies.append(want)
        for start in range(0, len(bodies), PAGE):
            page = {"apiVersion": "v1", "kind": "List", "items": bodies[start : start + PAGE]}
            pages.append(orjson.dumps(page))
    return pages


class _Unscheduled:
    """The scheduler as the bulk create sees it, none running: the create path alone is measured."""

    def config_document(self) -> Obj:
        return {}

    def held(self) -> Any:
        import contextlib

        return contextlib.nullcontext()


def one_round(pages: list[bytes], profile: bool) -> dict[str, float]:
    """Create every page on a fresh store; CPU of the calling thread and of the process, per object."""
    from kss_sim.cluster.storage.store import ClusterStore
    from kss_sim.config import Settings
    from kss_sim.db import make_engine, upgrade_database
    from kss_sim.operations.import_export import OperationsService

    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'kss.db'}"
        engine = make_engine(url)
        upgrade_database(engine)
        store = ClusterStore.open(engine)
        service = OperationsService(store, _Unscheduled(), None, Settings(database_url=url))  # type: ignore[arg-type]
        texts = [p.decode() for p in pages]
        profiler = None
        if profile:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        thread0, process0 = time.thread_time(), time.process_time()
        created = 0
        for text in texts:
            created += service.create_objects(text)["created"]
        thread, process = time.thread_time() - thread0, time.process_time() - process0
        if profiler is not None:
            import pstats

            profiler.disable()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(30)
            pstats.Stats(profiler).sort_stats("cumulative").print_stats(45)
        engine.dispose()
    return {"objects": created, "thread_us": thread / created * 1e6, "process_us": process / created * 1e6}


def _child(tree: Path, pages_file: Path, profile: bool) -> None:
    sys.path.insert(0, str(tree))
    pages = json.loads(pages_file.read_text())
    result = one_round([p.encode() for p in pages], profile)
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pods", type=int, default=4000)
    parser.add_argument("--pending", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--child", nargs=2, metavar=("TREE", "PAGES"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        _child(Path(args.child[0]), Path(args.child[1]), args.profile)
        return
    pages = make_pages(args.nodes, args.pods, args.pending)
    with tempfile.TemporaryDirectory() as tmp:
        pages_file = Path(tmp) / "pages.json"
        pages_file.write_text(json.dumps([p.decode() for p in pages]))
        trees = [("this tree", REPO)] + ([("baseline", args.baseline.resolve())] if args.baseline else [])
        results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
        print(f"load average before: {os.getloadavg()[0]:.2f}", flush=True)
        for round_index in range(1 if args.profile else args.rounds):
            order = trees if round_index % 2 == 0 else list(reversed(trees))
            for name, tree in order:
                command = [sys.executable, __file__, "--child", str(tree), str(pages_file)]
                env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
                if args.profile:
                    command.append("--profile")
                out = subprocess.run(command, check=True, capture_output=not args.profile, text=True, env=env)
                if args.profile:
                    return
                result = json.loads(out.stdout.strip().splitlines()[-1])
                results[name].append(result)
                print(
                    f"round {round_index + 1} {name:>9}: {int(result['objects'])} objects, "
                    f"{result['thread_us']:.0f} µs thread CPU, {result['process_us']:.0f} µs process CPU per object",
                    flush=True,
                )
        print(f"load average after: {os.getloadavg()[0]:.2f}")
        for name, rows in results.items():
            thread = [r["thread_us"] for r in rows]
            process = [r["process_us"] for r in rows]
            print(
                f"{name:>9}: thread CPU per object min {min(thread):.0f} / median {statistics.median(thread):.0f} µs; "
                f"process min {min(process):.0f} / median {statistics.median(process):.0f} µs"
            )


if __name__ == "__main__":
    main()

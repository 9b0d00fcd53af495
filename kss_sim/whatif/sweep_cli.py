"""``kss sweep SPEC.yaml``: a grid of replays on Dask, gathered into one table (sweep.csv/json/html)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from kss_sim import figures
from kss_sim.config import add_kube_version_argument
from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import kube_version
from kss_sim.replay.workload import WorkloadError
from kss_sim.whatif.sweep import DONE, load_spec, run_cells
from kss_sim.whatif.sweep_outputs import write_sweep

EXAMPLES = """examples:
  kss sweep examples/replay/sweep.yaml --workers 2                 # sweep.csv, sweep.json, sweep.html
  kss sweep spec.yaml --scheduler-address tcp://10.0.0.9:8786 --record-db runs.db"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("spec", type=Path, help="the sweep spec (YAML): configs, workloads, nodeShapes, seeds")
    p.add_argument(
        "--scheduler-address", metavar="tcp://HOST:PORT", help="an existing Dask cluster's scheduler (default: local)"
    )
    p.add_argument("--workers", type=int, help="the local Dask cluster's worker processes (default: the cores)")
    p.add_argument("--out", type=Path, help="write sweep.csv/json/html and cells/ here (default: <spec>-sweep)")
    p.add_argument("--record-db", metavar="FILE|URL", help="also store each cell as a run in this results database")
    p.add_argument(
        "--plugin-module",
        action="append",
        dest="plugin_modules",
        metavar="MODULE",
        help="a Python module of your own plugins, imported on every worker; repeatable (KSS_PLUGIN_MODULES)",
    )
    p.add_argument("--quiet", action="store_true", help="no line per finished cell")
    add_kube_version_argument(p)
    p.epilog = EXAMPLES


def run(args: argparse.Namespace) -> int:
    from kss_sim.config import Settings

    if args.workers is not None and args.workers < 1:
        print("kss sweep: --workers: must be 1 or more", file=sys.stderr)
        return 2
    version = None
    if args.kube_version is not None:
        try:
            version = kube_version(args.kube_version).name
        except ValueError as exc:
            print(f"kss sweep: --kube-version: {exc}", file=sys.stderr)
            return 2
    try:
        spec, workloads = load_spec(args.spec, version)
    except WorkloadError as exc:
        for problem in exc.problems:  # each named after the spec file once
            where = "" if problem.startswith(str(args.spec)) else f"{args.spec}: "
            print(f"kss sweep: {where}{problem}", file=sys.stderr)
        return 2
    recorder = None
    if args.record_db:
        try:
            recorder = _Runs(args.record_db, f"sweep:{spec.name}")
        except Exception as exc:  # a bad URL or an unwritable file: say so before running anything
            print(f"kss sweep: --record-db {args.record_db}: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
    modules = tuple(args.plugin_modules or Settings().plugin_modules)
    cells = spec.cells(modules)
    out = args.out or Path(f"{spec.name}-sweep")
    where = args.scheduler_address or f"a local Dask cluster ({args.workers or 'one worker per core'})"
    if not args.quiet:
        print(f"kss sweep: {len(cells)} cell(s) on {where}", file=sys.stderr)

    def progress(row: Obj, done: int, total: int) -> None:
        if recorder is not None:
            recorder.store(row)
        if not args.quiet:
            print(f"[{done}/{total}] {row['cell']}: {_outcome(row)}", file=sys.stderr)

    try:
        rows = run_cells(cells, workloads, scheduler_address=args.scheduler_address, workers=args.workers,
                         on_row=progress)  # fmt: skip
    except OSError as exc:  # no scheduler at that address, or the local cluster could not start
        print(f"kss sweep: Dask: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    finally:
        if recorder is not None:
            recorder.close()
    paths = write_sweep(out, spec.name, rows, spec_path=str(args.spec))
    failed = [r for r in rows if r.get("status") != DONE]
    print(f"kss sweep: {len(rows) - len(failed)} of {len(rows)} cell(s) done; wrote {paths['csv']}, {paths['json']}, "
          f"{paths['html']}")  # fmt: skip
    for row in failed:
        print(f"kss sweep: cell {row['cell']} failed: {row.get('error', '')}", file=sys.stderr)
    return 1 if failed else 0


def _outcome(row: Obj) -> str:
    if row.get("status") != DONE:
        return f"failed: {row.get('error', '')}"
    s = row.get("summary") or {}
    wait, took = (s.get("waitSeconds") or {}).get("p95"), row.get("cellSeconds")
    return (
        f"{s.get('scheduled')}/{s.get('pods')} scheduled, wait p95 {figures.duration(_seconds(wait))} "
        f"({figures.duration(_seconds(took))})"
    )


def _seconds(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) else None


class _Runs:
    """Each cell a run of the results database, in one compare group (the sweep's); no attempts are stored
    (``kss replay --record-db`` or ``kss compare --record-db`` record those)."""

    def __init__(self, target: str, group: str) -> None:
        from kss_sim.db import make_engine, make_session_factory, session_scope, upgrade_database
        from kss_sim.replay.recording import database_url
        from kss_sim.results.runs import RunsService

        self._engine = make_engine(database_url(target), sqlite_synchronous="NORMAL")
        upgrade_database(self._engine)
        factory = make_session_factory(self._engine)
        self.runs = RunsService(lambda: session_scope(factory))
        self.group = group
        self.ids: list[int] = []

    def store(self, row: Obj) -> None:
        summary = row.get("summary") or {}
        config = (summary.get("config") or {}).get("document") or {}
        run_id = self.runs.create_run(name=row["cell"], workload=row["workload"], seed=int(row["seed"]), config=config,
                                      compare_group=self.group)  # fmt: skip
        if row.get("status") == DONE:
            self.runs.finish_run(run_id, summary=summary, timeseries=row.get("timeseries") or [],
                                 pods=row.get("pods") or [])  # fmt: skip
        else:
            self.runs.fail_run(run_id, str(row.get("error", "")))
        self.ids.append(run_id)

    def close(self) -> None:
        self._engine.dispose()

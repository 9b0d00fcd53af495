"""``kss replay WORKLOAD...``: replay a timed workload on the virtual clock and report the run.

WORKLOAD is a workload file (or several, merged), a trace directory (``--pods``), or a node CSV and a pod CSV
(app/replay/sources.py). The run prints a progress line on stderr (``--quiet``: none) and a few summary lines at the
end; ``--out DIR`` writes summary.json, pods.csv, timeseries.csv and report.html, ``--record-db F`` records the run
and every attempt (each plugin's verdicts) in a results database the UI's Runs page reads. ``--target-url`` drives a
running ``kss serve`` instead (app/replay/live_cli.py). Exit 0; 2 on bad input, one line per problem, nothing run.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import yaml

from kss_sim import figures
from kss_sim.config import OptionError, Settings, add_kube_version_argument, version_and_gates
from kss_sim.kube import go_yaml
from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import KubeVersion, kube_version
from kss_sim.replay.engine import Replay
from kss_sim.replay.live_cli import add_live_arguments, run_live, wants_live
from kss_sim.replay.metrics import Metrics, summarize
from kss_sim.replay.model import Observer, ReplayResult
from kss_sim.replay.outputs import pod_row, write_outputs
from kss_sim.replay.progress import Progress
from kss_sim.replay.sources import load_source, write_workload
from kss_sim.replay.workload import TimedWorkload, WorkloadError, parse_duration
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError, parse_config
from kss_sim.scheduler.plugins import PluginLoadError, load_plugin_modules

EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT = 0, 1, 2
POD_LISTS = ("default", "gpuspec33", "multigpu50")
FORMS = ("extended", "dra")


EXAMPLES = """examples:
  kss replay examples/replay/gpu-day.yaml --out run/                   # then open run/report.html
  kss replay examples/replay/gpu-day.yaml --scheduler-config examples/replay/most-allocated.yaml --record-db runs.db
  kss replay nodes.csv pods.csv --form dra --until 2d --interval 10m
  kss replay examples/replay/gpu-day.yaml --target-url http://127.0.0.1:8000 --speed 600   # live, on kss serve"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "workload", nargs="+", help="a timed workload file (or several), a trace directory, or node CSV + pod CSV"
    )
    p.add_argument("--pods", choices=POD_LISTS, help="the trace's pod list (with a trace directory; default: default)")
    p.add_argument("--form", choices=FORMS, default="extended", help="GPUs as nvidia.com/gpu (extended) or DRA claims")
    p.add_argument("--limit", type=int, metavar="N", help="only the first N pod arrivals")
    p.add_argument("--start", type=Path, metavar="SNAPSHOT", help="a `kss export` snapshot as the cluster at time 0")
    p.add_argument("--scheduler-config", type=Path, metavar="FILE", help="a KubeSchedulerConfiguration (YAML/JSON)")
    p.add_argument("--feature-gates", metavar="GATES", help="e.g. SchedulerPopFromBackoffQ=false,GenericWorkload=true")
    add_kube_version_argument(p)
    p.add_argument("--plugin-module", action="append", dest="plugin_modules", metavar="MODULE",
                   help="a Python module of your own scheduler plugins; repeatable (KSS_PLUGIN_MODULES)")  # fmt: skip
    p.add_argument("--seed", type=int, default=0, help="the run's random seed (ties among equal nodes); default 0")
    p.add_argument("--until", metavar="T", help="stop at this virtual time (seconds or 90s, 5m, 1h30m, 2d)")
    p.add_argument("--interval", default="1h", metavar="T", help="sample the run every T of virtual time (1h)")
    p.add_argument("--record-db", metavar="F", help="record the run and every attempt in this results database")
    p.add_argument("--out", type=Path, metavar="DIR", help="write summary.json, pods.csv, timeseries.csv, report.html")
    p.add_argument("--name", help="the run's name (default: the workload's)")
    p.add_argument("--write-workload", type=Path, metavar="FILE",
                   help="also write the loaded workload as FILE (.yaml, .json, .jsonl)")  # fmt: skip
    p.add_argument("--quiet", action="store_true", help="no progress line")
    add_live_arguments(p)
    p.epilog = EXAMPLES


def _seconds(value: str | None, option: str, problems: list[str]) -> float | None:
    if value is None:
        return None
    try:
        return parse_duration(value, option)
    except ValueError as exc:
        problems.append(str(exc))
        return None


def _version_and_gates(args: argparse.Namespace, problems: list[str]) -> tuple[KubeVersion, dict[str, bool]]:
    # KSS_KUBE_VERSION and KSS_FEATURE_GATES are checked as the settings are read (kss_sim/cli.py names them).
    try:
        return version_and_gates(args.kube_version, args.feature_gates)
    except OptionError as exc:
        problems.append(str(exc))
        return kube_version(), {}


def _plugins(args: argparse.Namespace, problems: list[str]) -> None:
    modules = args.plugin_modules or Settings().plugin_modules
    try:
        load_plugin_modules(modules)
    except (PluginLoadError, ValueError) as exc:
        problems.append(f"--plugin-module: {exc}")


def _scheduler_config(
    path: Path | None, gates: dict[str, bool], version: KubeVersion, problems: list[str]
) -> Obj | None:
    if path is None:
        return None
    try:
        text = path.read_text()
        doc = orjson.loads(text) if text.lstrip().startswith("{") else go_yaml.load(text)
    except OSError as exc:
        problems.append(f"{path}: {exc.strerror or exc}")
        return None
    except (ValueError, yaml.YAMLError, RecursionError) as exc:
        problems.append(f"{path}: neither JSON nor YAML: {exc}")
        return None
    if not isinstance(doc, dict):
        problems.append(f"{path}: must be a KubeSchedulerConfiguration object")
        return None
    try:
        parse_config(doc, gates, version)
    except ConfigError as exc:
        problems.append(f"{path}: {exc}")
        return None
    return doc


def _workload(args: argparse.Namespace, problems: list[str]) -> TimedWorkload | None:
    if args.limit is not None and args.limit < 0:
        problems.append(f"--limit: {args.limit} must be 0 or more")
        return None
    try:
        return load_source([Path(p) for p in args.workload], pods=args.pods, form=args.form, start=args.start,
                           limit=args.limit)  # fmt: skip
    except WorkloadError as exc:
        problems.extend(exc.problems)
        return None


def run(args: argparse.Namespace) -> int:
    # The wall time reported is the command's (loading the workload, building the cluster, writing the outputs), from
    # kss's start when it gives it: the replay itself is often a small part of it.
    started = getattr(args, "started", None) or time.perf_counter()
    if wants_live(args):
        return run_live(args)
    problems: list[str] = []
    until = _seconds(args.until, "--until", problems)
    interval = _seconds(args.interval, "--interval", problems)
    if interval is not None and interval <= 0:
        problems.append(f"--interval: {args.interval!r} must be more than 0 s")
    version, gates = _version_and_gates(args, problems)
    _plugins(args, problems)
    config = _scheduler_config(args.scheduler_config, gates, version, problems)
    workload = None if problems else _workload(args, problems)
    replay: Replay | None = None
    metrics = Metrics(interval or 3600.0, workload=workload) if workload is not None else None
    observers: list[Observer] = [metrics] if metrics is not None else []
    if workload is not None:
        try:
            replay = Replay(workload, scheduler_config=config, feature_gates=gates, seed=args.seed, until=until,
                            sample_interval=interval or 3600.0, observers=observers,
                            record=bool(args.record_db), kube_version=version)  # fmt: skip
        except (WorkloadError, ConfigError, PluginLoadError) as exc:
            problems.extend(exc.problems if isinstance(exc, WorkloadError) else [str(exc)])
    if problems or replay is None or workload is None or metrics is None:
        for problem in problems:
            print(f"kss replay: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if (note := version.unmeasured_note()) is not None:
        print(f"kss replay: {note}", file=sys.stderr)
    if args.write_workload is not None:
        try:
            write_workload(workload, args.write_workload)
        except OSError as exc:
            print(f"kss replay: --write-workload {args.write_workload}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    name = args.name or workload.name
    recorder = None
    if args.record_db:
        from kss_sim.replay.recording import RunRecorder

        recorder = RunRecorder(args.record_db, name=name, workload=workload.source or workload.name, seed=args.seed,
                               config=replay.config_document, kube_version=version.name)  # fmt: skip
        replay.observers.append(recorder)
    progress = None if args.quiet else Progress(sys.stderr)
    if progress is not None:
        replay.observers.append(progress)
    try:
        result = replay.run()
    except BaseException as exc:  # Ctrl-C too: a recorded run ends failed, never left "running"
        if progress is not None:
            progress.end_line()
        if recorder is not None:
            recorder.fail(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
            recorder.close()
        if isinstance(exc, KeyboardInterrupt):
            print("kss replay: interrupted", file=sys.stderr)
            return 130
        raise
    summary = summarize(result, metrics)
    try:
        if args.out is not None:
            write_outputs(result, metrics, args.out, summary=summary)
        if recorder is not None:
            recorder.finish(summary, metrics.table(), [pod_row(p) for p in result.pods])
    finally:
        if recorder is not None:
            recorder.close()
    run_id = recorder.run_id if recorder is not None else None
    for line in summary_lines(result, summary, args.out, run_id, wall_seconds=time.perf_counter() - started):
        print(line)
    return EXIT_OK


WAIT_KEYS = ("p50", "p95", "p99", "max", "mean")


def summary_lines(
    result: ReplayResult, summary: Obj, out: Path | None, run_id: int | None, *, wall_seconds: float
) -> list[str]:
    """What ``kss replay`` prints when the run is over; ``wall_seconds``: how long the command took."""
    waits = summary.get("waitSeconds") or {}
    lines = [
        f"replayed {result.workload}: {summary.get('pods', len(result.pods))} pods over "
        f"{figures.duration(result.virtual_seconds)} of virtual time in "
        f"{wall_time_text(wall_seconds)} of wall time, the replay itself {wall_time_text(result.wall_seconds)} "
        f"({result.attempts} attempts, seed {result.seed})",
        f"scheduled {summary.get('scheduled')}, never scheduled {summary.get('neverScheduled')}, "
        f"preemptions {summary.get('preemptions', 0)}",
    ]
    evictions = summary.get("evictions") or {}
    if evictions.get("total"):
        by_reason = ", ".join(f"{r} {n}" for r, n in evictions.items() if r != "total" and n)
        lines[-1] += f", evictions {evictions['total']} ({by_reason})"
    if waits:
        lines.append("wait: " + ", ".join(f"{k} {figures.duration(_wait(waits.get(k)))}" for k in WAIT_KEYS))
    allocation = summary.get("allocation") or {}
    peaks = [_peak_text(r, v) for r, v in allocation.items() if isinstance(v, dict)]
    if peaks:
        lines.append("peak allocation: " + ", ".join(peaks))
        lines += figures.resource_notes(allocation)
    if out is not None:
        lines.append(f"outputs: {out}/ (summary.json, pods.csv, timeseries.csv, report.html)")
    if run_id is not None:
        lines.append(f"recorded as run {run_id}")
    return lines


def _peak_text(resource: str, allocation: Obj) -> str:
    """``cpu 75.0 % (90 of 120)``: the share, then the amounts in the resource's unit, as the report shows them."""
    text = f"{resource} {figures.percent(float(allocation.get('peak') or 0))}"
    requested, allocatable = allocation.get("peakRequested"), allocation.get("allocatable")
    if isinstance(requested, int | float) and isinstance(allocatable, int | float):
        text += f" ({figures.run_quantity(resource, requested)} of {figures.run_quantity(resource, allocatable)})"
    return text


def wall_time_text(seconds: float) -> str:
    """A wall time to read: milliseconds under a second (a small replay takes a few), else seconds."""
    return f"{seconds * 1000:.0f} ms" if seconds < 1 else f"{seconds:.1f} s"


def _wait(value: Any) -> float | None:
    return None if value is None else float(value)

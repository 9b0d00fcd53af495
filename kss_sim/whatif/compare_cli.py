"""``kss compare WORKLOAD --config a.yaml --config b.yaml``: one workload under each configuration, compared;
``kss compare WORKLOAD --kube-version 1.34 --kube-version 1.36``: under one configuration at each version."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from urllib.parse import quote

import orjson

from kss_sim import figures
from kss_sim.config import OptionError
from kss_sim.config import version_and_gates as config_version_and_gates
from kss_sim.kube.versions import KubeVersion, kube_version
from kss_sim.replay.outputs import write_outputs
from kss_sim.replay.workload import WorkloadError, parse_duration
from kss_sim.whatif import inputs
from kss_sim.whatif.compare import (
    ACROSS_CONFIGURATIONS,
    ACROSS_VERSIONS,
    Side,
    SideRun,
    compare_document,
    differences,
    figure_rows,
    new_group,
    render_compare_html,
    run_sides,
    show_figure,
    side_names,
)

DEFAULTS = "default"  # --config default: the Kubernetes version's default profile (when no file of that name exists)


EXAMPLES = """examples:
  kss compare examples/replay/bin-packing.yaml --config default --config examples/replay/most-allocated.yaml
  kss compare day.yaml --config a.yaml --config b.yaml --out ab/ --record-db runs.db   # and the UI's Compare page
  kss compare examples/replay/gpu-day.yaml --kube-version 1.34 --kube-version 1.36   # what an upgrade changes"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("workload", nargs="+", type=Path, help="a workload file, a trace directory, or node + pod CSVs")
    p.add_argument(
        "--config", action="append", dest="configs", default=[], metavar="FILE",
        help="a KubeSchedulerConfiguration, one per side (two or more); 'default' for the version's defaults; "
        "with two or more --kube-version, at most one, the same at every version",
    )  # fmt: skip
    p.add_argument("--pods", help="the trace's pod list: default, gpuspec33, multigpu50 (a trace directory)")
    p.add_argument("--form", choices=("extended", "dra"), default="extended", help="how the trace's GPUs are offered")
    p.add_argument("--limit", type=int, help="keep the first N pods")
    p.add_argument("--start", type=Path, help="a `kss export` snapshot as the cluster at time 0")
    p.add_argument("--until", metavar="T", help="stop every side at this virtual time")
    p.add_argument("--interval", metavar="T", default="1h", help="the samples' interval (default 1h)")
    p.add_argument("--out", type=Path, help="where to write (default: <workload>-compare)")
    p.add_argument("--record-db", metavar="FILE|URL", help="record each side as a run (one compare group)")
    p.add_argument("--ui-url", default="http://127.0.0.1:8000", help="with --record-db: kss serve's URL for links")
    p.add_argument("--quiet", action="store_true", help="no line per side")
    inputs.add_engine_arguments(p, config=False, versions=True)
    p.epilog = EXAMPLES


def _sides(args: argparse.Namespace, gates: dict[str, bool], version: KubeVersion) -> list[Side]:
    if len(args.configs) < 2:
        raise WorkloadError(["--config: two or more are needed (one per side), or --kube-version twice or more"])
    sides = []
    problems = []
    for name, source in zip(side_names(args.configs), args.configs, strict=True):
        path = Path(source)
        if source == DEFAULTS and not path.exists():
            sides.append(Side(name, f"the v{version.name} defaults", None))
            continue
        try:
            sides.append(Side(name, source, inputs.read_config(path, gates, version)))
        except WorkloadError as exc:
            problems += exc.problems
    if problems:
        raise WorkloadError(problems)
    return sides


def _version_sides(args: argparse.Namespace) -> list[Side]:
    """One side per --kube-version, each with its gates (--feature-gates checked against it) and the one
    configuration (--config, validated at each version; else each version's defaults)."""
    if len(args.configs) > 1:
        raise WorkloadError(["--config: one at most with two or more --kube-version (versions or configurations)"])
    sides: list[Side] = []
    problems: list[str] = []
    for option in args.kube_versions:
        try:
            version, gates = config_version_and_gates(option, args.feature_gates)
        except OptionError as exc:
            problems.append(str(exc) if exc.option == "--kube-version" else f"{exc} (at v{option})")
            continue
        name = f"v{version.name}"
        if any(side.name == name for side in sides):
            problems.append(f"--kube-version: {option} given twice")
            continue
        source = args.configs[0] if args.configs else DEFAULTS
        if source == DEFAULTS and not Path(source).exists():
            sides.append(Side(name, f"the v{version.name} defaults", None, version, gates))
            continue
        try:
            config = inputs.read_config(Path(source), gates, version)
        except WorkloadError as exc:
            problems += [f"{p} (at v{version.name})" for p in exc.problems]
            continue
        sides.append(Side(name, source, config, version, gates))
    if problems:
        raise WorkloadError(problems)
    return sides


def run(args: argparse.Namespace) -> int:
    from kss_sim.replay.sources import load_source

    across_versions = len(args.kube_versions) > 1
    args.kube_version = args.kube_versions[0] if len(args.kube_versions) == 1 else None
    try:
        # Across versions each side has its own version and gates (a gate may exist at one version only).
        version, gates = (kube_version(), {}) if across_versions else inputs.version_and_gates(args)
        inputs.load_plugins(args)
        sides = _version_sides(args) if across_versions else _sides(args, gates, version)
        interval = parse_duration(args.interval, "--interval")
        until = parse_duration(args.until, "--until") if args.until else None
        if interval <= 0:
            raise WorkloadError(["--interval: must be more than 0"])
        workload = load_source(list(args.workload), pods=args.pods, form=args.form, start=args.start, limit=args.limit)
    except WorkloadError as exc:
        for problem in exc.problems:
            print(f"kss compare: {problem}", file=sys.stderr)
        return 2
    except ValueError as exc:  # a bad duration
        print(f"kss compare: {exc}", file=sys.stderr)
        return 2
    group = new_group(workload.name) if args.record_db else None

    def progress(run: SideRun) -> None:
        if not args.quiet:
            s = run.outcome.summary
            print(f"kss compare: {run.side.name}: {s['scheduled']}/{s['pods']} scheduled, wait p95 "
                  f"{figures.duration(s['waitSeconds']['p95'])}, {figures.duration(s['wallSeconds'])} of wall time",
                  file=sys.stderr)  # fmt: skip

    try:
        runs = run_sides(workload, sides, feature_gates=gates, kube_version=version, seed=args.seed,
                         interval=interval, until=until, record_db=args.record_db, group=group,
                         on_side=progress)  # fmt: skip
    except Exception as exc:  # a configuration's plugin that fails to build, a database that cannot be written
        print(f"kss compare: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    out = args.out or Path(f"{workload.name}-compare")
    diffs = differences(runs, ACROSS_VERSIONS if across_versions else ACROSS_CONFIGURATIONS)
    doc = compare_document(workload, runs, diffs, seed=args.seed, group=group)
    for run_ in runs:
        write_outputs(run_.outcome.result, run_.outcome.metrics, out / run_.side.name, summary=run_.outcome.summary)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compare.json").write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")
    ui = args.ui_url if group is not None else None
    (out / "compare.html").write_text(render_compare_html(doc, runs, ui_url=ui), encoding="utf-8")
    _print_table(runs)
    what = "placed, waiting or refused differently" if across_versions else "placed differently"
    print(f"{len(diffs)} pod(s) {what}; wrote {out / 'compare.json'} and {out / 'compare.html'}")
    if group is not None:
        ids = ", ".join(str(r.run_id) for r in runs)
        print(f"recorded as runs {ids}: {args.ui_url}/ui/compare?group={quote(group)}")
    return 0


def _print_table(runs: list[SideRun]) -> None:
    rows = [(label, [show_figure(v, kind) for v in values]) for label, kind, values in
            figure_rows([r.outcome.summary for r in runs])]  # fmt: skip
    names = [r.side.name for r in runs]
    width = max(len(label) for label, _ in rows)
    cols = [max(len(n), *(len(v[i]) for _, v in rows)) for i, n in enumerate(names)]
    print(" " * width + "  " + "  ".join(n.rjust(w) for n, w in zip(names, cols, strict=True)))
    for label, values in rows:
        print(label.ljust(width) + "  " + "  ".join(v.rjust(w) for v, w in zip(values, cols, strict=True)))
    for note in figures.resource_notes({n: None for r in runs for n in (r.outcome.summary.get("allocation") or {})}):
        print(note)

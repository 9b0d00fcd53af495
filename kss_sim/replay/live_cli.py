"""The live driver's command line: ``kss replay WORKLOAD --target-url URL --speed X`` (``kss replay`` hands its
options to :func:`run_live`), also ``python -m kss_sim.replay.live_cli``."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import orjson
import yaml

from kss_sim.kube import go_yaml
from kss_sim.replay.sources import load_source
from kss_sim.replay.workload import TimedWorkload, WorkloadError, parse_duration

if TYPE_CHECKING:
    from kss_sim.kube.objects import Obj

EXIT_OK, EXIT_REFUSED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130
# kss replay's options that only an offline run honours
_OFFLINE_ONLY = (
    ("--out", "out"),
    ("--record-db", "record_db"),
    ("--feature-gates", "feature_gates"),
    ("--kube-version", "kube_version"),
    ("--plugin-module", "plugin_modules"),
    ("--write-workload", "write_workload"),
)


def add_live_arguments(parser: argparse.ArgumentParser) -> None:
    """The live driver's options (``kss replay`` takes them; ``--target-url`` or ``--target-kubeconfig`` makes a
    replay live)."""
    group = parser.add_argument_group("live replay against a running kss serve")
    group.add_argument("--target-url", help="the simulator's URL (http://127.0.0.1:8000): replay live against it")
    group.add_argument("--target-kubeconfig", help="or a kubeconfig for it (`kss kubeconfig` prints one)")
    group.add_argument("--target-context", help="context in --target-kubeconfig (default: its current context)")
    group.add_argument("--target-token", help="bearer token for the simulator (its KSS_API_TOKEN)")
    group.add_argument(
        "--speed",
        type=float,
        default=1.0,
        help="virtual seconds per wall second (default 1: real time; 60: a minute a second); the pods sent get "
        "their grace periods and tolerationSeconds divided by it, the server's controllers keep their own periods",
    )


def wants_live(args: argparse.Namespace) -> bool:
    """Whether the options ask for a live replay."""
    return bool(getattr(args, "target_url", None) or getattr(args, "target_kubeconfig", None))


def run_live(args: argparse.Namespace, workload: TimedWorkload | None = None) -> int:
    """Run a live replay from ``kss replay``'s options; ``workload`` when the caller loaded it already (else
    ``args.workload`` as ``kss replay`` reads it: workload files, a trace directory, or node CSV + pod CSV, with
    ``--pods``, ``--form``, ``--start``, ``--limit``). Exit 0; 1 if the server refused anything or cannot be
    reached; 2 on bad input; 130 on Ctrl-C."""
    # The HTTP and kubeconfig clients (~0.4 s to import) only for a live run, not for every `kss replay`.
    from kss_sim.replay.live import LiveReplay
    from kss_sim.replay.live_api import ApiError, Connection, Target
    from kss_sim.replay.live_summary import Progress

    problems: list[str] = []
    for option, attribute in _OFFLINE_ONLY:  # the server's own settings and UI take their place
        if getattr(args, attribute, None):
            problems.append(f"{option}: not for a live replay (the server's settings and UI apply)")
    until = _option_seconds(args, "until", problems)
    speed = float(getattr(args, "speed", 1.0) or 0)
    if speed <= 0:
        problems.append(f"--speed: {speed:g} must be more than 0")
    config = _config(getattr(args, "scheduler_config", None), problems)
    if workload is None and not problems:
        workload = _load(args, problems)
    try:
        connection = Connection.from_options(
            getattr(args, "target_url", None),
            token=getattr(args, "target_token", None),
            kubeconfig=getattr(args, "target_kubeconfig", None),
            context=getattr(args, "target_context", None),
        )
    except ValueError as exc:
        problems.append(str(exc))
    if problems or workload is None:
        for problem in problems:
            print(f"kss replay: {problem}", file=sys.stderr)
        return EXIT_BAD_INPUT
    target = Target(connection)
    quiet = bool(getattr(args, "quiet", False))
    live = LiveReplay(
        workload,
        target,
        speed=speed,
        until=until,
        scheduler_config=config,
        progress=None if quiet else Progress(sys.stderr),
        errors=sys.stderr,
    )
    try:
        summary = live.run()
    except ApiError as exc:  # the server cannot be reached or refuses discovery: nothing was done
        print(f"kss replay: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    finally:
        target.close()
    for line in summary.lines():
        print(line)
    if summary.interrupted:
        return EXIT_INTERRUPTED
    return EXIT_REFUSED if summary.errors else EXIT_OK


def _load(args: argparse.Namespace, problems: list[str]) -> TimedWorkload | None:
    paths = getattr(args, "workload", None)
    paths = [paths] if isinstance(paths, str | Path) else list(paths or [])
    start = getattr(args, "start", None)
    try:
        return load_source(
            [Path(p) for p in paths],
            pods=getattr(args, "pods", None),
            form=getattr(args, "form", None) or "extended",
            start=Path(start) if start else None,
            limit=getattr(args, "limit", None),
        )
    except WorkloadError as exc:
        problems += exc.problems
        return None


def _option_seconds(args: argparse.Namespace, name: str, problems: list[str]) -> float | None:
    value = getattr(args, name, None)
    if value is None:
        return None
    try:
        return parse_duration(value, f"--{name}")
    except ValueError as exc:
        problems.append(str(exc))
        return None


def _config(path: str | None, problems: list[str]) -> Obj | None:
    if not path:
        return None
    try:
        text = Path(path).read_text()
        doc = orjson.loads(text) if text.lstrip().startswith("{") else go_yaml.load(text)
    except (OSError, ValueError, yaml.YAMLError, RecursionError) as exc:
        problems.append(f"{path}: {exc}")
        return None
    if not isinstance(doc, dict):
        problems.append(f"{path}: must be a KubeSchedulerConfiguration object")
        return None
    return doc


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``python -m kss_sim.replay.live_cli``: the live driver on its own (``kss replay --target-url`` is the same)."""
    parser.add_argument("workload", nargs="+", help="a timed workload file, a trace directory, or node CSV + pod CSV")
    parser.add_argument("--pods", help="with a trace directory: its pod list (default, gpuspec33, multigpu50)")
    parser.add_argument("--form", default="extended", choices=("extended", "dra"), help="how trace GPUs are asked")
    parser.add_argument("--limit", type=int, help="only the first N pods of a trace")
    parser.add_argument("--start", help="a `kss export` snapshot as the starting state")
    parser.add_argument("--until", help="stop at this virtual time (seconds or a duration: 90s, 5m, 1h30m, 2d)")
    parser.add_argument("--scheduler-config", help="a KubeSchedulerConfiguration applied before the run")
    parser.add_argument("--quiet", action="store_true", help="no progress line")
    add_live_arguments(parser)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kss_sim.replay.live_cli", description=__doc__.splitlines()[0])
    add_arguments(parser)
    args = parser.parse_args(argv)
    if not wants_live(args):
        parser.error("--target-url or --target-kubeconfig is required")
    return run_live(args)


if __name__ == "__main__":
    sys.exit(main())

"""``kss simulate``: run scenario files offline and write golden-format results."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from kss_sim.config import OptionError, Settings, add_kube_version_argument, version_and_gates
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins import PluginLoadError, load_plugin_modules
from kss_sim.scheduler.record import Attempt
from kss_sim.simulation.runner import DETAIL_LEVELS, run_scenario

EXAMPLES = """examples:
  kss simulate tests/golden/dra/dra-adminaccess-000.scenario.json          # the result, golden format, on stdout
  kss simulate --out-dir results/ tests/golden/dra/*.scenario.json --detail summary
  kss simulate --plugin-module my_plugins scenario.json --record-db runs.db"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenarios", nargs="+", type=Path, help="scenario JSON files (golden format)")
    p.add_argument("--detail", choices=DETAIL_LEVELS, default="full", help="how much of each attempt to write")
    p.add_argument("--out-dir", type=Path, help="write DIR/<name>.result.json per scenario (default: stdout)")
    p.add_argument(
        "--plugin-module",
        action="append",
        dest="plugin_modules",
        metavar="MODULE",
        help="a Python module of your own scheduler plugins, imported first; repeatable (KSS_PLUGIN_MODULES)",
    )
    p.add_argument(
        "--feature-gates",
        default=None,
        metavar="GATES",
        help="alpha features, e.g. GenericWorkload=true,GangScheduling=true (KSS_FEATURE_GATES)",
    )
    add_kube_version_argument(p)
    p.add_argument(
        "--record-db", help="also record every attempt into this results database (a file, or a SQLAlchemy URL)"
    )
    p.epilog = EXAMPLES


def _result_name(path: Path) -> str:
    name = path.name
    for suffix in (".scenario.json", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _database_url(target: str | Path) -> str:
    """``--record-db`` takes a file path or any SQLAlchemy URL."""
    text = str(target)
    return text if "://" in text else f"sqlite:///{text}"


def _check_scenario(doc: Any) -> dict[str, Any]:
    """A scenario is an object with nodes and/or pods to schedule (not a result or expected file)."""
    if not isinstance(doc, dict):
        raise ValueError(f"a scenario must be a JSON object, not {type(doc).__name__}")
    if "results" in doc and "pending" not in doc:
        raise ValueError("this is a result (or expected) file, not a scenario")
    for key in ("nodes", "pods", "pending"):
        if doc.get(key) is not None and not isinstance(doc[key], list):
            raise ValueError(f"{key!r} must be a list")
    if not doc.get("nodes") and not doc.get("pending"):
        raise ValueError("the scenario has neither 'nodes' nor 'pending' pods")
    return doc


def _recorder(target: str | Path, kube_version: str) -> Any:
    """A results service writing into a results database at ``path`` (built by Alembic).

    Attempts are encoded and inserted by a writer process, on another core than the scheduling loop.
    """
    from kss_sim.db import make_engine, make_session_factory, session_scope, upgrade_database
    from kss_sim.results.attempts import ResultsService

    url = _database_url(target)
    engine = make_engine(url, sqlite_synchronous="NORMAL")
    upgrade_database(engine)
    factory = make_session_factory(engine)
    service = ResultsService(
        lambda: session_scope(factory), writer_url=url, sqlite_synchronous="NORMAL", kube_version=kube_version
    )
    service.start()
    return service


def run(args: argparse.Namespace) -> int:
    allow_missing = os.environ.get("KSS_ALLOW_MISSING_PLUGINS") == "1"
    # KSS_KUBE_VERSION and KSS_FEATURE_GATES are checked as the settings are read (a bad one names itself, cli.py).
    try:
        version, gates = version_and_gates(args.kube_version, args.feature_gates)
    except OptionError as exc:
        print(f"kss simulate: {exc}", file=sys.stderr)
        return 2
    if (note := version.unmeasured_note()) is not None:
        print(f"kss simulate: {note}", file=sys.stderr)
    try:
        load_plugin_modules(args.plugin_modules or Settings().plugin_modules)
    except PluginLoadError as exc:  # the user's plugin module: one clear line, no traceback
        print(f"kss simulate: {exc}", file=sys.stderr)
        return 2
    try:
        recorder = _recorder(args.record_db, version.name) if args.record_db else None
    except Exception as exc:  # a bad URL or an unwritable file: say so, no traceback
        print(f"kss simulate: --record-db {args.record_db}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2

    def on_attempt(att: Attempt, pod: PodInfo) -> None:
        if recorder is not None:
            recorder.submit(att, namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid)

    if args.out_dir is None and len(args.scenarios) > 1:
        print("kss simulate: several scenarios need --out-dir", file=sys.stderr)
        return 2
    failures = 0
    for path in args.scenarios:
        try:
            scenario = _check_scenario(json.loads(path.read_text()))
            result = run_scenario(
                scenario,
                args.detail,
                allow_missing_plugins=allow_missing,
                record_all=recorder is not None,
                feature_gates=gates,
                kube_version=version,
                on_attempt=on_attempt if recorder is not None else None,
            )
        except Exception as exc:  # one bad scenario must not stop the batch
            failures += 1
            print(f"kss simulate: {path}: {type(exc).__name__}: {exc}", file=sys.stderr)
            continue
        text = json.dumps(result, separators=(",", ":"))
        if args.out_dir is None:
            sys.stdout.write(text + "\n")
        else:
            args.out_dir.mkdir(parents=True, exist_ok=True)
            (args.out_dir / f"{_result_name(path)}.result.json").write_text(text)
    if recorder is not None:
        recorder.stop()
        if recorder.errors:
            print(f"kss simulate: recording failed: {recorder.errors[0]}", file=sys.stderr)
            failures += 1
    return 1 if failures else 0

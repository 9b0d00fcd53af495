"""``kss simulate``: run scenario files offline and write golden-format results."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from app.simulation.runner import DETAIL_LEVELS, run_scenario


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("scenarios", nargs="+", type=Path, help="scenario JSON files (golden format)")
    p.add_argument("--detail", choices=DETAIL_LEVELS, default="full", help="how much of each attempt to write")
    p.add_argument("--out-dir", type=Path, help="write DIR/<name>.result.json per scenario (default: stdout)")
    p.add_argument("--record-db", type=Path, help="also record every attempt into this results database")


def _result_name(path: Path) -> str:
    name = path.name
    for suffix in (".scenario.json", ".json"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def run(args: argparse.Namespace) -> int:
    allow_missing = os.environ.get("KSS_ALLOW_MISSING_PLUGINS") == "1"
    if args.out_dir is None and len(args.scenarios) > 1:
        print("kss simulate: several scenarios need --out-dir", file=sys.stderr)
        return 2
    failures = 0
    for path in args.scenarios:
        try:
            scenario = json.loads(path.read_text())
            result = run_scenario(scenario, args.detail, allow_missing_plugins=allow_missing)
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
    return 1 if failures else 0

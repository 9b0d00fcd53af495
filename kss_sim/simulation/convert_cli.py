"""``kss convert``: Alibaba's 2023 GPU trace as a ``kss simulate`` scenario or as manifests to apply, in the
``nvidia.com/gpu`` (extended resource) or the DRA (``resource.k8s.io/v1``) form."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from kss_sim.simulation.alibaba_v2023 import FORMS, POD_LISTS, TraceError, convert, load_trace

# The shared workloads sit beside the repository (../shared/workloads), as the benchmarks expect them.
DEFAULT_TRACE_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "workloads" / "alibaba-gpu-trace-v2023"
OUTPUT_FORMATS = ("scenario", "yaml")


EXAMPLES = """examples:
  kss convert --form dra --limit 200 --out trace-dra.yaml      # manifests for kubectl apply or kss import
  kss convert --form extended --out trace.scenario.json        # a scenario for kss simulate
  kss convert --form dra --trace-dir ~/alibaba-gpu-trace-v2023 --pods multigpu50

The trace is not in the repository: docs/alibaba-v2023.md says where to get it."""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--form", choices=FORMS, required=True, help="dra (ResourceClaims) or extended (nvidia.com/gpu)")
    p.add_argument("--pods", choices=tuple(POD_LISTS), default="default", help="which pod list of the trace")
    p.add_argument("--limit", type=int, metavar="N", help="only the first N pods in creation order (all nodes)")
    p.add_argument(
        "--format",
        choices=OUTPUT_FORMATS,
        help="scenario: golden-format JSON for kss simulate (claims generated per pod); yaml: multi-document "
        "manifests for kubectl apply / kss import (claim templates). Default: scenario when --out ends in .json",
    )
    p.add_argument("--out", type=Path, help="write to this file (default: standard output)")
    p.add_argument(
        "--trace-dir", type=Path, default=DEFAULT_TRACE_DIR, help="the trace's CSV files (default: %(default)s)"
    )
    p.epilog = EXAMPLES


def run(args: argparse.Namespace) -> int:
    if args.limit is not None and args.limit < 0:
        print("kss convert: --limit must not be negative", file=sys.stderr)
        return 2
    output_format = args.format or ("scenario" if args.out and args.out.suffix == ".json" else "yaml")
    try:
        trace = load_trace(args.trace_dir, args.pods, args.limit)
    except OSError as exc:  # the trace is not in the repository: where it is looked for, and how to say where
        print(
            f"kss convert: {exc.filename or args.trace_dir}: {exc.strerror or exc} (--trace-dir DIR names the "
            "folder of Alibaba's 2023 GPU trace; docs/alibaba-v2023.md says where to get it)",
            file=sys.stderr,
        )
        return 2
    except TraceError as exc:
        print(f"kss convert: {exc}", file=sys.stderr)
        return 2
    workload = convert(trace, args.form, args.pods)
    if output_format == "scenario":
        text = json.dumps(workload.scenario(), separators=(",", ":")) + "\n"
    else:
        dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
        text = yaml.dump_all(workload.manifests(), Dumper=dumper, sort_keys=False)
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text)
        print(
            f"kss convert: {len(workload.nodes)} nodes, {len(workload.pods)} pods ({args.form} form) -> {args.out}",
            file=sys.stderr,
        )
    return 0

"""DRA trace benchmark: Alibaba's 2023 GPU trace scheduled offline in both forms of ``kss convert``.

Usage: ``.venv/bin/python bench/dra_trace.py [--pods default|gpuspec33|multigpu50] [--limit N]
[--form both|dra|extended] [--record] [--profile] [--save F] [--expect F]``.

The same demand twice: ``extended`` (nodes with ``nvidia.com/gpu``, model constraints as node affinity) and ``dra``
(ResourceSlices, one claim per GPU pod with a CEL model selector, scheduled by DynamicResources' allocator). Golden
rules (as ``kss simulate``): every node evaluated, ties by node name, pods in creation order, placements only
unless ``--record``. Prints, per form, pods/s, wall time, placed pods, GPU pods placed and GPUs allocated by model,
then how many pods landed on the same node in both forms. The DRA form runs once DynamicResources accepts claims
(a one-pod probe decides; until then it is reported as skipped).
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from _common import WORKLOADS, Result, check, machine, parser, run

from kss_sim.simulation.alibaba_v2023 import POD_LISTS, Trace, TraceNode, TracePod, Workload, convert, load_trace
from kss_sim.simulation.runner import ScenarioRun

TRACE = WORKLOADS / "alibaba-gpu-trace-v2023"


def dra_accepts_claims() -> bool:
    """Whether DynamicResources places a pod whose claim one node's slice can satisfy (a one-pod probe)."""
    probe = Trace(
        nodes=[TraceNode("probe-node", 8000, 16384, 1, "T4")],
        pods=[TracePod("probe-pod", 1000, 1024, 1, 1000, ("T4",), creation_time=0)],
    )
    scenario = convert(probe, "dra", "probe").scenario()
    try:
        attempts = ScenarioRun(scenario, record=False).run()
    except Exception as exc:  # a plugin half-way through its port: report, do not crash the bench
        print(f"dra probe failed: {type(exc).__name__}: {exc}")
        return False
    return any(att.bound_to == "probe-node" for att, _ in attempts)


def gpu_figures(workload: Workload, trace: Trace, result: Result) -> str:
    """Placed pods, GPU pods placed and GPUs taken (by the bound pods' demand), per model of the nodes used."""
    placements = result.placements()
    model_of = {n.name: n.model for n in trace.nodes}
    gpus_by_model = Counter({m: 0 for m in model_of.values() if m})
    for trace_node in trace.nodes:
        gpus_by_model[trace_node.model] += trace_node.gpus
    taken: Counter[str] = Counter()
    gpu_pods = placed_gpu_pods = 0
    for pod in trace.pods:
        bound = placements.get(f"paib-gpu/{pod.name}")
        if pod.num_gpu:
            gpu_pods += 1
        if pod.num_gpu and bound and not bound.startswith("nominated:"):
            placed_gpu_pods += 1
            taken[model_of[bound]] += pod.num_gpu
    total = sum(gpus_by_model.values())
    by_model = ", ".join(f"{m} {taken[m]}/{gpus_by_model[m]}" for m in sorted(gpus_by_model) if gpus_by_model[m])
    return (
        f"  {workload.form}: placed {result.scheduled}/{result.pods} pods, GPU pods {placed_gpu_pods}/{gpu_pods}; "
        f"GPUs allocated {sum(taken.values())}/{total} ({100 * sum(taken.values()) / max(total, 1):.1f}%): {by_model}"
    )


def main() -> int:
    p = parser(__doc__)
    p.add_argument("--trace-dir", type=Path, default=TRACE)
    p.add_argument("--pods", choices=tuple(POD_LISTS), default="gpuspec33")
    p.add_argument("--limit", type=int, help="only the first N pods in creation order")
    p.add_argument("--form", choices=("both", "dra", "extended"), default="both")
    args = p.parse_args()
    print(machine())
    t0 = time.perf_counter()
    trace = load_trace(args.trace_dir, args.pods, args.limit)
    read = time.perf_counter() - t0
    print(f"trace {args.pods}: {len(trace.nodes)} nodes, {len(trace.pods)} pods, read in {read:.2f} s")
    forms = ["extended", "dra"] if args.form == "both" else [args.form]
    if "dra" in forms and not dra_accepts_claims():
        print("dra: skipped, DynamicResources does not place pods with claims yet")
        forms.remove("dra")
    results: list[Result] = []
    figures: list[str] = []
    for form in forms:
        t1 = time.perf_counter()
        workload = convert(trace, form, args.pods)
        scenario: dict[str, Any] = workload.scenario()
        print(f"{form}: scenario built in {time.perf_counter() - t1:.2f} s")
        res = run(f"{args.pods}-{form}", scenario, args)
        results.append(res)
        figures.append(gpu_figures(workload, trace, res))
    print("\n".join(figures))
    if len(results) == 2:
        a, b = (r.placements() for r in results)
        same = sum(1 for pod, node in a.items() if node is not None and b.get(pod) == node)
        print(f"same node in both forms: {same} of {len(a)} pods")
        ratio = results[1].seconds / results[0].seconds
        print(f"dra/extended wall time: {ratio:.2f}x")
    return check(results, args)


if __name__ == "__main__":
    sys.exit(main())

"""``kss capacity``: how many more replicas of a pod fit the cluster, and how many nodes to add for a workload."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import KubeVersion
from kss_sim.replay.sources import load_source
from kss_sim.replay.workload import TimedWorkload, WorkloadError, parse_duration, read_snapshot
from kss_sim.whatif import inputs
from kss_sim.whatif.capacity import (
    CapacityReport,
    NodeSearch,
    count_replicas,
    nodes_for_replicas,
    nodes_for_workload,
    prepare_pod,
    read_node_template,
)

EXAMPLES = """examples:
  kss capacity pod.yaml --snapshot cluster.yaml             # how many more copies of the pod fit
  kss capacity pod.yaml --workload examples/replay/gpu-day.yaml --max 50 -o json
  kss capacity pod.yaml --snapshot cluster.yaml --add-nodes node.yaml --replicas 40
  kss capacity --add-nodes node.yaml --for-workload day.yaml --p95-wait-under 5m"""


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("pod", nargs="?", type=Path, help="the pod manifest whose copies are counted (YAML/JSON)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("--snapshot", type=Path, help="the cluster: a `kss export` snapshot (or any manifests file)")
    where.add_argument("--workload", type=Path, help="the cluster: a timed workload's starting objects")
    p.add_argument("--max", type=int, metavar="N", help="stop after N copies (cluster-capacity's --max-limit)")
    p.add_argument("--add-nodes", type=Path, metavar="NODE.yaml", help="find how many nodes of this shape to add")
    p.add_argument("--replicas", type=int, metavar="N", help="with --add-nodes: the copies of the pod that must fit")
    p.add_argument("--for-workload", type=Path, metavar="W", help="with --add-nodes: a timed workload to place whole")
    p.add_argument("--p95-wait-under", metavar="T", help="with --for-workload: enough when its p95 wait is under T")
    p.add_argument("--until", metavar="T", help="with --for-workload: stop each replay at this virtual time")
    p.add_argument("--max-nodes", type=int, default=1000, help="with --add-nodes: the most nodes to try (1000)")
    p.add_argument("-o", "--output", choices=("text", "json"), default="text", help="text (default) or json")
    inputs.add_engine_arguments(p)
    p.epilog = EXAMPLES


def _problems(args: argparse.Namespace) -> list[str]:
    problems = []
    if args.for_workload is None and args.pod is None:
        problems.append("a pod manifest is needed (or --add-nodes NODE.yaml --for-workload W)")
    if args.for_workload is None and args.snapshot is None and args.workload is None:
        # Counted against no nodes at all, the answer would be 0, which says nothing.
        problems.append("the cluster is needed: --snapshot FILE (`kss export` writes one) or --workload W")
    if args.for_workload is not None and args.add_nodes is None:
        problems.append("--for-workload needs --add-nodes NODE.yaml")
    if args.replicas is not None and args.add_nodes is None:
        problems.append("--replicas needs --add-nodes NODE.yaml")
    if args.add_nodes is not None and args.for_workload is None and args.replicas is None:
        problems.append("--add-nodes needs --replicas N (or --for-workload W)")
    if args.p95_wait_under is not None and args.for_workload is None:
        problems.append("--p95-wait-under needs --for-workload W")
    for flag, value in (("--max", args.max), ("--replicas", args.replicas), ("--max-nodes", args.max_nodes)):
        if value is not None and value < 1:
            problems.append(f"{flag}: must be 1 or more")
    return problems


def _cluster(args: argparse.Namespace) -> tuple[list[Obj], Obj | None]:
    if args.snapshot is not None:
        return read_snapshot(args.snapshot)
    workload = load_source([args.workload])
    return workload.start, workload.scheduler_config


def run(args: argparse.Namespace) -> int:
    problems = _problems(args)
    if problems:
        for problem in problems:
            print(f"kss capacity: {problem}", file=sys.stderr)
        return 2
    try:
        version, gates = inputs.version_and_gates(args)
        inputs.load_plugins(args)
        template = read_node_template(inputs.read_yaml(args.add_nodes)) if args.add_nodes else None
        if args.for_workload is not None:
            assert template is not None
            workload = load_source([args.for_workload])
            config = _config(args, workload.scheduler_config, gates, version)
            return _for_workload(args, workload, template, config, gates, version)
        objects, own_config = _cluster(args)
        config = _config(args, own_config, gates, version)
        pod = prepare_pod(inputs.read_yaml(args.pod), objects)
    except WorkloadError as exc:
        for problem in exc.problems:
            print(f"kss capacity: {problem}", file=sys.stderr)
        return 2
    if template is not None:
        search, report = nodes_for_replicas(
            pod, objects, template, args.replicas, config=config, feature_gates=gates, kube_version=version,
            max_nodes=args.max_nodes, seed=args.seed,
        )  # fmt: skip
        _print_search(args, search, report, f"{args.replicas} replica(s) of the pod {report.pod}")
        return 0 if search.nodes is not None else 1
    report = count_replicas(
        pod, objects, config=config, feature_gates=gates, kube_version=version, limit=args.max, seed=args.seed
    )
    if args.output == "json":
        print(json.dumps(report.to_dict(), indent=2))
    else:
        print(format_report(report))
    return 0


def _config(args: argparse.Namespace, own: Obj | None, gates: dict[str, bool], version: KubeVersion) -> Obj | None:
    if args.scheduler_config is not None:
        return inputs.read_config(args.scheduler_config, gates, version)
    return inputs.check_config(own, "the cluster's schedulerConfig", gates, version) if own is not None else None


def _for_workload(
    args: argparse.Namespace,
    workload: TimedWorkload,
    template: Obj,
    config: Obj | None,
    gates: dict[str, bool],
    version: KubeVersion,
) -> int:
    try:
        bound = parse_duration(args.p95_wait_under, "--p95-wait-under") if args.p95_wait_under else None
        until = parse_duration(args.until, "--until") if args.until else None
    except ValueError as exc:
        print(f"kss capacity: {exc}", file=sys.stderr)
        return 2
    search = nodes_for_workload(
        workload, template, p95_wait_under=bound, config=config, feature_gates=gates, kube_version=version,
        max_nodes=args.max_nodes, seed=args.seed, until=until,
    )  # fmt: skip
    goal = f"every pod of {workload.name} scheduled"
    if bound is not None:
        goal = f"{workload.name}'s p95 wait under {bound:g} s"
    _print_search(args, search, None, goal)
    return 0 if search.nodes is not None else 1


def format_report(report: CapacityReport) -> str:
    """cluster-capacity's verbose report: the count, the termination reason, the copies per node."""
    lines = [
        f"The cluster can schedule {report.count} instance(s) of the pod {report.pod}.",
        "",
        f"Termination reason: {report.stop_reason}",
    ]
    if report.per_node:
        lines += ["", "Pod distribution among nodes:", report.pod]
        lines += [f"\t- {node}: {n} instance(s)" for node, n in report.per_node.items()]
    return "\n".join(lines)


def _print_search(args: argparse.Namespace, search: NodeSearch, report: CapacityReport | None, goal: str) -> None:
    if args.output == "json":
        doc = search.to_dict()
        if report is not None:
            doc["capacity"] = report.to_dict()
        print(json.dumps(doc, indent=2))
        return
    if search.nodes is None:
        print(f"Even {search.max_nodes} added node(s) of the shape {search.template} are not enough for {goal}.")
    elif search.nodes == 0:
        print(f"No node needs to be added for {goal}.")
    else:
        print(f"{search.nodes} node(s) of the shape {search.template} must be added for {goal}.")
    tried = ", ".join(f"{k}: {'enough' if ok else 'not enough'}" for k, ok in sorted(search.tried.items()))
    print(f"Tried (added nodes: verdict): {tried}")
    if report is not None:
        print()
        print(format_report(report))

"""The options of ``kss sync`` and ``kss import --source-kubeconfig``, apart from the code that runs them: argparse
alone, so a parser (``kss import --help``) lists them without loading the Kubernetes client.

One name per concept across kss's commands: the real cluster is ``--source-kubeconfig`` / ``--source-context``, the
simulator ``--target-url`` (or ``--target-kubeconfig`` / ``--target-context``) and ``--target-token``."""

from __future__ import annotations

import argparse
from pathlib import Path

Options = argparse.ArgumentParser | argparse._ArgumentGroup

SYNC_EXAMPLES = """examples:
  kss sync --source-kubeconfig ~/.kube/config --target-url http://127.0.0.1:8000
  kss sync --source-kubeconfig prod.kubeconfig --source-context prod --namespaces team-a,team-b \\
           --target-kubeconfig kss.kubeconfig --workloads --record prod-day.jsonl"""


def add_source_arguments(parser: Options, *, required: bool, former_names: bool = False) -> None:
    """--source-kubeconfig and --source-context: the real cluster, read only (``former_names``: also
    --kubeconfig and --context, kss import's former names)."""
    add_source_kubeconfig(parser, required=required, former_names=former_names)
    add_source_context(parser, former_names=former_names)


def add_source_kubeconfig(parser: Options, *, required: bool, former_names: bool = False) -> None:
    """--source-kubeconfig (``former_names``: also --kubeconfig)."""
    parser.add_argument(
        "--source-kubeconfig",
        *(["--kubeconfig"] if former_names else []),
        dest="source_kubeconfig",
        required=required,
        metavar="PATH",
        help="kubeconfig of the real cluster, read only" + (" (--kubeconfig: the former name)" if former_names else ""),
    )


def add_source_context(parser: Options, *, former_names: bool = False) -> None:
    """--source-context (``former_names``: also --context)."""
    parser.add_argument(
        "--source-context",
        *(["--context"] if former_names else []),
        dest="source_context",
        metavar="NAME",
        help="context in --source-kubeconfig (default: its current context)"
        + (" (--context: the former name)" if former_names else ""),
    )


def add_target_arguments(parser: argparse.ArgumentParser, *, required: bool) -> None:
    """--target-url or --target-kubeconfig (with --target-context), and --target-token: the simulator."""
    group = parser.add_mutually_exclusive_group(required=required)
    group.add_argument("--target-url", metavar="URL", help="URL of the simulator's API (http://127.0.0.1:8000)")
    group.add_argument(
        "--target-kubeconfig", metavar="PATH", help="kubeconfig of the simulator (`kss kubeconfig` prints one)"
    )
    parser.add_argument(
        "--target-context", metavar="NAME", help="context in --target-kubeconfig (default: its current context)"
    )
    parser.add_argument("--target-token", metavar="TOKEN", help="bearer token for --target-url (its KSS_API_TOKEN)")


def _add_filters(parser: Options) -> None:
    parser.add_argument(
        "--kinds",
        help="comma-separated kinds to copy (default: Namespace, PriorityClass, StorageClass, "
        "PersistentVolumeClaim, Node, CSINode, PersistentVolume, PodDisruptionBudget, PodGroup, Workload, Pod; "
        "PodGroup and Workload where both ends serve them); workload kinds by name too: "
        "deploy, rs, sts, ds, job, cronjob (a Deployment brings ReplicaSets, a CronJob Jobs)",
    )
    parser.add_argument(
        "--workloads",
        action="store_true",
        help="also copy Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs and CronJobs, which the "
        "simulator's controllers then run (adopting the copied pods), and the ServiceAccounts, ConfigMaps, Secrets "
        "(with their data) and Services beside them; by default only the pods are copied",
    )
    parser.add_argument(
        "--custom-resources",
        action="store_true",
        help="also copy CustomResourceDefinitions and the objects of every CRD the source has when the run starts "
        "(their status is the simulator's own)",
    )
    parser.add_argument("--namespaces", help="comma-separated namespaces (default: all)")
    parser.add_argument("--label-selector", help="label selector choosing which pods to copy (default: all)")


def _add_common(parser: Options, *, qps: float, burst: int, log_level: str) -> None:
    parser.add_argument("--page-size", type=int, default=500, help="objects per list page (limit/continue)")
    parser.add_argument(
        "--allow-version-skew",
        action="store_true",
        help="mirror even when the simulator runs another Kubernetes minor version than the source (a warning)",
    )
    parser.add_argument(
        "--qps", type=float, default=qps, help=f"requests per second to the source (default {qps:g}; 0: no limit)"
    )
    parser.add_argument("--burst", type=int, default=burst, help=f"requests to the source at once (default {burst})")
    parser.add_argument(
        "--target-qps", type=float, default=0, help="requests per second to the simulator (default 0: no limit)"
    )
    parser.add_argument("--target-burst", type=int, default=100, help="requests to the simulator at once")
    parser.add_argument(
        "--log-level", default=log_level, help=f"logging level (default {log_level}; INFO logs every action)"
    )


def add_sync_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``kss sync`` / ``python -m syncer``."""
    add_source_arguments(parser, required=True)
    add_target_arguments(parser, required=True)
    _add_filters(parser)
    _add_common(parser, qps=20, burst=50, log_level="INFO")
    parser.add_argument("--watch-timeout", type=int, default=300, help="server-side timeoutSeconds of each watch")
    parser.add_argument(
        "--inactivity-timeout",
        type=float,
        default=75.0,
        help="client-side read timeout of a watch; above the server's bookmark interval (default 75 s)",
    )
    parser.add_argument("--backoff-max", type=float, default=30.0, help="longest wait between reconnects (seconds)")
    parser.add_argument("--metrics-port", type=int, help="serve Prometheus metrics on this port")
    parser.add_argument(
        "--state-file",
        type=Path,
        help="remember what was mirrored, and objects deleted on the simulator side, across restarts (JSON file, "
        "written atomically)",
    )
    parser.add_argument(
        "--record",
        type=Path,
        metavar="FILE",
        help="also record what the source does, with times, as a workload `kss replay` replays (a new .jsonl file)",
    )
    parser.epilog = SYNC_EXAMPLES


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``python -m syncer import`` (``kss import --source-kubeconfig`` takes the same)."""
    add_source_arguments(parser, required=False, former_names=True)
    add_target_arguments(parser, required=True)
    add_copy_arguments(parser)


def add_copy_arguments(parser: Options) -> None:
    """How a cluster is copied once (what to copy, how fast): every option of ``kss import --source-kubeconfig``
    but the two ends."""
    _add_filters(parser)
    _add_common(parser, qps=20, burst=50, log_level="WARNING")
    parser.add_argument("--workers", type=int, default=8, help="parallel writes into the simulator (default 8)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar, only a line per kind")

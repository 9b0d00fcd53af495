"""The options of ``kss sync`` and ``kss import --kubeconfig``, apart from the code that runs them: argparse alone,
so a parser (``kss import --help``) lists them without loading the Kubernetes client."""

from __future__ import annotations

import argparse
from pathlib import Path


def _add_target(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--target-url", help="URL of the simulator's API (http://127.0.0.1:8000)")
    group.add_argument("--target-kubeconfig", help="kubeconfig of the simulator (`kss kubeconfig` prints one)")
    parser.add_argument("--target-context", help="context in --target-kubeconfig (default: its current context)")
    parser.add_argument("--target-token", help="bearer token for --target-url (the simulator's KSS_API_TOKEN)")


def _add_filters(parser: argparse.ArgumentParser) -> None:
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
        "simulator's controllers then run (adopting the copied pods); by default only their pods are copied",
    )
    parser.add_argument("--namespaces", help="comma-separated namespaces (default: all)")
    parser.add_argument("--label-selector", help="label selector choosing which pods to copy (default: all)")


def _add_common(parser: argparse.ArgumentParser, *, qps: float, burst: int, log_level: str) -> None:
    parser.add_argument("--page-size", type=int, default=500, help="objects per list page (limit/continue)")
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
    parser.add_argument("--source-kubeconfig", required=True, help="kubeconfig of the cluster to mirror (read only)")
    parser.add_argument("--source-context", help="context in --source-kubeconfig (default: its current context)")
    _add_target(parser)
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
        help="remember objects deleted on the simulator side across restarts (JSON file, written atomically)",
    )
    parser.add_argument(
        "--record",
        type=Path,
        metavar="FILE",
        help="also record what the source does, with times, as a workload `kss replay` replays (a new .jsonl file)",
    )


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``kss import --kubeconfig``."""
    parser.add_argument("--kubeconfig", help="kubeconfig of the cluster to copy (read only)")
    parser.add_argument("--context", help="context in --kubeconfig (default: its current context)")
    _add_target(parser)
    _add_filters(parser)
    _add_common(parser, qps=20, burst=50, log_level="WARNING")
    parser.add_argument("--workers", type=int, default=8, help="parallel writes into the simulator (default 8)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar, only a line per kind")

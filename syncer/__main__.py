"""``kss sync`` / ``python -m syncer``: keep the simulator in step with a cluster; ``kss import``: copy it once.

    kss sync --source-kubeconfig PATH [--source-context NAME] (--target-url URL | --target-kubeconfig PATH)
             [--record FILE.jsonl]
    kss import --source-kubeconfig PATH [--source-context NAME] (--target-url URL | --target-kubeconfig PATH)
               [--page-size N] [--qps Q] [--burst B]

Both take ``--kinds``, ``--workloads`` (also copy Deployments, ReplicaSets, StatefulSets, DaemonSets, Jobs and
CronJobs for the simulator's controllers to run, and the ServiceAccounts, ConfigMaps, Secrets and Services beside
them) and ``--custom-resources`` (also the CRDs and their objects).

``python -m syncer import ...`` runs the import too.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from syncer.backoff import Backoff
from syncer.importer import run_import
from syncer.kinds import parse_kinds
from syncer.kube import ApiProblem, KubeSource, KubeTarget, Unavailable, api_client
from syncer.metrics import Metrics
from syncer.options import add_import_arguments, add_sync_arguments
from syncer.progress import Progress
from syncer.recording import Recorder, RecordingError
from syncer.runner import Syncer, SyncOptions
from syncer.state import MirrorState
from syncer.versions import Retry, read_version, version_skew

log = logging.getLogger("kss.syncer")


def _logging(level: str) -> None:
    logging.basicConfig(
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def _split(text: str | None) -> tuple[str, ...]:
    return tuple(s.strip() for s in (text or "").split(",") if s.strip())


def _target(args: argparse.Namespace) -> KubeTarget:
    api = api_client(
        kubeconfig=args.target_kubeconfig,
        context=args.target_context,
        url=args.target_url,
        token=args.target_token,
        pool_size=getattr(args, "workers", None),
    )
    return KubeTarget(api, qps=args.target_qps, burst=args.target_burst, page_size=args.page_size)


def unreadable_kubeconfig(args: argparse.Namespace) -> str | None:
    """A kubeconfig option naming nothing that exists, as one line (the Kubernetes client's own error does not say
    which file it tried); None when each given one exists (a file, or a pipe: ``<(kubectl config view --raw)``)."""
    for option, path in (
        ("--source-kubeconfig", args.source_kubeconfig),
        ("--target-kubeconfig", args.target_kubeconfig),
    ):
        if path is not None and not Path(path).expanduser().exists():
            return f"{option} {path}: no such file"
    return None


def version_problem(
    command: str, source: KubeSource, target: KubeTarget, *, allow_skew: bool, retry: Retry | None = None
) -> int | None:
    """Compare the source's and the simulator's /version: the exit status when the command must not go on (2: the
    simulator runs another minor version, the line names the --kube-version to start it with; 1: an end did not
    answer), None to go on (with a warning when ``allow_skew`` lets a skew pass)."""
    try:
        source_version = read_version(source.version, retry)
        target_version = read_version(target.version, retry)
    except ApiProblem as exc:
        print(f"{command}: cannot read /version: {exc}", file=sys.stderr)
        return 1
    skew = version_skew(source_version, target_version)
    if skew is None:
        return None
    if allow_skew:
        print(f"{command}: warning: {skew.describe()}; mirroring anyway (--allow-version-skew)", file=sys.stderr)
        return None
    print(f"{command}: {skew.describe()}: {skew.fix()}", file=sys.stderr)
    return 2


def run_sync(args: argparse.Namespace) -> int:
    """Run the syncer until SIGTERM or SIGINT."""
    _logging(args.log_level)
    try:
        kinds = parse_kinds(args.kinds, workloads=args.workloads, custom_resources=args.custom_resources)
    except ValueError as exc:
        print(f"kss sync: {exc}", file=sys.stderr)
        return 2
    recorder = None
    if args.record:
        recorder = Recorder(args.record)
        try:
            recorder.check()
        except RecordingError as exc:
            print(f"kss sync: --record: {exc}", file=sys.stderr)
            return 2
    problem = unreadable_kubeconfig(args)
    if problem is not None:
        print(f"kss sync: {problem}", file=sys.stderr)
        return 2
    source = KubeSource(
        api_client(kubeconfig=args.source_kubeconfig, context=args.source_context), qps=args.qps, burst=args.burst
    )
    options = SyncOptions(
        kinds=kinds,
        namespaces=_split(args.namespaces),
        label_selector=args.label_selector,
        page_size=args.page_size,
        watch_timeout=args.watch_timeout,
        inactivity_timeout=args.inactivity_timeout,
        backoff=Backoff(cap=args.backoff_max),
    )
    metrics = Metrics()
    if args.metrics_port:
        metrics.serve(args.metrics_port)
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("signal %d: stopping", signum)
        stop.set()

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
    state = MirrorState(args.state_file) if args.state_file else None
    target = _target(args)
    backoff = Backoff(cap=args.backoff_max)

    def retry(exc: Unavailable, failures: int) -> bool:
        delay = backoff.delay(failures)
        log.warning("cannot read /version (%s); trying again in %.1fs", exc, delay)
        stop.wait(delay)
        return not stop.is_set()

    status = version_problem("kss sync", source, target, allow_skew=args.allow_version_skew, retry=retry)
    if status is not None:
        return status if not stop.is_set() else 0
    if recorder is not None:
        try:
            recorder.open()
        except (RecordingError, OSError) as exc:
            print(f"kss sync: --record: {exc}", file=sys.stderr)
            return 2
    Syncer(source, target, options, metrics=metrics, stop=stop, state=state, recorder=recorder).run()
    return 0


def run_import_command(args: argparse.Namespace) -> int:
    """Copy the cluster once; prints a line per kind and the total time."""
    _logging(args.log_level)
    if not args.source_kubeconfig:
        print("kss import: --source-kubeconfig PATH is required (the cluster to copy)", file=sys.stderr)
        return 2
    problem = unreadable_kubeconfig(args)
    if problem is not None:
        print(f"kss import: {problem}", file=sys.stderr)
        return 2
    try:
        kinds = parse_kinds(args.kinds, workloads=args.workloads, custom_resources=args.custom_resources)
    except ValueError as exc:
        print(f"kss import: {exc}", file=sys.stderr)
        return 2
    source = KubeSource(
        api_client(kubeconfig=args.source_kubeconfig, context=args.source_context), qps=args.qps, burst=args.burst
    )
    target = _target(args)
    status = version_problem("kss import", source, target, allow_skew=getattr(args, "allow_version_skew", False))
    if status is not None:
        return status
    metrics = Metrics()
    progress = Progress(live=False) if args.no_progress else Progress()
    report = run_import(
        source,
        target,
        kinds=kinds,
        namespaces=_split(args.namespaces),
        label_selector=args.label_selector,
        page_size=args.page_size,
        workers=args.workers,
        progress=progress,
        metrics=metrics,
    )
    failed = int(metrics.total("failed"))
    print(
        f"imported {report.total} objects in {report.seconds:.1f} s"
        + (f" ({report.total / report.seconds:.0f} objects/s)" if report.seconds > 0 else "")
        + (f"; {failed} rejected" if failed else ""),
        file=sys.stderr,
    )
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``kss sync`` (and ``python -m syncer [sync|import] ...``)."""
    args_list = list(sys.argv[1:] if argv is None else argv)
    if args_list[:1] == ["import"]:
        return import_main(args_list[1:])
    if args_list[:1] == ["sync"]:
        args_list = args_list[1:]
    parser = argparse.ArgumentParser(prog="kss sync", description="Keep the simulator in step with a cluster.")
    add_sync_arguments(parser)
    return run_sync(parser.parse_args(args_list))


def import_main(argv: Sequence[str] | None = None) -> int:
    """``python -m syncer import --source-kubeconfig PATH ...``: copy a cluster into the simulator once."""
    parser = argparse.ArgumentParser(
        prog="python -m syncer import", description="Copy a cluster into the simulator once."
    )
    add_import_arguments(parser)
    return run_import_command(parser.parse_args(list(sys.argv[1:] if argv is None else argv)))


if __name__ == "__main__":
    sys.exit(main())

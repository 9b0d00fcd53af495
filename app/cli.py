"""The ``kss`` command: serve, simulate, kubeconfig (and more as features land)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

Command = Callable[[argparse.Namespace], int]


def _add_simulate(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from app.simulation.cli import add_arguments, run

    p = sub.add_parser("simulate", help="run scheduling scenarios offline (golden format results)")
    add_arguments(p)
    p.set_defaults(func=run)


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from app.serve_cli import add_serve_arguments, run_serve

    p = sub.add_parser("serve", help="run the simulator: Kubernetes API, scheduler and web UI")
    add_serve_arguments(p)
    p.set_defaults(func=run_serve)


def _add_kubeconfig(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from app.serve_cli import add_kubeconfig_arguments, run_kubeconfig

    p = sub.add_parser("kubeconfig", help="print a kubeconfig that points kubectl at the simulator")
    add_kubeconfig_arguments(p)
    p.set_defaults(func=run_kubeconfig)


def _add_export(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from app.operations.cli import add_export_arguments, run_export

    p = sub.add_parser("export", help="print the running simulator's snapshot (cluster + scheduler configuration)")
    add_export_arguments(p)
    p.set_defaults(func=run_export)


def _add_import(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from app.operations.cli import add_import_arguments, run_import

    p = sub.add_parser(
        "import",
        help="load a snapshot into the running simulator (--snapshot FILE); --kubeconfig PATH copies a cluster",
    )
    add_import_arguments(p)
    p.set_defaults(func=run_import)


def _add_sync(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    from syncer.__main__ import add_sync_arguments, run_sync

    p = sub.add_parser("sync", help="keep the simulator in step with a real cluster (read-only there)")
    add_sync_arguments(p)
    p.set_defaults(func=run_sync)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kss", description="Kubernetes scheduler simulator")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_serve, _add_kubeconfig, _add_simulate, _add_export, _add_import, _add_sync):
        try:
            add(sub)
        except ImportError as exc:  # a feature not installed must not break the others
            print(f"kss: {exc}", file=sys.stderr)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["import"]:
        from app.operations.cli import wants_cluster_import

        if wants_cluster_import(argv[1:]):  # `kss import --kubeconfig`: the syncer copies a real cluster once
            from syncer.__main__ import import_main

            return import_main(argv[1:])
    args = build_parser().parse_args(argv)
    func: Command = args.func
    return func(args)


if __name__ == "__main__":
    sys.exit(main())

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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kss", description="Kubernetes scheduler simulator")
    sub = parser.add_subparsers(dest="command", required=True)
    for add in (_add_serve, _add_kubeconfig, _add_simulate):
        try:
            add(sub)
        except ImportError as exc:  # a feature not installed must not break the others
            print(f"kss: {exc}", file=sys.stderr)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    func: Command = args.func
    return func(args)


if __name__ == "__main__":
    sys.exit(main())

"""The ``kss`` command: serve, kubeconfig, simulate, replay, compare, capacity, sweep, convert, export, import,
reset, node, sync."""

from __future__ import annotations

import argparse
import gc
import importlib
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

Command = Callable[[argparse.Namespace], int]


# name -> (module, function adding the options, function running the command, help). Only the command being run
# has its module imported: the others' would cost each process 1-2 s of CPU (numpy, pydantic, the kubernetes client,
# ...), and a command whose dependencies are missing cannot break the others.
COMMANDS: dict[str, tuple[str, str, str, str]] = {
    "serve": ("app.serve_cli", "add_serve_arguments", "run_serve",
              "run the simulator: Kubernetes API, scheduler and web UI"),
    "kubeconfig": ("app.serve_cli", "add_kubeconfig_arguments", "run_kubeconfig",
                   "print a kubeconfig that points kubectl at the simulator"),
    "simulate": ("app.simulation.cli", "add_arguments", "run",
                 "run scheduling scenarios offline (golden format results)"),
    "replay": ("app.replay.cli", "add_arguments", "run",
               "replay a timed workload on a virtual clock (or drive a running simulator with --target-url)"),
    "compare": ("app.whatif.compare_cli", "add_arguments", "run",
                "replay one workload under two or more configurations and compare the runs"),
    "capacity": ("app.whatif.capacity_cli", "add_arguments", "run",
                 "how many more replicas of a pod fit, or how many nodes to add for a workload"),
    "sweep": ("app.whatif.sweep_cli", "add_arguments", "run",
              "a grid of replays (configurations x workloads x node shapes x seeds) on Dask"),
    "convert": ("app.simulation.convert_cli", "add_arguments", "run",
                "turn Alibaba's 2023 GPU trace into a scenario or manifests (--form dra|extended)"),
    "export": ("app.operations.cli", "add_export_arguments", "run_export",
               "print the running simulator's snapshot (cluster + scheduler configuration)"),
    "import": ("app.operations.cli", "add_import_arguments", "run_import",
               "load a snapshot into the running simulator (--snapshot FILE); --kubeconfig PATH copies a cluster"),
    "reset": ("app.operations.cli", "add_reset_arguments", "run_reset",
              "put the running simulator back as it started (--empty: to an empty cluster); results cleared"),
    "node": ("app.operations.cli", "add_node_arguments", "run_node",
             "fail or heal a node of the running simulator (its Ready condition, as its kubelet would report it)"),
    "sync": ("syncer.__main__", "add_sync_arguments", "run_sync",
             "keep the simulator in step with a real cluster (read-only there)"),
}  # fmt: skip


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``kss`` parser: every command listed, only ``command``'s module imported for its options and runner."""
    parser = argparse.ArgumentParser(prog="kss", description="Kubernetes scheduler simulator")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (module_name, add_name, run_name, help_text) in COMMANDS.items():
        if name != command:
            sub.add_parser(name, help=help_text)
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            print(f"kss {name}: unavailable ({exc})", file=sys.stderr)
            continue
        p = sub.add_parser(name, help=help_text)
        getattr(module, add_name)(p)
        p.set_defaults(func=getattr(module, run_name))
    return parser


def _command_named(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs: its first word that is not an option (the top-level parser has only ``-h``)."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


@contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector off while a command's modules are imported: imports create a few hundred thousand
    objects and next to no garbage, and the collections they set off (full ones among them) cost a fifth of the
    CPU an import takes. The collector's previous state comes back on the way out."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    with collector_paused():
        run = _command_runner(argv)
    return run()


def _command_runner(argv: list[str]) -> Callable[[], int]:
    """The command ``argv`` asks for, its modules imported and its options parsed, ready to run."""
    if argv[:1] == ["import"]:
        from app.operations.cli import wants_cluster_import

        if wants_cluster_import(argv[1:]):  # `kss import --kubeconfig`: the syncer copies a real cluster once
            from syncer.__main__ import import_main

            return lambda: import_main(argv[1:])
    args = build_parser(_command_named(argv)).parse_args(argv)
    func: Command = args.func
    return lambda: func(args)


if __name__ == "__main__":
    sys.exit(main())

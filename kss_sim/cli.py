"""The ``kss`` command: serve, kubeconfig, simulate, replay, compare, capacity, sweep, convert, export, import,
reset, node, sync.

Every command speaks with one voice: a problem is one line on stderr, ``kss COMMAND: what is wrong``, naming the
fix; exit 2 for a usage error (a bad option, a file or setting that cannot be used), 1 for a failure, 130 on Ctrl-C;
no traceback unless ``--debug``. A command reports its own problems that way and returns the status; whatever it
does not catch is turned into that line here (:func:`main`).
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import NoReturn

Command = Callable[[argparse.Namespace], int]


# name -> (module, function adding the options, function running the command, help). Only the command being run
# has its module imported: the others' would cost each process 1-2 s of CPU (numpy, pydantic, the kubernetes client,
# ...), and a command whose dependencies are missing cannot break the others.
COMMANDS: dict[str, tuple[str, str, str, str]] = {
    "serve": ("kss_sim.serve_cli", "add_serve_arguments", "run_serve",
              "run the simulator: Kubernetes API, scheduler and web UI"),
    "kubeconfig": ("kss_sim.serve_cli", "add_kubeconfig_arguments", "run_kubeconfig",
                   "print a kubeconfig that points kubectl at the simulator"),
    "simulate": ("kss_sim.simulation.cli", "add_arguments", "run",
                 "run scheduling scenarios offline (golden format results)"),
    "replay": ("kss_sim.replay.cli", "add_arguments", "run",
               "replay a timed workload on a virtual clock (or drive a running simulator with --target-url)"),
    "compare": ("kss_sim.whatif.compare_cli", "add_arguments", "run",
                "replay one workload under two or more configurations and compare the runs"),
    "capacity": ("kss_sim.whatif.capacity_cli", "add_arguments", "run",
                 "how many more replicas of a pod fit, or how many nodes to add for a workload"),
    "sweep": ("kss_sim.whatif.sweep_cli", "add_arguments", "run",
              "a grid of replays (configurations x workloads x node shapes x seeds) on Dask"),
    "convert": ("kss_sim.simulation.convert_cli", "add_arguments", "run",
                "turn Alibaba's 2023 GPU trace into a scenario or manifests (--form dra|extended)"),
    "export": ("kss_sim.operations.cli", "add_export_arguments", "run_export",
               "print the running simulator's snapshot (cluster + scheduler configuration)"),
    "import": ("kss_sim.operations.cli", "add_import_arguments", "run_import",
               "load a snapshot into the running simulator (--snapshot FILE), or copy a real cluster into it once "
               "(--source-kubeconfig PATH)"),
    "reset": ("kss_sim.operations.cli", "add_reset_arguments", "run_reset",
              "put the running simulator back as it started (--empty: to an empty cluster); results cleared"),
    "node": ("kss_sim.operations.cli", "add_node_arguments", "run_node",
             "fail or heal a node of the running simulator (its Ready condition, as its kubelet would report it)"),
    "sync": ("syncer.__main__", "add_sync_arguments", "run_sync",
             "keep the simulator in step with a real cluster (read-only there)"),
}  # fmt: skip


EXIT_USAGE, EXIT_FAILED, EXIT_INTERRUPTED = 2, 1, 130
HELP_WIDTH = 100
DEBUG_FLAG = "--debug"
DEBUG_HELP = "on an unexpected error, show its traceback instead of one line"


class CommandParser(argparse.ArgumentParser):
    """argparse in kss's voice: a usage error is one line, the problem and where help is, and exit 2 (argparse's
    own prints the whole usage first)."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The ``kss`` parser: every command listed, only ``command``'s module imported for its options and runner."""
    parser = CommandParser(
        prog="kss",
        description="Kubernetes scheduler simulator",
        epilog="kss COMMAND --help shows a command's options and examples",
    )
    parser.add_argument(DEBUG_FLAG, action="store_true", help=DEBUG_HELP)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (module_name, add_name, run_name, help_text) in COMMANDS.items():
        if name != command:
            sub.add_parser(name, help=help_text)
            continue
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:  # an optional dependency of this command alone (dask for sweep, ...)
            parser.exit(EXIT_FAILED, f"kss {name}: unavailable: {exc} (install kss with its dependencies)\n")
        # The examples in a command's epilog keep their lines.
        p = sub.add_parser(
            name,
            help=help_text,
            description=textwrap.fill(help_text, HELP_WIDTH),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        getattr(module, add_name)(p)
        p.add_argument(DEBUG_FLAG, action="store_true", help=DEBUG_HELP)
        p.set_defaults(func=getattr(module, run_name), command_parser=p)
    return parser


def _command_named(argv: Sequence[str]) -> str | None:
    """The command ``argv`` runs: its first word that is not an option (the top-level parser has only ``-h`` and
    ``--debug``)."""
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
    """Run ``kss ARGV``; the exit status. Anything the command does not catch is one line here (``--debug``: the
    traceback)."""
    started = time.perf_counter()
    argv = list(sys.argv[1:] if argv is None else argv)
    command = _command_named(argv)
    prog = f"kss {command}" if command in COMMANDS else "kss"
    try:
        with collector_paused():
            run = _command_runner(argv, started)
        return run()
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:
        if DEBUG_FLAG in argv:
            raise
        settings_problem = settings_error(exc)
        if settings_problem is not None:
            print(f"{prog}: {settings_problem}", file=sys.stderr)
            return EXIT_USAGE
        print(f"{prog}: {error_line(exc)} (run again with --debug for the traceback)", file=sys.stderr)
        return EXIT_FAILED


def _command_runner(argv: list[str], started: float) -> Callable[[], int]:
    """The command ``argv`` asks for, its modules imported and its options parsed, ready to run."""
    args, unknown = build_parser(_command_named(argv)).parse_known_args(argv)
    if unknown:  # in the command's name and help, not the top-level parser's
        args.command_parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    args.started = started  # when kss started, for a command that reports its wall time (kss replay)
    func: Command = args.func
    return lambda: func(args)


def error_line(exc: BaseException) -> str:
    """An exception as one line: a file's problem names the file, anything else its type and message."""
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def settings_error(exc: BaseException) -> str | None:
    """A ``KSS_*`` setting that does not parse, as one line naming each variable and what it holds; None for any
    other error. (Settings are read from the environment; the options that override them are checked first.)"""
    # Told by name, not isinstance: pydantic is not imported here (kss --help and the light commands never load it).
    if type(exc).__name__ != "ValidationError" or getattr(exc, "title", None) != "Settings":
        return None
    problems = []
    for error in exc.errors():  # type: ignore[attr-defined]
        field = str(error["loc"][0]) if error.get("loc") else ""
        variable = f"KSS_{field.upper()}"
        value = os.environ.get(variable)
        given = f"={value!r}" if value is not None else ""
        message = str(error.get("msg", "invalid")).removeprefix("Value error, ")
        problems.append(f"{variable}{given}: {message}")
    return "; ".join(problems) + " (correct or unset the variable)"


if __name__ == "__main__":
    sys.exit(main())

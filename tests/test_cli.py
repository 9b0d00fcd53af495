"""The ``kss`` dispatcher imports only the command it runs, with the garbage collector back on when it runs."""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import textwrap

import pytest

import kss_sim.serve_cli
from kss_sim.cli import COMMANDS, main

# What a process loads for nothing if a light command pulls in the server, the database layer or a cluster client.
SERVER_AND_CLIENTS = [
    "fastapi",
    "starlette",
    "uvicorn",
    "sqlalchemy",
    "alembic",
    "kss_sim.main",
    "distributed",
    "kubernetes",
]


def modules_loaded_by(argv: list[str]) -> set[str]:
    """The modules a fresh interpreter holds after ``kss ARGV`` (stdout and stderr of the command discarded)."""
    script = textwrap.dedent(
        f"""
        import contextlib, io, json, sys
        from kss_sim.cli import main
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                main({argv!r})
            except SystemExit:
                pass
        print(json.dumps(sorted(sys.modules)))
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return set(json.loads(out))


def test_kss_help_imports_no_command_module() -> None:
    loaded = modules_loaded_by(["--help"])
    command_modules = {module for module, *_ in COMMANDS.values()}
    assert sorted(command_modules & loaded) == []
    assert sorted(set(SERVER_AND_CLIENTS) & loaded) == []
    assert "numpy" not in loaded and "pydantic" not in loaded


@pytest.mark.parametrize(
    ("argv", "command_module", "absent"),
    [
        (["simulate", "--help"], "kss_sim.simulation.cli", [*SERVER_AND_CLIENTS, "httpx", "jinja2"]),
        (["serve", "--help"], "kss_sim.serve_cli", [*SERVER_AND_CLIENTS, "numpy", "httpx"]),
        (["kubeconfig"], "kss_sim.serve_cli", [*SERVER_AND_CLIENTS, "numpy", "httpx"]),
        # The live driver's HTTP and kubeconfig clients only load for --target-url / --target-kubeconfig.
        (["replay", "--help"], "kss_sim.replay.cli", [*SERVER_AND_CLIENTS, "httpx", "kss_sim.replay.live_api"]),
        (["sweep", "--help"], "kss_sim.whatif.sweep_cli", [*SERVER_AND_CLIENTS, "httpx", "dask"]),
        (["convert", "--help"], "kss_sim.simulation.convert_cli", [*SERVER_AND_CLIENTS, "numpy", "pydantic"]),
        (["export", "--help"], "kss_sim.operations.cli", [*SERVER_AND_CLIENTS, "numpy"]),
        # kss import lists the cluster copy's options (syncer/options.py) without the syncer or its Kubernetes client.
        (
            ["import", "--help"],
            "kss_sim.operations.cli",
            [*SERVER_AND_CLIENTS, "numpy", "syncer.__main__", "syncer.kube"],
        ),
    ],
)
def test_a_command_imports_its_own_module_and_not_the_server(
    argv: list[str], command_module: str, absent: list[str]
) -> None:
    loaded = modules_loaded_by(argv)
    assert command_module in loaded
    others = {module for module, *_ in COMMANDS.values()} - {command_module}
    assert sorted(others & loaded) == []
    assert sorted(set(absent) & loaded) == []


def test_the_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    for name, (*_, help_text) in COMMANDS.items():
        assert name in out
        assert help_text.split()[0] in out


def test_the_command_runs_with_the_collector_on_and_its_options_parsed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    seen: list[tuple[bool, str]] = []
    real = kss_sim.serve_cli.run_kubeconfig

    def observed(args: argparse.Namespace) -> int:
        seen.append((gc.isenabled(), args.target_url))
        return real(args)

    monkeypatch.setattr(kss_sim.serve_cli, "run_kubeconfig", observed)
    assert gc.isenabled()
    assert main(["kubeconfig", "--server", "http://10.1.2.3:9000"]) == 0
    assert seen == [(True, "http://10.1.2.3:9000")]
    assert "server: http://10.1.2.3:9000" in capsys.readouterr().out
    assert gc.isenabled()


def test_a_bad_option_exits_2_with_the_collector_back_on(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["simulate", "scenario.json", "--no-such-option"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --no-such-option" in capsys.readouterr().err
    assert gc.isenabled()


def test_an_unknown_command_is_refused() -> None:
    proc = subprocess.run([sys.executable, "-m", "kss_sim.cli", "no-such-command"], capture_output=True, text=True)
    assert proc.returncode == 2
    assert "invalid choice: 'no-such-command'" in proc.stderr


def test_the_server_loads_the_dra_cel_compiler_and_the_page_templates_when_first_used() -> None:
    script = "import json, sys, kss_sim.main; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    loaded = set(json.loads(out))
    assert "fastapi" in loaded  # the whole application, as `kss serve` imports it
    assert sorted({"kss_sim.kube.dra.cel", "cel_expr_python", "google.protobuf", "jinja2"} & loaded) == []

"""Every kss command speaks with one voice (issue #36): a problem is one line on stderr naming the fix, exit 2 for a
usage error and 1 for a failure, no traceback unless ``--debug``; ``kss serve`` checks what it is given before it
says it is serving; one flag name per concept, every option in ``--help`` with examples. Each case runs the real
command in a subprocess."""

from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from kss_sim.cli import COMMANDS, build_parser
from tests.conftest import KSS, free_port
from tests.replay.test_engine import node, pod

REPO = Path(__file__).resolve().parents[1]
BAD_KIND = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: Nope\n"


def kss(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    environ = {key: value for key, value in os.environ.items() if not key.startswith("KSS_")}
    return subprocess.run(
        [str(KSS), *args], capture_output=True, text=True, timeout=120, cwd=cwd, env={**environ, **(env or {})}
    )


def one_line(done: subprocess.CompletedProcess[str], status: int, prefix: str) -> str:
    """The single line the command wrote on stderr, checked: exit ``status``, starts with ``prefix``, no
    traceback."""
    lines = done.stderr.splitlines()
    assert done.returncode == status, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(prefix), lines[0]
    assert "Traceback" not in done.stderr
    return lines[0]


def workload(path: Path) -> Path:
    doc = {
        "apiVersion": "kss.sigs.k8s.io/v1alpha1",
        "kind": "TimedWorkload",
        "metadata": {"name": "voice"},
        "spec": {"start": [node("n1")], "events": [{"at": i, "create": pod(f"p{i}", "1")} for i in range(3)]},
    }
    path.write_bytes(orjson.dumps(doc))
    return path


# ---- kss serve: everything checked before it says it is serving -------------------------------------------------


def test_serve_with_a_scheduler_configuration_of_an_unknown_kind_is_refused_before_serving(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(BAD_KIND)
    done = kss("serve", "--port", str(free_port()), "--scheduler-config", str(config), cwd=tmp_path)
    line = one_line(done, 2, f"kss serve: --scheduler-config {config}: kind: ")
    assert "'Nope'" in line and "serving" not in done.stdout + done.stderr


def test_serve_names_the_setting_that_gave_a_bad_scheduler_configuration(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text(BAD_KIND)
    done = kss("serve", env={"KSS_SCHEDULER_CONFIG": str(config), "KSS_PORT": str(free_port())}, cwd=tmp_path)
    one_line(done, 2, f"kss serve: KSS_SCHEDULER_CONFIG {config}: kind: ")


def test_a_setting_that_does_not_parse_names_the_variable(tmp_path: Path) -> None:
    done = kss("serve", env={"KSS_PORT": "abc"}, cwd=tmp_path)
    line = one_line(done, 2, "kss serve: KSS_PORT='abc': ")
    assert "integer" in line and "unset the variable" in line
    # Every command reads the settings for its defaults: the same line, in its own name.
    scenario = REPO / "tests/golden/dra/dra-adminaccess-000.scenario.json"
    done = kss("simulate", str(scenario), env={"KSS_FEATURE_GATES": "Bogus=true"}, cwd=tmp_path)
    assert "Bogus" in one_line(done, 2, "kss simulate: ")


def test_serve_with_a_plugin_module_that_fails_to_import_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "broken_voice_plugins.py").write_text("def broken(:\n")
    done = kss("serve", "--port", str(free_port()), "--plugin-module", "broken_voice_plugins", cwd=tmp_path)
    assert "SyntaxError" in one_line(done, 2, "kss serve: plugin module 'broken_voice_plugins' failed to load")


def test_serve_whose_database_cannot_be_opened_says_so_in_one_line_and_never_that_it_serves(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'no-such-dir' / 'kss.db'}"
    done = kss("serve", "--port", str(free_port()), "--database-url", url, cwd=tmp_path)
    line = one_line(done, 1, "kss serve: the server did not start: OperationalError: ")
    assert "unable to open database file" in line and "--debug" in line
    debug = kss("serve", "--port", str(free_port()), "--database-url", url, "--debug", cwd=tmp_path)
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_serve_on_a_port_in_use_says_so_in_one_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = kss("serve", "--port", str(port), "--database-url", f"sqlite:///{tmp_path / 'kss.db'}", cwd=tmp_path)
    assert "address already in use" in one_line(done, 1, "kss serve: the server did not start: ")


def test_serve_says_it_is_serving_once_it_answers(tmp_path: Path) -> None:
    port = free_port()
    environ = {key: value for key, value in os.environ.items() if not key.startswith("KSS_")}
    process = subprocess.Popen(
        [str(KSS), "serve", "--port", str(port), "--database-url", f"sqlite:///{tmp_path / 'kss.db'}"],
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=environ,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        assert line == f"kss: serving the Kubernetes API on http://127.0.0.1:{port}\n"
        with socket.create_connection(("127.0.0.1", port), timeout=5):  # listening when it says so
            pass
    finally:
        process.terminate()
        process.wait(timeout=30)


# ---- usage errors and failures of the other commands --------------------------------------------------------------


def test_a_bad_option_is_one_line_naming_the_help() -> None:
    line = one_line(kss("simulate", "x.json", "--no-such-option"), 2, "kss simulate: ")
    assert "unrecognized arguments: --no-such-option" in line and line.endswith("(see kss simulate --help)")
    assert one_line(kss(), 2, "kss: ").endswith("(see kss --help)")


def test_capacity_without_a_cluster_is_a_usage_error(tmp_path: Path) -> None:
    pod_file = tmp_path / "pod.yaml"
    pod_file.write_bytes(orjson.dumps(pod("copy", "1")))
    line = one_line(kss("capacity", str(pod_file)), 2, "kss capacity: the cluster is needed: ")
    assert "--snapshot" in line and "--workload" in line


def test_an_error_no_command_expected_is_one_line_and_debug_shows_the_traceback(tmp_path: Path) -> None:
    w = workload(tmp_path / "w.json")
    (tmp_path / "file").write_text("")
    out = tmp_path / "file" / "out"  # a folder cannot be made under a file
    line = one_line(kss("replay", str(w), "--quiet", "--out", str(out)), 1, "kss replay: ")
    assert "Not a directory" in line and line.endswith("(run again with --debug for the traceback)")
    for argv in (["--debug", "replay"], ["replay", "--debug"]):
        debug = kss(*argv, str(w), "--quiet", "--out", str(out))
        assert debug.returncode == 1 and "Traceback" in debug.stderr and "NotADirectoryError" in debug.stderr


def test_a_simulator_that_does_not_answer_is_named_with_the_option_that_moves_it() -> None:
    url = f"http://127.0.0.1:{free_port()}"
    for command in ("export", "reset"):
        line = one_line(kss(command, "--target-url", url), 1, f"kss {command}: no answer from the simulator at {url}")
        assert "--target-url" in line


def test_a_kubeconfig_that_is_not_there_is_a_usage_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.kubeconfig"
    done = kss("sync", "--source-kubeconfig", str(missing), "--target-url", "http://127.0.0.1:1")
    one_line(done, 2, f"kss sync: --source-kubeconfig {missing}: no such file")
    done = kss("import", "--kubeconfig", str(missing), "--target-url", "http://127.0.0.1:1")
    one_line(done, 2, f"kss import: --source-kubeconfig {missing}: no such file")
    done = kss("import", "--source-kubeconfig", str(missing))
    assert "--target-url URL or --target-kubeconfig PATH" in one_line(done, 2, "kss import: ")


def test_replay_reports_the_wall_time_of_the_command(tmp_path: Path) -> None:
    done = kss("replay", str(workload(tmp_path / "w.json")), "--quiet")
    assert done.returncode == 0, done.stderr
    first = done.stdout.splitlines()[0]
    found = re.search(r" in ([\d.]+) (ms|s) of wall time, the replay itself ([\d.]+) (ms|s) \(", first)
    assert found is not None, first
    wall, replay = (float(found[i]) / (1000 if found[i + 1] == "ms" else 1) for i in (1, 3))
    # The command loads its modules and the workload before the replay: never less than the replay, never 0.
    assert wall >= replay and wall >= 0.05


# ---- flags: one name per concept, every one in --help with examples ----------------------------------------------


def test_import_help_lists_both_forms_and_the_former_names() -> None:
    done = kss("import", "--help")
    assert done.returncode == 0
    for flag in ("--snapshot", "--source-kubeconfig", "--kubeconfig", "--source-context", "--target-url", "--server",
                 "--target-kubeconfig", "--target-token", "--token", "--kinds", "--workers", "examples:"):  # fmt: skip
        assert flag in done.stdout, flag


def _command_parser(name: str) -> argparse.ArgumentParser:
    parser = build_parser(name)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    command: argparse.ArgumentParser = sub.choices[name]
    return command


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_option_is_in_the_help_with_examples(name: str) -> None:
    if name == "sweep":
        pytest.importorskip("dask")
    parser = _command_parser(name)
    text = parser.format_help()
    options = [flag for action in parser._actions for flag in action.option_strings]
    assert options and [flag for flag in options if flag not in text] == []
    assert "examples:" in text and f"kss {name}" in text.split("examples:", 1)[1]


@pytest.mark.parametrize(
    ("name", "concept", "flags"),
    [
        ("export", "target_url", ["--target-url", "--server"]),
        ("import", "target_url", ["--target-url", "--server"]),
        ("reset", "target_url", ["--target-url", "--server"]),
        ("kubeconfig", "target_url", ["--target-url", "--server"]),
        ("replay", "target_url", ["--target-url"]),
        ("sync", "target_url", ["--target-url"]),
        ("export", "target_token", ["--target-token", "--token"]),
        ("replay", "target_token", ["--target-token"]),
        ("sync", "target_token", ["--target-token"]),
        ("import", "source_kubeconfig", ["--source-kubeconfig", "--kubeconfig"]),
        ("sync", "source_kubeconfig", ["--source-kubeconfig"]),
        ("replay", "target_kubeconfig", ["--target-kubeconfig"]),
        ("import", "target_kubeconfig", ["--target-kubeconfig"]),
        ("sync", "target_kubeconfig", ["--target-kubeconfig"]),
    ],
)
def test_one_flag_name_per_concept_the_former_ones_as_aliases(name: str, concept: str, flags: list[str]) -> None:
    parser = _command_parser(name)
    (action,) = [a for a in parser._actions if a.dest == concept]
    assert action.option_strings == flags


def test_the_dispatcher_module_runs_as_a_script() -> None:
    done = subprocess.run([sys.executable, "-m", "kss_sim.cli", "no-such-command"], capture_output=True, text=True)
    assert done.returncode == 2 and "invalid choice: 'no-such-command'" in one_line(done, 2, "kss: ")

"""v1.37 is ported from upstream's files, never measured against its kube-scheduler (no reference program of it
exists): every surface that shows a version says so, `--help`, the start of a run, the UI header, a replay's
summary.json and a comparison, and kubectl sees a v1.37 API server."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from tests.conftest import KUBECTL, Server, start_server
from tests.test_cli_voice import REPO, kss, one_line, workload

NOT_MEASURED = "ported, not measured against kube-scheduler"
SCENARIO = REPO / "tests/golden/dra/dra-adminaccess-000.scenario.json"


@pytest.mark.parametrize("command", ["serve", "simulate", "replay", "compare", "capacity", "sweep"])
def test_help_says_v1_37_is_not_measured(command: str) -> None:
    done = kss(command, "--help")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split()).replace("- ", "-")  # argparse wraps the help, breaking at hyphens too
    assert f"1.33, 1.34, 1.35, 1.36, 1.37 (1.37: {NOT_MEASURED})" in text


def test_a_replay_at_v1_37_says_so_as_it_starts_and_in_summary_json(tmp_path: Path) -> None:
    path = workload(tmp_path / "w.json")
    done = kss("replay", str(path), "--kube-version", "1.37", "--out", str(tmp_path / "out"), "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"kss replay: note: Kubernetes v1.37 is {NOT_MEASURED}" in done.stderr
    summary = orjson.loads((tmp_path / "out/summary.json").read_bytes())
    assert (summary["kubeVersion"], summary["kubeVersionMeasured"]) == ("1.37", False)
    done = kss("replay", str(path), "--kube-version", "1.36", "--out", str(tmp_path / "v136"), "--quiet", cwd=tmp_path)
    assert done.returncode == 0 and "not measured" not in done.stderr
    assert orjson.loads((tmp_path / "v136/summary.json").read_bytes())["kubeVersionMeasured"] is True


def test_a_simulation_at_v1_37_says_so(tmp_path: Path) -> None:
    done = kss("simulate", str(SCENARIO), "--kube-version", "1.37", "--out-dir", str(tmp_path), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"kss simulate: note: Kubernetes v1.37 is {NOT_MEASURED}" in done.stderr


def test_a_comparison_across_v1_36_and_v1_37_names_the_unmeasured_side(tmp_path: Path) -> None:
    path = workload(tmp_path / "w.json")
    out = tmp_path / "cmp"
    done = kss(
        "compare", str(path), "--kube-version", "1.36", "--kube-version", "1.37", "--out", str(out), cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    doc = orjson.loads((out / "compare.json").read_bytes())
    (versions,) = [f["values"] for f in doc["figures"] if f["figure"] == "Kubernetes version"]
    assert versions == ["1.36", f"1.37 ({NOT_MEASURED})"]
    assert [s["summary"]["kubeVersionMeasured"] for s in doc["sides"]] == [True, False]
    assert f"1.37 ({NOT_MEASURED})" in (out / "compare.html").read_text()
    assert f"1.37 ({NOT_MEASURED})" in done.stdout  # the table printed


def test_v1_37s_gang_scheduling_gate_is_refused_in_one_line() -> None:
    # GangScheduling went into GenericWorkload in v1.37: the gate is unknown there, as on kube-scheduler.
    done = kss("simulate", str(SCENARIO), "--kube-version", "1.37", "--feature-gates", "GangScheduling=true")
    one_line(done, 2, "kss simulate: --feature-gates: unrecognized feature gate: GangScheduling (Kubernetes v1.37 ")


@pytest.fixture(scope="module")
def at_1_37(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("kss-1.37")
    srv = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}", env={"KSS_KUBE_VERSION": "1.37"})
    yield srv
    srv.stop()


def _kubectl(srv: Server, *args: str) -> str:
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(srv.kubeconfig), *args], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_kubectl_version_says_v1_37(at_1_37: Server) -> None:
    server = json.loads(_kubectl(at_1_37, "version", "-o", "json"))["serverVersion"]
    assert (server["major"], server["minor"], server["gitVersion"]) == ("1", "37", "v1.37.0")
    assert f"note: Kubernetes v1.37 is {NOT_MEASURED}" in at_1_37.log.read_text()


def test_kubectl_api_resources_at_v1_37(at_1_37: Server) -> None:
    table = _kubectl(at_1_37, "api-resources", "--no-headers")
    rows = {(line.split()[0], line.split()[-3]) for line in table.splitlines() if line.strip()}
    assert ("pods", "v1") in rows and ("nodes", "v1") in rows
    assert ("resourceclaims", "resource.k8s.io/v1") in rows
    # v1.37 dropped scheduling.k8s.io/v1alpha2, and its v1beta1 Workload API is an off-by-default beta API (with
    # GenericWorkload off, too): scheduling.k8s.io serves PriorityClasses alone (the scheduler-plugins PodGroup,
    # scheduling.x-k8s.io, is every version's). test_kubectl_workload_v1beta1.py serves it.
    assert {row for row in rows if row[1].startswith("scheduling.k8s.io/")} == {
        ("priorityclasses", "scheduling.k8s.io/v1")
    }
    assert ("podgroups", "scheduling.x-k8s.io/v1alpha1") in rows


def test_the_ui_header_says_v1_37_is_not_measured(at_1_37: Server) -> None:
    page = httpx.get(f"{at_1_37.url}/ui/cluster", timeout=10).text
    assert "Kubernetes v1.37.0" in page
    assert 'data-testid="kube-version-unmeasured"' in page and NOT_MEASURED in page


def test_the_ui_header_of_a_measured_version_has_no_such_badge(server: Server) -> None:
    assert "kube-version-unmeasured" not in httpx.get(f"{server.url}/ui/cluster", timeout=10).text

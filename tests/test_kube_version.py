"""``--kube-version`` (``KSS_KUBE_VERSION``) in every command that runs the scheduler: bad input is one line naming
what is accepted, exit 2, nothing started; a server at a version says so in /version (kubectl version), /metrics,
the UI header and every recorded attempt, and a replay in its summary.json."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from tests.conftest import KUBECTL, Server, free_port, start_server
from tests.test_cli_voice import REPO, kss, one_line, workload

SCENARIO = REPO / "tests/golden/dra/dra-adminaccess-000.scenario.json"
SUPPORTED = "(supported: 1.33, 1.34, 1.35, 1.36, 1.37)"


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "--port", "0"],
        ["simulate", str(SCENARIO)],
        ["replay", "WORKLOAD"],
        ["compare", "WORKLOAD", "--config", "default", "--config", "default"],
        ["capacity", "--workload", "WORKLOAD", str(SCENARIO)],
        ["sweep", "SPEC"],
    ],
    ids=lambda c: c[0],
)
def test_an_unknown_version_is_one_line_naming_the_supported_ones(command: list[str], tmp_path: Path) -> None:
    path = workload(tmp_path / "w.json")
    (tmp_path / "spec.yaml").write_text(f"configs: [{{name: d}}]\nworkloads: [{{name: w, file: {path}}}]\n")
    args = [str(path) if a == "WORKLOAD" else str(tmp_path / "spec.yaml") if a == "SPEC" else a for a in command]
    done = kss(*args, "--kube-version", "1.32", cwd=tmp_path)
    line = one_line(done, 2, f"kss {command[0]}: --kube-version: unsupported Kubernetes version '1.32' ")
    assert line.endswith(SUPPORTED)
    assert not (tmp_path / "kss.db").exists()  # nothing started


@pytest.mark.parametrize("command", ["serve", "simulate", "replay"])
def test_a_gate_the_version_does_not_have_is_refused_in_kubes_words(command: str, tmp_path: Path) -> None:
    target = {"serve": ["--port", str(free_port())], "simulate": [str(SCENARIO)],
              "replay": [str(workload(tmp_path / "w.json"))]}[command]  # fmt: skip
    done = kss(command, *target, "--kube-version", "1.34", "--feature-gates", "GenericWorkload=true", cwd=tmp_path)
    one_line(done, 2, f"kss {command}: --feature-gates: unrecognized feature gate: GenericWorkload (Kubernetes v1.34 ")
    # The same gate at the version that has it is accepted (simulate runs the scenario).
    if command == "simulate":
        assert (
            kss(command, *target, "--kube-version", "1.35", "--feature-gates", "GenericWorkload=true").returncode == 0
        )


@pytest.mark.parametrize(
    ("version", "group_version", "served_at"),
    [
        # v1.35's Workload API at the default v1.36: kube-apiserver's words, then where it is served.
        (None, "scheduling.k8s.io/v1alpha1", "1.35"),
        ("1.35", "scheduling.k8s.io/v1alpha2", "1.36"),
        ("1.33", "resource.k8s.io/v1", "1.34, 1.35, 1.36, 1.37"),
    ],
)
def test_a_group_version_the_release_lacks_names_the_versions_that_serve_it(
    version: str | None, group_version: str, served_at: str, tmp_path: Path
) -> None:
    at = ["--kube-version", version] if version else []
    done = kss("serve", "--port", str(free_port()), *at, "--runtime-config", f"{group_version}=true", cwd=tmp_path)
    line = one_line(done, 2, "kss serve: --runtime-config: ")
    assert line == (
        f"kss serve: --runtime-config: group version {group_version} that has not been registered"
        f" (served at --kube-version {served_at})"
    )
    # KSS_RUNTIME_CONFIG is refused with the same hint, in the settings' words.
    env = {"KSS_RUNTIME_CONFIG": f"{group_version}=true", **({"KSS_KUBE_VERSION": version} if version else {})}
    done = kss("serve", "--port", str(free_port()), env=env, cwd=tmp_path)
    assert one_line(done, 2, "kss serve: KSS_RUNTIME_CONFIG=") == (
        f"kss serve: KSS_RUNTIME_CONFIG='{group_version}=true': group version {group_version} that has not been"
        f" registered (served at --kube-version {served_at}) (correct or unset the variable)"
    )
    # A group version no supported release serves keeps kube-apiserver's words alone.
    done = kss("serve", "--port", str(free_port()), "--runtime-config", "apps/v2=true", cwd=tmp_path)
    assert (
        one_line(done, 2, "kss serve: ")
        == "kss serve: --runtime-config: group version apps/v2 that has not been registered"
    )


def test_the_settings_name_themselves(tmp_path: Path) -> None:
    done = kss("simulate", str(SCENARIO), env={"KSS_KUBE_VERSION": "9.9"}, cwd=tmp_path)
    assert SUPPORTED in one_line(done, 2, "kss simulate: KSS_KUBE_VERSION='9.9': ")
    # KSS_FEATURE_GATES is checked against KSS_KUBE_VERSION's release.
    done = kss(
        "simulate", str(SCENARIO), env={"KSS_KUBE_VERSION": "1.33", "KSS_FEATURE_GATES": "DRAConsumableCapacity=true"}
    )
    assert "unrecognized feature gate: DRAConsumableCapacity" in one_line(done, 2, "kss simulate: KSS_FEATURE_GATES=")


def test_a_replay_says_its_version_in_summary_json(tmp_path: Path) -> None:
    path = workload(tmp_path / "w.json")
    done = kss("replay", str(path), "--kube-version", "1.33", "--out", str(tmp_path / "out"), "--quiet", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert orjson.loads((tmp_path / "out/summary.json").read_bytes())["kubeVersion"] == "1.33"
    done = kss("replay", str(path), "--out", str(tmp_path / "default"), "--quiet", cwd=tmp_path)
    assert orjson.loads((tmp_path / "default/summary.json").read_bytes())["kubeVersion"] == "1.36"  # the default


@pytest.fixture(scope="module")
def at_1_34(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A kss serve started with --kube-version's setting at 1.34."""
    workdir = tmp_path_factory.mktemp("kss-1.34")
    srv = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}", env={"KSS_KUBE_VERSION": "1.34"})
    yield srv
    srv.stop()


def test_kubectl_version_says_the_servers_release(at_1_34: Server) -> None:
    done = subprocess.run(
        [KUBECTL, "--kubeconfig", str(at_1_34.kubeconfig), "version", "-o", "json"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    server = json.loads(done.stdout)["serverVersion"]
    assert (server["major"], server["minor"], server["gitVersion"]) == ("1", "34", "v1.34.7")


def test_metrics_the_ui_and_every_attempt_say_the_version(at_1_34: Server) -> None:
    metrics = httpx.get(f"{at_1_34.url}/metrics", timeout=10).text
    (build_info,) = [line for line in metrics.splitlines() if line.startswith("kubernetes_build_info{")]
    assert 'git_version="v1.34.7"' in build_info and 'minor="34"' in build_info and build_info.endswith(" 1.0")
    assert "Kubernetes v1.34.7" in httpx.get(f"{at_1_34.url}/ui/cluster", timeout=10).text
    node = {"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}}
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    assert httpx.post(f"{at_1_34.url}/api/v1/nodes", json=node, timeout=10).status_code == 201
    assert httpx.post(f"{at_1_34.url}/api/v1/namespaces/default/pods", json=pod, timeout=10).status_code == 201
    results = f"{at_1_34.url}/simulator/v1/namespaces/default/pods/p/results"
    for _ in range(100):
        attempts = httpx.get(results, timeout=10).json().get("attempts") or []
        if attempts:
            break
        subprocess.run(["sleep", "0.1"], check=True)
    assert [a["kubeVersion"] for a in attempts] == ["1.34"]


def test_serve_at_v1_36_runs_node_declared_features(tmp_path: Path) -> None:
    # NodeDeclaredFeatures is on by default at v1.36: a pod restarting all its containers on an exit code goes only
    # to a node declaring RestartAllContainersOnContainerExits (status.declaredFeatures, kept by the API), though
    # the other node, twice its size, scores higher.
    srv = start_server(tmp_path, f"sqlite:///{tmp_path / 'kss.db'}", env={"KSS_KUBE_VERSION": "1.36"})
    try:
        assert httpx.get(f"{srv.url}/version", timeout=10).json()["gitVersion"] == "v1.36.2"
        for name, cpu, declared in (
            ("a-plain", "8", None),
            ("b-declares", "4", ["RestartAllContainersOnContainerExits"]),
        ):
            node = {"metadata": {"name": name}, "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}}}
            if declared:
                node["status"]["declaredFeatures"] = declared
            assert httpx.post(f"{srv.url}/api/v1/nodes", json=node, timeout=10).status_code == 201
        stored = httpx.get(f"{srv.url}/api/v1/nodes/b-declares", timeout=10).json()
        assert stored["status"]["declaredFeatures"] == ["RestartAllContainersOnContainerExits"]
        rule = {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}
        container = {"name": "c", "image": "x", "restartPolicy": "Never", "restartPolicyRules": [rule]}
        pod = {"metadata": {"name": "p"}, "spec": {"containers": [container]}}
        assert httpx.post(f"{srv.url}/api/v1/namespaces/default/pods", json=pod, timeout=10).status_code == 201
        for _ in range(100):
            node_name = (
                httpx.get(f"{srv.url}/api/v1/namespaces/default/pods/p", timeout=10).json()["spec"].get("nodeName")
            )
            if node_name:
                break
            subprocess.run(["sleep", "0.1"], check=True)
        assert node_name == "b-declares"
    finally:
        srv.stop()
    assert "not ported" not in srv.log.read_text()


def test_a_configuration_naming_a_plugin_of_a_later_release_is_a_status(at_1_34: Server) -> None:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"plugins": {"multiPoint": {"enabled": [{"name": "GangScheduling"}]}}}],
    }
    answer = httpx.put(f"{at_1_34.url}/simulator/v1/schedulerconfiguration", json=config, timeout=10)
    assert answer.status_code == 422
    status = answer.json()
    assert status["kind"] == "Status" and "'GangScheduling': plugin does not exist" in status["message"]

"""``kss sync`` and ``kss import`` read both ends' /version: against a real second ``kss serve`` at another minor
version the simulator is refused with one line naming the ``--kube-version`` to start it with, nothing mirrored;
``--allow-version-skew`` mirrors anyway with a warning; at the same version they run as before."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from kss_sim.kube.versions import kube_version
from syncer.versions import minor_version, version_skew
from tests.conftest import KSS, Server, launch_server, start_servers
from tests.syncer.test_e2e import REPO, core, node_body, raw


@pytest.fixture(scope="module")
def ends(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server, Server]]:
    """The source at v1.34, a simulator at the default version (v1.36) and one at v1.34."""
    tmp = tmp_path_factory.mktemp("versions")
    quiet = {"KSS_SCHEDULER_ENABLED": "false", "KSS_CONTROLLERS": "false", "KSS_KUBELET": "false"}
    source, at_default, at_1_34 = start_servers(
        launch_server(tmp, f"sqlite:///{tmp / 'source.db'}", env={**quiet, "KSS_KUBE_VERSION": "1.34"}),
        launch_server(tmp, f"sqlite:///{tmp / 'simdefault.db'}", env=quiet),
        launch_server(tmp, f"sqlite:///{tmp / 'sim134.db'}", env={**quiet, "KSS_KUBE_VERSION": "1.34"}),
    )
    core(source.url).create_node(node_body("node-a"))
    yield source, at_default, at_1_34
    for srv in (source, at_default, at_1_34):
        srv.stop()


def _kss(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KSS_")}
    return subprocess.run([str(KSS), *args], capture_output=True, text=True, cwd=REPO, timeout=120, env=env)


def _nodes(srv: Server) -> list[str]:
    return [n["metadata"]["name"] for n in raw(core(srv.url), "/api/v1/nodes")["items"]]


DEFAULT = kube_version().git_version  # the simulator started without --kube-version
SKEW = (
    f"the source runs Kubernetes v1.34.7 and the simulator {DEFAULT}: start the simulator with "
    "`kss serve --kube-version 1.34` (or mirror anyway with --allow-version-skew)"
)


@pytest.mark.parametrize("command", ["sync", "import"])
def test_a_simulator_at_another_minor_version_is_refused_naming_the_version_to_start_it_with(
    ends: tuple[Server, Server, Server], command: str
) -> None:
    source, at_default, _ = ends
    done = _kss(command, "--source-kubeconfig", str(source.kubeconfig), "--target-url", at_default.url)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines()[-1] == f"kss {command}: {SKEW}"
    assert "Traceback" not in done.stderr
    assert _nodes(at_default) == []  # nothing mirrored


def test_allow_version_skew_mirrors_anyway_with_a_warning(ends: tuple[Server, Server, Server], tmp_path: Path) -> None:
    source, at_default, _ = ends
    done = _kss(
        "import", "--source-kubeconfig", str(source.kubeconfig), "--target-url", at_default.url,
        "--allow-version-skew", "--no-progress",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        f"kss import: warning: the source runs Kubernetes v1.34.7 and the simulator {DEFAULT}; mirroring anyway "
        "(--allow-version-skew)"
    ) in done.stderr
    assert _nodes(at_default) == ["node-a"]


def test_at_the_same_version_the_import_runs_as_before(ends: tuple[Server, Server, Server]) -> None:
    source, _, at_1_34 = ends
    done = _kss("import", "--source-kubeconfig", str(source.kubeconfig), "--target-url", at_1_34.url, "--no-progress")
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    assert _nodes(at_1_34) == ["node-a"]


def test_managed_clusters_minor_with_a_plus_is_read_as_its_number() -> None:
    assert minor_version({"major": "1", "minor": "34+"}) == 34
    assert minor_version({"major": "1", "minor": ""}) is None
    # A source that names no minor version is not refused.
    assert version_skew({"major": "1"}, {"major": "1", "minor": "35", "gitVersion": "v1.35.4"}) is None
    skew = version_skew({"major": "1", "minor": "36+", "gitVersion": "v1.36.1-eks-1"}, {"minor": "35"})
    assert skew is not None and skew.wanted == "1.36" and skew.source == "v1.36.1-eks-1"


def test_a_v1_37_source_names_a_version_kss_serves() -> None:
    # v1.37 is ported (not measured): a simulator can be started at it, as the fix says.
    source = {"major": "1", "minor": "37", "gitVersion": "v1.37.0"}
    skew = version_skew(source, {"minor": "35", "gitVersion": "v1.35.4"})
    assert skew is not None and "`kss serve --kube-version 1.37`" in skew.fix()
    assert version_skew({"major": "1", "minor": "37"}, kube_version(skew.wanted).version_info()) is None

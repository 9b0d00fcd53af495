"""``kss export`` / ``kss import --snapshot`` against a real ``kss serve``; imported data survives a restart."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import httpx
import yaml

from tests.cluster.factories import node, pod
from tests.conftest import KSS, Server, start_server

ENV = {"KSS_SEED": "3"}


def kss(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(KSS), *args], capture_output=True, text=True, input=stdin, timeout=120, env=os.environ)


def _wait_bound(server: Server, count: int) -> dict[str, str]:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        items = httpx.get(f"{server.url}/api/v1/pods", timeout=10).json()["items"]
        placed = {p["metadata"]["name"]: p["spec"].get("nodeName") for p in items}
        if len(placed) == count and all(placed.values()):
            return placed
        time.sleep(0.1)
    raise AssertionError(f"pods not bound in time: {placed}")


def test_export_then_import_replace_into_another_server_and_survive_a_restart(tmp_path: Path, backend_url: str) -> None:
    source = start_server(tmp_path, f"sqlite:///{tmp_path / 'source.db'}", env=ENV)
    target_dir = tmp_path / "target"
    target_dir.mkdir()
    target = start_server(target_dir, backend_url, env=ENV)
    try:
        objects = [node(f"n{i}", cpu="4") for i in range(3)] + [pod(f"p{i}", cpu="1") for i in range(6)]
        loaded = kss("import", "--server", source.url, "--snapshot", "-", stdin=yaml.safe_dump_all(objects))
        assert loaded.returncode == 0, loaded.stderr
        placed = _wait_bound(source, 6)

        snapshot = tmp_path / "snapshot.yaml"
        exported = kss("export", "--server", source.url, "-o", str(snapshot))
        assert exported.returncode == 0, exported.stderr
        snap = yaml.safe_load(snapshot.read_text())
        assert {p["metadata"]["name"] for p in snap["pods"]} == set(placed)
        as_json = kss("export", "--server", source.url, "--format", "json")
        assert as_json.returncode == 0 and as_json.stdout.lstrip().startswith("{")

        httpx.post(f"{target.url}/api/v1/nodes", json=node("stale"), timeout=10)
        imported = kss("import", "--server", target.url, "--snapshot", str(snapshot), "--replace", "--unbind")
        assert imported.returncode == 0, imported.stderr
        assert "created" in imported.stderr
        assert _wait_bound(target, 6) == placed  # same seed, same queue order: same placements
        nodes = {n["metadata"]["name"] for n in httpx.get(f"{target.url}/api/v1/nodes", timeout=10).json()["items"]}
        assert nodes == {"n0", "n1", "n2"}

        target.stop()
        target = start_server(target_dir, backend_url, env=ENV)
        assert _wait_bound(target, 6) == placed
    finally:
        source.stop()
        target.stop()


def test_import_of_a_bad_file_names_the_object_and_exits_non_zero(tmp_path: Path, server: Server) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump({"nodes": [{"metadata": {"name": "ok"}}, {"metadata": {"name": "Not_Valid"}}]}))
    result = kss("import", "--server", server.url, "--snapshot", str(bad))
    assert result.returncode == 1
    assert "nodes[1].metadata.name" in result.stderr
    assert httpx.get(f"{server.url}/api/v1/nodes/ok", timeout=10).status_code == 404


def test_import_of_a_missing_file_says_so_without_a_traceback(tmp_path: Path) -> None:
    result = kss("import", "--server", "http://127.0.0.1:9", "--snapshot", str(tmp_path / "nope.yaml"))
    assert result.returncode == 2  # a file the command line names that cannot be read: a usage error
    assert "nope.yaml" in result.stderr and "Traceback" not in result.stderr

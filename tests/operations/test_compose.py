"""docker-compose.yml and the Dockerfile: services, profiles, volumes, loopback publishing; compose validates it."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def test_compose_has_the_simulator_an_optional_syncer_and_an_optional_postgres() -> None:
    compose = _compose()
    services = compose["services"]
    assert set(services) == {"kss", "syncer", "postgres"}
    kss = services["kss"]
    assert "profiles" not in kss  # `docker compose up` starts the simulator alone
    assert kss["ports"] == ["127.0.0.1:${KSS_PORT:-8000}:8000"]  # never exposed beyond the host by default
    assert "kss-data:/data" in kss["volumes"]
    assert kss["environment"]["KSS_DATABASE_URL"].endswith("sqlite:////data/kss.db}")
    assert services["syncer"]["profiles"] == ["sync"]
    assert any(v.endswith(":/kubeconfig:ro") for v in services["syncer"]["volumes"])
    assert "--source-kubeconfig /kubeconfig" in services["syncer"]["command"][-1]
    assert services["postgres"]["profiles"] == ["postgres"]
    assert "pg-data:/var/lib/postgresql/data" in services["postgres"]["volumes"]
    assert set(compose["volumes"]) == {"kss-data", "pg-data"}


def test_dockerfile_serves_on_all_interfaces_only_inside_the_container_with_data_on_a_volume() -> None:
    text = (ROOT / "Dockerfile").read_text()
    assert text.splitlines()[1].startswith("FROM python:3.11-slim")
    assert 'VOLUME ["/data"]' in text and "sqlite:////data/kss.db" in text
    assert '"kss", "serve", "--host", "0.0.0.0"' in text
    for copied in ("app", "syncer", "kss", "migrations", "templates", "static", "setup.py", "MANIFEST.in"):
        assert f" {copied}" in text


def test_dockerfile_installs_the_package_not_the_checkout() -> None:
    """A regular install (templates, static files and migrations inside the package), the sources gone afterwards,
    so the image runs what a ``pip install`` of kss runs (tests/test_install.py checks that it serves)."""
    text = (ROOT / "Dockerfile").read_text()
    install = next(line for line in text.splitlines() if "pip install" in line)
    assert '".[postgres]"' in install
    assert " -e " not in install and "--editable" not in install
    assert "rm -rf /tmp/kss-src" in text
    assert "WORKDIR /data" in text  # not the deleted sources: `python -m syncer` must import the installed package


def _compose_command() -> list[str] | None:
    """``docker compose`` (v2 plugin) or Debian's ``docker-compose`` (v1, same file format), if installed."""
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True, check=False).returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


@pytest.mark.skipif(_compose_command() is None, reason="neither docker compose nor docker-compose is installed")
def test_compose_validates_the_file() -> None:
    command = _compose_command()
    assert command is not None
    for profiles in ([], ["--profile", "sync", "--profile", "postgres"]):
        result = subprocess.run([*command, *profiles, "config", "-q"], cwd=ROOT, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr

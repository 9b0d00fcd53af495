"""The installable product: the wheel carries templates, static files and migrations, and a non-editable install of
it serves the UI and migrates its database from anywhere (docs/architecture.md, Packaging)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import zipfile
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest

from tests.conftest import free_port

ROOT = Path(__file__).resolve().parents[1]
# What the Dockerfile copies before its `pip install .`: the build must need nothing else.
BUILD_FILES = ("pyproject.toml", "setup.py", "MANIFEST.in")
BUILD_FOLDERS = ("kss_sim", "syncer", "kss", "templates", "static", "migrations")


def _builds_without_downloads() -> bool:
    """Whether this venv's setuptools can build the wheel itself (68+ as pyproject.toml asks; 70.1+ has bdist_wheel
    built in, earlier ones need the wheel package); otherwise pip fetches a build backend from its index."""
    major, minor = (int(part) for part in version("setuptools").split(".")[:2])
    return (major, minor) >= (70, 1) or (major >= 68 and importlib.util.find_spec("wheel") is not None)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel ``pip wheel .`` builds from a copy of the build inputs (the checkout stays free of build/)."""
    source = tmp_path_factory.mktemp("kss-source")
    for name in BUILD_FILES:
        shutil.copy2(ROOT / name, source / name)
    for name in BUILD_FOLDERS:
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__", "*.py[co]"))
    out = tmp_path_factory.mktemp("kss-wheel")
    isolation = ["--no-build-isolation"] if _builds_without_downloads() else []
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "--wheel-dir", str(out), str(source)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=source, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    (built,) = out.glob("kss-*.whl")
    return built


def test_the_wheel_carries_templates_static_files_and_migrations(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    top_level = {name.split("/")[0] for name in names}
    # What site-packages gets: the three packages and the metadata, nothing of the repository's top (tests, tools).
    assert {name for name in top_level if not name.endswith(".dist-info")} == {"kss_sim", "kss", "syncer"}
    for shipped in (
        "kss_sim/templates/base.html",
        "kss_sim/templates/pages/cluster.html",
        "kss_sim/templates/starters/pod.yaml",
        "kss_sim/templates/replay/report.html.j2",
        "kss_sim/templates/whatif/compare.html.j2",
        "kss_sim/static/css/app.css",
        "kss_sim/static/js/app.js",
        "kss_sim/static/replay-charts.js",
        "kss_sim/static/vendor/htmx-2.0.11.min.js",
        "kss_sim/static/vendor/htmx-ext-sse-2.2.4.min.js",
        "kss_sim/static/vendor/uplot/1.6.32/uPlot.iife.min.js",
        "kss_sim/static/vendor/uplot/1.6.32/uPlot.min.css",
        # Alembic's side of alembic.ini: kss_sim.db builds the rest of the configuration in code.
        "kss_sim/migrations/env.py",
        "kss_sim/migrations/script.py.mako",
        "kss_sim/cluster/admission/field_schema.json",
        "kss_sim/cluster/admission/decode_schemas.json",
    ):
        assert shipped in names, shipped
    versions = {path.name for path in (ROOT / "migrations" / "versions").glob("*.py")}
    assert versions and {f"kss_sim/migrations/versions/{name}" for name in versions} <= names
    assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]


def test_the_dockerfile_copies_what_the_wheel_is_built_from() -> None:
    copied: set[str] = set()
    for line in (ROOT / "Dockerfile").read_text().splitlines():
        if line.startswith("COPY "):
            copied.update(line.split()[1:-1])
    assert copied == {*BUILD_FILES, *BUILD_FOLDERS}


@pytest.fixture
def installed(wheel: Path, tmp_path: Path) -> Path:
    """The wheel installed (not editable) into a folder of its own; the dependencies come from this venv."""
    target = tmp_path / "site-packages"
    command = [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--target", str(target), str(wheel)]
    result = subprocess.run(command, capture_output=True, text=True, cwd=tmp_path, check=False)
    assert result.returncode == 0, result.stdout + result.stderr
    return target


@pytest.fixture
def served(installed: Path, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """``python -m kss_sim.cli serve`` from the installed package, started outside the repository on a fresh SQLite
    file."""
    workdir = tmp_path / "elsewhere"
    workdir.mkdir()
    database = workdir / "kss.db"
    env = {
        **{key: value for key, value in os.environ.items() if not key.startswith("KSS_")},
        "PYTHONPATH": str(installed),  # the installed package, never the checkout (the caller's PYTHONPATH is dropped)
        "KSS_DATABASE_URL": f"sqlite:///{database}",
        "KSS_CONTROLLERS": "false",
    }
    probe = "import kss_sim, kss_sim.package_data as data; print(kss_sim.__file__); print(data.RESOURCE_ROOT)"
    imported = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=workdir, env=env, check=True
    ).stdout.split()
    assert [Path(path) for path in imported] == [installed / "kss_sim" / "__init__.py", installed / "kss_sim"]

    port = free_port()
    log = workdir / "serve.log"
    with log.open("wb") as handle:
        process = subprocess.Popen(
            [sys.executable, "-m", "kss_sim.cli", "serve", "--host", "127.0.0.1", "--port", str(port)],
            stdout=handle,
            stderr=subprocess.STDOUT,
            cwd=workdir,
            env=env,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, log.read_text()
            assert time.monotonic() < deadline, log.read_text()
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield url, database
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_a_non_editable_install_serves_the_ui_and_migrates_its_database(served: tuple[str, Path]) -> None:
    url, database = served
    with httpx.Client(base_url=url, timeout=10) as client:
        for page in ("/ui/cluster", "/ui/pods", "/ui/new", "/ui/scheduler", "/ui/runs", "/ui/compare"):
            response = client.get(page)
            assert response.status_code == 200, (page, response.text)
            assert "htmx-2.0.11.min.js" in response.text  # rendered from base.html
        assert "kind: StorageClass" in client.get("/ui/new", params={"kind": "StorageClass"}).text  # a starter
        for static in ("vendor/htmx-2.0.11.min.js", "css/app.css", "vendor/uplot/1.6.32/uPlot.iife.min.js"):
            response = client.get(f"/ui/static/{static}")
            assert response.status_code == 200, static
            assert response.content == (ROOT / "static" / static).read_bytes()
    with sqlite3.connect(database) as connection:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        (revision,) = connection.execute("SELECT version_num FROM alembic_version").fetchone()
    assert {"cluster_objects", "scheduling_attempts", "scheduler_configuration", "replay_runs"} <= tables
    newest = max(path.name for path in (ROOT / "migrations" / "versions").glob("0*.py"))
    assert newest.startswith(f"{revision}_")

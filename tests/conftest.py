"""Shared fixtures: an Alembic-migrated SQLite file, the in-process ASGI app, a real ``kss serve`` process."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, create_engine, text

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.db import make_engine, upgrade_database
from kss_sim.engine_host import process_host
from kss_sim.main import create_app
from kss_sim.scheduler.plugins import out_of_tree
from kss_sim.serve_cli import kubeconfig
from tests.web.chromium import fresh_page, launched

# The apps of this process start their scheduler processes from one forkserver that imported the scheduler once,
# not a fresh interpreter each (a few seconds of CPU per test); ``kss serve`` subprocesses still spawn theirs.
process_host.START_METHOD = "forkserver"

KSS = Path(sys.executable).with_name("kss")
KUBECTL = "/usr/bin/kubectl"


# When set (``make test`` starts one with .ci/postgres.sh), the store, results and durability tests also run on
# PostgreSQL: each test gets its own database created from this URL.
POSTGRES_URL = os.environ.get("KSS_TEST_POSTGRES_URL", "")
BACKENDS = [
    "sqlite",
    pytest.param("postgresql", marks=pytest.mark.skipif(not POSTGRES_URL, reason="KSS_TEST_POSTGRES_URL is not set")),
]


def backend_database(backend: str, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database URL on ``backend``: a SQLite file, or a new PostgreSQL database dropped after."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'kss.db'}"
        return
    name = f"kss_{secrets.token_hex(6)}"
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}"'))
        base, _, _ = POSTGRES_URL.rpartition("/")
        yield f"{base}/{name}"
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


@pytest.fixture(params=BACKENDS)
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database on each backend in turn (SQLite; PostgreSQL when KSS_TEST_POSTGRES_URL is set)."""
    yield from backend_database(str(request.param), tmp_path)


@pytest.fixture
def database_url(tmp_path: Path) -> str:
    """A fresh SQLite file URL (not yet migrated)."""
    return f"sqlite:///{tmp_path / 'kss.db'}"


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    """An engine on a temp SQLite file migrated to head by Alembic."""
    eng = make_engine(database_url)
    upgrade_database(eng)
    yield eng
    eng.dispose()


@pytest.fixture
def store(engine: Engine) -> ClusterStore:
    """A cluster store written through to the migrated temp database."""
    return ClusterStore.open(engine)


@pytest.fixture
async def app(database_url: str) -> AsyncIterator[FastAPI]:
    """The application with its lifespan run (migrations applied, store loaded)."""
    # The scheduler and the controllers stay off so API tests see exactly the objects they wrote.
    application = create_app(
        Settings(database_url=database_url, watch_window=50, scheduler_enabled=False, controllers=False, kubelet=False)
    )
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    """An in-process HTTP client for the app."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
        yield c


API_TOKEN = "s3cret-token"


@pytest.fixture
async def locked(tmp_path: Path) -> AsyncIterator[FastAPI]:
    """The application behind a bearer token (``API_TOKEN``) and a 4 KiB body limit, scheduler off."""
    application = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'kss.db'}",
            api_token=API_TOKEN,
            scheduler_enabled=False,
            controllers=False,
            kubelet=False,
            max_body_bytes=4096,
        )
    )
    async with application.router.lifespan_context(application):
        yield application


def asgi_client(app: FastAPI, **headers: str) -> httpx.AsyncClient:
    """An in-process HTTP client for ``app`` sending ``headers`` with every request."""
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://kss.test", headers=headers)


_PORTS_HANDED_OUT: set[int] = set()


T = TypeVar("T")


def eventually(
    check: Callable[[], T],
    *,
    timeout: float = 30.0,
    what: str = "the condition",
    interval: float = 0.1,
    ignoring: tuple[type[BaseException], ...] = (),
) -> T:
    """Poll ``check`` until it returns something truthy, and return that; fail after ``timeout`` seconds naming
    ``what`` and the last value. An exception of the ``ignoring`` types counts as not yet (a server restarting)."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while True:
        try:
            last = check()
        except ignoring as exc:
            last = exc
        else:
            if last:
                return last
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}; last: {last!r}")
        time.sleep(interval)


def free_port() -> int:
    """A TCP port nobody listens on right now, never the same twice in a session (servers launched side by side
    have not bound theirs yet when the next one is picked)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = int(s.getsockname()[1])
        if port not in _PORTS_HANDED_OUT:
            _PORTS_HANDED_OUT.add(port)
            return port


@dataclass
class Server:
    """A ``kss serve`` subprocess and how to reach it."""

    url: str
    port: int
    database_url: str
    kubeconfig: Path
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self, *, kill: bool = False) -> None:
        """Terminate (or SIGKILL) the process and wait for it."""
        if self.process.poll() is None:
            if kill:
                self.process.kill()
            else:
                self.process.terminate()
            self.process.wait(timeout=20)


def launch_server(
    workdir: Path, database_url: str, *, port: int | None = None, env: dict[str, str] | None = None
) -> Server:
    """Start ``kss serve`` on a free port without waiting for it (``wait_until_serving``)."""
    port = port or free_port()
    log = workdir / f"kss-{port}.log"
    environ = {**os.environ, "KSS_DATABASE_URL": database_url, "KSS_PORT": str(port), **(env or {})}
    handle = log.open("wb")
    process = subprocess.Popen([str(KSS), "serve"], stdout=handle, stderr=subprocess.STDOUT, env=environ, cwd=workdir)
    url = f"http://127.0.0.1:{port}"
    config = workdir / f"kubeconfig-{port}"
    config.write_text(kubeconfig(url))
    return Server(url, port, database_url, config, process, log)


def wait_until_serving(server: Server) -> Server:
    """Wait until a launched server answers /healthz; kill it and raise with its log if it exits or takes > 60 s."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise RuntimeError(f"kss serve exited: {server.log.read_text()}")
        try:
            if httpx.get(f"{server.url}/healthz", timeout=1).status_code == 200:
                return server
        except httpx.HTTPError:
            time.sleep(0.1)
    server.process.kill()
    raise RuntimeError(f"kss serve did not start: {server.log.read_text()}")


def start_server(
    workdir: Path, database_url: str, *, port: int | None = None, env: dict[str, str] | None = None
) -> Server:
    """Start ``kss serve`` on a free port and wait until it answers."""
    return wait_until_serving(launch_server(workdir, database_url, port=port, env=env))


def start_servers(*launches: Server) -> tuple[Server, ...]:
    """Wait for servers launched together (``launch_server``): a start is ~3 s of CPU, mostly imports, so two
    starting side by side take about one start's time on two cores. If one fails, the others are stopped."""
    try:
        return tuple(wait_until_serving(server) for server in launches)
    except BaseException:
        for server in launches:
            server.stop(kill=True)
        raise


@pytest.fixture(scope="session")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One real ``kss serve`` for the kubectl and kubernetes-client tests of the session."""
    workdir = tmp_path_factory.mktemp("kss-server")
    srv = start_server(
        workdir,
        f"sqlite:///{workdir / 'kss.db'}",
        env={
            "KSS_WATCH_WINDOW": "200",
            "KSS_SCHEDULER_ENABLED": "false",
            "KSS_CONTROLLERS": "false",
            "KSS_KUBELET": "false",
        },
    )
    yield srv
    srv.stop()


@pytest.fixture(scope="session")
def kubectl(server: Server) -> Iterator[KubectlRunner]:
    """Run the real kubectl against the session server."""
    yield KubectlRunner(server.kubeconfig)


@dataclass
class KubectlRunner:
    """``kubectl --kubeconfig ...`` with the output captured."""

    config: Path

    def __call__(
        self, *args: str, check: bool = True, input: str | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl; raise with its output when ``check`` and it fails."""
        env = {**os.environ, "KUBECACHEDIR": str(self.config.parent / "kubecache")}
        proc = subprocess.run(
            [KUBECTL, "--kubeconfig", str(self.config), *args],
            capture_output=True,
            text=True,
            input=input,
            timeout=timeout,
            env=env,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
        return proc


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """One headless Chromium for a module's browser tests; each test gets a context and page of its own (``page``
    or ``fresh_page``). Not one per session: Playwright's sync API keeps its event loop marked as running between
    calls, so every asyncio test run while it lives fails ("cannot be called from a running event loop")."""
    with launched() as browser:
        yield browser


@pytest.fixture
def page(chromium: Any) -> Iterator[Any]:
    """A fresh 1440x900 page in the session's Chromium; a JavaScript error on it fails the test."""
    with fresh_page(chromium) as pg:
        yield pg


@pytest.fixture
def fresh_plugin_registry(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No users' plugins registered and entry points read afresh (tests that load plugins put new ones on the
    path); bytecode written, so a plugin module's reload is tested as users' machines run it."""
    monkeypatch.setattr(out_of_tree, "_registered", {})
    monkeypatch.setattr(out_of_tree, "_registered_by", {})
    monkeypatch.setattr(out_of_tree, "_modules", [])
    monkeypatch.setattr(out_of_tree, "_entry_points", None)
    monkeypatch.setattr(out_of_tree, "_entry_point_classes", {})
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    yield

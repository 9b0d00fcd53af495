"""``kss serve`` (run the simulator) and ``kss kubeconfig`` (point kubectl at it).

``kss serve`` checks everything it is given (settings, plugin modules, the scheduler configuration) before it starts,
and says it is serving only once the server has started and listens; a problem is one line and exit 2 (bad input)
or 1 (the server could not start), as every kss command.
"""

from __future__ import annotations

import argparse
import base64
import gc
import logging
import os
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import yaml

from kss_sim.config import OptionError, Settings, add_kube_version_argument, version_and_gates
from kss_sim.kube.api_enablement import (
    check_runtime_config,
    parse_runtime_config,
    registered_minors,
    workload_api_note,
)
from kss_sim.kube.versions import VERSIONS, kube_version
from kss_sim.server.gc_policy import SERVE_GC_THRESHOLDS, install_gc_policy, install_heap_policy
from kss_sim.server.tls import ensure_certificate

if TYPE_CHECKING:
    from fastapi import FastAPI

EXIT_BAD_INPUT, EXIT_FAILED = 2, 1

SERVE_EXAMPLES = """examples:
  kss serve                                        # http://127.0.0.1:8000: the API, and the web UI at /ui
  kss serve --port 9000 --database-url sqlite:///run.db
  kss serve --scheduler-config examples/replay/most-allocated.yaml
  kss serve --plugin-module my_plugins --feature-gates GenericWorkload=true,GangScheduling=true \\
      --runtime-config scheduling.k8s.io/v1alpha2=true     # v1.36's alpha Workload API, off by default as upstream
  kss serve --kube-version 1.37 --feature-gates GenericWorkload=true \
      --runtime-config scheduling.k8s.io/v1beta1=true      # v1.37's beta Workload API (ported, not measured)
  kss serve --kube-version 1.33 --feature-gates DynamicResourceAllocation=true \\
      --runtime-config resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2=true   # DRA as a v1.33 cluster has it
  kss serve --tls                                  # HTTPS, for kubectl with a token (KSS_API_TOKEN)

The KSS_* setting an option names (KSS_PORT=9000) is used when the option is not given."""

KUBECONFIG_EXAMPLES = """examples:
  kss kubeconfig > kss.kubeconfig && kubectl --kubeconfig kss.kubeconfig get nodes
  kss kubeconfig --target-url http://10.0.0.5:8000 --namespace team-a"""


def add_serve_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``kss serve``; unset ones come from ``KSS_*`` settings."""
    parser.add_argument("--host", default=None, help="interface to bind (default: KSS_HOST or 127.0.0.1)")
    parser.add_argument("--port", type=int, default=None, help="port to listen on (default: KSS_PORT or 8000)")
    parser.add_argument("--database-url", default=None, help="SQLAlchemy URL (default: KSS_DATABASE_URL)")
    parser.add_argument(
        "--scheduler-config", default=None, help="KubeSchedulerConfiguration file (KSS_SCHEDULER_CONFIG)"
    )
    parser.add_argument(
        "--plugin-module",
        action="append",
        dest="plugin_modules",
        metavar="MODULE",
        help="a Python module of your own scheduler plugins, imported at start-up; repeatable (KSS_PLUGIN_MODULES)",
    )
    parser.add_argument(
        "--feature-gates",
        default=None,
        metavar="GATES",
        help="alpha features, e.g. GenericWorkload=true,GangScheduling=true (KSS_FEATURE_GATES)",
    )
    add_kube_version_argument(parser)
    parser.add_argument(
        "--runtime-config",
        default=None,
        metavar="APIS",
        help="API group versions to serve or not, as kube-apiserver's flag: "
        "resource.k8s.io/v1beta1=true,api/beta=false (beta APIs are off by default; KSS_RUNTIME_CONFIG)",
    )
    parser.add_argument("--log-level", default="warning", help="uvicorn log level")
    parser.add_argument(
        "--tls", action="store_true", default=None, help="serve HTTPS with a self-signed certificate (KSS_TLS)"
    )
    parser.add_argument(
        "--shadow",
        action="store_true",
        default=None,
        help="judge every binding another scheduler makes with kss's own scheduler, placing nothing (KSS_SHADOW)",
    )
    parser.epilog = SERVE_EXAMPLES


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {
        key: value
        for key, value in (
            ("host", getattr(args, "host", None)),
            ("port", getattr(args, "port", None)),
            ("database_url", getattr(args, "database_url", None)),
            ("scheduler_config", getattr(args, "scheduler_config", None)),
            ("tls", getattr(args, "tls", None)),
            ("shadow", getattr(args, "shadow", None)),
            ("plugin_modules", getattr(args, "plugin_modules", None)),
            ("kube_version", getattr(args, "kube_version", None)),
            ("feature_gates", getattr(args, "feature_gates", None)),
            ("runtime_config", getattr(args, "runtime_config", None)),
        )
        if value is not None
    }
    return Settings(**overrides)


SHUTDOWN_GRACE_SECONDS = 3
# How long an idle keep-alive connection stays open: kube-apiserver's IdleTimeout.
KEEP_ALIVE_SECONDS = 90


def _served_elsewhere(config: Mapping[str, str], minor: int, message: str) -> str:
    """For a refusal (``message``) of a group version 1.``minor`` does not register: `` (served at --kube-version
    1.35)``, the supported releases that register it and serve a kind of it, so that a user of another default
    version sees the fix (kube-apiserver's own words stay as they are); else ``""``."""
    from kss_sim.cluster.kinds.registry import KINDS, VIEWS

    for key in config:
        group, _, rest = key.partition("/")
        version = rest.partition("/")[0]
        if not version or f"{group}/{version}" not in message or minor in registered_minors(group, version):
            continue
        kinds = [k for k in (*KINDS, *VIEWS) if (k.group, k.version) == (group, version)]
        having = [
            m.name
            for m in VERSIONS.values()
            if m.minor in registered_minors(group, version)
            and any(k.minors[0] <= m.minor and (k.minors[1] is None or m.minor <= k.minors[1]) for k in kinds)
        ]
        if having:
            return f" (served at --kube-version {', '.join(having)})"
    return ""


def _runtime_config_variable_problem(kube_version_option: str | None, variable: str) -> str | None:
    """``KSS_RUNTIME_CONFIG`` refused at the version the run has, in the settings' words with the option's hint of
    the releases that serve it; None when it is accepted, or left to the settings' own check (a value or a version
    that does not parse)."""
    try:
        minor = kube_version(kube_version_option or os.environ.get("KSS_KUBE_VERSION")).minor
        config = parse_runtime_config(variable)
    except ValueError:
        return None
    try:
        check_runtime_config(config, minor)
    except ValueError as exc:
        where = _served_elsewhere(config, minor, str(exc))
        return f"KSS_RUNTIME_CONFIG={variable!r}: {exc}{where} (correct or unset the variable)"
    return None


def run_serve(args: argparse.Namespace) -> int:
    """Start the API server in the foreground (Alembic migrations run on start)."""
    # The options' own names in the message (a bad KSS_* setting names itself); the gates are the version's.
    variable = os.environ.get("KSS_RUNTIME_CONFIG")
    if getattr(args, "runtime_config", None) is None and variable is not None:
        problem = _runtime_config_variable_problem(getattr(args, "kube_version", None), variable)
        if problem is not None:
            print(f"kss serve: {problem}", file=sys.stderr)
            return EXIT_BAD_INPUT
    try:
        version, _ = version_and_gates(getattr(args, "kube_version", None), args.feature_gates)
        runtime_config = getattr(args, "runtime_config", None)
        if runtime_config is not None:
            try:
                config = parse_runtime_config(runtime_config)
            except ValueError as exc:
                raise OptionError("--runtime-config", str(exc)) from None
            try:
                check_runtime_config(config, version.minor)
            except ValueError as exc:
                # kube-apiserver's words, and which releases serve the group version it does not register.
                where = _served_elsewhere(config, version.minor, str(exc))
                raise OptionError("--runtime-config", f"{exc}{where}") from None
    except OptionError as exc:
        print(f"kss serve: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    # No collections while the application's modules are imported and it is built: they find next to no garbage
    # and cost a fifth of that CPU (the one below, before the freeze, is enough).
    collecting = gc.isenabled()
    gc.disable()
    try:
        from kss_sim.main import create_app
        from kss_sim.scheduler.kube_scheduler_configuration import left_out_note
        from kss_sim.scheduler.plugins import PluginLoadError

        settings = _settings(args)
        try:
            app = create_app(settings)
        except PluginLoadError as exc:  # the user's plugin module: one clear line, no traceback
            print(f"kss serve: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        problem = scheduler_config_problem(settings, from_option=args.scheduler_config is not None)
        if problem is not None:
            print(f"kss serve: {problem}", file=sys.stderr)
            return EXIT_BAD_INPUT
        notes = (
            settings.version.unmeasured_note(),
            left_out_note(settings.effective_feature_gates, settings.version),
            workload_api_note(settings.effective_feature_gates, settings.version.minor, settings.runtime_config),
        )
        for note in notes:
            if note is not None:
                print(f"kss serve: {note}", file=sys.stderr)
        # Everything imported and built so far lives as long as the process: freeze it out of the garbage
        # collector, so the first full collection under load does not walk it (a 70-150 ms pause of every request,
        # issue #9).
        gc.collect()
        gc.freeze()
        gc.set_threshold(*SERVE_GC_THRESHOLDS)
    finally:
        if collecting:
            gc.enable()
    if settings.scheduler_enabled:
        install_gc_policy()
    # The API process's C heap as its scheduler's process keeps it (issue #35: under churn it is never idle, and
    # glibc kept the pages freed watch-log versions and answers had used).
    install_heap_policy()
    tls: dict[str, str] = {}
    if settings.tls:
        cert, key = ensure_certificate(settings.tls_dir, [settings.host])
        tls = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
    scheme = "https" if tls else "http"
    return _serve(
        app,
        settings,
        log_level=args.log_level,
        serving=f"kss: serving the Kubernetes API on {scheme}://{settings.host}:{settings.port}",
        debug=bool(getattr(args, "debug", False)),
        tls=tls,
    )


def scheduler_config_problem(settings: Settings, *, from_option: bool) -> str | None:
    """What is wrong with the scheduler configuration file (read and validated as the server will at start, after
    the plugin modules are loaded), naming the option or setting that gave it; None when it is good."""
    from kss_sim.engine_host.scheduler_thread import load_scheduler_config
    from kss_sim.scheduler.kube_scheduler_configuration import ConfigError

    if settings.scheduler_config is None:
        return None
    source = f"{'--scheduler-config' if from_option else 'KSS_SCHEDULER_CONFIG'} {settings.scheduler_config}"
    try:
        load_scheduler_config(settings)
    except OSError as exc:
        return f"{source}: {exc.strerror or exc}"
    except UnicodeDecodeError as exc:
        return f"{source}: not a text file ({exc.reason})"
    except ConfigError as exc:
        return f"{source}: {exc}"
    return None


def _serve(app: FastAPI, settings: Settings, *, log_level: str, serving: str, debug: bool, tls: dict[str, str]) -> int:
    """Run uvicorn until it is stopped. ``serving`` is printed once the application has started and the socket
    listens; if either fails, what uvicorn logged about it becomes one line (``--debug``: logged whole)."""
    import uvicorn

    from kss_sim.server.http_protocol import StepWritesHTTPProtocol

    config = uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_level=log_level,
        access_log=False,
        # An idle keep-alive connection is kept 90 s, as kube-apiserver's server keeps it (IdleTimeout, matching Go's
        # client transport); uvicorn's 5 s closed it just as kubectl drain sent its eviction retry 5 s after a 429,
        # and the POST failed with "connection reset by peer".
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        # Watches and the web UI's event streams stay open; on SIGTERM/Ctrl-C they get this long, then are cut.
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        http=StepWritesHTTPProtocol,  # a response's headers and body in one socket write
        **tls,  # type: ignore[arg-type]
    )
    startup_errors = _StartupErrors()
    startup_errors.watch(app)
    uvicorn_log = logging.getLogger("uvicorn.error")
    if not debug:
        uvicorn_log.addFilter(startup_errors)

    class Server(uvicorn.Server):
        async def startup(self, sockets: Any = None) -> None:
            await super().startup(sockets)
            if self.started:  # the lifespan ran and the socket listens
                uvicorn_log.removeFilter(startup_errors)
                print(serving, file=sys.stderr, flush=True)

    server = Server(config)
    try:
        server.run()
    except KeyboardInterrupt:  # Ctrl-C before uvicorn's own handlers were installed
        pass
    except SystemExit:  # uvicorn's exit when the application or the socket failed at start
        if server.started:
            raise
    finally:
        uvicorn_log.removeFilter(startup_errors)
    if not server.started:
        print(f"kss serve: the server did not start: {startup_errors.summary()}", file=sys.stderr)
        return EXIT_FAILED
    return 0


class _StartupErrors(logging.Filter):
    """Holds back what uvicorn logs at ERROR while the server starts (the application's traceback, "Application
    startup failed", a port already in use), and the exception the application's start raised, so that
    ``kss serve`` says it in one line."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []
        self.exception: BaseException | None = None

    def watch(self, app: FastAPI) -> None:
        """Keep the exception ``app``'s lifespan raises (the database cannot be opened, ...)."""
        lifespan = app.router.lifespan_context

        @asynccontextmanager
        async def kept(application: Any) -> AsyncIterator[Any]:
            try:
                async with lifespan(application) as state:
                    yield state
            except Exception as exc:
                self.exception = self.exception or exc
                raise

        app.router.lifespan_context = kept

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            return True
        self.messages.append(record.getMessage())
        return False

    def summary(self) -> str:
        """The application's exception, else the first thing uvicorn logged (a port in use), in one line."""
        if self.exception is not None:
            text = str(self.exception).strip().splitlines()
            problem = f"{type(self.exception).__name__}: {text[0]}" if text else type(self.exception).__name__
        else:
            logged = [m.strip() for m in self.messages if m.strip() and not m.startswith("Application startup failed")]
            problem = logged[0].splitlines()[-1] if logged else "uvicorn gave up"
        return f"{problem} (run again with --debug for the traceback)"


def add_kubeconfig_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``kss kubeconfig``."""
    parser.add_argument("--host", default=None, help="host of the server (default: KSS_HOST)")
    parser.add_argument("--port", type=int, default=None, help="port of the server (default: KSS_PORT)")
    parser.add_argument(
        "--target-url",
        "--server",
        dest="target_url",
        default=None,
        metavar="URL",
        help="the simulator's full URL, overriding --host/--port (--server: the former name)",
    )
    parser.add_argument("--namespace", default="default", help="namespace of the context")
    parser.epilog = KUBECONFIG_EXAMPLES


def kubeconfig(
    server: str, *, token: str | None = None, namespace: str = "default", ca_data: bytes | None = None
) -> str:
    """A kubeconfig YAML document with one cluster, user and current context named ``kss``."""
    user: dict[str, str] = {"token": token} if token else {}
    cluster: dict[str, str] = {"server": server}
    if ca_data is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_data).decode()
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kss", "cluster": cluster}],
        "users": [{"name": "kss", "user": user}],
        "contexts": [{"name": "kss", "context": {"cluster": "kss", "user": "kss", "namespace": namespace}}],
        "current-context": "kss",
        "preferences": {},
    }
    return yaml.safe_dump(doc, sort_keys=False)


def run_kubeconfig(args: argparse.Namespace) -> int:
    """Print a kubeconfig for the simulator: ``kubectl --kubeconfig <(kss kubeconfig) get nodes``."""
    settings = _settings(args)
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    ca_data: bytes | None = None
    if settings.tls:
        # kubectl drops the token on plain HTTP, so a token is only usable with TLS; the CA is our own certificate.
        cert, _key = ensure_certificate(settings.tls_dir, [settings.host])
        ca_data = cert.read_bytes()
    server = args.target_url or f"{'https' if settings.tls else 'http'}://{host}:{settings.port}"
    sys.stdout.write(kubeconfig(server, token=settings.api_token, namespace=args.namespace, ca_data=ca_data))
    return 0

"""``kss serve`` (run the simulator) and ``kss kubeconfig`` (point kubectl at it)."""

from __future__ import annotations

import argparse
import base64
import gc
import sys

import yaml

from app.config import Settings
from app.server.gc_policy import install_gc_policy
from app.server.tls import ensure_certificate


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
    parser.add_argument("--log-level", default="warning", help="uvicorn log level")
    parser.add_argument(
        "--tls", action="store_true", default=None, help="serve HTTPS with a self-signed certificate (KSS_TLS)"
    )


def _settings(args: argparse.Namespace) -> Settings:
    overrides = {
        key: value
        for key, value in (
            ("host", getattr(args, "host", None)),
            ("port", getattr(args, "port", None)),
            ("database_url", getattr(args, "database_url", None)),
            ("scheduler_config", getattr(args, "scheduler_config", None)),
            ("tls", getattr(args, "tls", None)),
            ("plugin_modules", getattr(args, "plugin_modules", None)),
            ("feature_gates", getattr(args, "feature_gates", None)),
        )
        if value is not None
    }
    return Settings(**overrides)


SHUTDOWN_GRACE_SECONDS = 3


# Young collections every 20,000 allocations instead of 700 (one per ~40 requests instead of one per request):
# each collection pauses every request in flight, and the rarer they are, the fewer requests see one.
SERVE_GC_THRESHOLDS = (20_000, 20, 10)


def run_serve(args: argparse.Namespace) -> int:
    """Start the API server in the foreground (Alembic migrations run on start)."""
    # No collections while the application's modules are imported and it is built: they find next to no garbage
    # and cost a fifth of that CPU (the one below, before the freeze, is enough).
    collecting = gc.isenabled()
    gc.disable()
    try:
        import uvicorn

        from app.main import create_app
        from app.scheduler.plugins import PluginLoadError

        settings = _settings(args)
        try:
            app = create_app(settings)
        except PluginLoadError as exc:  # the user's plugin module: one clear line, no traceback
            print(f"kss serve: {exc}", file=sys.stderr)
            return 2
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
    tls: dict[str, str] = {}
    if settings.tls:
        cert, key = ensure_certificate(settings.tls_dir, [settings.host])
        tls = {"ssl_certfile": str(cert), "ssl_keyfile": str(key)}
    scheme = "https" if tls else "http"
    print(f"kss: serving the Kubernetes API on {scheme}://{settings.host}:{settings.port}", file=sys.stderr, flush=True)
    uvicorn.run(
        app,
        host=settings.host,
        port=settings.port,
        log_level=args.log_level,
        access_log=False,
        # Watches and the web UI's event streams stay open; on SIGTERM/Ctrl-C they get this long, then are cut.
        timeout_graceful_shutdown=SHUTDOWN_GRACE_SECONDS,
        **tls,  # type: ignore[arg-type]
    )
    return 0


def add_kubeconfig_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``kss kubeconfig``."""
    parser.add_argument("--host", default=None, help="host of the server (default: KSS_HOST)")
    parser.add_argument("--port", type=int, default=None, help="port of the server (default: KSS_PORT)")
    parser.add_argument("--server", default=None, help="full server URL, overriding --host/--port")
    parser.add_argument("--namespace", default="default", help="namespace of the context")


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
    server = args.server or f"{'https' if settings.tls else 'http'}://{host}:{settings.port}"
    sys.stdout.write(kubeconfig(server, token=settings.api_token, namespace=args.namespace, ca_data=ca_data))
    return 0

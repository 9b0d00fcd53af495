"""``kss export``, ``kss import --snapshot``, ``kss reset`` and ``kss node``: the operations API of a running
simulator (and a node's status, through the Kubernetes API), from the shell."""

from __future__ import annotations

import argparse
import ssl
import sys
from datetime import UTC, datetime
from pathlib import Path

import httpx

from app.config import Settings
from app.server.tls import CERT_FILE

TIMEOUT = httpx.Timeout(600.0, connect=10.0)  # a large cluster takes a while to export or import


def _add_server(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", default=None, help="simulator URL (default: http://KSS_HOST:KSS_PORT)")
    parser.add_argument("--token", default=None, help="bearer token (default: KSS_API_TOKEN)")


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``kss export``."""
    _add_server(parser)
    parser.add_argument("--format", choices=("yaml", "json"), default="yaml", help="snapshot format (default yaml)")
    parser.add_argument("-o", "--output", default=None, help="write to this file instead of standard output")


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``kss import --snapshot`` (``kss import --kubeconfig`` is the syncer's one-shot copy)."""
    _add_server(parser)
    parser.add_argument(
        "--snapshot", required=True, help="snapshot (JSON/YAML), multi-document kubectl YAML or List; - for stdin"
    )
    parser.add_argument("--replace", action="store_true", help="delete everything not built-in first (default merge)")
    parser.add_argument("--unbind", action="store_true", help="clear pods' nodeName so the scheduler places them")


def _client(args: argparse.Namespace) -> httpx.Client:
    settings = Settings()
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    server = args.server or f"{'https' if settings.tls else 'http'}://{host}:{settings.port}"
    token = args.token or settings.api_token
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    cert = settings.tls_dir / CERT_FILE
    # Trust our own self-signed certificate.
    verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=cert) if settings.tls and cert.exists() else True
    return httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=TIMEOUT, verify=verify)


def _failed(response: httpx.Response) -> int:
    """Print a Status error (and each cause: the object and field at fault); exit code 1."""
    try:
        status = response.json()
    except ValueError:
        status = {}
    print(f"kss: {response.status_code}: {status.get('message') or response.text}", file=sys.stderr)
    for cause in (status.get("details") or {}).get("causes") or []:
        print(f"  {cause.get('field')}: {cause.get('message')}", file=sys.stderr)
    return 1


def run_export(args: argparse.Namespace) -> int:
    """Print (or write to ``-o``) the running simulator's snapshot."""
    with _client(args) as client:
        try:
            response = client.get("/simulator/v1/export", params={"format": args.format})
        except httpx.HTTPError as exc:
            print(f"kss export: {exc}", file=sys.stderr)
            return 1
    if response.status_code != 200:
        return _failed(response)
    if args.output:
        Path(args.output).write_text(response.text)
    else:
        sys.stdout.write(response.text)
    return 0


def run_import(args: argparse.Namespace) -> int:
    """Send a snapshot file to the running simulator; prints what was created, updated and deleted."""
    try:
        text = sys.stdin.read() if args.snapshot == "-" else Path(args.snapshot).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"kss import: cannot read {args.snapshot}: {exc}", file=sys.stderr)
        return 1
    params = {"mode": "replace" if args.replace else "merge", "unbind": str(args.unbind).lower()}
    with _client(args) as client:
        try:
            response = client.post(
                "/simulator/v1/import",
                params=params,
                content=text.encode(),
                headers={"Content-Type": "application/yaml"},
            )
        except httpx.HTTPError as exc:
            print(f"kss import: {exc}", file=sys.stderr)
            return 1
    if response.status_code != 200:
        return _failed(response)
    report = response.json()
    print(
        f"imported: {report['created']} created, {report['updated']} updated, {report['deleted']} deleted"
        + ("; scheduler configuration applied" if report.get("schedulerConfigApplied") else ""),
        file=sys.stderr,
    )
    return 0


def wants_cluster_import(argv: list[str]) -> bool:
    """Whether ``kss import`` arguments ask for the syncer's copy of a real cluster (``--kubeconfig``)."""
    return any(a == "--kubeconfig" or a.startswith("--kubeconfig=") for a in argv)


def add_reset_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``kss reset``."""
    _add_server(parser)
    parser.add_argument(
        "--empty",
        action="store_true",
        help="to an empty cluster (built-in namespaces and priority classes only) instead of the objects the server "
        "had when it (last) started",
    )


def run_reset(args: argparse.Namespace) -> int:
    """Reset the running simulator; prints what was deleted and created."""
    with _client(args) as client:
        try:
            response = client.post("/simulator/v1/reset", params={"to": "empty" if args.empty else "start"})
        except httpx.HTTPError as exc:
            print(f"kss reset: {exc}", file=sys.stderr)
            return 1
    if response.status_code != 200:
        return _failed(response)
    report = response.json()
    print(
        f"reset {'to an empty cluster' if args.empty else 'to the start state'}: "
        f"{report['deleted']} deleted, {report['created']} created",
        file=sys.stderr,
    )
    return 0


# kss node: the Ready condition a node's kubelet would report (what `kubectl patch node --subresource status` does).
NODE_REPORTS = {
    "fail": ("False", "KubeletNotReady", "kss node fail: the node's kubelet reports NotReady"),
    "unreachable": ("Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."),
    "heal": ("True", "KubeletReady", "kubelet is posting ready status"),
}


def add_node_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``kss node``."""
    _add_server(parser)
    parser.add_argument("action", choices=("fail", "heal"), help="fail: Ready False (or Unknown); heal: Ready True")
    parser.add_argument("name", help="the node")
    parser.add_argument(
        "--unreachable", action="store_true", help="fail as a node that stopped reporting: Ready Unknown"
    )


def run_node(args: argparse.Namespace) -> int:
    """Set a node's Ready condition through its status subresource; the node lifecycle controller then taints it
    (not-ready / unreachable NoExecute) and the taint eviction controller moves its pods off after their
    tolerations, as on a cluster."""
    report = "unreachable" if args.action == "fail" and args.unreachable else args.action
    status, reason, message = NODE_REPORTS[report]
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    condition = {
        "type": "Ready",
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }
    with _client(args) as client:
        try:
            response = client.patch(
                f"/api/v1/nodes/{args.name}/status",
                json={"status": {"conditions": [condition]}},
                headers={"Content-Type": "application/strategic-merge-patch+json"},
            )
        except httpx.HTTPError as exc:
            print(f"kss node: {exc}", file=sys.stderr)
            return 1
    if response.status_code != 200:
        return _failed(response)
    print(f"node/{args.name}: Ready {status} ({reason})", file=sys.stderr)
    return 0

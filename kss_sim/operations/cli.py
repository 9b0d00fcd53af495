"""``kss export``, ``kss import``, ``kss reset`` and ``kss node``: the operations API of a running simulator (and a
node's status, through the Kubernetes API), from the shell.

``kss import --snapshot FILE`` sends a snapshot; ``kss import --source-kubeconfig PATH`` hands its options to the
syncer, which copies a real cluster once (syncer/__main__.py). The simulator is ``--target-url`` (``--server``, the
former name) and ``--target-token`` (``--token``) in every command."""

from __future__ import annotations

import argparse
import ssl
import sys
from pathlib import Path

import httpx

from kss_sim.config import Settings
from kss_sim.kube.node_ready import NODE_REPORTS, ready_status_patch
from kss_sim.server.tls import CERT_FILE
from syncer.options import add_copy_arguments, add_source_context, add_source_kubeconfig

TIMEOUT = httpx.Timeout(600.0, connect=10.0)  # a large cluster takes a while to export or import


EXPORT_EXAMPLES = """examples:
  kss export > cluster.yaml
  kss export --format json -o cluster.json --target-url http://10.0.0.5:8000"""

IMPORT_EXAMPLES = """examples:
  kss import --snapshot cluster.yaml                  # into the simulator at http://KSS_HOST:KSS_PORT
  kss import --snapshot cluster.yaml --replace --unbind
  kubectl get nodes,pods -A -o yaml | kss import --snapshot -
  kss import --source-kubeconfig ~/.kube/config --target-url http://127.0.0.1:8000 --workloads"""

NODE_EXAMPLES = """examples:
  kss node fail node-1                                # Ready False: tainted not-ready, pods evicted after 300 s
  kss node fail node-1 --unreachable                  # Ready Unknown, as a node that stopped reporting
  kss node heal node-1 --target-url http://10.0.0.5:8000"""

RESET_EXAMPLES = """examples:
  kss reset                                           # back to the cluster the server started with
  kss reset --empty --target-url http://10.0.0.5:8000"""


def _add_server(parser: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    parser.add_argument(
        "--target-url",
        "--server",
        dest="target_url",
        default=None,
        metavar="URL",
        help="the simulator's URL (default: http://KSS_HOST:KSS_PORT; --server: the former name)",
    )
    parser.add_argument(
        "--target-token",
        "--token",
        dest="target_token",
        default=None,
        metavar="TOKEN",
        help="bearer token (default: KSS_API_TOKEN; --token: the former name)",
    )


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``kss export``."""
    _add_server(parser)
    parser.add_argument("--format", choices=("yaml", "json"), default="yaml", help="snapshot format (default yaml)")
    parser.add_argument("-o", "--output", default=None, help="write to this file instead of standard output")
    parser.epilog = EXPORT_EXAMPLES


def add_import_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``kss import``: a snapshot (``--snapshot``) or a real cluster (``--source-kubeconfig``, the
    syncer's one-shot copy), into the simulator."""
    what = parser.add_argument_group("what to import (one of)")
    source = what.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--snapshot",
        metavar="FILE",
        help="snapshot (JSON/YAML), multi-document kubectl YAML or List; - for stdin",
    )
    add_source_kubeconfig(source, required=False, former_names=True)
    add_source_context(what, former_names=True)
    target = parser.add_argument_group("the simulator")
    _add_server(target)
    target.add_argument(
        "--target-kubeconfig",
        metavar="PATH",
        help="with --source-kubeconfig: a kubeconfig of the simulator instead of --target-url",
    )
    target.add_argument("--target-context", metavar="NAME", help="context in --target-kubeconfig")
    snapshot = parser.add_argument_group("with --snapshot")
    snapshot.add_argument("--replace", action="store_true", help="delete everything not built-in first (default merge)")
    snapshot.add_argument("--unbind", action="store_true", help="clear pods' nodeName so the scheduler places them")
    add_copy_arguments(parser.add_argument_group("with --source-kubeconfig"))
    parser.epilog = IMPORT_EXAMPLES


def _client(args: argparse.Namespace) -> httpx.Client:
    settings = Settings()
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::") else settings.host
    server = args.target_url or f"{'https' if settings.tls else 'http'}://{host}:{settings.port}"
    token = args.target_token or settings.api_token
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    cert = settings.tls_dir / CERT_FILE
    # Trust our own self-signed certificate.
    verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=cert) if settings.tls and cert.exists() else True
    return httpx.Client(base_url=server.rstrip("/"), headers=headers, timeout=TIMEOUT, verify=verify)


def _unreachable(command: str, client: httpx.Client, exc: httpx.HTTPError) -> int:
    """The simulator did not answer: one line with where it was looked for and how to point elsewhere; exit 1."""
    print(
        f"kss {command}: no answer from the simulator at {client.base_url}: {exc} (is kss serve running there? "
        "--target-url gives its address)",
        file=sys.stderr,
    )
    return 1


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
            return _unreachable("export", client, exc)
    if response.status_code != 200:
        return _failed(response)
    if args.output:
        Path(args.output).write_text(response.text)
    else:
        sys.stdout.write(response.text)
    return 0


def run_import(args: argparse.Namespace) -> int:
    """Send a snapshot file to the running simulator, or copy a real cluster into it; prints what was created,
    updated and deleted (the copy: a line per kind)."""
    if args.source_kubeconfig is not None:
        return _copy_cluster(args)
    if args.target_kubeconfig is not None or args.source_context is not None:
        flag = "--target-kubeconfig" if args.target_kubeconfig is not None else "--source-context"
        print(f"kss import: {flag} goes with --source-kubeconfig; a snapshot goes to --target-url", file=sys.stderr)
        return 2
    try:
        text = sys.stdin.read() if args.snapshot == "-" else Path(args.snapshot).read_text()
    except (OSError, UnicodeDecodeError) as exc:
        print(f"kss import: --snapshot {args.snapshot}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 2
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
            return _unreachable("import", client, exc)
    if response.status_code != 200:
        return _failed(response)
    report = response.json()
    print(
        f"imported: {report['created']} created, {report['updated']} updated, {report['deleted']} deleted"
        + ("; scheduler configuration applied" if report.get("schedulerConfigApplied") else ""),
        file=sys.stderr,
    )
    return 0


def _copy_cluster(args: argparse.Namespace) -> int:
    """``kss import --source-kubeconfig``: the syncer copies the cluster once (it loads the Kubernetes client)."""
    if args.replace or args.unbind:
        print(f"kss import: {'--replace' if args.replace else '--unbind'} goes with --snapshot", file=sys.stderr)
        return 2
    if args.target_url is None and args.target_kubeconfig is None:
        print("kss import: --source-kubeconfig needs the simulator: --target-url URL or --target-kubeconfig PATH",
              file=sys.stderr)  # fmt: skip
        return 2
    from syncer.__main__ import run_import_command

    return run_import_command(args)


def add_reset_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``kss reset``."""
    _add_server(parser)
    parser.add_argument(
        "--empty",
        action="store_true",
        help="to an empty cluster (built-in namespaces and priority classes only) instead of the objects the server "
        "had when it (last) started",
    )
    parser.epilog = RESET_EXAMPLES


def run_reset(args: argparse.Namespace) -> int:
    """Reset the running simulator; prints what was deleted and created."""
    with _client(args) as client:
        try:
            response = client.post("/simulator/v1/reset", params={"to": "empty" if args.empty else "start"})
        except httpx.HTTPError as exc:
            return _unreachable("reset", client, exc)
    if response.status_code != 200:
        return _failed(response)
    report = response.json()
    print(
        f"reset {'to an empty cluster' if args.empty else 'to the start state'}: "
        f"{report['deleted']} deleted, {report['created']} created",
        file=sys.stderr,
    )
    return 0


def add_node_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``kss node``."""
    _add_server(parser)
    parser.add_argument("action", choices=("fail", "heal"), help="fail: Ready False (or Unknown); heal: Ready True")
    parser.add_argument("name", help="the node")
    parser.add_argument(
        "--unreachable", action="store_true", help="fail as a node that stopped reporting: Ready Unknown"
    )
    parser.epilog = NODE_EXAMPLES


def run_node(args: argparse.Namespace) -> int:
    """Set a node's Ready condition through its status subresource; the node lifecycle controller then taints it
    (not-ready / unreachable NoExecute) and the taint eviction controller moves its pods off after their
    tolerations, as on a cluster."""
    report = "unreachable" if args.action == "fail" and args.unreachable else args.action
    status, reason, _ = NODE_REPORTS[report]
    with _client(args) as client:
        try:
            response = client.patch(
                f"/api/v1/nodes/{args.name}/status",
                json=ready_status_patch(report),
                headers={"Content-Type": "application/strategic-merge-patch+json"},
            )
        except httpx.HTTPError as exc:
            print(f"kss node: {exc}", file=sys.stderr)
            return 1
    if response.status_code != 200:
        return _failed(response)
    print(f"node/{args.name}: Ready {status} ({reason})", file=sys.stderr)
    return 0

"""Capture protobuf request bodies as client-go writes them, for ``tests/cluster/data/client_go_protobuf.json``.

kubectl's generator commands (``kubectl create deployment|job|service|configmap|...``) are client-go typed clients:
they POST ``application/vnd.kubernetes.protobuf`` bodies. This script puts a small recording proxy in front of a
running ``kss serve``, runs each command through it, and keeps each protobuf body beside the same object as Go's
``encoding/json`` writes it (the same command with ``--dry-run=client -o json``): the test decodes the bytes and
compares. Commands kss refuses (a kind it does not serve) still leave their body behind.

Usage: ``kss serve`` on ``--target``, then ``python tools/capture_client_go_protobuf.py --target http://127.0.0.1:8080``.
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import tempfile
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

OUTPUT = Path(__file__).resolve().parent.parent / "tests" / "cluster" / "data" / "client_go_protobuf.json"
PROTOBUF = "application/vnd.kubernetes.protobuf"

# name -> kubectl arguments (namespaced ones in "default").
COMMANDS: dict[str, list[str]] = {
    "namespace": ["create", "namespace", "captured"],
    "deployment": ["create", "deployment", "web", "--image=nginx:1.27", "--replicas=3", "--port=8080"],
    "job": ["create", "job", "once", "--image=busybox", "--", "sh", "-c", "echo hi"],
    "cronjob": ["create", "cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *", "--", "date"],
    "priorityclass": ["create", "priorityclass", "high", "--value=1000", "--description=vip", "--global-default=false"],
    "poddisruptionbudget": ["create", "pdb", "web", "--selector=app=web", "--min-available=50%"],
    "service": ["create", "service", "nodeport", "web", "--tcp=80:8080", "--node-port=30080"],
    "configmap": ["create", "configmap", "settings", "--from-literal=mode=fast", "--from-literal=level=3"],
    "secret": ["create", "secret", "generic", "creds", "--from-literal=password=s3cret", "--type=Opaque"],
    "serviceaccount": ["create", "serviceaccount", "robot"],
    "role": ["create", "role", "reader", "--verb=get,list,watch", "--resource=pods,nodes"],
    "rolebinding": ["create", "rolebinding", "reader", "--role=reader", "--serviceaccount=default:robot"],
    "clusterrole": ["create", "clusterrole", "node-reader", "--verb=get,list", "--resource=nodes"],
    "clusterrolebinding": ["create", "clusterrolebinding", "nodes", "--clusterrole=node-reader", "--user=alice"],
    "resourcequota": ["create", "quota", "small", "--hard=cpu=2,memory=1Gi,pods=10"],
}


class _Recorder(BaseHTTPRequestHandler):
    target = ""
    bodies: list[bytes] = []

    def _forward(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.headers.get("content-type", "").startswith(PROTOBUF):
            self.bodies.append(body)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
        answer = httpx.request(self.command, self.target + self.path, content=body, headers=headers, timeout=30)
        self.send_response(answer.status_code)
        for key, value in answer.headers.items():
            if key.lower() not in ("content-length", "transfer-encoding", "connection", "content-encoding"):
                self.send_header(key, value)
        self.send_header("content-length", str(len(answer.content)))
        self.end_headers()
        self.wfile.write(answer.content)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _forward

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _kubeconfig(url: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": url}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u", "namespace": "default"}}],
            "users": [{"name": "u", "user": {}}],
            "current-context": "c",
        }
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--target", required=True, help="the kss serve URL")
    args = parser.parse_args()
    _Recorder.target = args.target.rstrip("/")
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    version = subprocess.run(["kubectl", "version", "--client", "-o", "json"], capture_output=True, text=True)
    captured: dict[str, Any] = {
        "client": json.loads(version.stdout)["clientVersion"]["gitVersion"],
        "bodies": {},
    }
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / "kubeconfig"
        config.write_text(_kubeconfig(f"http://127.0.0.1:{proxy.server_port}"))
        kubectl = ["kubectl", "--kubeconfig", str(config)]
        for name, command in COMMANDS.items():
            _Recorder.bodies.clear()
            cut = command.index("--") if "--" in command else len(command)  # flags go before a command's own args
            dry_run = [*command[:cut], "--dry-run=client", "-o", "json", *command[cut:]]
            go_json = subprocess.run([*kubectl, *dry_run], capture_output=True)
            subprocess.run([*kubectl, *command], capture_output=True)
            if not _Recorder.bodies:
                print(f"{name}: no protobuf body sent")
                continue
            captured["bodies"][name] = {
                "command": "kubectl " + " ".join(command),
                "protobuf": base64.b64encode(_Recorder.bodies[-1]).decode(),
                "json": json.loads(go_json.stdout),
            }
            print(f"{name}: {len(_Recorder.bodies[-1])} bytes")
    proxy.shutdown()
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(captured, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {OUTPUT}")


if __name__ == "__main__":
    main()

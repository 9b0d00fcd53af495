"""Security defaults: loopback, a bearer token on every API and UI request (kubectl too), body limits, safe YAML."""

from __future__ import annotations

import os
import ssl
import subprocess
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import yaml
from fastapi import FastAPI

from kss_sim.config import Settings
from tests.cluster.factories import node
from tests.conftest import API_TOKEN, KSS, KUBECTL, asgi_client, free_port


def test_the_server_listens_on_loopback_unless_told_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KSS_HOST", raising=False)
    assert Settings().host == "127.0.0.1"


async def test_every_request_but_the_probes_needs_the_token(locked: FastAPI) -> None:
    async with asgi_client(locked) as anonymous:
        paths = ["/api/v1/nodes", "/apis", "/simulator/v1/export", "/simulator/v1/schedulerconfiguration", "/metrics"]
        for path in [*paths, "/", "/simulator/docs", "/simulator/v1/namespaces/default/pods/p/results"]:
            r = await anonymous.get(path)
            assert r.status_code == 401, path
            assert r.json()["kind"] == "Status" and r.json()["reason"] == "Unauthorized"
        assert (await anonymous.post("/simulator/v1/reset")).status_code == 401
        for probe in ("/healthz", "/readyz"):
            assert (await anonymous.get(probe)).status_code == 200
    async with asgi_client(locked, Authorization="Bearer wrong") as wrong:
        assert (await wrong.get("/api/v1/nodes")).status_code == 401
    async with asgi_client(locked, Authorization=f"Bearer {API_TOKEN}") as authorized:
        assert (await authorized.get("/api/v1/nodes")).status_code == 200
        assert (await authorized.get("/simulator/v1/export")).status_code == 200
        assert (await authorized.get("/metrics")).status_code == 200


async def test_a_browser_signs_in_once_with_the_token_and_then_uses_a_cookie(locked: FastAPI) -> None:
    async with asgi_client(locked) as browser:
        r = await browser.get("/simulator/v1/export", params={"token": API_TOKEN, "format": "json"})
        assert r.status_code == 303
        assert r.headers["location"] == "/simulator/v1/export?format=json"  # the token leaves the address bar
        assert "httponly" in r.headers["set-cookie"].lower()
        assert (await browser.get("/simulator/v1/export")).status_code == 200  # the cookie is sent from now on
        assert (await browser.get("/api/v1/nodes", params={"token": "wrong"})).status_code == 401


async def test_bodies_above_the_limit_get_413_on_every_route(locked: FastAPI) -> None:
    big = b"x" * 5000
    async with asgi_client(locked, Authorization=f"Bearer {API_TOKEN}") as c:
        for method, path in (("PUT", "/simulator/v1/schedulerconfiguration"), ("POST", "/api/v1/nodes")):
            r = await c.request(method, path, content=big, headers={"content-type": "application/yaml"})
            assert r.status_code == 413, path
            assert r.json()["reason"] == "RequestEntityTooLarge"

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: counted as it arrives
            for _ in range(5):
                yield b"#" * 1000

        r = await c.put("/simulator/v1/schedulerconfiguration", content=chunks())
        assert r.status_code == 413 and r.json()["kind"] == "Status"
        # A snapshot may be larger than one object: the import has its own, larger limit.
        nodes = [node(f"n{i}") for i in range(40)]
        r = await c.post("/simulator/v1/import", json={"nodes": nodes})
        assert r.status_code == 200, r.text


async def test_yaml_is_parsed_safely(locked: FastAPI, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    payload = f'!!python/object/apply:os.system ["touch {marker}"]\n'
    async with asgi_client(locked, Authorization=f"Bearer {API_TOKEN}") as c:
        r = await c.put(
            "/simulator/v1/schedulerconfiguration", content=payload, headers={"content-type": "application/yaml"}
        )
        assert r.status_code == 400
        r = await c.post("/simulator/v1/import", content=f"nodes:\n- {payload}")
        assert r.status_code == 400
        r = await c.post("/api/v1/nodes", content=payload, headers={"content-type": "application/yaml"})
        assert r.status_code == 400
    assert not marker.exists()


def test_kubectl_works_with_the_printed_kubeconfig_and_fails_without_the_token(tmp_path: Path) -> None:
    # kubectl sends a token only over HTTPS: KSS_TLS serves it with a self-signed certificate that
    # `kss kubeconfig` embeds as the cluster's CA.
    port = free_port()
    env = {**os.environ, "KSS_API_TOKEN": API_TOKEN, "KSS_TLS": "true", "KSS_TLS_DIR": str(tmp_path / "tls"),
           "KSS_PORT": str(port), "KSS_DATABASE_URL": f"sqlite:///{tmp_path / 'kss.db'}",
           "KSS_SCHEDULER_ENABLED": "false"}  # fmt: skip
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen([str(KSS), "serve"], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=tmp_path)
    try:
        printed = subprocess.run([str(KSS), "kubeconfig"], capture_output=True, text=True, env=env, check=True).stdout
        config = yaml.safe_load(printed)
        assert config["users"][0]["user"]["token"] == API_TOKEN
        assert config["clusters"][0]["cluster"]["server"] == f"https://127.0.0.1:{port}"
        with_token = tmp_path / "with-token.kubeconfig"
        with_token.write_text(printed)
        config["users"][0]["user"]["token"] = "wrong"
        without = tmp_path / "wrong-token.kubeconfig"
        without.write_text(yaml.safe_dump(config))
        ca = tmp_path / "tls" / "kss.crt"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert process.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                if (
                    httpx.get(
                        f"https://127.0.0.1:{port}/healthz", verify=ssl.create_default_context(cafile=ca), timeout=1
                    ).status_code
                    == 200
                ):
                    break
            except httpx.HTTPError:
                time.sleep(0.1)
        kenv = {**os.environ, "KUBECACHEDIR": str(tmp_path / "cache")}

        def kubectl(cfg: Path, *args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [KUBECTL, "--kubeconfig", str(cfg), *args], capture_output=True, text=True, env=kenv, timeout=120
            )

        manifest = tmp_path / "ns.yaml"
        manifest.write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: secured\n")
        created = kubectl(with_token, "apply", "-f", str(manifest))
        assert created.returncode == 0, created.stderr
        assert "namespace/secured" in kubectl(with_token, "get", "namespaces", "-o", "name").stdout
        refused = kubectl(without, "get", "namespaces")
        assert refused.returncode != 0
        assert "Unauthorized" in refused.stderr or "provide credentials" in refused.stderr
        # The kss CLI finds the same certificate and token in the environment.
        exported = subprocess.run([str(KSS), "export"], capture_output=True, text=True, env=env, timeout=60)
        assert exported.returncode == 0, exported.stderr
        assert "secured" in exported.stdout
    finally:
        process.terminate()
        process.wait(timeout=20)

"""``HTTPExtender.send`` and ``makeTransport``: POST JSON to ``<urlPrefix>/<verb>``, TLS per ``tlsConfig``."""

from __future__ import annotations

import base64
import ssl
import tempfile
from typing import Any

import httpx

from kss_sim.scheduler.extender import ExtenderConfig, ExtenderError


def _pem(data: Any) -> str:
    """``certData``/``keyData``/``caData``: bytes in Go, so base64 in JSON/YAML; plain PEM text is taken too."""
    text = str(data)
    if "-----BEGIN" in text:
        return text
    return base64.b64decode(text).decode()


def ssl_context(config: ExtenderConfig) -> ssl.SSLContext | bool:
    """``makeTransport``'s TLS: with enableHTTPS and no CA the server is not verified; tlsConfig's insecure,
    CA (file or data) and client certificate (file or data) are honoured."""
    tls = config.tls_config or {}
    has_ca = bool(tls.get("caFile") or tls.get("caData"))
    insecure = bool(tls.get("insecure")) or (config.enable_https and not has_ca)
    has_cert = bool(tls.get("certFile") or tls.get("certData"))
    if not tls and not config.enable_https:
        return True
    ctx = ssl.create_default_context()
    if insecure:
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    elif has_ca:
        if tls.get("caFile"):
            ctx.load_verify_locations(cafile=tls["caFile"])
        if tls.get("caData"):
            ctx.load_verify_locations(cadata=_pem(tls["caData"]))
    if has_cert:
        if tls.get("certFile"):
            ctx.load_cert_chain(tls["certFile"], tls.get("keyFile") or None)
        else:
            with tempfile.NamedTemporaryFile("w", suffix=".pem") as f:
                f.write(_pem(tls["certData"]))
                f.write("\n")
                if tls.get("keyData"):
                    f.write(_pem(tls["keyData"]))
                f.flush()
                ctx.load_cert_chain(f.name)
    return ctx


class HTTPTransport:
    """One extender's HTTP calls (a synchronous client: the scheduling loop waits for the answer, as
    kube-scheduler's cycle does)."""

    def __init__(self, config: ExtenderConfig) -> None:
        self.prefix = config.url_prefix.rstrip("/")
        tls = config.tls_config or {}
        self.server_name = tls.get("serverName") or None
        self.client = httpx.Client(verify=ssl_context(config), timeout=config.http_timeout)

    def post(self, verb: str, body: dict[str, Any], timeout: float) -> Any:
        url = f"{self.prefix}/{verb}"
        extensions = {"sni_hostname": self.server_name} if self.server_name else None
        try:
            resp = self.client.post(url, json=body, timeout=timeout, extensions=extensions)
        except httpx.TimeoutException as exc:
            raise ExtenderError(f'Post "{url}": timed out after {timeout:g}s ({type(exc).__name__})') from exc
        except httpx.HTTPError as exc:
            raise ExtenderError(f'Post "{url}": {exc}') from exc
        if resp.status_code != 200:
            raise ExtenderError(f"failed {verb} with extender at URL {url}, code {resp.status_code}")
        try:
            return resp.json()
        except ValueError as exc:
            raise ExtenderError(f"extender at URL {url}: undecodable answer to {verb}: {exc}") from exc


def http_transport(config: ExtenderConfig) -> HTTPTransport:
    """The transport factory the engine's hosts give ``build_extenders``."""
    return HTTPTransport(config)

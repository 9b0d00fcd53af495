"""The live driver's wire: a running ``kss serve`` reached over its Kubernetes API with httpx (as ``kss export``
does), plus the simulator's own import and scheduler-configuration endpoints.

Kinds are found by discovery (``/api/v1``, ``/apis``), so any kind the server serves can be created, replaced,
patched and deleted by kind, namespace and name. A failed request raises :class:`ApiError` carrying the server's
``Status`` (code, reason, message, causes), which the driver reports with the object named.
"""

from __future__ import annotations

import ssl
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import orjson
from kubernetes.client import Configuration
from kubernetes.config.kube_config import load_kube_config

from kss_sim.kube.objects import Obj

TIMEOUT = httpx.Timeout(120.0, connect=10.0)
# Fields the server owns: a snapshot's values would be refused on create (resourceVersion) or mean nothing there.
SERVER_MANAGED = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink")


class ApiError(Exception):
    """A request the server refused (or could not be sent): its HTTP code (0: no answer) and Status."""

    def __init__(self, code: int, reason: str, message: str, causes: list[str] | None = None) -> None:
        self.code = code
        self.reason = reason
        self.message = message
        self.causes = causes or []
        super().__init__(str(self))

    def __str__(self) -> str:
        head = f"{self.code} {self.reason}: {self.message}" if self.code else self.message
        return "; ".join([head, *self.causes])


@dataclass(frozen=True, slots=True)
class Resource:
    """Where a kind lives in the API."""

    kind: str
    api_version: str
    plural: str
    namespaced: bool

    def path(self, namespace: str = "", name: str = "") -> str:
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        return f"{base}/{name}" if name else base


@dataclass(frozen=True, slots=True)
class Connection:
    """How to reach the server: its URL and credentials (what an httpx client is built from)."""

    url: str
    token: str | None = None
    verify: ssl.SSLContext | bool = True
    cert: tuple[str, str] | None = None

    @classmethod
    def from_options(
        cls, url: str | None, *, token: str | None = None, kubeconfig: str | None = None, context: str | None = None
    ) -> Connection:
        """From ``--target-url`` (+ ``--target-token``) or a kubeconfig (``kss kubeconfig`` writes one) and its
        context; the URL wins over the kubeconfig's server, the token over its credentials."""
        if kubeconfig is None:
            if not url:
                raise ValueError("a target is needed: --target-url URL or --target-kubeconfig FILE")
            return cls(url.rstrip("/"), token)
        config = Configuration()
        try:
            load_kube_config(config_file=kubeconfig, context=context, client_configuration=config)  # type: ignore[no-untyped-call]
        except Exception as exc:  # the loader raises ConfigException, OSError, yaml and key errors alike
            raise ValueError(f"{kubeconfig}: {exc}") from None
        bearer = str(config.api_key.get("authorization", "")).removeprefix("Bearer ").strip() or None
        verify: ssl.SSLContext | bool = bool(config.verify_ssl)
        if config.ssl_ca_cert and verify:
            verify = ssl.create_default_context(cafile=config.ssl_ca_cert)
        cert = (config.cert_file, config.key_file) if config.cert_file and config.key_file else None
        return cls((url or str(config.host)).rstrip("/"), token or bearer, verify, cert)

    def client(self, timeout: httpx.Timeout = TIMEOUT) -> httpx.Client:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=timeout, verify=self.verify, cert=self.cert)


def _error(response: httpx.Response) -> ApiError:
    try:
        status = response.json()
    except ValueError:
        status = {}
    if not isinstance(status, dict):
        status = {}
    causes = [
        f"{c.get('field')}: {c.get('message')}" if c.get("field") else str(c.get("message"))
        for c in (status.get("details") or {}).get("causes") or []
        if isinstance(c, dict)
    ]
    message = str(status.get("message") or response.text.strip() or response.reason_phrase)
    return ApiError(response.status_code, str(status.get("reason") or response.reason_phrase), message, causes)


class Target:
    """A running simulator seen through its API: discovery, the verbs by kind, the pod watch."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self._client = connection.client()
        self._by_kind: dict[str, Resource] = {}  # preferred version
        self._by_version: dict[tuple[str, str], Resource] = {}  # (apiVersion, kind)
        self._versions_read: set[str] = set()

    def close(self) -> None:
        self._client.close()

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._client.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ApiError(0, "", f"{self.connection.url}: {exc}") from None
        if response.status_code >= 400:
            raise _error(response)
        return response

    def _json(self, method: str, path: str, **kwargs: Any) -> Obj:
        data = self._request(method, path, **kwargs).json()
        return data if isinstance(data, dict) else {}

    # --- discovery ----------------------------------------------------------------------------
    def discover(self) -> None:
        """Learn every kind the server serves (the core group and each group's preferred version)."""
        self._read_version("v1", preferred=True)
        for group in self._json("GET", "/apis").get("groups") or []:
            preferred = (group.get("preferredVersion") or {}).get("groupVersion")
            if preferred:
                self._read_version(str(preferred), preferred=True)

    def _read_version(self, api_version: str, *, preferred: bool = False) -> None:
        if api_version in self._versions_read:
            return
        self._versions_read.add(api_version)
        path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
        try:
            listing = self._json("GET", path)
        except ApiError as exc:
            if exc.code == 404:
                return
            raise
        for entry in listing.get("resources") or []:
            if "/" in str(entry.get("name", "")):  # subresources (status, scale, binding)
                continue
            resource = Resource(str(entry["kind"]), api_version, str(entry["name"]), bool(entry.get("namespaced")))
            self._by_version[(api_version, resource.kind)] = resource
            if preferred:
                self._by_kind.setdefault(resource.kind, resource)

    def resource(self, kind: str, api_version: str | None = None) -> Resource:
        """Where ``kind`` (of ``api_version`` if given, else its preferred version) lives; ApiError if not served."""
        if api_version:
            self._read_version(api_version)
            found = self._by_version.get((api_version, kind))
            if found is None:
                raise ApiError(404, "NotFound", f"the server does not serve {kind} in {api_version}")
            return found
        found = self._by_kind.get(kind)
        if found is None:
            raise ApiError(404, "NotFound", f"the server does not serve the kind {kind!r}")
        return found

    # --- the verbs ----------------------------------------------------------------------------
    def create(self, obj: Obj) -> Obj:
        resource = self.resource(str(obj.get("kind")), obj.get("apiVersion"))
        namespace = str((obj.get("metadata") or {}).get("namespace") or "")
        return self._json("POST", resource.path(namespace), content=orjson.dumps(obj), headers=_JSON)

    def get(self, kind: str, namespace: str, name: str, api_version: str | None = None) -> Obj:
        return self._json("GET", self.resource(kind, api_version).path(namespace, name))

    def replace(self, obj: Obj) -> Obj:
        """PUT ``obj`` (its metadata.resourceVersion decides a conflict)."""
        resource = self.resource(str(obj.get("kind")), obj.get("apiVersion"))
        meta = obj.get("metadata") or {}
        path = resource.path(str(meta.get("namespace") or ""), str(meta["name"]))
        return self._json("PUT", path, content=orjson.dumps(obj), headers=_JSON)

    def merge_patch(self, kind: str, namespace: str, name: str, patch: Obj) -> Obj:
        path = self.resource(kind).path(namespace, name)
        return self._json("PATCH", path, content=orjson.dumps(patch), headers=_MERGE_PATCH)

    def patch_status(self, kind: str, namespace: str, name: str, patch: Obj) -> Obj:
        """A strategic merge patch of the object's ``status`` subresource (a node's conditions merge by type)."""
        path = self.resource(kind).path(namespace, name) + "/status"
        return self._json("PATCH", path, content=orjson.dumps(patch), headers=_STRATEGIC_MERGE_PATCH)

    def delete(
        self,
        kind: str,
        namespace: str,
        name: str,
        *,
        uid: str | None = None,
        api_version: str | None = None,
        grace_period_seconds: int = 0,
    ) -> None:
        """Delete (dependents in the background, as ``kubectl delete``); with ``uid``, only that very object. At once
        by default (grace period 0: a pod that ran its time is gone then, as the offline replay's Succeeds); a pod's
        own grace period is the caller's to give, on the server's wall clock."""
        body: Obj = {
            "kind": "DeleteOptions",
            "apiVersion": "v1",
            "propagationPolicy": "Background",
            "gracePeriodSeconds": grace_period_seconds,
        }
        if uid:
            body["preconditions"] = {"uid": uid}
        path = self.resource(kind, api_version).path(namespace, name)
        self._request("DELETE", path, content=orjson.dumps(body), headers=_JSON)

    def pods_on_node(self, node: str) -> list[Obj]:
        """The pods bound to ``node`` (a field selector on ``spec.nodeName``, as ``kubectl drain`` lists them)."""
        listing = self._json("GET", "/api/v1/pods", params={"fieldSelector": f"spec.nodeName={node}"})
        return [p for p in listing.get("items") or [] if (p.get("spec") or {}).get("nodeName") == node]

    def pods_in(self, namespace: str) -> list[Obj]:
        """The pods of ``namespace``."""
        return list(self._json("GET", f"/api/v1/namespaces/{namespace}/pods").get("items") or [])

    def evict(self, namespace: str, name: str, *, grace_period_seconds: int | None = None) -> None:
        """POST the pod's ``eviction`` subresource (a policy/v1 Eviction, as ``kubectl drain``); 429 when its
        PodDisruptionBudget allows no disruption now."""
        body: Obj = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": namespace}}
        if grace_period_seconds is not None:
            body["deleteOptions"] = {"gracePeriodSeconds": grace_period_seconds}
        path = f"/api/v1/namespaces/{namespace}/pods/{name}/eviction"
        self._request("POST", path, content=orjson.dumps(body), headers=_JSON)

    def namespaces(self) -> set[str]:
        return {str(ns["metadata"]["name"]) for ns in self._json("GET", "/api/v1/namespaces").get("items") or []}

    # --- the simulator's own endpoints --------------------------------------------------------
    def import_objects(self, objects: list[Obj]) -> Obj:
        """Merge ``objects`` into the cluster as ``kss import`` does (owners and uids remapped, kinds ordered)."""
        body = orjson.dumps({"apiVersion": "v1", "kind": "List", "items": objects})
        return self._json("POST", "/simulator/v1/import", params={"mode": "merge"}, content=body, headers=_JSON)

    def put_scheduler_config(self, config: Obj) -> Obj:
        return self._json("PUT", "/simulator/v1/schedulerconfiguration", content=orjson.dumps(config), headers=_JSON)


def list_pods(connection: Connection) -> tuple[list[Obj], str]:
    """Every pod and the list's resourceVersion, on a client of its own (the watch thread's relist)."""
    with connection.client() as client:
        try:
            response = client.get("/api/v1/pods")
        except httpx.HTTPError as exc:
            raise ApiError(0, "", f"{connection.url}: {exc}") from None
    if response.status_code >= 400:
        raise _error(response)
    listing = response.json()
    return list(listing.get("items") or []), str((listing.get("metadata") or {}).get("resourceVersion") or "")


def watch_pods(
    connection: Connection, resource_version: str, *, timeout_seconds: int = 60
) -> Iterator[tuple[str, Obj]]:
    """Pod events from ``resource_version`` (BOOKMARKs included) until the server ends the watch; ApiError with
    code 410 when the version is too old (list again)."""
    timeout = httpx.Timeout(timeout_seconds + 30.0, connect=10.0)
    params = {
        "watch": "true",
        "resourceVersion": resource_version,
        "allowWatchBookmarks": "true",
        "timeoutSeconds": str(timeout_seconds),
    }
    with connection.client(timeout) as client:
        try:
            with client.stream("GET", "/api/v1/pods", params=params) as response:
                if response.status_code >= 400:
                    response.read()
                    raise _error(response)
                for line in response.iter_lines():
                    if not line.strip():
                        continue
                    event = orjson.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":
                        raise ApiError(int(obj.get("code") or 500), str(obj.get("reason", "")), str(obj.get("message")))
                    yield str(event.get("type")), obj
        except httpx.HTTPError as exc:
            raise ApiError(0, "", f"{connection.url}: pod watch: {exc}") from None


_JSON = {"Content-Type": "application/json"}
_MERGE_PATCH = {"Content-Type": "application/merge-patch+json"}
_STRATEGIC_MERGE_PATCH = {"Content-Type": "application/strategic-merge-patch+json"}

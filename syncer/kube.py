"""Both ends over the official ``kubernetes`` client: a read-only source and a writable target (the simulator).

Objects travel as plain JSON dicts through the client's ``ApiClient`` (see ``Rest``), so no field the
client's models do not know is lost, and large lists are not turned into model objects. Failures become
the small exception family below, which the watch loops and the sink act on.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol

import orjson
import urllib3
from kubernetes import client, config
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines

from syncer.kinds import Kind
from syncer.objects import Obj

MERGE_PATCH = "application/merge-patch+json"
Objs = list[Obj]  # an alias: inside the API classes ``list`` names their method
# The simulator's bulk create (``mode=create`` of its snapshot import): a page of objects per request.
BULK_CREATE_PATH = "/simulator/v1/import"
# A page of 500 pods is a few seconds of the simulator's work, more while it catches up: wait for it.
BULK_CREATE_TIMEOUT = 600.0


# ---------------------------------------------------------------------------------------------- errors


class ApiProblem(Exception):
    """A request that did not succeed; subclasses say what to do about it."""

    def __init__(self, message: str, *, status: int = 0, reason: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.reason = reason


class Unavailable(ApiProblem):
    """The server could not be reached or is overloaded (connection errors, 429, 5xx): retry later."""


class Inactive(Unavailable):
    """A watch stayed silent longer than the client-side inactivity timeout: watch again from where it was."""


class Gone(ApiProblem):
    """410: the resourceVersion is too old to watch from; list again."""


class NotFound(ApiProblem):
    """404."""


class AlreadyExists(ApiProblem):
    """409 AlreadyExists on create."""


class Conflict(ApiProblem):
    """409 other than AlreadyExists (a precondition or a stale resourceVersion)."""


class Rejected(ApiProblem):
    """Any other 4xx (invalid, forbidden, ...): retrying the same request cannot help."""


def _status_body(body: Any) -> Obj:
    if isinstance(body, bytes | bytearray):
        body = body.decode("utf-8", "replace")
    if isinstance(body, str) and body.strip().startswith("{"):
        try:
            parsed = json.loads(body)
        except ValueError:
            return {}
        return parsed if isinstance(parsed, dict) else {}
    return {}


def problem_from_status(code: int, status: Obj, fallback: str = "") -> ApiProblem:
    """The exception for an HTTP code and a ``metav1.Status`` body (also used for watch ERROR events)."""
    reason = str(status.get("reason") or "")
    message = str(status.get("message") or fallback or reason or f"HTTP {code}")
    if code == 410:
        return Gone(message, status=code, reason=reason)
    if code == 404:
        return NotFound(message, status=code, reason=reason)
    if code == 409:
        kind = AlreadyExists if reason == "AlreadyExists" else Conflict
        return kind(message, status=code, reason=reason)
    if code == 0 or code == 429 or code >= 500:
        return Unavailable(message, status=code, reason=reason)
    return Rejected(message, status=code, reason=reason)


def translate_error(exc: BaseException) -> ApiProblem | None:
    """Map a client exception to an ``ApiProblem``; None for exceptions that are bugs rather than I/O."""
    if isinstance(exc, ApiProblem):
        return exc
    if isinstance(exc, ApiException):
        code = int(exc.status or 0)
        return problem_from_status(code, _status_body(exc.body), str(exc.reason or ""))
    if isinstance(exc, urllib3.exceptions.ReadTimeoutError):
        return Inactive(f"no data for longer than the read timeout: {exc}")
    if isinstance(exc, urllib3.exceptions.HTTPError | http.client.HTTPException | OSError):
        return Unavailable(f"{type(exc).__name__}: {exc}")
    return None


def call(fn: Callable[[], Any]) -> Any:
    """Run one client call, raising ``ApiProblem`` for every failure the server or network caused."""
    try:
        return fn()
    except Exception as exc:
        problem = translate_error(exc)
        if problem is None:
            raise
        raise problem from exc


# ---------------------------------------------------------------------------------------------- rate limit


class TokenBucket:
    """client-go's QPS/burst limiter: ``burst`` requests at once, then ``qps`` per second. qps <= 0: no limit."""

    def __init__(
        self,
        qps: float,
        burst: int,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.qps = qps
        self.burst = max(1, burst)
        self._clock = clock
        self._sleep = sleep
        self._tokens = float(self.burst)
        self._last = clock()
        self._lock = threading.Lock()

    def acquire(self) -> None:
        """Take one token, sleeping until one is available."""
        if self.qps <= 0:
            return
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            wait = -self._tokens / self.qps if self._tokens < 0 else 0.0
        if wait > 0:
            self._sleep(wait)


# ---------------------------------------------------------------------------------------------- clients


def api_client(
    *,
    kubeconfig: str | None = None,
    context: str | None = None,
    url: str | None = None,
    token: str | None = None,
    pool_size: int | None = None,
) -> client.ApiClient:
    """An ApiClient for a kubeconfig (and context) or a bare URL (plus an optional bearer token). ``pool_size``: keep
    at least that many connections to the server (one per parallel writer; the client's default is 5 per CPU)."""
    cfg = type.__call__(client.Configuration)  # the client's own way to skip its process-wide default
    if pool_size is not None and pool_size > (cfg.connection_pool_maxsize or 0):
        cfg.connection_pool_maxsize = pool_size
    if url:
        cfg.host = url.rstrip("/")
        if token:
            cfg.api_key = {"authorization": f"Bearer {token}"}
        return client.ApiClient(cfg)
    if not kubeconfig:
        raise ValueError("a kubeconfig or a URL is required")
    api: client.ApiClient = config.new_client_from_config(  # type: ignore[no-untyped-call]
        config_file=kubeconfig, context=context, client_configuration=cfg
    )
    return api


class Rest:
    """Raw JSON requests through the official client's ``ApiClient`` (its auth, TLS, proxies and pools).

    The typed API classes are not used on purpose: they validate bodies against the client's models, which
    rejects fields newer than the client and rewrites timestamps; the syncer must pass objects through as is.
    """

    def __init__(self, api: client.ApiClient, limiter: TokenBucket) -> None:
        self.api = api
        self.limiter = limiter

    def request(
        self,
        method: str,
        path: str,
        *,
        query: dict[str, str] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: float | tuple[float, float] | None = None,
    ) -> Any:
        """Send one request; returns the unread urllib3 response of a 2xx, raises ``ApiProblem`` otherwise.

        The body is encoded here (``encode_body``) and sent as bytes through the client's connection pool: the
        client's own path walks every body with ``sanitize_for_serialization`` and encodes it with ``json``,
        which was most of the syncer's CPU per object in an import.
        """
        headers = {"Accept": "application/json"}
        if body is not None:
            headers["Content-Type"] = content_type
        payload = encode_body(body) if body is not None else None
        self.limiter.acquire()

        def send() -> Any:
            _, url, header_params, _, _ = self.api.param_serialize(
                method=method,
                resource_path=path,
                query_params=list((query or {}).items()),
                header_params=headers,
                auth_settings=["BearerToken"],
            )
            response: Any = self.api.rest_client.pool_manager.request(
                method,
                url,
                body=payload,
                headers=header_params,
                timeout=_urllib3_timeout(timeout),
                preload_content=False,
            )
            if not 200 <= response.status <= 299:
                data = response.data
                response.release_conn()
                raise problem_from_status(response.status, _status_body(data), str(response.reason or ""))
            return response

        return call(send)

    def json(self, method: str, path: str, **kwargs: Any) -> Obj:
        """``request`` and decode the JSON object it answers."""
        response = self.request(method, path, **kwargs)
        try:
            parsed = orjson.loads(response.data)
        except orjson.JSONDecodeError as exc:
            raise Unavailable(f"the server answered something that is not JSON: {exc}") from exc
        finally:
            response.release_conn()
        if not isinstance(parsed, dict):
            raise Unavailable("the server answered something that is not a JSON object")
        return parsed


def encode_body(body: Any) -> bytes:
    """A request body as JSON bytes, exactly the object given (orjson; ``json`` for what orjson refuses, such as
    integers beyond 64 bits)."""
    try:
        return orjson.dumps(body)
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(body, separators=(",", ":")).encode()


def _urllib3_timeout(timeout: float | tuple[float, float] | None) -> urllib3.Timeout | None:
    """The client's timeout convention: one number is the whole request, a pair is (connect, read)."""
    if timeout is None:
        return None
    if isinstance(timeout, tuple):
        return urllib3.Timeout(connect=timeout[0], read=timeout[1])
    return urllib3.Timeout(total=timeout)


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a list: items (with kind/apiVersion filled in), its resourceVersion and continue token."""

    items: list[Obj]
    resource_version: str
    continue_token: str | None
    remaining: int | None


class SourceApi(Protocol):
    """What the syncer reads from the source cluster. Read-only by construction: no verb here writes."""

    def list(
        self,
        kind: Kind,
        namespace: str | None,
        *,
        label_selector: str | None,
        limit: int | None,
        continue_token: str | None,
    ) -> Page: ...

    def watch(
        self,
        kind: Kind,
        namespace: str | None,
        *,
        resource_version: str,
        label_selector: str | None,
        timeout_seconds: int,
        inactivity_timeout: float,
    ) -> Iterator[Obj]: ...

    def close_watches(self) -> None: ...

    def serves(self, kind: Kind) -> bool: ...


class TargetApi(Protocol):
    """What the syncer does to the simulator."""

    def serves(self, kind: Kind) -> bool: ...

    def list(self, kind: Kind) -> list[Obj]: ...

    def get(self, kind: Kind, namespace: str | None, name: str) -> Obj: ...

    def create(self, kind: Kind, obj: Obj) -> Obj: ...

    def create_many(self, kind: Kind, objs: Objs) -> Objs: ...

    def patch(self, kind: Kind, namespace: str | None, name: str, patch: Obj, *, status: bool = False) -> Obj: ...

    def delete(self, kind: Kind, namespace: str | None, name: str, *, uid: str | None = None) -> None: ...


def _with_kind(kind: Kind, items: list[Any]) -> list[Obj]:
    out: list[Obj] = []
    for item in items:
        if isinstance(item, dict):
            item.setdefault("kind", kind.object_kind)
            item.setdefault("apiVersion", kind.api_version)
            out.append(item)
    return out


def _serves(rest: Rest, kind: Kind, timeout: float) -> bool:
    """Whether the server lists ``kind`` in its discovery (a 404 group version: no)."""
    try:
        body = rest.json("GET", kind.group_version_path, timeout=timeout)
    except NotFound:
        return False
    resources = body.get("resources") or []
    return any(isinstance(r, dict) and r.get("name") == kind.plural for r in resources)


def _list_page(
    rest: Rest,
    kind: Kind,
    namespace: str | None,
    label_selector: str | None,
    limit: int | None,
    continue_token: str | None,
    timeout: float,
) -> Page:
    query: dict[str, str] = {}
    if label_selector:
        query["labelSelector"] = label_selector
    if limit:
        query["limit"] = str(limit)
    if continue_token:
        query["continue"] = continue_token
    body = rest.json("GET", kind.path(namespace), query=query, timeout=timeout)
    meta = body.get("metadata") or {}
    remaining = meta.get("remainingItemCount")
    return Page(
        items=_with_kind(kind, body.get("items") or []),
        resource_version=str(meta.get("resourceVersion") or ""),
        continue_token=meta.get("continue") or None,
        remaining=int(remaining) if remaining is not None else None,
    )


class KubeSource:
    """The source cluster, read with list and watch only: this class has no verb that writes."""

    def __init__(self, api: client.ApiClient, *, qps: float = 0, burst: int = 1, request_timeout: float = 60) -> None:
        self._rest = Rest(api, TokenBucket(qps, burst))
        self._request_timeout = request_timeout
        self._open: set[Any] = set()
        self._lock = threading.Lock()

    def serves(self, kind: Kind) -> bool:
        """Whether the source serves ``kind`` (its CRD is installed, its feature gate on)."""
        return _serves(self._rest, kind, self._request_timeout)

    def version(self) -> Obj:
        """The source's ``/version`` (its Kubernetes release)."""
        return self._rest.json("GET", "/version", timeout=self._request_timeout)

    def list(
        self,
        kind: Kind,
        namespace: str | None,
        *,
        label_selector: str | None,
        limit: int | None,
        continue_token: str | None,
    ) -> Page:
        """One page of objects of ``kind`` (in ``namespace``, or everywhere)."""
        return _list_page(self._rest, kind, namespace, label_selector, limit, continue_token, self._request_timeout)

    def watch(
        self,
        kind: Kind,
        namespace: str | None,
        *,
        resource_version: str,
        label_selector: str | None,
        timeout_seconds: int,
        inactivity_timeout: float,
    ) -> Iterator[Obj]:
        """Watch events (dicts with ``type`` and ``object``) from ``resource_version``, bookmarks included.

        Ends when the server closes the watch (its ``timeoutSeconds``); raises ``Gone`` on a 410 (ERROR event
        or status), ``Inactive`` when the stream stays silent longer than ``inactivity_timeout``, and
        ``Unavailable`` when the connection breaks.
        """
        query = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        if label_selector:
            query["labelSelector"] = label_selector
        # Connect timeout, then read (inactivity) timeout: a silent half-open connection cannot hang us.
        timeout = (min(10.0, inactivity_timeout), inactivity_timeout)
        resp = self._rest.request("GET", kind.path(namespace), query=query, timeout=timeout)
        with self._lock:
            self._open.add(resp)
        try:
            lines: Iterator[str] = iter_resp_lines(resp)  # type: ignore[no-untyped-call]
            while True:
                try:
                    line = next(lines)
                except StopIteration:
                    return
                except Exception as exc:
                    problem = translate_error(exc)
                    if problem is None:
                        raise
                    raise problem from exc
                if not line.strip():
                    continue
                event = json.loads(line)
                if not isinstance(event, dict):
                    continue
                if event.get("type") == "ERROR":
                    status = event.get("object") or {}
                    raise problem_from_status(int(status.get("code") or 0), status)
                yield event
        finally:
            with self._lock:
                self._open.discard(resp)
            resp.release_conn()

    def close_watches(self) -> None:
        """Break every open watch stream (at shutdown), so threads blocked reading them return."""
        with self._lock:
            responses = list(self._open)
        for resp in responses:
            sock = getattr(getattr(resp, "connection", None), "sock", None)
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)


class KubeTarget:
    """The simulator, written through its Kubernetes API."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        qps: float = 0,
        burst: int = 1,
        request_timeout: float = 30,
        page_size: int = 500,
    ) -> None:
        self._rest = Rest(api, TokenBucket(qps, burst))
        self._timeout = request_timeout
        self._page_size = page_size

    def serves(self, kind: Kind) -> bool:
        """Whether the simulator serves ``kind`` (Workload: only with its GenericWorkload gate on)."""
        return _serves(self._rest, kind, self._timeout)

    def version(self) -> Obj:
        """The simulator's ``/version`` (the Kubernetes release it was started at: ``kss serve --kube-version``)."""
        return self._rest.json("GET", "/version", timeout=self._timeout)

    def list(self, kind: Kind) -> list[Obj]:
        """Every object of ``kind`` in the simulator (all pages); none of a CRD's kind the simulator does not serve
        yet (its CRD is mirrored first)."""
        items: list[Obj] = []
        token: str | None = None
        while True:
            try:
                page = _list_page(self._rest, kind, None, None, self._page_size, token, self._timeout)
            except NotFound:
                if kind.custom:
                    return items
                raise
            items += page.items
            token = page.continue_token
            if not token:
                return items

    def get(self, kind: Kind, namespace: str | None, name: str) -> Obj:
        """One object; ``NotFound`` if absent."""
        return self._rest.json("GET", kind.path(namespace, name), timeout=self._timeout)

    def create(self, kind: Kind, obj: Obj) -> Obj:
        """Create ``obj``; ``AlreadyExists`` if the name is taken."""
        namespace = (obj.get("metadata") or {}).get("namespace")
        return self._rest.json("POST", kind.path(namespace), body=obj, timeout=self._timeout)

    def create_many(self, kind: Kind, objs: Objs) -> Objs:
        """Create ``objs`` in one request to the simulator's bulk create (``POST /simulator/v1/import?mode=create``),
        each with the status it carries; for each object in order, its ``uid`` or the ``status`` (a
        ``metav1.Status``) of its refusal. ``NotFound`` when the target has no such endpoint (not a kss simulator).
        """
        answer = self._rest.json(
            "POST",
            BULK_CREATE_PATH,
            query={"mode": "create"},
            body={"apiVersion": "v1", "kind": "List", "items": objs},
            timeout=max(self._timeout, BULK_CREATE_TIMEOUT),
        )
        items = answer.get("items")
        if not isinstance(items, list) or len(items) != len(objs):
            raise Unavailable(
                f"the bulk create answered {len(items) if isinstance(items, list) else 'no'} items for "
                f"{len(objs)} {kind.name} objects"
            )
        return [item if isinstance(item, dict) else {} for item in items]

    def patch(self, kind: Kind, namespace: str | None, name: str, patch: Obj, *, status: bool = False) -> Obj:
        """Apply a JSON merge patch to the object (or to its ``status`` subresource)."""
        path = kind.path(namespace, name, "status" if status else None)
        return self._rest.json("PATCH", path, body=patch, content_type=MERGE_PATCH, timeout=self._timeout)

    def delete(self, kind: Kind, namespace: str | None, name: str, *, uid: str | None = None) -> None:
        """Delete the object, only if it still has ``uid`` when given (``Conflict`` otherwise)."""
        # The source's kubelet ended the pod already: the mirror goes at once, not after a grace period of its own.
        body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0}
        if uid:
            body["preconditions"] = {"uid": uid}
        if kind.workload:
            # As kubectl deletes: the dependents go too (batch/v1 Jobs would otherwise orphan their pods).
            body["propagationPolicy"] = "Background"
        self._rest.json("DELETE", kind.path(namespace, name), body=body, timeout=self._timeout)

"""In-memory stand-ins for the two ends: a scripted source and a small API server with real semantics."""

from __future__ import annotations

import copy
import itertools
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from syncer.kinds import Kind
from syncer.kube import AlreadyExists, ApiProblem, Conflict, NotFound, Objs, Page, Unavailable
from syncer.objects import Obj

Calls = list[tuple[str, str, str]]  # (verb, kind, name); an alias: inside FakeTarget ``list`` is its method


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = copy.deepcopy(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            result.pop(k, None)
        else:
            result[k] = apply_merge_patch(result.get(k), v)
    return result


def pod(
    name: str,
    *,
    namespace: str = "default",
    uid: str | None = None,
    rv: str = "1",
    node: str | None = None,
    labels: dict[str, str] | None = None,
    **spec: Any,
) -> Obj:
    """A source pod as an API server returns it."""
    obj: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid or f"src-{name}",
            "resourceVersion": rv,
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": labels or {},
        },
        "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec},
        "status": {"phase": "Running" if node else "Pending"},
    }
    if node:
        obj["spec"]["nodeName"] = node
    return obj


def node(name: str, *, uid: str | None = None, rv: str = "1", cpu: str = "4") -> Obj:
    """A source node."""
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "uid": uid or f"src-{name}", "resourceVersion": rv},
        "spec": {},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


class FakeTarget:
    """A simulator: objects by (kind, namespace, name), uid preconditions, merge patches, outages."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str, str], Obj] = {}
        self.calls: list[tuple[str, str, str]] = []  # (verb, kind, name)
        self.down = 0  # the next N calls fail with Unavailable
        self.reject: set[str] = set()  # names whose create is rejected
        self.unserved: set[str] = set()  # kinds its discovery does not list
        self.bulk = True  # serves the bulk create (a kss simulator); False: 404, as another API server answers
        self._rv = itertools.count(100)

    def _gate(self, verb: str, kind: Kind, name: str) -> None:
        if self.down:
            self.down -= 1
            raise Unavailable("connection refused")
        self.calls.append((verb, kind.name, name))

    @staticmethod
    def _key(kind: Kind, namespace: str | None, name: str) -> tuple[str, str, str]:
        return kind.name, (namespace or "") if kind.namespaced else "", name

    def serves(self, kind: Kind) -> bool:
        self._gate("discover", kind, "")
        return kind.name not in self.unserved

    def list(self, kind: Kind) -> list[Obj]:
        self._gate("list", kind, "")
        return [copy.deepcopy(o) for (k, _, _), o in sorted(self.objects.items()) if k == kind.name]

    def get(self, kind: Kind, namespace: str | None, name: str) -> Obj:
        self._gate("get", kind, name)
        try:
            return copy.deepcopy(self.objects[self._key(kind, namespace, name)])
        except KeyError:
            raise NotFound(f"{kind.name} {name} not found", status=404) from None

    def create(self, kind: Kind, obj: Obj) -> Obj:
        name = obj["metadata"]["name"]
        self._gate("create", kind, name)
        if name in self.reject:
            raise ApiProblem("invalid", status=422)
        key = self._key(kind, obj["metadata"].get("namespace"), name)
        if key in self.objects:
            raise AlreadyExists(f"{name} already exists", status=409, reason="AlreadyExists")
        stored = copy.deepcopy(obj)
        stored["metadata"].update(uid=str(uuid.uuid4()), resourceVersion=str(next(self._rv)))
        stored["status"] = (
            {"phase": "Pending"} if kind.name in ("Pod", "PersistentVolume") else stored.get("status", {})
        )
        self.objects[key] = stored
        return copy.deepcopy(stored)

    def create_many(self, kind: Kind, objs: Objs) -> Objs:
        """The simulator's bulk create: each object created with the status it carries, refusals answered."""
        if not self.bulk:
            raise NotFound("the server could not find the requested resource", status=404)
        self._gate("create_many", kind, str(len(objs)))
        answers: Objs = []
        for obj in objs:
            name = obj["metadata"]["name"]
            self.calls.append(("create", kind.name, name))
            key = self._key(kind, obj["metadata"].get("namespace"), name)
            if name in self.reject:
                answers.append({"status": {"code": 422, "reason": "Invalid", "message": f"{name} is invalid"}})
            elif key in self.objects:
                answers.append({"status": {"code": 409, "reason": "AlreadyExists", "message": f"{name} exists"}})
            else:
                stored = copy.deepcopy(obj)
                stored["metadata"].update(uid=str(uuid.uuid4()), resourceVersion=str(next(self._rv)))
                if not stored.get("status"):
                    stored["status"] = {"phase": "Pending"} if kind.name in ("Pod", "PersistentVolume") else {}
                self.objects[key] = stored
                answers.append({"uid": stored["metadata"]["uid"]})
        return answers

    def patch(self, kind: Kind, namespace: str | None, name: str, patch: Obj, *, status: bool = False) -> Obj:
        self._gate("patch_status" if status else "patch", kind, name)
        key = self._key(kind, namespace, name)
        if key not in self.objects:
            raise NotFound(f"{kind.name} {name} not found", status=404)
        current = self.objects[key]
        if status:
            new = copy.deepcopy(current)
            new["status"] = apply_merge_patch(current.get("status"), patch.get("status"))
        else:
            new = apply_merge_patch(current, {k: v for k, v in patch.items() if k != "status"})
        new["metadata"]["resourceVersion"] = str(next(self._rv))
        self.objects[key] = new
        return copy.deepcopy(new)

    def delete(self, kind: Kind, namespace: str | None, name: str, *, uid: str | None = None) -> None:
        self._gate("delete", kind, name)
        key = self._key(kind, namespace, name)
        if key not in self.objects:
            raise NotFound(f"{kind.name} {name} not found", status=404)
        if uid and self.objects[key]["metadata"]["uid"] != uid:
            raise Conflict("uid precondition failed", status=409)
        del self.objects[key]

    # helpers for tests
    def find(self, kind: str, name: str, namespace: str = "") -> Obj | None:
        return self.objects.get((kind, namespace, name))

    def writes(self) -> Calls:
        # A bulk create is counted by its objects (a "create" each), not by its request.
        return [c for c in self.calls if c[0] not in ("get", "list", "discover", "create_many")]


@dataclass
class FakeSource:
    """Scripted source: ``lists`` are consumed one list at a time, ``watches`` one watch at a time.

    A list script is a list of pages (``Page``) or an exception; a watch script is a list of events,
    possibly ending with an exception to raise.
    """

    lists: dict[str, list[Any]] = field(default_factory=dict)
    watches: dict[str, list[Any]] = field(default_factory=dict)
    list_calls: list[tuple[str, str | None, str | None]] = field(default_factory=list)
    watch_calls: list[tuple[str, str]] = field(default_factory=list)
    unserved: set[str] = field(default_factory=set)  # kinds its discovery does not list
    discovery_failures: int = 0  # the next N discovery requests fail with Unavailable

    def serves(self, kind: Kind) -> bool:
        if self.discovery_failures:
            self.discovery_failures -= 1
            raise Unavailable("connection refused")
        return kind.name not in self.unserved

    def list(
        self,
        kind: Kind,
        namespace: str | None,
        *,
        label_selector: str | None,
        limit: int | None,
        continue_token: str | None,
    ) -> Page:
        self.list_calls.append((kind.name, namespace, continue_token))
        script = self.lists[kind.name]
        step = script[0]
        if isinstance(step, BaseException):
            script.pop(0)
            raise step
        pages: list[Page] = step
        index = 0 if continue_token is None else int(continue_token)
        page = pages[index]
        if page.continue_token is None:
            script.pop(0)
        return page

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
        self.watch_calls.append((kind.name, resource_version))
        script = self.watches.setdefault(kind.name, [])
        if not script:
            time.sleep(0.01)  # an idle watch that ends: do not spin
        events = script.pop(0) if script else []
        if isinstance(events, BaseException):
            raise events
        for event in events:
            if isinstance(event, BaseException):
                raise event
            yield copy.deepcopy(event)

    def close_watches(self) -> None:
        pass


def page(*items: Obj, rv: str = "10", token: str | None = None, remaining: int | None = None) -> Page:
    """One list page."""
    return Page([copy.deepcopy(i) for i in items], rv, token, remaining)

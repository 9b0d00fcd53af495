"""Schema-driven fuzzing of kss's API (issue #35): requests built with Hypothesis from the kinds' field types.

The bodies start from a valid object of each kind and change one to three fields, anywhere in the object, to a value
drawn from that field's type (``decode_types.schema()``: the version's schema ``decode_types`` checks bodies
against): most often a value of the right type at its edges (int32/int64 bounds, quantities such as ``1e1000`` or
``" 1"``, timestamps that are not RFC 3339), else a value of any JSON type. They go to every verb of the Kubernetes
API (create, update, the three patch types, server-side apply, the status subresource, delete, list and watch with
odd parameters), with undecodable and deeply nested bodies now and then, and to the simulator's own endpoints.

What must hold (``Fuzzer.check_request`` and ``Fuzzer.check_after``): no answer is a 5xx; no stored object fails the
type check kube-apiserver's decoder makes; and a normal pod still schedules afterwards. ``tests/fuzz/test_api_fuzz.py``
runs a bounded budget in ``make test``; ``bench/fuzz.py`` a longer one.
"""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from hypothesis import strategies as st

from kss_sim.cluster.admission import decode_types, fields
from kss_sim.cluster.errors import BadRequest
from kss_sim.cluster.kinds.registry import BY_KIND, KindInfo
from tests.conftest import Server, start_server

NAMESPACE = "fuzz"
# A few names per kind, so creates collide and updates, patches and deletes find objects.
NAMES = ("fz-0", "fz-1", "fz-2")
# The node and pod of the final check: no fuzzed object names them.
ANCHOR_NODE = "fuzz-anchor-node"
# The one 500 kube-apiserver itself answers to a body: server-side apply of a configuration it cannot type (duplicate
# entries in a list that is a set or a map), which kss answers alike (``admission/apply.py``'s ``TypedPatchError``).
UPSTREAM_500 = "failed to create typed patch object"
PROBE_POD = "fuzz-probe-pod"

_CONTAINER = {"name": "c", "image": "nginx", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}
_TEMPLATE = {"metadata": {"labels": {"app": "fz"}}, "spec": {"containers": [_CONTAINER]}}
_SELECTOR = {"matchLabels": {"app": "fz"}}
_CAPACITY = {"cpu": "4", "memory": "8Gi", "pods": "110"}
# A valid object of each fuzzed kind, the start of every body (metadata.name is set per request).
BASES: dict[str, dict[str, Any]] = {
    "Pod": {"spec": {"containers": [_CONTAINER]}},
    "Node": {"status": {"capacity": _CAPACITY, "allocatable": _CAPACITY}},
    "Namespace": {},
    "PersistentVolume": {
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/tmp/x"}}
    },
    "PersistentVolumeClaim": {
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    },
    "StorageClass": {"provisioner": "kss.example/fuzz"},
    "PriorityClass": {"value": 1000},
    "PodDisruptionBudget": {"spec": {"minAvailable": 1, "selector": _SELECTOR}},
    "Deployment": {"spec": {"replicas": 1, "selector": _SELECTOR, "template": _TEMPLATE}},
    "ReplicaSet": {"spec": {"replicas": 1, "selector": _SELECTOR, "template": _TEMPLATE}},
    "StatefulSet": {"spec": {"replicas": 1, "selector": _SELECTOR, "template": _TEMPLATE, "serviceName": "fz"}},
    "DaemonSet": {"spec": {"selector": _SELECTOR, "template": _TEMPLATE}},
    "Job": {"spec": {"template": {"spec": {"containers": [_CONTAINER], "restartPolicy": "Never"}}}},
    "CronJob": {
        "spec": {
            "schedule": "*/5 * * * *",
            "jobTemplate": {"spec": {"template": {"spec": {"containers": [_CONTAINER], "restartPolicy": "Never"}}}},
        }
    },
    "Lease": {"spec": {"holderIdentity": "fz", "leaseDurationSeconds": 40}},
    "Event": {"involvedObject": {"kind": "Pod", "name": "fz-0", "namespace": NAMESPACE}, "reason": "Fuzz"},
    "CSINode": {"spec": {"drivers": []}},
    "PodGroup": {"spec": {"minMember": 2}},
    "DeviceClass": {"spec": {}},
    "ResourceSlice": {
        "spec": {
            "driver": "fz.example.com",
            "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
            "nodeName": "fz-0",
            "devices": [{"name": "d0"}],
        }
    },
    "ResourceClaim": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "fz"}}]}}},
    "ResourceClaimTemplate": {
        "spec": {"spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "fz"}}]}}}
    },
}
KIND_NAMES = tuple(BASES)

# Values at the edges of each type, besides ordinary ones.
_EDGE_INTS = (0, 1, -1, 2**31 - 1, 2**31, -(2**31) - 1, 2**53, 2**63 - 1, 2**63, -(2**63), 10**30)
_QUANTITIES = (
    "1",
    "100m",
    "1Gi",
    "1e1000",
    "9223372036854775808",
    " 1",
    "1 ",
    "-1",
    "0.0001",
    "1.5Ei",
    "1E",
    "x",
    "",
    "1e-1000",
    "12345678901234567890Ki",
    "+1",
    ".5",
    "5.",
    "1ki",
)
_TIMES = (
    "2024-01-01T00:00:00Z",
    "2024-01-01T00:00:00.123456Z",
    "2024-01-01T00:00:00+02:00",
    "not-a-time",
    "",
    "2024-13-45T99:99:99Z",
    "0001-01-01T00:00:00Z",
    "1e10",
)
_STRINGS = (
    "",
    "a",
    "x" * 300,
    "Always",
    "Never",
    "IfNotPresent",
    "NoSchedule",
    "NoExecute",
    "In",
    "NotIn",
    "Exists",
    "TCP",
    "Running",
    "Pending",
    "True",
    "False",
    "default-scheduler",
    "kubernetes.io/hostname",
    "-bad-",
    "UPPER",
    "a/b/c",
    "\u00e9\u0000",
    "${x}",
    "<script>",
)

_scalar = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from(_EDGE_INTS),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(_STRINGS + _QUANTITIES + _TIMES),
)
# A value of any JSON type (the wrong one, mostly).
ANY_JSON = st.recursive(
    _scalar,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.sampled_from(("a", "name", "key", "x")), inner, max_size=3)
    ),
    max_leaves=6,
)


def _right_scalar(code: str) -> st.SearchStrategy[Any]:
    """Values of the leaf type ``code`` (``decode_types.Schema``'s codes), edges included."""
    if code in ("int32", "int64"):
        return st.one_of(st.integers(min_value=-5, max_value=100), st.sampled_from(_EDGE_INTS))
    if code == "quantity":
        return st.one_of(st.sampled_from(_QUANTITIES), st.integers(-5, 10**20), st.floats(-1e3, 1e30))
    if code in ("time", "microtime"):
        return st.sampled_from(_TIMES)
    if code == "intorstr":
        return st.one_of(st.sampled_from(("25%", "x", "1")), st.sampled_from(_EDGE_INTS), st.floats(-2, 2))
    if code == "bytes":
        return st.sampled_from(("aGVsbG8=", "aGVsbG8", "!!!!", "", "YQ==\nYQ=="))
    if code == "any":
        return ANY_JSON
    if code == "bool":
        return st.booleans()
    if code == "float":
        return st.floats(allow_nan=False, allow_infinity=False)
    return st.one_of(st.sampled_from(_STRINGS), st.text(max_size=10))


def _leaf_value(code: str) -> st.SearchStrategy[Any]:
    if code[0] in "[{":
        item = _right_scalar(code[1:])
        right: st.SearchStrategy[Any] = (
            st.lists(st.one_of(item, ANY_JSON), max_size=3)
            if code[0] == "["
            else st.dictionaries(st.sampled_from(("cpu", "memory", "pods", "a", "example.com/x")), item, max_size=3)
        )
    else:
        right = _right_scalar(code)
    return st.one_of(right, right, right, ANY_JSON)


def _fields(model: str) -> dict[str, str]:
    """The fields of the struct ``model`` and their codes, in the default version's schema; a custom resource's
    (PodGroup) from field validation's tree, its leaves free-form."""
    structs = decode_types.schema().structs
    if model in structs:
        return structs[model]
    tree = fields.models().get(model, {})
    return {
        name: ref[0] + "@" + ref[1:] if ref[:1] in ("[", "{") else "@" + ref if ref else "any"
        for name, ref in tree.items()
    }


def _model(kind: str) -> str:
    """The struct (or, for a custom resource, field validation's model) of ``kind``."""
    return decode_types.schema().roots.get(kind) or fields.ROOT_MODELS[kind]


@st.composite
def mutated(draw: st.DrawFn, model: str, base: Any, depth: int = 0) -> Any:
    """``base`` (an object of ``model``) with one to three fields changed, at any depth."""
    if not isinstance(base, dict):
        base = {}
    obj = copy.deepcopy(base)
    codes = _fields(model)
    names = sorted(codes)
    if not names:
        return obj
    for _ in range(draw(st.integers(1, 3 if depth == 0 else 2))):
        # Fields the base has are the likelier targets: the change then lands deep inside a valid object.
        present = [n for n in names if n in obj]
        name = draw(st.sampled_from(present)) if present and draw(st.booleans()) else draw(st.sampled_from(names))
        code = codes[name]
        if "@" in code:
            obj[name] = draw(_ref_value(code, obj.get(name), depth + 1))
        else:
            obj[name] = draw(_leaf_value(code))
    return obj


def _ref_value(ref: str, current: Any, depth: int) -> st.SearchStrategy[Any]:
    """A value for a field holding an object, a list or a map of objects of another model."""
    if depth > 5:
        return ANY_JSON
    head, model = ref[0], ref.lstrip("[{@")
    if head == "[":
        items = current if isinstance(current, list) and current else [{}]
        right: st.SearchStrategy[Any] = st.lists(
            st.one_of(mutated(model, items[0], depth), st.just(items[0])), min_size=1, max_size=2
        )
        return st.one_of(right, right, right, st.lists(ANY_JSON, max_size=2), ANY_JSON)
    if head == "{":
        first = next(iter(current.values()), {}) if isinstance(current, dict) and current else {}
        right = st.dictionaries(st.sampled_from(("a", "b")), mutated(model, first, depth), max_size=2)
        return st.one_of(right, right, ANY_JSON)
    right = mutated(model, current, depth)
    return st.one_of(right, right, right, ANY_JSON)


def _path(info: KindInfo, name: str | None = None, subresource: str | None = None) -> str:
    prefix = f"/apis/{info.group}/{info.version}" if info.group else "/api/v1"
    ns = f"/namespaces/{NAMESPACE}" if info.namespaced else ""
    tail = f"/{name}" if name else ""
    sub = f"/{subresource}" if subresource else ""
    return f"{prefix}{ns}/{info.plural}{tail}{sub}"


@dataclass
class Request:
    method: str
    path: str
    body: bytes | None = None
    content_type: str = "application/json"

    def describe(self) -> str:
        shown = (self.body or b"")[:400].decode("utf-8", "replace")
        return f"{self.method} {self.path} [{self.content_type}] {shown}"


def _dumps(value: Any) -> bytes:
    return json.dumps(value).encode()


@st.composite
def requests(draw: st.DrawFn) -> Request:
    """One request of any verb on any fuzzed kind, or to the simulator's own endpoints."""
    kind = draw(st.sampled_from(KIND_NAMES))
    info = BY_KIND[kind]
    model = _model(kind)
    name = draw(st.sampled_from(NAMES))
    base = {"apiVersion": info.api_version, "kind": kind, **copy.deepcopy(BASES[kind])}
    base["metadata"] = {"name": name, **({"namespace": NAMESPACE} if info.namespaced else {})}
    verb = draw(
        st.sampled_from(
            (
                "create",
                "create",
                "update",
                "merge",
                "strategic",
                "json-patch",
                "apply",
                "status",
                "delete",
                "read",
                "raw",
                "simulator",
            )
        )
    )
    if verb == "create":
        return Request("POST", _path(info), _dumps(draw(mutated(model, base))))
    if verb == "update":
        return Request("PUT", _path(info, name), _dumps(draw(mutated(model, base))))
    if verb in ("merge", "strategic"):
        patch = draw(mutated(model, {}))
        content_type = "application/merge-patch+json" if verb == "merge" else "application/strategic-merge-patch+json"
        return Request("PATCH", _path(info, name), _dumps(patch), content_type)
    if verb == "json-patch":
        target = draw(st.sampled_from(("/spec", "/metadata/labels", "/status", "/spec/containers/0", "/metadata")))
        leaf = draw(st.sampled_from(("", "/replicas", "/name", "/x", "/0", "/-")))
        ops = [
            {
                "op": draw(st.sampled_from(("add", "replace", "remove", "test", "move", "copy", "bogus"))),
                "path": target + leaf,
                "value": draw(ANY_JSON),
                "from": "/metadata/name",
            }
        ]
        return Request("PATCH", _path(info, name), _dumps(ops), "application/json-patch+json")
    if verb == "apply":
        manager = draw(st.sampled_from(("fuzz", "", "x" * 200)))
        body = draw(mutated(model, base))
        return Request(
            "PATCH", _path(info, name) + f"?fieldManager={manager}", _dumps(body), "application/apply-patch+yaml"
        )
    if verb == "status":
        if not info.has_status:
            return Request("GET", _path(info, name))
        status = draw(_ref_value(_fields(model)["status"], None, 1)) if "status" in _fields(model) else draw(ANY_JSON)
        if draw(st.booleans()):
            return Request(
                "PATCH", _path(info, name, "status"), _dumps({"status": status}), "application/merge-patch+json"
            )
        return Request("PUT", _path(info, name, "status"), _dumps({**base, "status": status}))
    if verb == "delete":
        options = draw(
            st.one_of(
                st.none(),
                st.dictionaries(
                    st.sampled_from(
                        ("gracePeriodSeconds", "propagationPolicy", "preconditions", "dryRun", "orphanDependents")
                    ),
                    ANY_JSON,
                    max_size=2,
                ),
            )
        )
        return Request("DELETE", _path(info, name), _dumps(options) if options is not None else None)
    if verb == "read":
        params = draw(
            st.sampled_from(
                (
                    "",
                    "?limit=-1",
                    "?limit=1&continue=garbage",
                    "?resourceVersion=abc",
                    "?labelSelector=a%20in%20(",
                    "?fieldSelector=spec.nodeName%3D%3Dx",
                    "?resourceVersion=-1&watch=1&timeoutSeconds=1",
                    "?resourceVersionMatch=Bogus",
                    "?allowWatchBookmarks=maybe&watch=true&timeoutSeconds=1",
                    "?timeoutSeconds=99999999999999999999&watch=true",
                    "?dryRun=Bogus",
                    "?fieldValidation=Bogus",
                )
            )
        )
        return Request("GET", _path(info, name if draw(st.booleans()) and "watch" not in params else None) + params)
    if verb == "raw":
        body = draw(
            st.one_of(
                st.binary(max_size=40),
                st.just(b"[" * 5000 + b"]" * 5000),
                st.just(("a:\n" + "  " * 1).encode() + b"{" * 3000),
                st.just(b'{"metadata": {"name": "fz-0"}, "spec": ' + b'{"a":' * 2000 + b"1" + b"}" * 2001),
                st.just(b"{garbage"),
                st.just(b"null"),
            )
        )
        method, content_type = draw(
            st.sampled_from(
                (
                    ("POST", "application/json"),
                    ("PUT", "application/json"),
                    ("PATCH", "application/merge-patch+json"),
                    ("PATCH", "application/apply-patch+yaml"),
                    ("POST", "application/yaml"),
                )
            )
        )
        return Request(method, _path(info, name if method != "POST" else None), body, content_type)
    path, method = draw(
        st.sampled_from(
            (
                ("/simulator/v1/import", "POST"),
                ("/simulator/v1/schedulerconfiguration", "PUT"),
                (f"/simulator/v1/namespaces/{NAMESPACE}/pods/fz-0/results", "GET"),
                (f"/simulator/v1/namespaces/{NAMESPACE}/pods/fz-0/results/99999999999999999999999", "GET"),
                (f"/simulator/v1/namespaces/{NAMESPACE}/pods/fz-0/results/-1", "GET"),
                ("/simulator/v1/waitingpods", "GET"),
                ("/simulator/v1/export", "GET"),
            )
        )
    )
    body_value = draw(st.one_of(ANY_JSON, st.just({"items": [draw(mutated(model, base))]})))
    return Request(method, path, _dumps(body_value) if method != "GET" else None)


@dataclass
class Fuzzer:
    """The checks of a run against a served kss (``url``), over HTTP as any client."""

    client: httpx.Client
    requests_sent: int = 0
    by_status: dict[int, int] = field(default_factory=dict)

    def send(self, request: Request) -> int:
        """Send ``request``; its status code, 499 for kube-apiserver's own 500 (``UPSTREAM_500``)."""
        headers = {"Content-Type": request.content_type} if request.body is not None else {}
        response = self.client.request(request.method, request.path, content=request.body, headers=headers)
        status = response.status_code
        if status == 500 and request.content_type == "application/apply-patch+yaml":
            message = (
                response.json().get("message", "")
                if response.headers.get("content-type", "").startswith("application/json")
                else ""
            )
            if message.startswith(UPSTREAM_500):
                status = 499
        self.requests_sent += 1
        self.by_status[status] = self.by_status.get(status, 0) + 1
        return status

    def check_request(self, request: Request) -> None:
        """The request is answered, and not with a 5xx (but kube-apiserver's own, ``UPSTREAM_500``)."""
        status = self.send(request)
        assert status < 500, f"{status} for {request.describe()}"

    def stored_objects_that_fail_the_type_check(self) -> list[str]:
        """Every object the API serves that kube-apiserver's decoder would refuse (``decode_types.check_types``
        with the default version's schema), or that holds a ``null`` where Go would have stored a value."""
        bad: list[str] = []
        for kind in decode_types.schema().roots:
            info = BY_KIND.get(kind)
            if info is None or info.review:
                continue  # reviews are answered, never stored
            prefix = f"/apis/{info.group}/{info.version}" if info.group else "/api/v1"
            r = self.client.get(f"{prefix}/{info.plural}")
            if r.status_code == 404:
                continue  # not served (an alpha kind whose gate is off)
            assert r.status_code == 200, f"{r.status_code} listing {info.plural}: {r.text[:300]}"
            for obj in r.json()["items"]:
                meta = obj.get("metadata") or {}
                decoded = copy.deepcopy(obj)
                try:
                    decode_types.check_types(kind, decoded, version=info.version)
                except BadRequest as exc:
                    bad.append(f"{kind} {meta.get('namespace', '')}/{meta.get('name')}: {exc}")
                else:
                    if decoded != obj:  # the decode changed it: a null kube-apiserver would not have stored
                        bad.append(f"{kind} {meta.get('namespace', '')}/{meta.get('name')}: a null is stored")
        return bad

    def check_after(self, *, timeout: float = 30.0) -> None:
        """No stored object fails the type check, and a normal pod on a fresh node still schedules."""
        bad = self.stored_objects_that_fail_the_type_check()
        assert not bad, "stored objects that fail the type check:\n" + "\n".join(bad[:20])
        # The configuration as kss starts (the fuzzer may have replaced it with a valid but odd one).
        default = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}
        r = self.client.put("/simulator/v1/schedulerconfiguration", json=default)
        assert r.status_code == 200, r.text
        node = {
            "metadata": {"name": ANCHOR_NODE, "labels": {"kubernetes.io/hostname": ANCHOR_NODE}},
            "status": {"capacity": _CAPACITY, "allocatable": _CAPACITY},
        }
        self.client.delete(f"/api/v1/nodes/{ANCHOR_NODE}")
        r = self.client.post("/api/v1/nodes", json=node)
        assert r.status_code == 201, r.text
        probe = {
            "metadata": {"name": PROBE_POD},
            "spec": {"containers": [_CONTAINER], "nodeSelector": {"kubernetes.io/hostname": ANCHOR_NODE}},
        }
        r = self.client.post("/api/v1/namespaces/default/pods", json=probe)
        assert r.status_code == 201, r.text
        deadline = time.monotonic() + timeout
        got: Any = None
        while time.monotonic() < deadline:
            got = self.client.get(f"/api/v1/namespaces/default/pods/{PROBE_POD}").json()
            if got.get("spec", {}).get("nodeName") == ANCHOR_NODE:
                return
            time.sleep(0.05)
        raise AssertionError(f"a normal pod was not scheduled within {timeout}s after the fuzzing: {got}")


@contextmanager
def fuzzer(workdir: Path, url: str | None = None) -> Iterator[Fuzzer]:
    """A fuzzer against ``url``, or against a ``kss serve`` started on a fresh database in ``workdir`` (its
    controllers off: a valid Deployment of 2^31-1 replicas would make them create pods without end, as on a real
    cluster), with the fuzzed namespace."""
    server: Server | None = None
    if url is None:
        server = start_server(
            workdir,
            f"sqlite:///{workdir / 'fuzz.db'}",
            env={"KSS_CONTROLLERS": "false", "KSS_KUBELET": "false", "KSS_SEED": "1"},
        )
        url = server.url
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            r = client.post("/api/v1/namespaces", json={"metadata": {"name": NAMESPACE}})
            assert r.status_code in (201, 409), r.text
            yield Fuzzer(client)
    finally:
        if server is not None:
            server.stop()

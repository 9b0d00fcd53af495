"""CPU of the decode check per body and per create: the version's schema (formats, ranges, nulls) against the type
check it replaced, in one process, alternating round by round.

    .venv/bin/python bench/decode_cost.py [--rounds 10] [--bodies 500] [--old-rev 1280322]

The old check is ``kss_sim/cluster/admission/decode_types.py`` and its ``field_types.json`` as they were at
``--old-rev`` (read with ``git show`` into a temporary folder and imported from there). Each round times, on the
current thread's CPU clock:

- ``check_types`` alone on ``--bodies`` bodies of each kind measured (a pod as kubectl sends it, a Deployment, a
  Node with its status), old / new;
- ``ClusterStore.create`` of ``--bodies`` pods on a fresh in-memory store (setup not timed) with admission's
  check swapped for the old one / the new one.

It prints the min and median over rounds of the CPU per body, in microseconds. With ``--fastjsonschema`` (when
that package is installed) it also compiles each kind's schema into a fastjsonschema validator (types, ranges,
the formats through ``go_values``) and times it on the same valid bodies: the measure behind decoding with our own
walker rather than a JSON-schema validator (docs/performance.md).
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kss_sim.cluster.admission import admit, decode_types
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.kube.objects import Obj

ROOT = Path(__file__).resolve().parent.parent
_CONTAINER = {
    "name": "app",
    "image": "registry.k8s.io/pause:3.10",
    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
    "env": [{"name": "MODE", "value": "bench"},
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1", "memory": "128Mi"}},
    "readinessProbe": {"httpGet": {"path": "/", "port": 8080}, "periodSeconds": 5},
}  # fmt: skip
_POD_SPEC = {
    "containers": [_CONTAINER],
    "tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}},
    "terminationGracePeriodSeconds": 30,
}  # fmt: skip
BODIES: dict[str, Obj] = {
    "Pod": {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "bench"}, "creationTimestamp": None},
        "spec": _POD_SPEC,
    },
    "Deployment": {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "bench"}},
            "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {"metadata": {"labels": {"app": "bench"}}, "spec": _POD_SPEC},
        },
    },
    "Node": {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n", "labels": {"zone": "a"}},
        "spec": {"taints": [{"key": "gpu", "effect": "NoSchedule"}]},
        "status": {
            "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "allocatable": {"cpu": "31500m", "memory": "120Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True", "lastHeartbeatTime": "2026-11-25T09:00:00Z"}],
            "images": [{"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 300000}],
        },
    },
}
CheckTypes = Callable[..., None]


def load_old_check(rev: str) -> CheckTypes:
    """``check_types`` as it was at ``rev`` (the JSON type check over the client's models)."""
    folder = Path(tempfile.mkdtemp(prefix="kss-old-decode-"))
    for name in ("decode_types.py", "field_types.json"):
        text = subprocess.run(
            ["git", "-C", str(ROOT), "show", f"{rev}:kss_sim/cluster/admission/{name}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (folder / name).write_text(text)
    spec = importlib.util.spec_from_file_location("old_decode_types", folder / "decode_types.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_decode_types"] = module
    spec.loader.exec_module(module)
    old: CheckTypes = module.check_types
    return old


def _cpu_per_body(run: Callable[[], int]) -> float:
    start = time.thread_time()
    count = run()
    return (time.thread_time() - start) / count * 1e6


def check_only(check: CheckTypes, kind: str, count: int) -> Callable[[], int]:
    bodies = [copy.deepcopy(BODIES[kind]) for _ in range(count)]  # copied before the clock starts

    def run() -> int:
        for body in bodies:
            check(kind, body, version="v1")
        return count

    return run


def creates(check: CheckTypes, count: int) -> Callable[[], int]:
    store = ClusterStore(None)
    bodies = []
    for i in range(count):
        body = copy.deepcopy(BODIES["Pod"])
        body["metadata"]["name"] = f"p{i}"
        bodies.append(body)

    def run() -> int:
        admit.check_types = check  # what admission.decode calls, swapped for this round
        try:
            for body in bodies:
                store.create("Pod", body, owned=True, copy=False)
        finally:
            admit.check_types = decode_types.check_types
        return count

    return run


def fastjsonschema_case(kind: str, count: int) -> tuple[float, Callable[[], int]]:
    """The compile time (s) of ``kind``'s schema as a fastjsonschema validator, and a run of it on valid bodies."""
    import fastjsonschema  # type: ignore[import-not-found]  # optional: only for this comparison

    from kss_sim.cluster.admission import go_values

    decoding = decode_types.schema()
    scalars: dict[str, dict[str, Any]] = {
        "string": {"type": "string"},
        "bool": {"type": "boolean"},
        "int32": {"type": "integer", "minimum": -(2**31), "maximum": 2**31 - 1},
        "int64": {"type": "integer", "minimum": -(2**63), "maximum": 2**63 - 1},
        "float": {"type": "number"},
        "time": {"type": "string", "format": "k8s-time"},
        "microtime": {"type": "string", "format": "k8s-micro-time"},
        "quantity": {"type": ["string", "number"], "format": "k8s-quantity"},
        "intorstr": {"type": ["string", "integer"]},
        "bytes": {"type": "string", "format": "k8s-bytes"},
    }

    def of(code: str) -> dict[str, Any]:
        if code[0] == "@":
            return {"$ref": "#/definitions/" + code[1:]}
        if code[0] == "[":
            return {"type": "array", "items": of(code[1:])}
        if code[0] == "{":
            return {"type": "object", "additionalProperties": of(code[1:])}
        return scalars.get(code, {})

    definitions = {
        name: {"type": "object", "properties": {field: of(code) for field, code in fields.items()}}
        for name, fields in decoding.structs.items()
    }
    formats = {
        "k8s-time": lambda v: go_values.time_error(v) is None,
        "k8s-micro-time": lambda v: go_values.time_error(v, go_values.RFC3339_MICRO) is None,
        "k8s-quantity": lambda v: go_values.quantity_error(v) is None,
        "k8s-bytes": lambda v: go_values.base64_error(v) is None,
    }
    start = time.perf_counter()
    validate = fastjsonschema.compile(
        {"definitions": definitions, "$ref": "#/definitions/" + decoding.roots[kind]}, formats=formats
    )
    compiled = time.perf_counter() - start
    body = copy.deepcopy(BODIES[kind])
    body["metadata"].pop("creationTimestamp", None)  # a null: the walker's job, refused by this schema

    def run() -> int:
        for _ in range(count):
            validate(body)
        return count

    return compiled, run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--bodies", type=int, default=500)
    parser.add_argument("--old-rev", default="1280322", help="the commit whose type check is 'old'")
    parser.add_argument("--fastjsonschema", action="store_true", help="also time a fastjsonschema validator")
    args = parser.parse_args()
    old_check = load_old_check(args.old_rev)

    def old(kind: str, obj: dict[str, Any], *, version: str, **_: Any) -> None:
        old_check(kind, obj, version=version)  # the old check knew no kube_version nor api_kind

    checks: dict[str, CheckTypes] = {"old": old, "new": decode_types.check_types}
    cases: list[tuple[str, Callable[[CheckTypes], Callable[[], int]]]] = [
        *((f"check_types {kind}", lambda c, k=kind: check_only(c, k, args.bodies)) for kind in BODIES),
        ("ClusterStore.create Pod", lambda c: creates(c, args.bodies)),
    ]
    for label, make in cases:
        times: dict[str, list[float]] = {"old": [], "new": []}
        for _ in range(args.rounds):
            for name, check in checks.items():  # alternating, each on fresh bodies
                times[name].append(_cpu_per_body(make(check)))
        summary = ", ".join(
            f"{name} min {min(values):.1f} / median {statistics.median(values):.1f} µs"
            for name, values in times.items()
        )
        print(f"{label:28} {summary}")
    if args.fastjsonschema:
        for kind in BODIES:
            compiled, run = fastjsonschema_case(kind, args.bodies)
            values = [_cpu_per_body(run) for _ in range(args.rounds)]
            print(
                f"fastjsonschema {kind:13} compile {compiled * 1000:.0f} ms, "
                f"min {min(values):.1f} / median {statistics.median(values):.1f} µs"
            )


if __name__ == "__main__":
    main()

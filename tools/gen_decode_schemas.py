"""Generate ``kss_sim/cluster/admission/decode_schemas.json``: each Kubernetes version's field types, as decoded.

kube-apiserver decodes a body into the Go structs of the version it was built from; what a field accepts (a
string, an int32, a resource.Quantity, a metav1.Time, base64 bytes...) is in that version's OpenAPI document. The
PyPI package ``kubernetes-validate`` ships those documents as JSON schemas for every release (its
``kubernetes-json-schema/v1.XX.0-local/_definitions.json``). This script reads them for the versions kss runs
(``kss_sim/kube/versions.py``) and keeps only what decoding needs, for the definitions the served kinds reach:
per struct, each field's type code (see ``decode_types``). Enums are left out on purpose: kube-apiserver's decoder
takes any string for an enum field; validation refuses the bad ones (422), as kss's validation does.

The result is committed (~100 KB for four versions, definitions shared between versions stored once) rather than
read from the installed package at run time: the package is 108 MB of schemas for releases kss does not run, and
a build-time step keeps the server's dependencies and start-up unchanged. What a ``null`` becomes (``nulls``) follows
the Go structs' JSON tags, which kss's ``protobuf_messages.json`` holds.

Usage (the package needs no install into the venv)::

    pip install --target /tmp/kv kubernetes-validate
    python tools/gen_decode_schemas.py --schemas /tmp/kv/kubernetes_validate/kubernetes-json-schema
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kss_sim.cluster.kinds.registry import KINDS
from kss_sim.kube.versions import VERSIONS

OUTPUT = Path(__file__).resolve().parent.parent / "kss_sim" / "cluster" / "admission" / "decode_schemas.json"
# The Go structs' JSON tags (omitempty, pointer), which the OpenAPI documents do not carry: kss's protobuf messages
# (tools/gen_protobuf_descriptors.py) have them, from k8s.io/api v0.35.
GO_MESSAGES = OUTPUT.parent.parent / "api" / "protobuf_messages.json"
_DROP = object()

# Bodies decoded that are not stored kinds: a pod's binding, a DELETE's options, an eviction, and the bodies of a
# kind served over another's stored objects (``registry.VIEWS``) whose fields differ by more than their names.
EXTRA_ROOTS = {
    "v1/Binding": "io.k8s.api.core.v1.Binding",
    "v1/DeleteOptions": "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "policy/v1/Eviction": "io.k8s.api.policy.v1.Eviction",
    "autoscaling/v1/HorizontalPodAutoscaler": "io.k8s.api.autoscaling.v1.HorizontalPodAutoscaler",
}
# Definitions with a decoder of their own in Go (UnmarshalJSON): a code, not a struct.
SPECIAL = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "quantity",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "microtime",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "intorstr",
    # Free-form JSON: any value decodes.
    "io.k8s.apimachinery.pkg.runtime.RawExtension": "any",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": "any",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": "any",
}
_PREFIXES = ("io.k8s.api.", "io.k8s.apimachinery.pkg.apis.", "io.k8s.apimachinery.pkg.", "io.k8s.")


def short_name(definition: str) -> str:
    """``io.k8s.api.core.v1.PodSpec`` -> ``core.v1.PodSpec`` (the last two parts are Go's ``v1.PodSpec``)."""
    for prefix in _PREFIXES:
        if definition.startswith(prefix):
            return definition[len(prefix) :]
    return definition


def _types(schema: dict[str, Any]) -> set[str]:
    declared = schema.get("type", [])
    return set([declared] if isinstance(declared, str) else declared) - {"null"}


def field_code(schema: dict[str, Any], reached: list[str]) -> str:
    """The type code of one property's schema; definitions it refers to are appended to ``reached``."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = ref.rpartition("/")[2]
        if target in SPECIAL:
            return SPECIAL[target]
        reached.append(target)
        return "@" + short_name(target)
    types = _types(schema)
    if types == {"array"}:
        return "[" + field_code(schema.get("items", {}), reached)
    if types == {"object"}:
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return "{" + field_code(extra, reached)
        return "any"  # an object of any shape (no properties declared)
    if types == {"string"}:
        return {"byte": "bytes", "date-time": "time"}.get(schema.get("format", ""), "string")
    if types == {"integer"}:
        return "int32" if schema.get("format") == "int32" else "int64"
    if types == {"number"}:
        return "float"
    if types == {"boolean"}:
        return "bool"
    return "any"


def version_schema(definitions: dict[str, Any], roots: dict[str, str]) -> dict[str, dict[str, str]]:
    """Every struct reachable from ``roots``: its fields' type codes, by short name."""
    structs: dict[str, dict[str, str]] = {}
    pending = list(roots.values())
    while pending:
        name = pending.pop()
        if short_name(name) in structs or name in SPECIAL:
            continue
        properties = definitions[name].get("properties", {})
        reached: list[str] = []
        structs[short_name(name)] = {key: field_code(prop, reached) for key, prop in sorted(properties.items())}
        pending.extend(reached)
    return structs


def served_roots(definitions: dict[str, Any]) -> dict[str, str]:
    """``apiVersion/Kind`` -> definition, for every kind kss serves that this version's document has."""
    by_gvk: dict[str, str] = {}
    for name, schema in definitions.items():
        for gvk in schema.get("x-kubernetes-group-version-kind", []):
            group, version = gvk["group"], gvk["version"]
            by_gvk[f"{group}/{version}/{gvk['kind']}" if group else f"{version}/{gvk['kind']}"] = name
    wanted = (f"{k.api_version}/{k.api_kind}" for k in KINDS if not k.custom)
    roots = {key: by_gvk[key] for key in wanted if key in by_gvk}
    roots.update({key: name for key, name in EXTRA_ROOTS.items() if name in definitions})
    return dict(sorted(roots.items()))


def _go_flags() -> dict[str, dict[str, str]]:
    """Per struct (short name), its fields' Go flags: ``o`` omitempty, ``p`` a pointer."""
    doc = json.loads(GO_MESSAGES.read_text())
    out: dict[str, dict[str, str]] = {}
    for file in doc["files"]:
        package = short_name("io.k8s." + file["package"].removeprefix("k8s.io."))
        for message, body in file["messages"].items():
            out[f"{package}.{message}"] = {field[4]: field[5] for field in body["fields"]}
    return out


def _null_becomes(code: str, flags: str) -> Any:
    """What Go stores for a field sent as ``null``: the field's zero value as encoding/json writes it back, or
    ``_DROP`` when it is left out (omitempty and empty)."""
    omitted = "o" in flags
    if "p" in flags or code[0] in "[{" or code == "bytes":  # nil: a pointer, a slice or a map
        return _DROP if omitted else None
    if code[0] == "@":
        return {}  # a struct is always written (omitempty does not apply to structs)
    if code in ("time", "microtime", "any"):
        return None  # a zero metav1.Time (or RawExtension) writes itself as null
    zero = {"quantity": "0", "intorstr": 0, "string": "", "bool": False, "int32": 0, "int64": 0, "float": 0}
    return _DROP if omitted else zero.get(code)


def null_values(structs: dict[str, dict[str, str]]) -> dict[str, dict[str, Any]]:
    """Per struct, the fields whose ``null`` Go does not drop, and what it stores instead."""
    flags = _go_flags()
    out: dict[str, dict[str, Any]] = {}
    for struct, fields in structs.items():
        go = flags.get(struct, {})
        kept = {f: v for f, code in fields.items() if f in go and (v := _null_becomes(code, go[f])) is not _DROP}
        if kept:
            out[struct] = dict(sorted(kept.items()))
    return dict(sorted(out.items()))


def generate(schemas_dir: Path) -> dict[str, Any]:
    """The document: per version its roots and structs; a struct that every version has alike is kept once."""
    per_version: dict[str, tuple[dict[str, str], dict[str, dict[str, str]]]] = {}
    for name in VERSIONS:
        definitions = json.loads((schemas_dir / f"v{name}.0-local" / "_definitions.json").read_text())["$defs"]
        roots = served_roots(definitions)
        per_version[name] = (
            {key: short_name(value) for key, value in roots.items()},
            version_schema(definitions, roots),
        )
    shared: dict[str, dict[str, str]] = {}
    first = next(iter(per_version.values()))[1]
    for struct, fields in first.items():
        if all(structs.get(struct) == fields for _, structs in per_version.values()):
            shared[struct] = fields
    every: dict[str, dict[str, str]] = {}
    for _, structs in per_version.values():
        for struct, fields in structs.items():
            every.setdefault(struct, {}).update(fields)
    return {
        "source": "kubernetes-validate (PyPI): kubernetes-json-schema/v1.XX.0-local/_definitions.json",
        "nulls": null_values(every),
        "shared": dict(sorted(shared.items())),
        "versions": {
            name: {
                "roots": roots,
                "structs": {s: f for s, f in sorted(structs.items()) if s not in shared},
                "absent": sorted(s for s in shared if s not in structs),
            }
            for name, (roots, structs) in per_version.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schemas", type=Path, required=True, help="kubernetes_validate/kubernetes-json-schema")
    args = parser.parse_args()
    doc = generate(args.schemas)
    OUTPUT.write_text(json.dumps(doc, indent=0, separators=(",", ":")) + "\n")
    print(f"wrote {OUTPUT} ({OUTPUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()

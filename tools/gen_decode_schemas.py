"""Generate ``kss_sim/cluster/admission/decode_schemas.json``: each Kubernetes version's field types, as decoded.

kube-apiserver decodes a body into the Go structs of the version it was built from; what a field accepts (a
string, an int32, a resource.Quantity, a metav1.Time, base64 bytes...) is in that version's OpenAPI document. The
PyPI package ``kubernetes-validate`` ships those documents as JSON schemas for every release (its
``kubernetes-json-schema/v1.XX.0-local/_definitions.json``). This script reads them for the versions kss runs
(``kss_sim/kube/versions.py``) and keeps only what decoding needs, for the definitions the served kinds reach:
per struct, each field's type code (see ``decode_types``). Enums are left out on purpose: kube-apiserver's decoder
takes any string for an enum field; validation refuses the bad ones (422), as kss's validation does.

Two things the OpenAPI documents do not carry come from each release's Go structs (``go_structs``, reading the
k8s.io/api of a module vendored against that release): what a ``null`` becomes (``nulls``: the JSON tags'
omitempty/omitzero and pointers, which differ between releases: v1.34 made ``creationTimestamp`` omitzero), and the
Go type encoding/json names in its errors where the code does not say it (``go_types``: ``v1.TaintEffect``).

The result is committed (~140 KB for four versions, what every version has alike stored once) rather than read from
the installed package at run time: the package is 108 MB of schemas for releases kss does not run, and a build-time
step keeps the server's dependencies and start-up unchanged.

Usage (the package needs no install into the venv; one ``--vendor`` per version kss runs, any module's
``vendor/`` built against that release: its ``modules.txt`` names the k8s.io/api release)::

    pip install --target /tmp/kv kubernetes-validate
    python tools/gen_decode_schemas.py --schemas /tmp/kv/kubernetes_validate/kubernetes-json-schema \
        --vendor ../v1.33/vendor --vendor ../v1.34/vendor --vendor ../v1.35/vendor --vendor ../v1.36/vendor
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from kss_sim.cluster.admission.decode_types import go_type
from kss_sim.cluster.kinds.registry import KINDS
from kss_sim.kube.versions import VERSIONS
from tools.go_structs import GoField, GoSources, api_minor

OUTPUT = Path(__file__).resolve().parent.parent / "kss_sim" / "cluster" / "admission" / "decode_schemas.json"
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
    # A schema or a bool / a schema or a list of schemas / a schema or a list of strings: each decodes either form
    # (its own UnmarshalJSON); the schema inside is the CRD validation's to judge.
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool": "any",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray": "any",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray": "any",
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


def go_package(struct: str) -> tuple[str, str]:
    """(Go import path, struct name) of a short name: ``core.v1.Pod`` -> (``k8s.io/api/core/v1``, ``Pod``)."""
    package, _, name = struct.rpartition(".")
    if package.startswith("meta."):
        return "k8s.io/apimachinery/pkg/apis/" + package.replace(".", "/"), name
    if package.startswith("apiextensions-apiserver."):
        return "k8s.io/" + package.replace(".", "/"), name
    return "k8s.io/api/" + package.replace(".", "/"), name


def _null_becomes(code: str, field: GoField) -> Any:
    """What Go stores for a field sent as ``null`` (decoding a null leaves the field's zero value), as encoding/json
    writes it back: ``_DROP`` when it is left out (``omitempty`` and empty, ``omitzero`` and zero)."""
    if field.pointer or field.kind in ("slice", "map") or code == "bytes":  # nil
        return _DROP if field.omitempty or field.omitzero else None
    if field.kind == "struct":  # omitempty never leaves a struct out; omitzero does (IsZero, or all fields zero)
        if field.omitzero:
            return _DROP
        if code in ("time", "microtime", "any"):
            return None  # a zero metav1.Time (or RawExtension) writes itself as null
        return {"quantity": "0", "intorstr": 0}.get(code, {})
    zero = {"string": "", "bool": False, "int32": 0, "int64": 0, "float": 0}
    return _DROP if field.omitempty or field.omitzero else zero.get(code)


def go_tables(
    structs: dict[str, dict[str, str]], sources: GoSources
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, str]]]:
    """Per struct, from one release's Go sources: the fields whose ``null`` Go does not drop and what it stores
    instead; the fields whose Go type encoding/json names otherwise than their code says (``v1.TaintEffect``)."""
    nulls: dict[str, dict[str, Any]] = {}
    go_types: dict[str, dict[str, str]] = {}
    for struct, fields in structs.items():
        go = sources.fields(*go_package(struct))
        if go is None:
            continue  # not in this tree (a kind of another release): the nearest release's apply
        kept = {f: v for f, code in fields.items() if f in go and (v := _null_becomes(code, go[f])) is not _DROP}
        if kept:
            nulls[struct] = dict(sorted(kept.items()))
        named = {f: go[f].go_type for f, code in fields.items() if f in go and go[f].go_type != go_type(code)}
        if named:
            go_types[struct] = dict(sorted(named.items()))
    return dict(sorted(nulls.items())), dict(sorted(go_types.items()))


_TABLES = ("structs", "nulls", "go_types")


def generate(schemas_dir: Path, vendors: list[Path]) -> dict[str, Any]:
    """The document: per version its roots and tables; a table's entry for a struct that every version has alike
    is kept once, in ``shared``."""
    trees = {f"1.{api_minor(vendor)}": GoSources(vendor) for vendor in vendors}
    missing = [name for name in VERSIONS if name not in trees]
    if missing:
        raise SystemExit(f"no vendored k8s.io/api for {', '.join(missing)} (--vendor)")
    per_version: dict[str, dict[str, Any]] = {}
    for name in VERSIONS:
        definitions = json.loads((schemas_dir / f"v{name}.0-local" / "_definitions.json").read_text())["$defs"]
        roots = served_roots(definitions)
        structs = version_schema(definitions, roots)
        nulls, go_types = go_tables(structs, trees[name])
        per_version[name] = {
            "roots": {key: short_name(value) for key, value in roots.items()},
            "structs": structs,
            "nulls": nulls,
            "go_types": go_types,
        }
    shared: dict[str, dict[str, Any]] = {}
    for table in _TABLES:
        first = next(iter(per_version.values()))[table]
        shared[table] = {
            struct: entry
            for struct, entry in sorted(first.items())
            if all(tables[table].get(struct) == entry for tables in per_version.values())
        }
    return {
        "source": "kubernetes-validate (PyPI): kubernetes-json-schema/v1.XX.0-local/_definitions.json; the Go "
        "structs of each release's k8s.io/api (JSON tags, Go type names)",
        "shared": shared,
        "versions": {
            name: {
                "roots": tables["roots"],
                **{
                    table: {s: e for s, e in sorted(tables[table].items()) if s not in shared[table]}
                    for table in _TABLES
                },
            }
            for name, tables in per_version.items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--schemas", type=Path, required=True, help="kubernetes_validate/kubernetes-json-schema")
    parser.add_argument(
        "--vendor",
        type=Path,
        action="append",
        required=True,
        help="a vendor/ directory holding one release's k8s.io/api (once per version kss runs)",
    )
    args = parser.parse_args()
    doc = generate(args.schemas, args.vendor)
    OUTPUT.write_text(json.dumps(doc, indent=0, separators=(",", ":")) + "\n")
    print(f"wrote {OUTPUT} ({OUTPUT.stat().st_size} bytes)")


if __name__ == "__main__":
    main()

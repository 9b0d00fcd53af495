"""The JSON types of every field of the served kinds, checked as kube-apiserver's typed decoder checks them.

kube-apiserver decodes a body into Go structs before defaulting and validation: a value of the wrong JSON type
(``containers: [5]``, ``tolerations: "x"``, ``name: 5``) or a number beyond its integer type
(``replicas: 2147483648`` into an int32) fails the decode, a 400 with encoding/json's message; nothing of such a
body reaches validation or storage. A ``null`` is no value (Go leaves the zero value): in a list of objects it is
an empty object, which validation then judges.

The shape of every kind (which fields hold objects, lists and maps of objects) is ``fields.py``'s tree; the leaf
fields' types come from the same ``kubernetes`` client models and are kept in ``field_types.json``
(``python -m kss_sim.cluster.admission.decode_types`` regenerates it; ``tests/cluster/test_decode_types.py``
checks it matches the installed client). The client does not say which strings are quantities (a number is a
valid quantity) nor which integers are int32: ``_QUANTITIES`` and ``_INT32`` say so here.
"""

from __future__ import annotations

import json
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

from kss_sim.cluster.admission import fields
from kss_sim.cluster.errors import BadRequest

TYPES_FILE = Path(__file__).with_name("field_types.json")

# The client's type of a leaf field -> its code in field_types.json ("[x": a list of x, "{x": a map of x).
_LEAF_CODES = {
    "str": "string",
    "int": "int",
    "bool": "bool",
    "float": "float",
    "datetime": "time",
    "date": "time",
    "List[str]": "[string",
    "List[int]": "[int",
    "List[bool]": "[bool",
    "Dict[str, str]": "{string",
    "Dict[str, datetime]": "{time",
}
# Strings that are resource.Quantity in Go: a JSON number is one too.
_QUANTITIES = frozenset(
    {
        ("V1EmptyDirVolumeSource", "sizeLimit"),
        ("V1DeviceCapacity", "value"),
        ("V1CapacityRequestPolicy", "default"),
        ("V1CapacityRequestPolicyRange", "min"),
        ("V1CapacityRequestPolicyRange", "max"),
        ("V1CapacityRequestPolicyRange", "step"),
    }
)
# Maps of strings that are ResourceLists in Go (map[ResourceName]resource.Quantity): a JSON number is a value there.
# Every other map of strings (labels, annotations, nodeSelector, matchLabels) takes strings only.
_QUANTITY_MAPS = frozenset({"allocatable", "allocatedResources", "capacity", "consumedCapacity", "limits", "overhead",
                            "requests"})  # fmt: skip
# Integer fields that are int32 in every API type that has them (the others are checked as int64).
_INT32 = frozenset(
    {
        "replicas",
        "readyReplicas",
        "availableReplicas",
        "updatedReplicas",
        "currentReplicas",
        "fullyLabeledReplicas",
        "terminatingReplicas",
        "parallelism",
        "completions",
        "backoffLimit",
        "minReadySeconds",
        "revisionHistoryLimit",
        "progressDeadlineSeconds",
        "priority",
        "containerPort",
        "hostPort",
        "weight",
        "maxSkew",
        "minDomains",
        "minMember",
        "minCount",
        "restartCount",
        "scheduleTimeoutSeconds",
        "successfulJobsHistoryLimit",
        "failedJobsHistoryLimit",
    }
)
# Bodies that are not stored kinds but are decoded all the same (a pod's binding, a DELETE's options, an eviction).
_EXTRA_ROOTS = {"Binding": "V1Binding", "DeleteOptions": "V1DeleteOptions", "Eviction": "V1Eviction"}
_EXTRA_TREE = {
    "V1Binding": {"apiVersion": "", "kind": "", "metadata": "V1ObjectMeta", "target": "V1ObjectReference"},
    "V1DeleteOptions": {"preconditions": "V1Preconditions"},
    "V1Eviction": {"metadata": "V1ObjectMeta", "deleteOptions": "V1DeleteOptions"},
}
# Their leaf fields (meta/v1 DeleteOptions and Preconditions, policy/v1 Eviction), which field_types.json lacks: no
# served kind holds them.
_EXTRA_LEAVES = {
    "V1DeleteOptions": {
        "apiVersion": "string",
        "kind": "string",
        "gracePeriodSeconds": "int",
        "orphanDependents": "bool",
        "propagationPolicy": "string",
        "dryRun": "[string",
        "ignoreStoreReadErrorWithClusterBreakingPotential": "bool",
    },
    "V1Preconditions": {"uid": "string", "resourceVersion": "string"},
    "V1Eviction": {"apiVersion": "string", "kind": "string"},
}
_RANGES = {"int32": (-(2**31), 2**31 - 1), "int64": (-(2**63), 2**63 - 1)}
_GO_SCALARS = {
    "string": "string",
    "bool": "bool",
    "float": "float64",
    "time": "v1.Time",
    "quantity": "resource.Quantity",
}
_MODEL_NAME = re.compile(r"^(?:[A-Za-z0-9.-]+/)?(?:Core|Resource|Storage)?([Vv]\d+(?:alpha\d+|beta\d+)?)\.?(\w+)$")


def generate() -> dict[str, dict[str, str]]:
    """The leaf fields' types of every model in ``fields.py``'s tree, from the installed ``kubernetes`` client."""
    import kubernetes.client as models

    out: dict[str, dict[str, str]] = {}
    for name, tree in fields.models().items():
        model = getattr(models, name, None)
        if model is None:
            continue
        leaves: dict[str, str] = {}
        for attr, type_name in model.openapi_types.items():
            key = model.attribute_map[attr]
            if tree.get(key) or type_name not in _LEAF_CODES:
                continue  # an object, a list or map of objects (the tree says), or free-form JSON
            leaves[key] = _LEAF_CODES[type_name]
        out[name] = dict(sorted(leaves.items()))
    return dict(sorted(out.items()))


@cache
def _leaf_types() -> dict[str, dict[str, str]]:
    types: dict[str, dict[str, str]] = json.loads(TYPES_FILE.read_text())["models"]
    types.update({model: dict(leaves) for model, leaves in _EXTRA_LEAVES.items()})
    for model, field in _QUANTITIES:
        if field in types.get(model, {}):
            types[model][field] = "quantity"
    for leaves in types.values():
        for field, code in leaves.items():
            if code == "{string" and field in _QUANTITY_MAPS:
                leaves[field] = "{quantity"
            if code.lstrip("[") == "int":
                leaves[field] = code.replace("int", "int32" if field in _INT32 else "int64")
    return types


def check_types(kind: str, obj: dict[str, Any], *, version: str, api_kind: str | None = None) -> None:
    """``BadRequest`` with encoding/json's message at the first field (in document order) whose value Go could
    not decode into its type; a ``null`` item of a list of objects becomes ``{}`` in place. Kinds without a
    model are not checked. ``api_kind``: the kind the message names, when the registry's name is not it."""
    root = fields.ROOT_MODELS.get(kind) or _EXTRA_ROOTS.get(kind)
    if root is None:
        return
    problem = _walk(fields.models(), _leaf_types(), obj, root, "")
    if problem is not None:
        shown = api_kind or kind
        raise BadRequest(f'{shown} in version "{version}" cannot be handled as a {shown}: {problem}')


def _go_type(ref: str) -> str:
    """The Go name of a model (``V1Toleration`` -> ``v1.Toleration``)."""
    m = _MODEL_NAME.match(ref)
    return f"{m.group(1).lower()}.{m.group(2)}" if m else ref


def json_type(value: Any) -> str:
    """How Go's encoding/json names a JSON value's type in its errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "null"


def _unmarshal(value: Any, struct: str, path: str, go_type: str, *, shown: str | None = None) -> str:
    return f"json: cannot unmarshal {shown or json_type(value)} into Go struct field {struct}.{path} of type {go_type}"


def _scalar_problem(code: str, value: Any) -> tuple[str, str] | None:
    """What Go says of ``value`` decoded into the scalar ``code`` (its JSON description and Go type); None if fine."""
    if code in _RANGES:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return json_type(value), code
        low, high = _RANGES[code]
        if isinstance(value, float) or not low <= value <= high:
            return f"number {value}", code
        return None
    go_type = _GO_SCALARS.get(code, code)
    if code == "quantity":
        ok = isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool))
    elif code == "float":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    elif code == "bool":
        ok = isinstance(value, bool)
    else:  # string, time
        ok = isinstance(value, str)
    return None if ok else (json_type(value), go_type)


def _walk(
    tree: dict[str, dict[str, str]],
    leaf_types: dict[str, dict[str, str]],
    obj: dict[str, Any],
    model: str,
    path: str,
) -> str | None:
    refs = tree.get(model) or _EXTRA_TREE.get(model, {})
    leaves = leaf_types.get(model, {})
    struct = _go_type(model).partition(".")[2] or model
    for key, value in obj.items():
        if value is None:
            continue
        where = path + key
        ref = refs.get(key)
        if ref:
            problem = _check_ref(tree, leaf_types, value, ref, struct, where)
        elif key in leaves:
            problem = _check_leaf(leaves[key], value, struct, where)
        else:
            continue  # free-form JSON (IntOrString, RawExtension) or a field fields.py prunes
        if problem is not None:
            return problem
    return None


def _check_ref(
    tree: dict[str, dict[str, str]],
    leaf_types: dict[str, dict[str, str]],
    value: Any,
    ref: str,
    struct: str,
    where: str,
) -> str | None:
    head = ref[0]
    if head == "[":
        item_type = _go_type(ref[1:])
        if not isinstance(value, list):
            return _unmarshal(value, struct, where, "[]" + item_type)
        for i, item in enumerate(value):
            if item is None:
                value[i] = item = {}  # Go decodes null into the zero struct
            if not isinstance(item, dict):
                return _unmarshal(item, struct, where, item_type)
            if (problem := _walk(tree, leaf_types, item, ref[1:], where + ".")) is not None:
                return problem
        return None
    if head == "{":
        item_type = _go_type(ref[1:])
        if not isinstance(value, dict):
            return _unmarshal(value, struct, where, "map[string]" + item_type)
        for name, item in value.items():
            if item is None:
                value[name] = item = {}
            if not isinstance(item, dict):
                return _unmarshal(item, struct, where, item_type)
            if (problem := _walk(tree, leaf_types, item, ref[1:], where + ".")) is not None:
                return problem
        return None
    if not isinstance(value, dict):
        return _unmarshal(value, struct, where, _go_type(ref))
    return _walk(tree, leaf_types, value, ref, where + ".")


def _check_leaf(code: str, value: Any, struct: str, where: str) -> str | None:
    if code[0] in "[{":
        container, go_prefix = (list, "[]") if code[0] == "[" else (dict, "map[string]")
        item_code = code[1:]
        if not isinstance(value, container):
            return _unmarshal(value, struct, where, go_prefix + _GO_SCALARS.get(item_code, item_code))
        items = value if isinstance(value, list) else list(value.values())
        for item in items:
            if item is not None and (found := _scalar_problem(item_code, item)) is not None:
                return _unmarshal(item, struct, where, found[1], shown=found[0])
        return None
    found = _scalar_problem(code, value)
    return None if found is None else _unmarshal(value, struct, where, found[1], shown=found[0])


if __name__ == "__main__":
    doc = {"client": fields.client_version(), "models": generate()}
    TYPES_FILE.write_text(json.dumps(doc, indent=0, separators=(",", ":")) + "\n")
    print(f"wrote {TYPES_FILE}", file=sys.stderr)

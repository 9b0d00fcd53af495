"""Sets of field paths as kube-apiserver's managedFields write them (structured-merge-diff's ``fieldpath.Set`` in
its ``FieldsV1`` form), and the shape of each kind's fields that decides how a path is spelt.

A set is kept exactly as ``FieldsV1`` serialises it, a tree of dicts keyed by path elements: ``f:name`` a field,
``k:{"name":"web"}`` an item of a list keyed by some of its fields (``listType=map``), ``v:"x"`` an item of a set
of scalars (``listType=set``). A node is a member of the set when it is empty (``{}``, a leaf) or holds ``"."``; a
node with children and no ``"."`` only leads to members. ``None`` is the empty set.

The shapes come from the API's OpenAPI extensions (``x-kubernetes-list-type``, ``-list-map-keys``, ``-map-type``, atomic
struct types) for the fields the served kinds have, over the field tree ``admission.fields`` already keeps
(the official client's models). Lists without a list type are atomic, maps granular, as structured-merge-diff reads
built-in types; a custom resource (PodGroup) is all granular maps and atomic lists, as a CRD schema without list types
is.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from kss_sim.cluster.admission import fields
from kss_sim.cluster.kinds.registry import KindInfo

Node = dict[str, Any]
MEMBER = "."

# listType=map lists: (model, field) -> the item fields that key them (k8s.io/api v1.35 struct tags).
LIST_KEYS: dict[tuple[str, str], tuple[str, ...]] = {
    ("V1PodSpec", "containers"): ("name",),
    ("V1PodSpec", "initContainers"): ("name",),
    ("V1PodSpec", "ephemeralContainers"): ("name",),
    ("V1PodSpec", "volumes"): ("name",),
    ("V1PodSpec", "imagePullSecrets"): ("name",),
    ("V1PodSpec", "hostAliases"): ("ip",),
    ("V1PodSpec", "resourceClaims"): ("name",),
    ("V1PodSpec", "schedulingGates"): ("name",),
    ("V1PodSpec", "topologySpreadConstraints"): ("topologyKey", "whenUnsatisfiable"),
    ("V1Container", "env"): ("name",),
    ("V1Container", "ports"): ("containerPort", "protocol"),
    ("V1Container", "volumeMounts"): ("mountPath",),
    ("V1Container", "volumeDevices"): ("devicePath",),
    ("V1EphemeralContainer", "env"): ("name",),
    ("V1EphemeralContainer", "ports"): ("containerPort", "protocol"),
    ("V1EphemeralContainer", "volumeMounts"): ("mountPath",),
    ("V1EphemeralContainer", "volumeDevices"): ("devicePath",),
    ("V1ResourceRequirements", "claims"): ("name",),
    ("V1ContainerStatus", "allocatedResourcesStatus"): ("name",),
    ("V1ContainerStatus", "volumeMounts"): ("mountPath",),
    ("V1ResourceStatus", "resources"): ("resourceID",),
    ("V1PodStatus", "conditions"): ("type",),
    ("V1PodStatus", "podIPs"): ("ip",),
    ("V1PodStatus", "resourceClaimStatuses"): ("name",),
    ("V1NodeStatus", "addresses"): ("type",),
    ("V1NodeStatus", "conditions"): ("type",),
    ("V1NamespaceStatus", "conditions"): ("type",),
    ("V1PersistentVolumeClaimStatus", "conditions"): ("type",),
    ("V1PodDisruptionBudgetStatus", "conditions"): ("type",),
    ("V2HorizontalPodAutoscalerStatus", "conditions"): ("type",),
    ("V1CSINodeSpec", "drivers"): ("name",),
    ("V1ObjectMeta", "ownerReferences"): ("uid",),
    # v1.36's scheduling.k8s.io/v1alpha2 (+listType=map, +listMapKey=name).
    ("scheduling.k8s.io/v1alpha2.WorkloadSpec", "podGroupTemplates"): ("name",),
    ("scheduling.k8s.io/v1alpha2.PodGroupTemplate", "resourceClaims"): ("name",),
    ("scheduling.k8s.io/v1alpha2.PodGroupSpec", "resourceClaims"): ("name",),
    ("scheduling.k8s.io/v1alpha2.PodGroupStatus", "resourceClaimStatuses"): ("name",),
}
# Key fields with a default (``+default``): an item may leave them out.
KEY_DEFAULTS: dict[str, Any] = {"protocol": "TCP"}
# listType=set lists of scalars.
SET_LISTS = frozenset(
    {
        ("V1ObjectMeta", "finalizers"),
        ("V1NodeSpec", "podCIDRs"),
        ("V1ContainerRestartRuleOnExitCodes", "values"),
        ("V1PodFailurePolicyOnExitCodesRequirement", "values"),
        ("V1UncountedTerminatedPods", "failed"),
        ("V1UncountedTerminatedPods", "succeeded"),
    }
)
# Struct types marked ``+structType=atomic``: owned and replaced whole.
ATOMIC_STRUCTS = frozenset(
    {
        "V1LabelSelector",
        "V1NodeSelector",
        "V1NodeSelectorTerm",
        "V1ObjectReference",
        "V1OwnerReference",
        "V1LocalObjectReference",
        "V1TypedLocalObjectReference",
        "V1ConfigMapKeySelector",
        "V1SecretKeySelector",
        "V1FileKeySelector",
        "V1ObjectFieldSelector",
        "V1ResourceFieldSelector",
        "V1SecretReference",
        "V1TopologySelectorTerm",
        "V1ScopeSelector",
    }
)
GRANULAR_FIELDS = frozenset({("V1PersistentVolumeSpec", "claimRef")})  # x-kubernetes-map-type: granular
ATOMIC_MAPS = frozenset({("V1PodSpec", "nodeSelector")})  # x-kubernetes-map-type: atomic
# Models the field tree lacks that the workload kinds (no model there yet) lead to by field name.
_FALLBACK_MODELS = {"metadata": "V1ObjectMeta", "selector": "V1LabelSelector", "template": "V1PodTemplateSpec"}
_EXTRA_MODELS = {"V1PodTemplateSpec": {"metadata": "V1ObjectMeta", "spec": "V1PodSpec"}}
# Go fields rendered even when empty (value-type structs as {}), so kube-apiserver never sees them appear or go.
ZERO_VALUE_FIELDS = frozenset(
    {
        "metadata",
        "spec",
        "status",
        "template",
        "jobTemplate",
        "strategy",
        "updateStrategy",
        "involvedObject",
        "source",
        "nodeInfo",
        "daemonEndpoints",
        "kubeletEndpoint",
        "containers",  # a list without omitempty: null in an empty PodSpec
    }
)

STRUCT, MAP, LEAF, LIST_MAP, SET = "struct", "map", "leaf", "list-map", "set"


class Shape:
    """How one field's value is tracked and merged: a struct (``model`` when its fields are known), a granular
    map of ``item``s, a leaf (scalars and atomic values), a keyed list of ``item``s or a set of scalars.

    Each shape remembers its fields' shapes once resolved (``child_shape``): the write path asks for them per field.
    """

    __slots__ = ("custom", "fields", "form", "item", "keys", "model")

    def __init__(
        self,
        form: str,
        model: str | None = None,
        keys: tuple[str, ...] = (),
        item: Shape | None = None,
        custom: bool = False,
    ) -> None:
        self.form = form
        self.model = model
        self.keys = keys
        self.item = item
        self.custom = custom
        self.fields: dict[tuple[str, str], Shape] = {}


_LEAF = Shape(LEAF)
_CUSTOM_STRUCT = Shape(STRUCT, custom=True)
_UNKNOWN_STRUCT = Shape(STRUCT)


def _by_name_keys() -> dict[str, tuple[str, ...]]:
    """List keys by field name alone, where every model agrees (for structs whose model is unknown)."""
    out: dict[str, tuple[str, ...]] = {}
    clashes: set[str] = set()
    for (_, name), keys in LIST_KEYS.items():
        if out.setdefault(name, keys) != keys:
            clashes.add(name)
    for name in clashes:
        del out[name]
    out["conditions"] = ("type",)
    return out


_KEYS_BY_NAME = _by_name_keys()


_ROOTS: dict[str, Shape] = {}
_STRUCTS: dict[str, Shape] = {}


def root_shape(info: KindInfo) -> Shape:
    """The shape of a whole object of ``info``'s kind."""
    if info.custom:
        return _CUSTOM_STRUCT
    shape = _ROOTS.get(info.kind)
    if shape is None:
        shape = _ROOTS[info.kind] = Shape(STRUCT, fields.ROOT_MODELS.get(info.kind))
    return shape


def _models() -> dict[str, dict[str, str]]:
    return fields._schema()


def child_shape(parent: Shape, name: str, category: str) -> Shape:
    """The shape of field ``name`` of a ``parent`` struct or map whose value is a ``category`` ("dict", "list" or
    "scalar")."""
    known = parent.fields.get((name, category))
    if known is None:
        known = parent.fields[(name, category)] = _resolve(parent, name, category)
    return known


def _resolve(parent: Shape, name: str, category: str) -> Shape:
    if category == "scalar":
        return _LEAF
    if parent.form == MAP:
        return parent.item if parent.item is not None else _unknown(parent, name, category)
    if parent.custom:
        return _CUSTOM_STRUCT if category == "dict" else _LEAF
    model = parent.model
    schema = _models()
    spec = None
    if model is not None:
        spec = (schema.get(model) or _EXTRA_MODELS.get(model) or {}).get(name)
    if spec is None:
        return _unknown(parent, name, category)
    head = spec[:1]
    if head == "[":
        keys = LIST_KEYS.get((model or "", name))
        if keys is None or category != "list":
            return _LEAF
        return Shape(LIST_MAP, keys=keys, item=_struct(spec[1:]))
    if head == "{":
        return Shape(MAP, item=_struct(spec[1:])) if category == "dict" else _LEAF
    if spec:
        if spec in ATOMIC_STRUCTS and (model, name) not in GRANULAR_FIELDS:
            return _LEAF
        return _struct(spec) if category == "dict" else _LEAF
    # A plain field: a scalar, a map of scalars or a list of scalars.
    if category == "dict":
        return _LEAF if (model, name) in ATOMIC_MAPS else Shape(MAP)
    return Shape(SET) if (model, name) in SET_LISTS else _LEAF


def _struct(model: str) -> Shape:
    if model in ATOMIC_STRUCTS:
        return _LEAF
    shape = _STRUCTS.get(model)
    if shape is None:
        shape = _STRUCTS[model] = Shape(STRUCT, model)
    return shape


def _unknown(parent: Shape, name: str, category: str) -> Shape:
    """A field of a struct whose model is unknown: a built-in workload kind's, by the field's name."""
    if category == "dict":
        model = _FALLBACK_MODELS.get(name)
        if model is not None:
            return _struct(model)
        return _UNKNOWN_STRUCT
    keys = _KEYS_BY_NAME.get(name)
    return Shape(LIST_MAP, keys=keys, item=_UNKNOWN_STRUCT) if keys else _LEAF


def category(value: Any) -> str:
    """ "dict", "list" or "scalar": what ``child_shape`` needs to know of a value."""
    kind = type(value)
    if kind is dict:
        return "dict"
    if kind is list:
        return "list"
    return "scalar"


# ---------------------------------------------------------------------------------------------- path elements


class KeyError_(ValueError):
    """A list item that cannot be keyed: a missing key field without a default, or a duplicate key."""


def item_element(shape: Shape, item: Any) -> str | None:
    """The path element of one item of a keyed list or set; None if it lacks a key field (no default)."""
    if shape.form == SET:
        return "v:" + orjson.dumps(item).decode()
    if not isinstance(item, dict):
        return None
    key: dict[str, Any] = {}
    for name in sorted(shape.keys):
        if name in item:
            key[name] = item[name]
        elif name in KEY_DEFAULTS:
            key[name] = KEY_DEFAULTS[name]
        else:
            return None
    return "k:" + orjson.dumps(key).decode()


def element_text(element: str) -> str:
    """A path element as structured-merge-diff prints paths: ``.spec``, ``[name="web"]``, ``[="x"]``."""
    tag, _, rest = element.partition(":")
    if tag == "f":
        return "." + rest
    if tag == "k":
        key = orjson.loads(rest)
        return "[" + ",".join(f"{k}={orjson.dumps(v).decode()}" for k, v in key.items()) + "]"
    if tag == "v":
        return f"[={rest}]"
    return f"[{rest}]"


# ---------------------------------------------------------------------------------------------- set algebra


def is_member(node: Node) -> bool:
    """Whether the path of ``node`` itself is in the set."""
    return not node or MEMBER in node


def _make(member: bool, children: Node) -> Node | None:
    if not children:
        return {} if member else None
    if member:
        return {MEMBER: {}, **dict(sorted(children.items()))}
    return dict(sorted(children.items()))


def as_member(node: Node) -> Node:
    """``node`` with its own path added to the set."""
    return node if is_member(node) else {MEMBER: {}, **node}


def union(a: Node | None, b: Node | None) -> Node | None:
    """Every path of ``a`` or ``b``."""
    if a is None or a is b:
        return b
    if b is None:
        return a
    children: Node = {k: v for k, v in a.items() if k != MEMBER}
    for key, child in b.items():
        if key != MEMBER:
            children[key] = union(children.get(key), child)
    return _make(is_member(a) or is_member(b), children)


def difference(a: Node | None, b: Node | None) -> Node | None:
    """The paths of ``a`` not in ``b``."""
    if a is None or b is None:
        return a
    if a is b:
        return None
    children: Node = {}
    for key, child in a.items():
        if key == MEMBER:
            continue
        other = b.get(key)
        rest = difference(child, other) if other is not None else child
        if rest is not None:
            children[key] = rest
    return _make(is_member(a) and not is_member(b), children)


def intersection(a: Node | None, b: Node | None) -> Node | None:
    """The paths in both ``a`` and ``b``."""
    if a is None or b is None:
        return None
    children: Node = {}
    for key, child in a.items():
        if key != MEMBER and key in b:
            both = intersection(child, b[key])
            if both is not None:
                children[key] = both
    return _make(is_member(a) and is_member(b), children)


def without_subtrees(node: Node | None, paths: Node) -> Node | None:
    """``node`` less everything at or under the leaves of ``paths`` (structured-merge-diff's RecursiveDifference
    with whole subtrees, used for the fields a manager never owns)."""
    if node is None:
        return None
    children: Node = {}
    for key, child in node.items():
        if key == MEMBER:
            continue
        drop = paths.get(key)
        if drop is None:
            children[key] = child
        elif drop:  # an inner node of ``paths``: drop below it
            rest = without_subtrees(child, drop)
            if rest is not None:
                children[key] = rest
    return _make(is_member(node) and MEMBER not in paths, children)


def members(node: Node | None, prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every path in the set, parents before children, as tuples of path elements."""
    if node is None:
        return
    if prefix and is_member(node):
        yield prefix
    for key in sorted(node):
        if key != MEMBER:
            yield from members(node[key], (*prefix, key))


def path_text(path: tuple[str, ...]) -> str:
    """``.spec.containers[name="web"].image``."""
    return "".join(element_text(e) for e in path)


# ---------------------------------------------------------------------------------------------- sets of objects


def field_set(value: Any, shape: Shape) -> Node | None:
    """The fields ``value`` sets (structured-merge-diff's ToFieldSet): every leaf, every list item, every map key
    and every empty map, as an applier comes to own them. ``KeyError_`` for list items that cannot be keyed."""
    form = shape.form
    if form in (STRUCT, MAP) and isinstance(value, dict):
        if not value:
            return {}
        children: Node = {}
        for name, child in value.items():
            node = field_set(child, child_shape(shape, name, category(child)))
            if node is None:
                continue
            if form == MAP or child is None:
                node = as_member(node)
            children["f:" + name] = node
        return _make(False, children)
    if form in (LIST_MAP, SET) and isinstance(value, list):
        items: Node = {}
        item_shape = shape.item or _LEAF
        for index, item in enumerate(value):
            element = item_element(shape, item)
            if element is None:
                missing = [k for k in shape.keys if not isinstance(item, dict) or k not in item]
                raise KeyError_(
                    f"element {index}: associative list with keys has an element that omits key field "
                    f'"{missing[0] if missing else shape.keys[0]}" (and doesn\'t have default value)'
                )
            if element in items:
                raise KeyError_(f"duplicate entries for key {element_text(element)}")
            node = field_set(item, item_shape) if form == LIST_MAP else {}
            items[element] = as_member(node or {})
        return _make(False, items)
    return {}


_MISSING: Any = object()


def compare(old: Any, new: Any, shape: Shape, zero: bool = False) -> tuple[Node | None, Node | None]:
    """What changed from ``old`` to ``new`` at one path: (paths added or modified, paths removed), as
    structured-merge-diff's Compare; ``_MISSING`` stands for an absent value. ``zero``: the path is a Go value-type
    struct, present (empty) whenever absent."""
    if old is new or (old is not _MISSING and new is not _MISSING and old == new):
        return None, None
    if old is _MISSING and new is not _MISSING:
        return all_added(new, shape, zero), None
    form = shape.form
    container = dict if form in (STRUCT, MAP) else list if form in (LIST_MAP, SET) else None
    old_ok = old is _MISSING or isinstance(old, container or ())
    new_ok = new is _MISSING or isinstance(new, container or ())
    if container is None or not (old_ok and new_ok):
        if old is _MISSING:
            return {}, None
        if new is _MISSING:
            return None, {}
        return {}, None
    added = old is _MISSING and not zero
    removed = new is _MISSING and not zero
    changed_children: Node = {}
    removed_children: Node = {}
    if container is dict:
        old_map: dict[str, Any] = {} if old is _MISSING else old
        new_map: dict[str, Any] = {} if new is _MISSING else new
        fixed = form == STRUCT and not shape.custom
        for name in {**old_map, **new_map}:
            a = old_map.get(name, _MISSING)
            b = new_map.get(name, _MISSING)
            if a is b or (a is not _MISSING and b is not _MISSING and a == b):
                continue
            sample = b if b is not _MISSING else a
            # A value-type field is there (empty) only where its parent is.
            zero_child = fixed and name in ZERO_VALUE_FIELDS and (zero or old is not _MISSING)
            c, r = compare(a, b, child_shape(shape, name, category(sample)), zero_child)
            if c is not None:
                changed_children["f:" + name] = c
            if r is not None:
                removed_children["f:" + name] = r
    else:
        old_items = _index_items(shape, [] if old is _MISSING else old)
        new_items = _index_items(shape, [] if new is _MISSING else new)
        item_shape = shape.item if form == LIST_MAP and shape.item is not None else _LEAF
        for element in {**old_items, **new_items}:
            c, r = compare(old_items.get(element, _MISSING), new_items.get(element, _MISSING), item_shape)
            if c is not None:
                changed_children[element] = c
            if r is not None:
                removed_children[element] = r
    return _make(added, changed_children), _make(removed, removed_children)


# Field sets of the values found three levels down or deeper (a container's probe, ports, resources; a toleration),
# by shape and JSON: objects made from one template repeat them, while what holds them differs (a pod's name, its
# token volume). A set depends on its value's structure alone, so an equal JSON gives an equal set; the sets are
# shared read-only, as stored managedFields are. Bounded: emptied when full.
_ADDED_DEPTH = 3
_ADDED_LIMIT = 4096
_added_sets: dict[tuple[Shape, bool, bytes], Node] = {}


def all_added(value: Any, shape: Shape, zero: bool = False) -> Node:
    """``compare`` of nothing with ``value``: every path in it is added (but a ``zero`` value-type struct, and
    those within it, which were there empty). Read-only: parts may be shared with other calls' results."""
    return _all_added(value, shape, zero, 0)


def _all_added(value: Any, shape: Shape, zero: bool, depth: int) -> Node:
    form = shape.form
    kind = type(value)
    key = None
    if depth >= _ADDED_DEPTH and (kind is dict or kind is list) and form != LEAF:
        try:
            key = (shape, zero, orjson.dumps(value))
        except orjson.JSONEncodeError:
            key = None
        else:
            known = _added_sets.get(key)
            if known is not None:
                return known
    result: Node = {}
    if form in (STRUCT, MAP) and kind is dict:
        fixed = form == STRUCT and not shape.custom
        children: Node = {}
        for name in sorted(value):
            child = value[name]
            children["f:" + name] = _all_added(
                child,
                child_shape(shape, name, category(child)),
                zero and fixed and name in ZERO_VALUE_FIELDS,
                depth + 1,
            )
        result = children if zero else ({MEMBER: {}, **children} if children else {})
    elif form in (LIST_MAP, SET) and kind is list:
        items: Node = {}
        item_shape = shape.item if form == LIST_MAP and shape.item is not None else _LEAF
        for index, item in enumerate(value):
            items[item_element(shape, item) or f"i:{index}"] = _all_added(item, item_shape, False, depth + 1)
        ordered = dict(sorted(items.items()))
        result = ordered if zero else ({MEMBER: {}, **ordered} if items else {})
    if key is not None:
        if len(_added_sets) >= _ADDED_LIMIT:
            _added_sets.clear()
        # An exact copy of the JSON: orjson's result keeps its whole grown buffer (several times the JSON).
        _added_sets[(shape, zero, bytes(memoryview(key[2])))] = result
    return result


def _index_items(shape: Shape, items: list[Any]) -> dict[str, Any]:
    """A stored list's items by path element (an unkeyable item, which validation keeps out, by position)."""
    out: dict[str, Any] = {}
    for index, item in enumerate(items):
        out[item_element(shape, item) or f"i:{index}"] = item
    return out


def object_changes(old: Any, new: Any, shape: Shape) -> tuple[Node | None, Node | None]:
    """``compare`` of two whole objects (``old`` None: a create, compared with the kind's empty object)."""
    if old is None:
        return all_added(new, shape, zero=True), None
    return compare(old, new, shape)

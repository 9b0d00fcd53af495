"""The three patch formats kube-apiserver accepts: JSON merge patch, JSON patch and strategic merge patch.

Strategic merge patch needs each list's patch strategy; the few kinds served here are covered by the
field-name table below (taken from the ``patchStrategy``/``patchMergeKey`` struct tags of k8s.io/api).
"""

from __future__ import annotations

import copy
from typing import Any

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# Lists of objects merged item by item on this key; every other list is replaced whole.
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "ports": "containerPort",
    "env": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "volumes": "name",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "resourceClaims": "name",
    "schedulingGates": "name",
    "topologySpreadConstraints": "topologyKey",
    "ownerReferences": "uid",
    "conditions": "type",
    "addresses": "type",
    "podIPs": "ip",
    "hostIPs": "ip",
    "drivers": "name",
}
# Lists of scalars merged as sets (``patchStrategy:"merge"``).
MERGED_SCALAR_LISTS = frozenset({"finalizers", "podCIDRs"})


class PatchError(ValueError):
    """A patch that cannot be applied (a failed ``test``, a missing path, a bad directive)."""


def json_merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = json_merge_patch(result.get(key), value)
    return result


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchError(f"invalid JSON pointer {path!r}")
    return [_unescape(t) for t in path[1:].split("/")]


def _index(container: list[Any], token: str, *, allow_end: bool) -> int:
    if token == "-" and allow_end:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token.startswith("0")):
        raise PatchError(f"invalid array index {token!r}")
    idx = int(token)
    limit = len(container) if allow_end else len(container) - 1
    if idx > limit:
        raise PatchError(f"array index {idx} out of bounds")
    return idx


def _parent(doc: Any, tokens: list[str]) -> Any:
    node = doc
    for token in tokens[:-1]:
        if isinstance(node, dict):
            if token not in node:
                raise PatchError(f"path component {token!r} not found")
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(node, token, allow_end=False)]
        else:
            raise PatchError(f"path component {token!r} is not a container")
    return node


def _get(doc: Any, tokens: list[str]) -> Any:
    if not tokens:
        return doc
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {'/'.join(tokens)!r} not found")
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, allow_end=False)]
    raise PatchError("path does not exist")


def _add(doc: Any, tokens: list[str], value: Any) -> Any:
    if not tokens:
        return value
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, allow_end=True), value)
    else:
        raise PatchError("cannot add to a scalar")
    return doc


def _remove(doc: Any, tokens: list[str]) -> tuple[Any, Any]:
    if not tokens:
        raise PatchError("cannot remove the whole document")
    parent = _parent(doc, tokens)
    last = tokens[-1]
    if isinstance(parent, dict):
        if last not in parent:
            raise PatchError(f"path {'/'.join(tokens)!r} not found, cannot remove")
        return doc, parent.pop(last)
    if isinstance(parent, list):
        return doc, parent.pop(_index(parent, last, allow_end=False))
    raise PatchError("cannot remove from a scalar")


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902 operations (add, remove, replace, move, copy, test) applied to a copy of ``target``."""
    if not isinstance(operations, list):
        raise PatchError("a JSON patch must be a list of operations")
    doc = copy.deepcopy(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise PatchError(f"invalid operation {op!r}")
        kind = op["op"]
        tokens = _pointer(str(op["path"]))
        if kind == "add":
            doc = _add(doc, tokens, copy.deepcopy(op.get("value")))
        elif kind == "remove":
            doc, _ = _remove(doc, tokens)
        elif kind == "replace":
            _get(doc, tokens)
            if not tokens:
                doc = copy.deepcopy(op.get("value"))
            else:
                parent = _parent(doc, tokens)
                if isinstance(parent, dict):
                    parent[tokens[-1]] = copy.deepcopy(op.get("value"))
                else:
                    parent[_index(parent, tokens[-1], allow_end=False)] = copy.deepcopy(op.get("value"))
        elif kind in ("move", "copy"):
            source = _pointer(str(op.get("from", "")))
            if kind == "move":
                doc, value = _remove(doc, source)
            else:
                value = copy.deepcopy(_get(doc, source))
            doc = _add(doc, tokens, value)
        elif kind == "test":
            if _get(doc, tokens) != op.get("value"):
                raise PatchError(f"testing value {op['path']} failed")
        else:
            raise PatchError(f"unexpected operation {kind!r}")
    return doc


def strategic_merge_patch(target: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    """Apply a strategic merge patch (with ``$patch``, ``$retainKeys``, ``$setElementOrder/`` and
    ``$deleteFromPrimitiveList/`` directives) to a copy of ``target``, as ``strategicpatch.StrategicMergePatch``
    does: ``$patch: replace`` in a map takes the patch's map as it is, ``$patch: delete`` leaves an empty map;
    in a list, ``replace`` takes the patch's other items and ``delete`` drops the items with that merge key;
    ``$retainKeys`` clears the map's keys it does not list (and every key the patch sets must be listed)."""
    if patch.get("$patch") == "delete":
        raise PatchError("the patch deletes the whole object")
    return _merge_map(copy.deepcopy(target), patch)


def _merge_map(original: dict[str, Any] | None, patch: dict[str, Any]) -> dict[str, Any]:
    directive = patch.get("$patch")
    if directive == "delete":
        return {}  # handleDirectiveInMergeMap: an empty map, not the key removed
    if directive == "replace":
        return {k: v for k, v in copy.deepcopy(patch).items() if k != "$patch"}
    if directive is not None:
        raise PatchError(f"unknown patch type: {directive} in map: {patch}")
    result: dict[str, Any] = dict(original) if isinstance(original, dict) else {}
    retain = patch.get("$retainKeys")
    if retain is not None:
        result = _retain_keys(result, patch, retain)
    orders: dict[str, list[Any]] = {}
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys"):
            continue
        if key.startswith("$setElementOrder/"):
            orders[key.partition("/")[2]] = value if isinstance(value, list) else []
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.partition("/")[2]
            if isinstance(result.get(field), list) and isinstance(value, list):
                result[field] = [v for v in result[field] if v not in value]
            continue
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            result[key] = _merge_map(result.get(key) if isinstance(result.get(key), dict) else None, value)
        elif isinstance(value, list):
            result[key] = _merge_list(key, result.get(key), value)
        else:
            result[key] = value
    for field, order in orders.items():
        if isinstance(result.get(field), list):
            result[field] = _apply_order(field, result[field], order)
    return result


def _retain_keys(original: dict[str, Any], patch: dict[str, Any], retain: Any) -> dict[str, Any]:
    """``applyRetainKeysDirective``."""
    if not isinstance(retain, list):
        raise PatchError("invalid patch format of retainKeys")
    for key, value in patch.items():
        if value is None or key.startswith("$"):  # directives ($deleteFromPrimitiveList/, $setElementOrder/)
            continue
        if key not in retain:
            raise PatchError("invalid patch format of retainKeys")
    return {k: v for k, v in original.items() if k in retain}


def _merge_list(field: str, original: Any, patch: list[Any]) -> list[Any]:
    current = list(original) if isinstance(original, list) else []
    key = MERGE_KEYS.get(field)
    if key is not None and patch and all(isinstance(i, dict) for i in patch):
        # mergeSliceWithSpecialElements: the directives first, then the other items merged by key.
        items: list[dict[str, Any]] = []
        replace = False
        for item in patch:
            directive = item.get("$patch")
            if directive is None:
                items.append(item)
            elif directive == "delete":
                if key not in item:
                    raise PatchError("delete patch type with no merge key defined")
                current = [c for c in current if not (isinstance(c, dict) and _same_key(c, item, key))]
            elif directive == "replace":
                replace = True
            elif directive == "merge":
                raise PatchError("merging lists cannot yet be specified in the patch")
            else:
                raise PatchError(f"unknown patch type: {directive} in map: {item}")
        if replace:
            return copy.deepcopy(items)
        for item in items:
            for idx, existing in enumerate(current):
                if isinstance(existing, dict) and _same_key(existing, item, key):
                    current[idx] = _merge_map(existing, item)
                    break
            else:
                current.append(copy.deepcopy(item))
        return current
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    if field in MERGED_SCALAR_LISTS:
        return current + [v for v in patch if v not in current]
    return copy.deepcopy(patch)


def _same_key(a: dict[str, Any], b: dict[str, Any], key: str) -> bool:
    return key in b and a.get(key) == b.get(key)


def _apply_order(field: str, items: list[Any], order: list[Any]) -> list[Any]:
    key = MERGE_KEYS.get(field)

    def ident(item: Any) -> Any:
        if key is not None and isinstance(item, dict):
            return item.get(key)
        if isinstance(item, dict):
            return None
        return item

    wanted = [ident(o) if isinstance(o, dict) else o for o in order]
    ranked = [i for w in wanted for i in items if ident(i) == w and w is not None]
    rest = [i for i in items if i not in ranked]
    return ranked + rest

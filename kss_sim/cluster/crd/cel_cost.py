"""The estimated cost of a CRD's CEL rules: kube-apiserver refuses a CRD whose rule may cost more than
``StaticEstimatedCostLimit`` (10,000,000) per call, from cel-go's cost estimator over the rule's checked AST and
the sizes the schema allows (``maxItems``, ``maxProperties``, ``maxLength``; without them, as many as a 3 MiB
request could hold).

cel-expr-python has no cost estimator, so kss computes a lower bound of cel-go's estimate and refuses only when
that bound is over 100 times the limit: there kube's own estimate is over it too, and kube words the refusal with
no number ("by factor of more than 100x"), so kss's 422 is kube's word for word and never refuses a CRD kube
accepts. The bound counts what cel-go's estimator counts at least: each iteration of a comprehension (the macros
``all``, ``exists``, ``exists_one``, ``map``, ``filter``) costs 1 or more, times its range's largest size; the
string traversals (``contains``, ``startsWith``, ``endsWith``, ``matches``) a tenth of their string's largest
length. That catches the rules upstream's message is about (a comprehension inside a comprehension over unbounded
lists or maps, a string search over every item of an unbounded list); rules whose estimate lies between the limit
and 100 times it are accepted (kube refuses them, naming the factor).

The checked AST comes from cel-expr-python's serialized ``cel.expr.CheckedExpr`` (an ``Any``), read field by field
on the protobuf wire format (``cel.expr.Expr``'s field numbers from cel-spec's ``syntax.proto``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

STATIC_ESTIMATED_COST_LIMIT = 10_000_000
_REFUSED_OVER = 100 * STATIC_ESTIMATED_COST_LIMIT
MESSAGE = (
    "estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, "
    "maxProperties, and maxLength where arrays, maps, and strings are declared)"
)
_MAX_REQUEST_BYTES = 3 * 1024 * 1024
# Halved from kube's own estimates of what a request could hold: a bound must stay below kube's.
_UNBOUNDED_STRING = (_MAX_REQUEST_BYTES - 2) // 2
_TRAVERSALS = frozenset({"contains", "startsWith", "endsWith", "matches"})
_INDEX = "_[_]"


@dataclass
class _Expr:
    """The part of a ``cel.expr.Expr`` the bound needs."""

    kind: str  # ident, select, call, comprehension, other
    name: str = ""  # an ident's name, a select's field, a call's function, a comprehension's iteration variable
    children: list[_Expr] = field(default_factory=list)  # select: [operand]; call: [target?, *args]
    has_target: bool = False
    iter_range: _Expr | None = None
    once: list[_Expr] = field(default_factory=list)  # a comprehension's accumulator init and result
    each: list[_Expr] = field(default_factory=list)  # its loop condition and step, run per iteration


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """A message's fields on the wire: (number, varint value or length-delimited bytes)."""
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, at = _varint(data, at)
            yield number, value
        elif wire == 2:
            size, at = _varint(data, at)
            yield number, data[at : at + size]
            at += size
        elif wire in (1, 5):
            at += 8 if wire == 1 else 4
        else:
            raise ValueError(f"wire type {wire}")


def _text(data: bytes) -> str:
    return next((bytes(v).decode() for n, v in _fields(data) if n == 1 and isinstance(v, bytes)), "")


def _expr(data: bytes) -> _Expr:
    for number, value in _fields(data):
        if not isinstance(value, bytes):
            continue
        if number == 4:  # ident_expr {name = 1}
            return _Expr("ident", _text(value))
        if number == 5:  # select_expr {operand = 1, field = 2}
            parts = dict(_fields(value))
            operand = parts.get(1)
            name = parts.get(2)
            children = [_expr(operand)] if isinstance(operand, bytes) else []
            return _Expr("select", bytes(name).decode() if isinstance(name, bytes) else "", children)
        if number == 6:  # call_expr {target = 1, function = 2, args = 3}
            call = _Expr("call")
            for part, item in _fields(value):
                if part == 1 and isinstance(item, bytes):
                    call.children.insert(0, _expr(item))
                    call.has_target = True
                elif part == 2 and isinstance(item, bytes):
                    call.name = item.decode()
                elif part == 3 and isinstance(item, bytes):
                    call.children.append(_expr(item))
            return call
        if number == 9:  # comprehension_expr {iter_var = 1, iter_range = 2, accu_init 4 ... result 7}
            loop = _Expr("comprehension")
            for part, item in _fields(value):
                if not isinstance(item, bytes):
                    continue
                if part == 1:
                    loop.name = item.decode()
                elif part == 2:
                    loop.iter_range = _expr(item)
                elif part in (4, 7):
                    loop.once.append(_expr(item))
                elif part in (5, 6):
                    loop.each.append(_expr(item))
            return loop
        if number in (7, 8):  # list and struct literals: their elements
            return _Expr("other", children=[_expr(v) for _, v in _deep_exprs(value)])
    return _Expr("other")


def _deep_exprs(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The Expr-typed fields of a list or struct literal (list elements = 1; struct entries' value = 4)."""
    for number, value in _fields(data):
        if not isinstance(value, bytes):
            continue
        if number == 1:
            yield number, value
        elif number == 3:  # struct_expr.entries: {map_key = 3, value = 4}
            for part, item in _fields(value):
                if part == 4 and isinstance(item, bytes):
                    yield part, item


def checked_root(serialized: bytes) -> _Expr:
    """The rule's AST from cel-expr-python's serialized ``Any`` of a ``CheckedExpr`` (expr = 4)."""
    inner = next((v for n, v in _fields(serialized) if n == 2 and isinstance(v, bytes)), b"")
    expr = next((v for n, v in _fields(inner) if n == 4 and isinstance(v, bytes)), b"")
    return _expr(expr)


def _min_json_size(schema: Mapping[str, Any] | None) -> int:
    kind = (schema or {}).get("type")
    return {"boolean": 4, "integer": 1, "number": 1}.get(str(kind), 2)


def _cardinality(schema: Mapping[str, Any] | None) -> int:
    """The least of cel-go's largest sizes for a list or map of ``schema`` (1 when not known to be one)."""
    if not schema:
        return 1
    if schema.get("type") == "array":
        if "maxItems" in schema:
            return int(schema["maxItems"])
        items = schema.get("items") if isinstance(schema.get("items"), Mapping) else None
        return (_MAX_REQUEST_BYTES - 2) // (_min_json_size(items) + 1) // 2
    extra = schema.get("additionalProperties")
    if schema.get("type") == "object" and isinstance(extra, Mapping):
        if "maxProperties" in schema:
            return int(schema["maxProperties"])
        return (_MAX_REQUEST_BYTES - 2) // (_min_json_size(extra) + 8) // 2
    return 1


def _string_length(schema: Mapping[str, Any] | None) -> int:
    if not schema or schema.get("type") != "string" or schema.get("x-kubernetes-int-or-string"):
        return 0
    return int(schema["maxLength"]) if "maxLength" in schema else _UNBOUNDED_STRING


def _element(schema: Mapping[str, Any] | None) -> Mapping[str, Any] | None:
    """What iterating or indexing ``schema`` yields: a list's items, a map's values (a map's keys are strings)."""
    if not schema:
        return None
    items, extra = schema.get("items"), schema.get("additionalProperties")
    if schema.get("type") == "array" and isinstance(items, Mapping):
        return items
    return extra if isinstance(extra, Mapping) else None


class _Bound:
    def __init__(self, self_schema: Mapping[str, Any]) -> None:
        self.scopes: dict[str, Mapping[str, Any] | None] = {"self": self_schema, "oldSelf": self_schema}

    def schema_of(self, expr: _Expr) -> Mapping[str, Any] | None:
        if expr.kind == "ident":
            return self.scopes.get(expr.name)
        if expr.kind == "select" and expr.children:
            parent = self.schema_of(expr.children[0])
            child = ((parent or {}).get("properties") or {}).get(expr.name)
            if isinstance(child, Mapping):
                return child
            extra = (parent or {}).get("additionalProperties")
            return extra if isinstance(extra, Mapping) else None
        if expr.kind == "call" and expr.name == _INDEX and expr.children:
            return _element(self.schema_of(expr.children[0]))
        return None

    def cost(self, expr: _Expr) -> int:
        if expr.kind == "comprehension":
            range_schema = self.schema_of(expr.iter_range) if expr.iter_range is not None else None
            size = _cardinality(range_schema)
            is_map = bool(range_schema) and range_schema.get("type") != "array"  # type: ignore[union-attr]
            saved = self.scopes.get(expr.name)
            self.scopes[expr.name] = {"type": "string"} if is_map else _element(range_schema)
            per_iteration = max(1, sum(self.cost(part) for part in expr.each))
            once = sum(self.cost(part) for part in expr.once)
            if saved is None:
                self.scopes.pop(expr.name, None)
            else:
                self.scopes[expr.name] = saved
            outside = self.cost(expr.iter_range) if expr.iter_range is not None else 0
            return outside + once + size * per_iteration
        own = 0
        if expr.kind == "call" and expr.name in _TRAVERSALS and expr.has_target and expr.children:
            own = _string_length(self.schema_of(expr.children[0])) // 10
        return own + sum(self.cost(child) for child in expr.children)


def refused(serialized: bytes, self_schema: Mapping[str, Any]) -> bool:
    """Whether kube-apiserver surely refuses the rule (``serialized``: its checked AST) at a node of
    ``self_schema`` for its estimated cost (see the module's text)."""
    try:
        root = checked_root(serialized)
    except (ValueError, IndexError, UnicodeDecodeError):
        return False  # an AST kss cannot read: nothing is known, nothing refused
    return _Bound(self_schema).cost(root) > _REFUSED_OVER

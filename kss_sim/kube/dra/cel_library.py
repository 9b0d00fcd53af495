"""The Kubernetes CEL libraries DRA selectors use (k8s.io/apiserver/pkg/cel/library: quantity, semver, regex),
declared for cel-expr-python (Google's CEL C++ runtime).

Quantities and semantic versions travel through CEL as small protobuf messages named as upstream names its
opaque types (``kubernetes.Quantity``, ``kubernetes.Semver``), so type errors read as cel-go's do. Their fields hold
a canonical form (a reduced fraction; major/minor/patch/prerelease), so CEL's ``==`` compares values as
``Quantity.Equal`` and ``Version.EQ`` do (``quantity("1Ki") == quantity("1024")``, build metadata ignored).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import Any

from cel_expr_python import cel as celx
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, struct_pb2

from kss_sim.kube.dra.semver import PreReleasePart, Semver, SemverError, parse_semver, parse_semver_normalized
from kss_sim.kube.quantity import QuantityError, parse_quantity

QUANTITY_TYPE_NAME = "kubernetes.Quantity"
SEMVER_TYPE_NAME = "kubernetes.Semver"
DEVICE_TYPE_NAME = "kubernetes.DRADevice"
# The consumable-capacity variant of the device type (one more field); messages name it as upstream does.
DEVICE_TYPE_NAME_CONSUMABLE = "kubernetes.consumablecapacity.DRADevice"

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_GO_QUANTITY_RE = re.compile(r"^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$")
_QUANTITY_FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"

_F = descriptor_pb2.FieldDescriptorProto


def _build_pool() -> Any:
    """One descriptor pool: google.protobuf.Struct plus our value types and the two `device` struct types.

    The device types exist only for the type checker: `attributes` and `capacity` are declared as
    map<string, Struct>, which CEL types as map(string, map(string, dyn)); values are passed as plain maps.
    """
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(struct_pb2.DESCRIPTOR.serialized_pb)
    file = descriptor_pb2.FileDescriptorProto(
        name="kss/dra_cel.proto", package="kubernetes", syntax="proto3", dependency=["google/protobuf/struct.proto"]
    )
    quantity = file.message_type.add(name="Quantity")
    quantity.field.add(name="value", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    semver = file.message_type.add(name="Semver")
    for number, name in enumerate(("major", "minor", "patch"), start=1):
        semver.field.add(name=name, number=number, type=_F.TYPE_UINT64, label=_F.LABEL_OPTIONAL)
    semver.field.add(name="pre", number=4, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    _add_device(file.message_type.add(name="DRADevice"), ".kubernetes.DRADevice", multi_alloc=False)
    pool.Add(file)
    consumable = descriptor_pb2.FileDescriptorProto(
        name="kss/dra_cel_consumable.proto",
        package="kubernetes.consumablecapacity",
        syntax="proto3",
        dependency=["google/protobuf/struct.proto"],
    )
    _add_device(
        consumable.message_type.add(name="DRADevice"), ".kubernetes.consumablecapacity.DRADevice", multi_alloc=True
    )
    pool.Add(consumable)
    return pool


def _add_device(message: Any, full_name: str, *, multi_alloc: bool) -> None:
    message.field.add(name="driver", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    for number, name in ((2, "attributes"), (3, "capacity")):
        entry_name = name.capitalize() + "Entry"
        entry = message.nested_type.add(name=entry_name)
        entry.options.map_entry = True
        entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
        entry.field.add(
            name="value", number=2, type=_F.TYPE_MESSAGE, type_name=".google.protobuf.Struct", label=_F.LABEL_OPTIONAL
        )
        message.field.add(
            name=name,
            number=number,
            type=_F.TYPE_MESSAGE,
            type_name=f"{full_name}.{entry_name}",
            label=_F.LABEL_REPEATED,
        )
    if multi_alloc:
        message.field.add(name="allowMultipleAllocations", number=4, type=_F.TYPE_BOOL, label=_F.LABEL_OPTIONAL)


POOL = _build_pool()
QuantityMessage: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName(QUANTITY_TYPE_NAME))
SemverMessage: Any = message_factory.GetMessageClass(POOL.FindMessageTypeByName(SEMVER_TYPE_NAME))
QUANTITY = celx.Type(QUANTITY_TYPE_NAME)
SEMVER = celx.Type(SEMVER_TYPE_NAME)


# --- quantities -------------------------------------------------------------------------------------------------


def parse_quantity_go(text: str) -> Fraction:
    """resource.ParseQuantity, with its error texts (ErrFormatWrong, ErrSuffix)."""
    try:
        return parse_quantity(text)
    except QuantityError:
        if _GO_QUANTITY_RE.match(text) is None:
            raise ValueError(_QUANTITY_FORMAT_ERROR) from None
        raise ValueError("unable to parse quantity's suffix") from None


def quantity_message(value: Fraction) -> Any:
    return QuantityMessage(value=str(value))


@lru_cache(maxsize=4096)
def _fraction(text: str) -> Fraction:
    return Fraction(text)


def _q(message: Any) -> Fraction:
    return _fraction(message.value)


def _cmp(a: Fraction, b: Fraction) -> int:
    return (a > b) - (a < b)


def _as_int64(value: Fraction) -> int | None:
    if value.denominator != 1 or not _INT64_MIN <= value.numerator <= _INT64_MAX:
        return None
    return value.numerator


def _quantity_as_integer(q: Any) -> int:
    result = _as_int64(_q(q))
    if result is None:
        raise ValueError("cannot convert value to integer")
    return result


def _is_quantity(text: str) -> bool:
    try:
        parse_quantity_go(text)
    except ValueError:
        return False
    return True


# --- semantic versions ------------------------------------------------------------------------------------------


def semver_message(version: Semver) -> Any:
    return SemverMessage(
        major=version.major, minor=version.minor, patch=version.patch, pre=".".join(p.text for p in version.pre)
    )


@lru_cache(maxsize=4096)
def _semver_from_fields(major: int, minor: int, patch: int, pre: str) -> Semver:
    parts = (
        tuple(PreReleasePart(int(p), p) if p.isdigit() else PreReleasePart(None, p) for p in pre.split("."))
        if pre
        else ()
    )
    return Semver(major, minor, patch, parts)


def _v(message: Any) -> Semver:
    return _semver_from_fields(message.major, message.minor, message.patch, message.pre)


def _semver(text: str, normalize: bool = False) -> Any:
    try:
        return semver_message(parse_semver_normalized(text) if normalize else parse_semver(text))
    except SemverError as exc:
        raise ValueError(str(exc)) from None


def _is_semver(text: str, normalize: bool = False) -> bool:
    try:
        _ = parse_semver_normalized(text) if normalize else parse_semver(text)
    except SemverError:
        return False
    return True


# --- regex (k8s.io/apiserver/pkg/cel/library/regex.go) ----------------------------------------------------------


@lru_cache(maxsize=256)
def _regex(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"error parsing regexp: {exc}") from None


def _find(text: str, pattern: str) -> str:
    match = _regex(pattern).search(text)
    return match.group(0) if match else ""


def _find_all(text: str, pattern: str, limit: int = -1) -> list[str]:
    found = [m.group(0) for m in _regex(pattern).finditer(text)]
    return found if limit < 0 else found[:limit]


def _declarations() -> dict[str, list[tuple[str, Any, list[Any], Callable[..., Any], bool]]]:
    """Each function's overloads: (overload id, result type, parameter types, implementation, member?)."""
    b, i, d, s = celx.Type.BOOL, celx.Type.INT, celx.Type.DOUBLE, celx.Type.STRING
    q, v, strings = QUANTITY, SEMVER, celx.Type.List(celx.Type.STRING)
    return {
        "quantity": [("string_to_quantity", q, [s], lambda t: quantity_message(parse_quantity_go(t)), False)],
        "isQuantity": [("is_quantity_string", b, [s], _is_quantity, False)],
        "sign": [("quantity_sign", i, [q], lambda a: _cmp(_q(a), Fraction(0)), False)],
        "asApproximateFloat": [("quantity_get_float", d, [q], lambda a: float(_q(a)), True)],
        "asInteger": [("quantity_get_int", i, [q], _quantity_as_integer, True)],
        "isInteger": [("quantity_is_integer", b, [q], lambda a: _as_int64(_q(a)) is not None, True)],
        "add": [
            ("quantity_add", q, [q, q], lambda a, o: quantity_message(_q(a) + _q(o)), True),
            ("quantity_add_int", q, [q, i], lambda a, o: quantity_message(_q(a) + o), True),
        ],
        "sub": [
            ("quantity_sub", q, [q, q], lambda a, o: quantity_message(_q(a) - _q(o)), True),
            ("quantity_sub_int", q, [q, i], lambda a, o: quantity_message(_q(a) - o), True),
        ],
        "semver": [
            ("string_to_semver", v, [s], _semver, False),
            ("string_bool_to_semver", v, [s, b], _semver, False),
        ],
        "isSemver": [
            ("is_semver_string", b, [s], _is_semver, False),
            ("is_semver_string_bool", b, [s, b], _is_semver, False),
        ],
        "major": [("semver_major", i, [v], lambda a: _v(a).major, True)],
        "minor": [("semver_minor", i, [v], lambda a: _v(a).minor, True)],
        "patch": [("semver_patch", i, [v], lambda a: _v(a).patch, True)],
        "isGreaterThan": [
            ("quantity_is_greater_than", b, [q, q], lambda a, o: _q(a) > _q(o), True),
            ("semver_is_greater_than", b, [v, v], lambda a, o: _v(a).compare(_v(o)) == 1, True),
        ],
        "isLessThan": [
            ("quantity_is_less_than", b, [q, q], lambda a, o: _q(a) < _q(o), True),
            ("semver_is_less_than", b, [v, v], lambda a, o: _v(a).compare(_v(o)) == -1, True),
        ],
        "compareTo": [
            ("quantity_compare_to", i, [q, q], lambda a, o: _cmp(_q(a), _q(o)), True),
            ("semver_compare_to", i, [v, v], lambda a, o: _v(a).compare(_v(o)), True),
        ],
        "find": [("string_find_string", s, [s, s], _find, True)],
        "findAll": [
            ("string_find_all_string", strings, [s, s], _find_all, True),
            ("string_find_all_string_int", strings, [s, s, i], _find_all, True),
        ],
    }


def checking_functions() -> list[Any]:
    """The typed declarations the type checker resolves calls against (never run)."""
    return [
        celx.FunctionDecl(
            name, [celx.Overload(oid, result, params, is_member=member) for oid, result, params, _, member in overloads]
        )
        for name, overloads in _declarations().items()
    ] + _ordering_functions()


# cel.CrossTypeNumericComparisons(true): the checker accepts int/uint/double mixed in an ordering (the runtime
# compares them already). A built-in function cannot gain overloads, so the checking environments leave the
# standard orderings out (ORDERING_EXCLUDED) and declare them whole here.
ORDERINGS = {"_<_": "less", "_<=_": "less_equals", "_>_": "greater", "_>=_": "greater_equals"}
_ORDERED = ("bool", "int64", "uint64", "double", "string", "bytes", "timestamp", "duration")
_MIXED = (
    ("int64", "double"),
    ("double", "int64"),
    ("int64", "uint64"),
    ("uint64", "int64"),
    ("double", "uint64"),
    ("uint64", "double"),
)


def _ordering_functions() -> list[Any]:
    types = {
        "bool": celx.Type.BOOL,
        "int64": celx.Type.INT,
        "uint64": celx.Type.UINT,
        "double": celx.Type.DOUBLE,
        "string": celx.Type.STRING,
        "bytes": celx.Type.BYTES,
        "timestamp": celx.Type.TIMESTAMP,
        "duration": celx.Type.DURATION,
    }
    declarations = []
    for function, prefix in ORDERINGS.items():
        overloads = [celx.Overload(f"{prefix}_{t}", celx.Type.BOOL, [types[t], types[t]]) for t in _ORDERED]
        overloads += [celx.Overload(f"{prefix}_{a}_{b}", celx.Type.BOOL, [types[a], types[b]]) for a, b in _MIXED]
        declarations.append(celx.FunctionDecl(function, overloads))
    return declarations


ORDERING_EXCLUDED = "stdlib:\n  exclude_functions:\n" + "".join(f'    - name: "{op}"\n' for op in ORDERINGS)


def runtime_functions() -> list[Any]:
    """The implementations. The C++ runtime tells overloads apart by argument kinds only, and both value types are
    messages (one kind), so overloads differing only in them share one entry that picks by the receiver's type."""
    functions = []
    for name, overloads in _declarations().items():
        shapes: dict[tuple[bool, tuple[str, ...]], list[tuple[str, Any, list[Any], Callable[..., Any]]]] = {}
        for oid, result, params, impl, member in overloads:
            shapes.setdefault((member, tuple(_kind(p) for p in params)), []).append((oid, result, params, impl))
        runtime_overloads = []
        for (member, _), candidates in shapes.items():
            oid, result, params, impl = candidates[0]
            if len(candidates) > 1:
                impl = _dispatch([(c[2], c[3]) for c in candidates])
            runtime_overloads.append(celx.Overload(oid, result, params, is_member=member, impl=impl))
        functions.append(celx.FunctionDecl(name, runtime_overloads))
    return functions


def _kind(cel_type: Any) -> str:
    return "message" if cel_type in (QUANTITY, SEMVER) else str(cel_type.name())


def _dispatch(candidates: list[tuple[list[Any], Callable[..., Any]]]) -> Callable[..., Any]:
    by_type = {_python_type(params[0]): impl for params, impl in candidates}

    def dispatch(*args: Any) -> Any:
        impl = by_type.get(type(args[0]))
        if impl is None:
            raise ValueError("no such overload")
        return impl(*args)

    return dispatch


def _python_type(cel_type: Any) -> type:
    if cel_type == QUANTITY:
        return QuantityMessage  # type: ignore[no-any-return]
    if cel_type == SEMVER:
        return SemverMessage  # type: ignore[no-any-return]
    return str

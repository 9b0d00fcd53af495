"""DRA device selectors in CEL, compiled and evaluated as k8s.io/dynamic-resource-allocation/cel/compile.go does.

The CEL implementation is cel-expr-python (Google's CEL C++ runtime and type checker). Each expression is
type-checked against a `device` of upstream's shape (driver, attributes, capacity and, with DRAConsumableCapacity,
allowMultipleAllocations), must yield bool (or a dynamic value, upstream's "unknown type"), and is then run with the
device as plain maps. Error texts are turned into cel-go's wording where the two differ.

The environment is that of the apiserver's base CEL environment at v1.35's compatibility version (1.34) plus
ext.Bindings: strings v2, sets, lists, two-variable comprehensions, optional types, Kubernetes' quantity, semver and
regex libraries. Not there (not available in this runtime, or of no use on a device): Kubernetes' URL, IP, CIDR,
format, authz and list-helper libraries, homogeneous-aggregate-literal checks, cost estimation and the runtime cost
limit (CELSelectorExpressionMaxCost).
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from cel_expr_python import cel as celx

from kss_sim.kube.cel_environment import EXTENSIONS
from kss_sim.kube.dra.cel_library import (
    DEVICE_TYPE_NAME,
    DEVICE_TYPE_NAME_CONSUMABLE,
    ORDERING_EXCLUDED,
    POOL,
    QUANTITY_TYPE_NAME,
    checking_functions,
    quantity_message,
    runtime_functions,
    semver_message,
)
from kss_sim.kube.dra.semver import SemverError, parse_semver
from kss_sim.kube.quantity import QuantityError, parse_quantity

# resourceapi.CELSelectorExpressionMaxCost and CELSelectorExpressionMaxLength.
SELECTOR_MAX_COST = 1_000_000
SELECTOR_MAX_LENGTH = 10 * 1024
# The DynamicResources plugin's cel.NewCache(10, ...).
SELECTOR_CACHE_SIZE = 10

AttributeValue = Mapping[str, Any]  # one ResourceSlice attribute, e.g. {"string": "a100"} or {"version": "1.2.3"}


class CelCompileError(ValueError):
    """An expression that does not compile; str() is upstream's CompilationResult.Error.Detail."""


class CelEvaluationError(RuntimeError):
    """An expression that failed on a device; str() is the error DeviceMatches returns upstream."""


@dataclass(frozen=True)
class DeviceView:
    """What a selector sees of one device: names are fully qualified (``domain/name``) or, as upstream accepts,
    bare (then in the driver's domain). Treat it as immutable: it keeps its CEL input and verdicts once asked."""

    driver: str
    attributes: Mapping[str, AttributeValue]
    capacity: Mapping[str, Mapping[str, Any]]
    allow_multiple_allocations: bool = False
    # The CEL input built from this device and the verdicts of the selectors run on it.
    _input: dict[str, Any] = field(default_factory=dict, compare=False, repr=False)


def device_view(driver: str, device: Mapping[str, Any]) -> DeviceView:
    """A DeviceView from a ResourceSlice device's JSON (``spec.devices[i]``), names qualified with the driver."""
    return DeviceView(
        driver=driver,
        attributes={_qualified(name, driver): value for name, value in (device.get("attributes") or {}).items()},
        capacity={_qualified(name, driver): value for name, value in (device.get("capacity") or {}).items()},
        allow_multiple_allocations=bool(device.get("allowMultipleAllocations") or False),
    )


def _qualified(name: str, driver: str) -> str:
    return name if "/" in name else f"{driver}/{name}"


def _split(name: str, driver: str) -> tuple[str, str]:
    domain, sep, ident = name.partition("/")
    return (domain, ident) if sep else (driver, name)


# --- the environments ---------------------------------------------------------------------------------------------


def _env(device_type: Any, functions: list[Any], config: str = "") -> Any:
    return celx.NewEnv(
        POOL,
        config=celx.NewEnvConfigFromYaml(EXTENSIONS + config),
        variables={"device": device_type},
        functions=functions,
    )


class _Environments:
    """Built once, on first use: the checking environments (one per consumable-capacity gate) and the runtime one,
    where `device` is a plain map so that it can be passed as Python dicts."""

    _lock = threading.Lock()
    _built: _Environments | None = None

    def __init__(self) -> None:
        self.check = _env(celx.Type(DEVICE_TYPE_NAME), checking_functions(), ORDERING_EXCLUDED)
        self.check_consumable = _env(celx.Type(DEVICE_TYPE_NAME_CONSUMABLE), checking_functions(), ORDERING_EXCLUDED)
        self.run = _env(celx.Type.Map(celx.Type.STRING, celx.Type.DYN), runtime_functions())

    @classmethod
    def get(cls) -> _Environments:
        with cls._lock:
            if cls._built is None:
                cls._built = _Environments()
            return cls._built


# --- messages ------------------------------------------------------------------------------------------------------

_STATUS_PREFIX = re.compile(r"^[A-Z_]+: ")
_STATUS_SUFFIX = re.compile(r" \[[A-Z_]+\]$")
_UNDEFINED_FIELD = re.compile(r"undefined field '([^']*)' not found in struct '[^']*'")
_SELECT_ON = re.compile(r"expression of type '([^']*)' cannot be the operand of a select operation")
_KEY_NOT_FOUND = re.compile(r'^Key not found in map : "(.*)"$', re.S)
_NO_OVERLOAD = re.compile(r"^No matching overloads found : (.*)$", re.S)


def _status_text(error: BaseException | str) -> str:
    """The message of an absl::Status as the runtime reports it, without its code."""
    text = str(error)
    text = _STATUS_SUFFIX.sub("", text)
    return _STATUS_PREFIX.sub("", text, count=1)


def _compile_issues(error: BaseException, expression: str = "", checker: Any = None) -> str:
    text = _status_text(error)
    if checker is not None:
        text = _UNDECLARED_AT.sub(lambda m: _member_call_of_global(m, expression, checker), text)
    text = _UNDEFINED_FIELD.sub(r"undefined field '\1'", text)
    text = _SELECT_ON.sub(r"type '\1' does not support field selection", text)
    return text.replace(DEVICE_TYPE_NAME_CONSUMABLE, DEVICE_TYPE_NAME)


# Functions that exist only as global overloads (upstream's quantity library declares sign(q) so); called as a
# method, cel-go names the overload it could not find where the C++ checker says the name is undeclared.
_GLOBAL_ONLY_FUNCTIONS = frozenset(
    {"sign", "quantity", "isQuantity", "semver", "isSemver", "int", "uint", "double", "string", "bytes", "bool", "dyn"}
)
_UNDECLARED_AT = re.compile(r"<input>:(\d+):(\d+): undeclared reference to '(\w+)' \(in container ''\)")
# A capacity value read by name (device.capacity["domain"].name): a Quantity in upstream's declared device type,
# a dynamic Struct value in ours.
_CAPACITY_READ = re.compile(r'^device\.capacity(\[\s*"[^"]*"\s*\]|\.\w+)(\.\w+|\[\s*"[^"]*"\s*\])$')


def _member_call_of_global(match: re.Match[str], expression: str, checker: Any) -> str:
    """cel-go's "found no matching overload" for `receiver.f(args)` where f has global overloads only."""
    line, column, name = int(match.group(1)), int(match.group(2)), match.group(3)
    lines = expression.split("\n")
    if name not in _GLOBAL_ONLY_FUNCTIONS or line > len(lines):
        return match.group(0)
    text, paren = lines[line - 1], column - 1
    head = text[:paren].rstrip()
    if paren >= len(text) or text[paren] != "(" or not head.endswith(name):
        return match.group(0)
    head = head[: -len(name)].rstrip()
    if not head.endswith("."):
        return match.group(0)
    receiver = _trailing_operand(head[:-1].rstrip())
    close = _closing_paren(text, paren)
    if not receiver or close is None:
        return match.group(0)
    types = [_checked_type(receiver, checker)]
    types += [_checked_type(arg, checker) for arg in _top_level_args(text[paren + 1 : close])]
    if None in types:
        return match.group(0)
    signature = f"{types[0]}.({', '.join(t for t in types[1:] if t)})"
    where = match.group(0).split(" undeclared", 1)[0]
    return f"{where} found no matching overload for '{name}' applied to '{signature}'"


def _checked_type(operand: str, checker: Any) -> str | None:
    if _CAPACITY_READ.match(operand.strip()):
        return QUANTITY_TYPE_NAME
    try:
        return _cel_go_type(checker.compile(operand).return_type().name())
    except RuntimeError:
        return None


def _trailing_operand(text: str) -> str:
    """The member-call receiver ending `text`: identifiers, selections, indexes, calls and parenthesized groups."""
    i, depth = len(text), 0
    while i > 0:
        char = text[i - 1]
        if depth == 0 and char in "\"'":
            start = text.rfind(char, 0, i - 1)
            if start < 0:
                return ""
            i = start
            continue
        if char in ")]}":
            depth += 1
        elif char in "([{":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and not (char.isalnum() or char in "_."):
            break
        i -= 1
    return text[i:].strip()


def _closing_paren(text: str, start: int) -> int | None:
    depth, quote = 0, ""
    for i in range(start, len(text)):
        char = text[i]
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return None


def _top_level_args(text: str) -> list[str]:
    args, depth, quote, start = [], 0, "", 0
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "\"'":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth -= 1
        elif char == "," and depth == 0:
            args.append(text[start:i])
            start = i
    args.append(text[start:])
    return [a.strip().lstrip(",").strip() for a in args if a.strip().lstrip(",").strip()]


def _runtime_error(text: str) -> str:
    text = _status_text(text)
    if (match := _KEY_NOT_FOUND.match(text)) is not None:
        return f"no such key: {match.group(1)}"
    if (match := _NO_OVERLOAD.match(text)) is not None:
        return f"no such overload: {match.group(1)}"
    if text == "divide by zero":
        return "division by zero"
    if text == "modulus by zero":
        return "modulus by zero"
    return text


_TYPE_NAMES = {
    "BOOL": "bool",
    "INT": "int",
    "UINT": "uint",
    "DOUBLE": "double",
    "STRING": "string",
    "BYTES": "bytes",
    "NULL": "null_type",
    "DYN": "dyn",
    "TIMESTAMP": "google.protobuf.Timestamp",
    "DURATION": "google.protobuf.Duration",
    "ERROR": "*error*",
}


def _cel_go_type(name: str) -> str:
    """cel-go's rendering of a checked type (``list(int)``, ``map(string, int)``) from the C++ one."""
    if name in _TYPE_NAMES:
        return _TYPE_NAMES[name]
    for outer, inner in (("LIST<", "list"), ("MAP<", "map"), ("TYPE<", "type"), ("OPTIONAL_TYPE<", "optional_type")):
        if name.startswith(outer) and name.endswith(">"):
            params = _split_params(name[len(outer) : -1])
            return f"{inner}({', '.join(_cel_go_type(p) for p in params)})"
    return name


def _split_params(text: str) -> list[str]:
    params, depth, start = [], 0, 0
    for i, char in enumerate(text):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "," and depth == 0:
            params.append(text[start:i].strip())
            start = i + 1
    params.append(text[start:].strip())
    return params


# Runtime values that cannot become bool, named as cel-go's TypeName() and ConvertToNative(bool) errors name them.
_NOT_BOOL = {
    "INT": ("int", "unsupported type conversion from 'int' to bool"),
    "UINT": ("uint", "unsupported type conversion from 'uint' to bool"),
    "DOUBLE": ("double", "type conversion error from Double to 'bool'"),
    "STRING": ("string", "unsupported native conversion from string to 'bool'"),
    "BYTES": ("bytes", "type conversion error from Bytes to 'bool'"),
    "NULL": ("null_type", "type conversion error from 'null_type' to 'bool'"),
}


def _not_bool(value: Any) -> str:
    kind = value.type().name()
    if kind in _NOT_BOOL:
        type_name, detail = _NOT_BOOL[kind]
    elif kind.startswith("LIST"):
        type_name, detail = "list", "type conversion error from list to 'bool'"
    elif kind.startswith("MAP"):
        type_name, detail = "map", "type conversion error from map to 'bool'"
    elif kind == "kubernetes.Quantity":
        type_name, detail = kind, "type conversion error from 'Quantity' to 'bool'"
    elif kind == "kubernetes.Semver":
        type_name, detail = kind, "type conversion error from 'Semver' to 'bool'"
    else:
        type_name, detail = _cel_go_type(kind), f"type conversion error from '{_cel_go_type(kind)}' to 'bool'"
    return f"CEL result of type {type_name} could not be converted to bool: {detail}"


# --- compile and evaluate -------------------------------------------------------------------------------------------


class CompiledSelector:
    """A compiled selector: `matches` runs it on a device."""

    __slots__ = ("_program", "expression", "output_type")

    def __init__(self, expression: str, program: Any, output_type: str) -> None:
        self.expression = expression
        self.output_type = output_type
        self._program = program

    def matches(self, device: DeviceView) -> bool:
        """DeviceMatches: True or False, or CelEvaluationError with upstream's message.

        A device does not change and a selector has no other input, so each device keeps its verdicts: the
        scheduler asks the same question for every pod and cycle, and a call into CEL costs microseconds."""
        verdicts: dict[str, bool | str] = device._input.setdefault("verdicts", {})
        verdict = verdicts.get(self.expression)
        if verdict is None:
            try:
                verdict = self._evaluate(device)
            except CelEvaluationError as exc:
                verdict = str(exc)
            verdicts[self.expression] = verdict
        if type(verdict) is bool:
            return verdict
        raise CelEvaluationError(verdict)

    def _evaluate(self, device: DeviceView) -> bool:
        activation = device._input.get("activation")
        if activation is None:
            device._input["data"] = _device_input(device)
            activation = device._input["activation"] = _Environments.get().run.Activation(device._input["data"])
        result = self._program.eval(activation)
        value = result.value()
        if type(value) is bool:  # the common case first: only a CEL bool comes back as a Python bool
            return value
        return self._slow_result(device, result)

    def _slow_result(self, device: DeviceView, result: Any) -> bool:
        """Errors and non-bool results; an unknown domain is retried (see below)."""
        added: set[str] = set()
        original = device._input["data"]["device"]
        while result.type().name() == "ERROR":
            message = _runtime_error(result.value())
            # Upstream's outer attribute and capacity maps answer any unknown domain with an empty map; a plain
            # map cannot, so an unknown domain is added as empty and the expression run again.
            missing = message.removeprefix("no such key: ") if message.startswith("no such key: ") else None
            if missing is None or missing in original["attributes"] or missing in original["capacity"]:
                raise CelEvaluationError(message)
            if missing in added or len(added) >= 16:
                raise CelEvaluationError(message)
            added.add(missing)
            empty: dict[str, dict[str, Any]] = {key: {} for key in added}
            device_map = {
                **original,
                "attributes": {**original["attributes"], **empty},
                "capacity": {**original["capacity"], **empty},
            }
            result = self._program.eval(data={"device": device_map})
        if result.type().name() != "BOOL":
            raise CelEvaluationError(_not_bool(result))
        return bool(result.value())

    def __repr__(self) -> str:
        return f"CompiledSelector({self.expression!r})"


def _attribute_value(value: AttributeValue) -> Any:
    if "int" in value and value["int"] is not None:
        return int(value["int"])
    if "bool" in value and value["bool"] is not None:
        return bool(value["bool"])
    if "string" in value and value["string"] is not None:
        return str(value["string"])
    if "version" in value and value["version"] is not None:
        try:
            return semver_message(parse_semver(str(value["version"])))
        except SemverError as exc:
            raise ValueError(f"parse semantic version: {exc}") from None
    raise ValueError("unsupported attribute value")


def _device_input(device: DeviceView) -> dict[str, Any]:
    attributes: dict[str, dict[str, Any]] = {}
    for name, value in device.attributes.items():
        domain, ident = _split(name, device.driver)
        try:
            attributes.setdefault(domain, {})[ident] = _attribute_value(value)
        except ValueError as exc:
            raise CelEvaluationError(f"attribute {name}: {exc}") from None
    capacity: dict[str, dict[str, Any]] = {}
    for name, cap in device.capacity.items():
        domain, ident = _split(name, device.driver)
        try:
            capacity.setdefault(domain, {})[ident] = quantity_message(parse_quantity(str(cap.get("value", "0"))))
        except QuantityError as exc:
            raise CelEvaluationError(f"capacity {name}: {exc}") from None
    return {
        "device": {
            "driver": device.driver,
            "allowMultipleAllocations": device.allow_multiple_allocations,
            "attributes": attributes,
            "capacity": capacity,
        }
    }


def _compile(expression: str, consumable_capacity: bool) -> CompiledSelector:
    envs = _Environments.get()
    checker = envs.check_consumable if consumable_capacity else envs.check
    try:
        checked = checker.compile(expression)
    except RuntimeError as exc:
        raise CelCompileError("compilation failed: " + _compile_issues(exc, expression, checker)) from None
    output = checked.return_type().name()
    if output not in ("BOOL", "DYN"):
        raise CelCompileError(f"must evaluate to bool or the unknown type, not {_cel_go_type(output)}")
    program = envs.run.deserialize(checked.serialize())
    return CompiledSelector(expression, program, _cel_go_type(output))


class SelectorCache:
    """cel.Cache: a thread-safe LRU of compiled selectors; failures are not kept."""

    def __init__(self, max_entries: int = SELECTOR_CACHE_SIZE, *, consumable_capacity: bool = False) -> None:
        self.max_entries = max_entries
        self.consumable_capacity = consumable_capacity
        self._entries: OrderedDict[str, CompiledSelector] = OrderedDict()
        self._lock = threading.Lock()

    def get_or_compile(self, expression: str) -> CompiledSelector:
        with self._lock:
            found = self._entries.get(expression)
            if found is not None:
                self._entries.move_to_end(expression)
                return found
        compiled = _compile(expression, self.consumable_capacity)
        with self._lock:
            self._entries[expression] = compiled
            self._entries.move_to_end(expression)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
        return compiled


# compile_selector's own caches, one per gate setting: larger than a plugin's, since the size only changes speed.
_SHARED = {gate: SelectorCache(1024, consumable_capacity=gate) for gate in (False, True)}


def compile_selector(expression: str, *, consumable_capacity: bool = False) -> CompiledSelector:
    """Compile (or take from the cache) a selector; CelCompileError with upstream's detail when it does not."""
    return _SHARED[consumable_capacity].get_or_compile(expression)


@dataclass(frozen=True)
class SelectorProblem:
    """A validation problem of a CEL selector, at `<selector path>.cel.expression` upstream."""

    reason: str  # "Invalid" | "TooLong" (field.ErrorType names)
    detail: str


def selector_problems(expression: str, *, consumable_capacity: bool = False) -> list[SelectorProblem]:
    """validateCELSelector's checks: the length limit, then compilation (cost estimation is not done)."""
    if len(expression) > SELECTOR_MAX_LENGTH:
        return [SelectorProblem("TooLong", f"may not be more than {SELECTOR_MAX_LENGTH} bytes")]
    try:
        compile_selector(expression, consumable_capacity=consumable_capacity)
    except CelCompileError as exc:
        return [SelectorProblem("Invalid", str(exc))]
    return []


def validation_errors(expression: str, *, consumable_capacity: bool = False) -> list[str]:
    """The details apiserver validation reports for a selector expression (empty when it is valid)."""
    return [p.detail for p in selector_problems(expression, consumable_capacity=consumable_capacity)]

"""YAML read as Kubernetes reads it: sigs.k8s.io/yaml's ``YAMLToJSON`` (go-yaml v2 into ``interface{}``, then JSON).

kubectl and kube-apiserver turn YAML into JSON with sigs.k8s.io/yaml, whose go-yaml v2 resolves plain scalars by
rules of its own, neither PyYAML's YAML 1.1 nor YAML 1.2:

- booleans: ``y Y yes Yes YES true True TRUE on On ON`` and their ``n``/``no``/``false``/``off`` forms (PyYAML has
  no ``y``/``n``);
- integers: ``strconv.ParseInt(s, 0, 64)`` with ``_`` removed, then ``ParseUint``: ``0x1F``, ``0o17``, ``017``
  (octal), ``0b101``, signs; no sexagesimal ``1:30`` (PyYAML: 90);
- floats: ``^[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?$`` when ``ParseFloat`` takes it: ``1e30`` and
  ``08`` are floats (PyYAML: strings; it wants a dot and a signed exponent), ``1e1000`` (beyond float64) a string;
  ``.inf``/``.nan`` are floats, which JSON cannot hold: the conversion fails;
- timestamps stay strings (go-yaml keeps a timestamp's text in an ``interface{}``; PyYAML makes a datetime);
- map keys become strings (``1`` -> ``"1"``, ``true`` -> ``"true"``, a float as ``FormatFloat(f, 'g', -1, 32)``);
  a null key fails;
- ``!!binary`` is the decoded bytes as a string.

``load``/``load_all`` are what kss uses wherever it reads YAML (request bodies, scenarios, workloads, snapshots,
scheduler configurations, the UI editor), so a file means what ``kubectl apply -f`` would send.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
import struct
from collections.abc import Iterator
from typing import IO, Any

import yaml
from yaml.nodes import MappingNode, ScalarNode

_TAG = "tag:yaml.org,2002:"
_STR, _BOOL, _INT, _FLOAT, _NULL, _MERGE = (_TAG + t for t in ("str", "bool", "int", "float", "null", "merge"))
_TRUE = frozenset({"y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"})
_FALSE = frozenset({"n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"})
_NULLS = frozenset({"", "~", "null", "Null", "NULL"})
_SPECIAL_FLOATS = {
    **dict.fromkeys((".nan", ".NaN", ".NAN"), math.nan),
    **dict.fromkeys((".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF"), math.inf),
    **dict.fromkeys(("-.inf", "-.Inf", "-.INF"), -math.inf),
}
_YAML_STYLE_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?")
_INT_DIGITS = {16: "0123456789abcdefABCDEF", 8: "01234567", 2: "01", 10: "0123456789"}
_INT64 = (-(2**63), 2**63 - 1)
_UINT64_MAX = 2**64 - 1


class YAMLToJSONError(yaml.YAMLError):
    """What sigs.k8s.io/yaml refuses after go-yaml read the document (a null key, NaN or an infinity)."""


def _go_int(text: str) -> int | None:
    """``strconv.ParseInt(text, 0, 64)``, else ``ParseUint(text, 0, 64)``; None when neither takes it."""
    sign, body = (text[0], text[1:]) if text[:1] in ("+", "-") else ("", text)
    base = 10
    lowered = body[:2].lower()
    if lowered in ("0x", "0o", "0b"):
        base, body = {"0x": 16, "0o": 8, "0b": 2}[lowered], body[2:]
    elif len(body) > 1 and body[0] == "0":
        base, body = 8, body[1:]
    if not body or any(c not in _INT_DIGITS[base] for c in body):
        return None
    value = int(body, base)
    if sign == "-":
        value = -value
    if _INT64[0] <= value <= _INT64[1]:
        return value
    return value if not sign and value <= _UINT64_MAX else None


def _go_float(text: str) -> float | None:
    """A float go-yaml resolves ``text`` (underscores removed) to, None when it is not one (or beyond float64)."""
    if _YAML_STYLE_FLOAT.fullmatch(text) is None:
        return None
    value = float(text)
    return None if math.isinf(value) else value


def _plain_scalar(text: str) -> tuple[str, Any]:
    """go-yaml v2's ``resolve`` of an untagged plain scalar: (tag, value)."""
    if text in _TRUE:
        return _BOOL, True
    if text in _FALSE:
        return _BOOL, False
    if text in _NULLS:
        return _NULL, None
    if text in _SPECIAL_FLOATS:
        return _FLOAT, _SPECIAL_FLOATS[text]
    if text == "<<":
        return _MERGE, text
    first = text[0]
    if first == ".":
        # ParseFloat of the text as it is (no underscores removed).
        value = float(text) if re.fullmatch(r"\.[0-9]+([eE][-+]?[0-9]+)?", text) else None
        if value is not None and not math.isinf(value):
            return _FLOAT, value
    elif first in "+-0123456789":
        plain = text.replace("_", "")
        number = _go_int(plain)
        if number is not None:
            return _INT, number
        real = _go_float(plain)
        if real is not None:
            return _FLOAT, real
    return _STR, text


class GoYamlLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]  # C when built
    """PyYAML's safe loader with go-yaml v2's resolution of plain scalars and its readings of tagged ones."""

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode and implicit[0]:
            return _plain_scalar(value)[0]
        return str(super().resolve(kind, value, implicit))

    def construct_mapping(self, node: Any, deep: bool = False) -> dict[str, Any]:
        # Keys made strings as they are read: 1 and true are the keys "1" and "true", not one Python key.
        if isinstance(node, MappingNode):
            self.flatten_mapping(node)
        mapping: dict[str, Any] = {}
        for key_node, value_node in node.value:
            key = _key(self.construct_object(key_node, deep=deep))
            mapping[key] = self.construct_object(value_node, deep=deep)
        return mapping

    def construct_go_bool(self, node: ScalarNode) -> bool:
        text = str(self.construct_scalar(node))
        if text in _TRUE or text in _FALSE:
            return text in _TRUE
        raise yaml.constructor.ConstructorError(
            None, None, f"cannot decode !!str `{text}` as a !!bool", node.start_mark
        )

    def construct_go_int(self, node: ScalarNode) -> int:
        text = str(self.construct_scalar(node))
        number = _go_int(text.replace("_", ""))
        if number is None:
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot decode !!str `{text}` as a !!int", node.start_mark
            )
        return number

    def construct_go_float(self, node: ScalarNode) -> float:
        text = str(self.construct_scalar(node))
        if text in _SPECIAL_FLOATS:
            return _SPECIAL_FLOATS[text]
        real = _go_float(text.replace("_", "")) if text[:1] != "." else _plain_scalar(text)[1]
        if isinstance(real, float):
            return real
        number = _go_int(text.replace("_", ""))  # !!float 1: an int made a float
        if number is None:
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot decode !!str `{text}` as a !!float", node.start_mark
            )
        return float(number)

    def construct_go_text(self, node: ScalarNode) -> str:
        return str(self.construct_scalar(node))  # a timestamp's text, as go-yaml keeps it in an interface{}

    def construct_go_binary(self, node: ScalarNode) -> str:
        try:
            data = base64.b64decode(str(self.construct_scalar(node)).encode())
        except (binascii.Error, ValueError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"!!binary value contains invalid base64 data: {exc}", node.start_mark
            ) from None
        return data.decode("utf-8", "replace")  # Go keeps the bytes as a string; JSON writes them as UTF-8


GoYamlLoader.add_constructor(_BOOL, GoYamlLoader.construct_go_bool)
GoYamlLoader.add_constructor(_INT, GoYamlLoader.construct_go_int)
GoYamlLoader.add_constructor(_FLOAT, GoYamlLoader.construct_go_float)
GoYamlLoader.add_constructor(_TAG + "timestamp", GoYamlLoader.construct_go_text)
GoYamlLoader.add_constructor(_TAG + "binary", GoYamlLoader.construct_go_binary)


def _float32_g(value: float) -> str:
    """``strconv.FormatFloat(value, 'g', -1, 32)``: the fewest digits that read back as the same float32, in %e
    form (two exponent digits at least) when the exponent is below -4 or at least 6."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    single = struct.unpack("f", struct.pack("f", value))[0]
    if single == 0:
        return "-0" if math.copysign(1, single) < 0 else "0"
    text = ""
    for total in range(1, 10):
        text = f"{single:.{total - 1}e}"
        if struct.unpack("f", struct.pack("f", float(text)))[0] == single:
            break
    mantissa, _, exponent_text = text.partition("e")
    exponent = int(exponent_text)
    if exponent < -4 or exponent >= 6:
        return f"{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    digits = len(mantissa.lstrip("-").replace(".", ""))
    return f"{float(text):.{max(0, digits - 1 - exponent)}f}"


def _key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bool):
        return "true" if key else "false"
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float):
        special = {"+Inf": ".inf", "-Inf": "-.inf", "NaN": ".nan"}
        text = _float32_g(key)
        return special.get(text, text)
    raise YAMLToJSONError(
        f"error converting YAML to JSON: Unsupported map key of type: {type(key).__name__}, key: {key!r}"
    )


def _json_number(value: float) -> float | int:
    """A float as it comes out of the JSON sigs.k8s.io/yaml writes: ``json.Marshal`` writes an integral float64
    below 1e21 without a fraction (``1e3`` -> ``1000``), which decodes as an integer (an int field takes it)."""
    if not math.isfinite(value):
        shown = "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
        raise YAMLToJSONError(f"error converting YAML to JSON: json: unsupported value: {shown}")
    if value.is_integer() and abs(value) < 1e21 and _INT64[0] <= value <= _UINT64_MAX:
        return int(value)
    return value


def to_json_values(document: Any) -> Any:
    """``document`` (its keys strings already) as JSON holds it after sigs.k8s.io/yaml: integral floats integers,
    NaN and infinities refused (in place)."""
    if isinstance(document, float):
        return _json_number(document)
    pending = [document]
    while pending:
        node = pending.pop()
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        for key, value in items:
            if isinstance(value, float):
                node[key] = _json_number(value)
            elif isinstance(value, dict | list):
                pending.append(value)
    return document


def _too_deep(exc: yaml.YAMLError) -> bool:
    # libyaml's own bound on nesting (the pure-Python parser recurses into a RecursionError instead): callers
    # answer both as nesting too deep.
    return "exceeded maximum nesting depth" in str(exc)


def load(stream: str | bytes | IO[str] | IO[bytes]) -> Any:
    """The first document of ``stream`` as kubectl would send it (None for an empty one); ``yaml.YAMLError`` if
    it is not YAML or JSON cannot hold it, ``RecursionError`` if it nests too deep."""
    try:
        return to_json_values(yaml.load(stream, Loader=GoYamlLoader))  # a safe loader: no Python objects
    except yaml.YAMLError as exc:
        if _too_deep(exc):
            raise RecursionError(str(exc)) from None
        raise


def load_all(stream: str | bytes | IO[str] | IO[bytes]) -> Iterator[Any]:
    """Every document of ``stream``, each as ``load`` reads it."""
    try:
        for document in yaml.load_all(stream, Loader=GoYamlLoader):
            yield to_json_values(document)
    except yaml.YAMLError as exc:
        if _too_deep(exc):
            raise RecursionError(str(exc)) from None
        raise

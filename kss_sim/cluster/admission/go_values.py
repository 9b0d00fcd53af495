"""The values with a decoder of their own in Go, checked as that decoder checks them, with its error's text.

kube-apiserver decodes ``metav1.Time`` / ``MicroTime`` with ``time.Parse`` (RFC 3339, microseconds for MicroTime),
``resource.Quantity`` with ``ParseQuantity`` (the text trimmed of spaces), ``intstr.IntOrString`` as a string or
an int32, and ``[]byte`` fields from standard base64. Each function here returns the error Go returns for a
value (None when it decodes); encoding/json puts that text, unwrapped, after "cannot be handled as a Kind: ".

A number encoding/json cannot store is quoted as the request wrote it (``number 99999999999999999999``, ``1e5``):
``remember_literals`` keeps the literals orjson's floats lose; a number Go re-encoded first (a YAML body) is quoted
as encoding/json writes a float64 (``format_float``).
"""

from __future__ import annotations

import calendar
import copy
import json
import math
import re
from contextvars import ContextVar
from decimal import Decimal
from typing import Any

import orjson

from kss_sim.kube import raw_numbers
from kss_sim.kube.go_json import json_kind
from kss_sim.kube.quantity import QuantityError, parse_quantity

RFC3339 = "2006-01-02T15:04:05Z07:00"
RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"
# The layouts' elements as Go's nextStdChunk splits them: (text in the layout, what it is).
_LAYOUTS = {
    RFC3339: (("2006", "year"), ("-", ""), ("01", "month"), ("-", ""), ("02", "day"), ("T", ""), ("15", "hour"),
              (":", ""), ("04", "minute"), (":", ""), ("05", "second"), ("Z07:00", "zone")),
    RFC3339_MICRO: (("2006", "year"), ("-", ""), ("01", "month"), ("-", ""), ("02", "day"), ("T", ""),
                    ("15", "hour"), (":", ""), ("04", "minute"), (":", ""), ("05", "second"),
                    (".000000", "fraction"), ("Z07:00", "zone")),
}  # fmt: skip
_QUANTITY_ERRORS = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    "unable to parse numeric part of quantity",
    "unable to parse quantity's suffix",
)
_INT32 = (-(2**31), 2**31 - 1)


def go_quote(text: str) -> str:
    """``time``'s quote: printable ASCII as is (``"`` and ``\\`` escaped), every other byte as ``\\xNN``."""
    out = ['"']
    for byte in text.encode("utf-8", "surrogatepass"):
        if 0x20 <= byte < 0x80:
            out.append(("\\" if byte in (0x22, 0x5C) else "") + chr(byte))
        else:
            out.append(f"\\x{byte:02x}")
    return "".join(out) + '"'


# The number literals of the JSON body being decoded (in this request's context) whose Python value prints otherwise
# than the literal (an integer beyond 64 bits that orjson reads as a float, ``1e5``, ``1E+30``): encoding/json quotes
# a number it cannot store as it was sent.
# The body is kept and read for them only when a message quotes a number (``number_text``): scanning every body's
# tokens in Python was ~5 % of the API process's CPU per created pod, and almost no request needs them.
_LITERALS: ContextVar[_BodyLiterals | None] = ContextVar("kss_number_literals", default=None)
# A JSON string (skipped) or a number literal (group 1).
_JSON_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)')
# A body without a fraction, an exponent or a 19-digit integer has no number orjson reads inexactly.
_MAYBE_INEXACT = re.compile(rb"[0-9][.eE]|[0-9]{19}")
# What orjson reads exactly: an integer within int64 or uint64.
_EXACT_INTS = (-(2**63), 2**64 - 1)


# The numbers beyond float64 of the body being decoded (``loads_beyond_float64``), by the identity of the infinity
# each was read as (1e1000 and 2e999 are equal floats): id -> (the float, kept alive so its id stays its own, text).
_BEYOND: ContextVar[dict[int, tuple[float, str]] | None] = ContextVar("kss_numbers_beyond_float64", default=None)


def remember_literals(body: bytes) -> None:
    """Keep, for this request, the literal of every number in the JSON ``body`` that ``number_text`` would not print
    as it was sent (errors name ``number 99999999999999999999``, not the float orjson made of it)."""
    _BEYOND.set(None)
    # A body without a fraction, an exponent or a 19-digit integer has only integers orjson reads exactly.
    _LITERALS.set(_BodyLiterals(body) if _MAYBE_INEXACT.search(body) is not None else None)


class _BodyLiterals:
    """The number literals of one body, found when first asked for."""

    __slots__ = ("_body", "_found")

    def __init__(self, body: bytes) -> None:
        self._body = body
        self._found: dict[float, str] | None = None

    def get(self) -> dict[float, str]:
        if self._found is None:
            self._found = _inexact_literals(self._body)
        return self._found


def _inexact_literals(body: bytes) -> dict[float, str]:
    """Each number of ``body`` whose Python value prints otherwise than its literal, by value (the first literal)."""
    literals: dict[float, str] = {}
    for found in _JSON_TOKEN.finditer(body):
        literal = found.group(1)
        if literal is None:
            continue
        text = literal.decode()
        exact_int = not any(mark in text for mark in ".eE") and len(text) <= len(str(_EXACT_INTS[1]))
        if exact_int and _EXACT_INTS[0] <= int(text) <= _EXACT_INTS[1]:
            continue
        value = float(text)
        if value == value and (math.isinf(value) or format_float(value) != text):
            literals.setdefault(value, text)  # an infinity: the first number beyond float64 sent (with its sign)
    return literals


NOT_JSON = object()


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)  # NaN, Infinity: Python's extension, not JSON


def _orjson_int(text: str) -> int | float:
    value = int(text)
    return value if _EXACT_INTS[0] <= value <= _EXACT_INTS[1] else float(value)


def loads_beyond_float64(body: bytes) -> Any:
    """``body`` parsed as orjson parses JSON (an integer beyond 64 bits a float), but a number beyond float64
    (``1e1000``, ``-1e999``) an infinity where orjson refuses it; ``NOT_JSON`` when it is not JSON for another
    reason. kube-apiserver's decoder leaves such a number to the field's type: an int or float field refuses it
    (``cannot unmarshal number 1e1000``), a Quantity parses its text, an unknown field drops it."""
    beyond: dict[int, tuple[float, str]] = {}

    def parse_float(text: str) -> float:
        value = float(text)
        if math.isinf(value):
            beyond[id(value)] = (value, text)
        return value

    try:
        parsed = json.loads(body, parse_int=_orjson_int, parse_float=parse_float, parse_constant=_refuse_constant)
        orjson.dumps(parsed)  # what Python's reader takes and orjson would not (a lone surrogate) is not JSON here
    except (ValueError, RecursionError, TypeError):
        return NOT_JSON
    remember_literals(body)
    _BEYOND.set(beyond)
    return parsed


def json_copy(obj: Any) -> Any:
    """A deep copy of JSON-like ``obj``: through orjson, unless this request's body held numbers beyond float64
    (orjson writes an infinity as null, and the copy must keep each one, itself: ``number_text`` knows it by
    identity)."""
    if _BEYOND.get():
        return copy.deepcopy(obj)  # a float is immutable: deepcopy keeps the same object
    return raw_numbers.loads(orjson.dumps(obj))


def read_beyond_float64() -> bool:
    """Whether this request's body held a number beyond float64 (only then is there one to look for)."""
    return bool(_BEYOND.get())


def beyond_float64(value: Any) -> bool:
    """Whether ``value`` is a number beyond float64 as ``loads_beyond_float64`` reads it (an infinity)."""
    return isinstance(value, float) and math.isinf(value)


def keep_beyond_float64(value: Any) -> Any:
    """``value`` with each number beyond float64 in it (an infinity ``loads_beyond_float64`` read) kept as the text it
    was sent as (``raw_numbers.kept``): a RawExtension's bytes, which kube-apiserver stores as given."""
    if beyond_float64(value):
        return raw_numbers.kept(number_text(value))
    if isinstance(value, dict):
        return {key: keep_beyond_float64(item) for key, item in value.items()}
    if isinstance(value, list):
        return [keep_beyond_float64(item) for item in value]
    return value


def quantity_text(value: Any) -> Any:
    """A number beyond float64 as the text it was sent as (``Quantity.UnmarshalJSON`` parses the literal), any
    other value as it is."""
    return number_text(value) if beyond_float64(value) else value


def format_float(value: float) -> str:
    """A float64 as encoding/json writes it (``strconv.AppendFloat`` with 'f' from 1e-6 to 1e21, else 'e' with
    ``e-07`` cleaned up to ``e-7``): what kube-apiserver prints of a number it re-encoded (a YAML body, a patch)."""
    if value == 0:
        return "-0" if str(value).startswith("-") else "0"
    if 1e-6 <= abs(value) < 1e21:
        return format(Decimal(repr(value)).normalize(), "f")
    text = repr(value)  # shortest round-trip digits, in exponent form at these magnitudes: 1e+21, 1.5e-07
    mantissa, _, exponent = text.partition("e")
    if len(exponent) == 3 and exponent[0] == "-" and exponent[1] == "0":
        exponent = "-" + exponent[2]
    return f"{mantissa}e{exponent}"


def number_text(value: int | float) -> str:
    """A JSON number as encoding/json quotes it in ``cannot unmarshal number X``: the literal the request sent
    (``remember_literals``), else an integer's digits or a float as Go encodes it."""
    if isinstance(value, int):
        return str(value)
    beyond = _BEYOND.get()
    if beyond is not None and (found := beyond.get(id(value))) is not None and found[0] is value:
        return found[1]
    held = _LITERALS.get()
    literals = held.get() if held is not None else None
    if literals and value in literals:
        return literals[value]
    return format_float(value)


def _digits(text: str, start: int, count: int) -> bool:
    return (
        len(text) >= start + count and text[start : start + count].isascii() and text[start : start + count].isdigit()
    )


def _number(value: str, fixed: bool) -> tuple[int, str] | None:
    """Go's getnum: one or (``fixed``: exactly) two digits."""
    if not _digits(value, 0, 1):
        return None
    if not _digits(value, 1, 1):
        return None if fixed else (int(value[0]), value[1:])
    return int(value[:2]), value[2:]


def time_error(text: str, layout: str = RFC3339) -> str | None:
    """``time.Parse(layout, text)``'s error for the RFC 3339 layouts (None when it parses)."""

    def failed(layout_elem: str, value_elem: str, message: str = "") -> str:
        if message:
            return f"parsing time {go_quote(text)}{message}"
        return (
            f"parsing time {go_quote(text)} as {go_quote(layout)}: "
            f"cannot parse {go_quote(value_elem)} as {go_quote(layout_elem)}"
        )

    value = text
    parts: dict[str, int] = {}
    elements = _LAYOUTS[layout]
    for index, (elem, what) in enumerate(elements):
        if not what:
            if not value.startswith(elem):
                return failed(elem, value)
            value = value[len(elem) :]
            continue
        hold = value
        out_of_range = ""
        if what == "year":
            if len(value) < 4 or not _digits(value, 0, 1) or not _digits(value, 0, 4):
                return failed(elem, hold)
            parts[what], value = int(value[:4]), value[4:]
        elif what == "zone":
            if value.startswith("Z"):
                value = value[1:]
            elif len(value) < 6 or value[3] != ":" or value[0] not in "+-":
                return failed(elem, hold)
            else:
                hours, minutes = _number(value[1:3], True), _number(value[4:6], True)
                if hours is None or minutes is None:
                    return failed(elem, hold)
                out_of_range = "time zone offset hour" if hours[0] > 24 else ""
                out_of_range = out_of_range or ("time zone offset minute" if minutes[0] > 60 else "")
                value = value[6:]
        elif what == "fraction":
            if len(value) < len(elem) or value[0] not in ".," or not _digits(value, 1, len(elem) - 1):
                return failed(elem, hold)
            value = value[len(elem) :]
        else:
            found = _number(value, fixed=what != "hour")
            if found is None:
                return failed(elem, hold)
            parts[what], value = found
            limits = {"month": (1, 12), "day": (1, 31), "hour": (0, 23), "minute": (0, 59), "second": (0, 59)}
            low, high = limits[what]
            if not low <= parts[what] <= high:
                out_of_range = what
            elif (
                what == "second"
                and value[:1] in (".", ",")
                and _digits(value, 1, 1)
                and elements[index + 1][1] != "fraction"
            ):
                # A fraction the layout does not show is taken all the same (RFC3339 only).
                end = 2
                while _digits(value, end, 1):
                    end += 1
                value = value[end:]
        if out_of_range:
            return failed(elem, value, f": {out_of_range} out of range")
    if value:
        return failed("", value, f": extra text: {go_quote(value)}")
    if parts["day"] > calendar.monthrange(parts["year"] or 2000, parts["month"])[1] and not (
        parts["year"] == 0 and parts["month"] == 2 and parts["day"] == 29  # year 0 is a leap year in Go
    ):
        return failed("", value, ": day out of range")
    return None


def time_value_error(value: Any, layout: str = RFC3339) -> str | None:
    """``metav1.Time`` (or ``MicroTime``) ``UnmarshalJSON``: a string (decoded on its own: no struct named in
    the error), then ``time.Parse``."""
    if not isinstance(value, str):
        return f"json: cannot unmarshal {json_kind(value)} into Go value of type string"
    return time_error(value, layout)


def quantity_error(value: Any) -> str | None:
    """``resource.Quantity.UnmarshalJSON``: the raw JSON (a string's quotes removed), trimmed, through
    ``ParseQuantity``; numbers parse as their text does, anything else fails its regular expression."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return _QUANTITY_ERRORS[0]
    try:
        parse_quantity(quantity_text(value))
    except QuantityError as exc:
        text = str(exc)
        return next((message for message in _QUANTITY_ERRORS if text.startswith(message)), _QUANTITY_ERRORS[0])
    return None


def int_or_string_error(value: Any) -> str | None:
    """``intstr.IntOrString.UnmarshalJSON``: a string, or else an int32 decoded on its own."""
    if isinstance(value, str):
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"json: cannot unmarshal {json_kind(value)} into Go value of type int32"
    if isinstance(value, float) or not _INT32[0] <= value <= _INT32[1]:
        return f"json: cannot unmarshal number {number_text(value)} into Go value of type int32"
    return None


def base64_error(text: str) -> str | None:
    """``base64.StdEncoding.Decode``'s error for a ``[]byte`` field (None when it decodes): line breaks are
    skipped, the last group of four must be whole, padded with ``=``."""
    offset = _bad_base64_offset(text)
    return None if offset is None else f"illegal base64 data at input byte {offset}"


_BASE64 = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _bad_base64_offset(text: str) -> int | None:
    """Where Go's decoder reports the error (decodeQuantum's CorruptInputError), or None."""
    quantum: list[int] = []  # offsets of the current group of four
    index, end = 0, len(text)
    while index < end:
        char = text[index]
        index += 1
        if char in "\r\n":
            continue
        if char == "=":
            if len(quantum) < 2:
                return index - 1  # padding too early
            if len(quantum) == 2:  # a second "=" must follow
                while index < end and text[index] in "\r\n":
                    index += 1
                if index == end:
                    return end
                if text[index] != "=":
                    return index - 1
                index += 1
            while index < end and text[index] in "\r\n":
                index += 1
            return index if index < end else None  # anything after the padding is garbage
        if char not in _BASE64:
            return index - 1
        quantum.append(index - 1)
        if len(quantum) == 4:
            quantum = []
    return quantum[0] if quantum else None

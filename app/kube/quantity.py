"""Kubernetes resource quantities (``resource.Quantity``), parsed exactly.

Values are kept as :class:`fractions.Fraction` so sums are exact; ``milli_value`` and
``value`` round up like the Go implementation's ``MilliValue()`` and ``Value()``.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from functools import lru_cache

_QUANTITY_RE = re.compile(r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(.*)$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 1000),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_EXPONENT_RE = re.compile(r"^[eE]([+-]?[0-9]+)$")


class QuantityError(ValueError):
    """Raised for text that is not a Kubernetes quantity (``1.5.3Gi``, ``abc``...)."""


@lru_cache(maxsize=65536)
def parse_quantity(text: str | int | float) -> Fraction:
    """Parse a quantity such as ``500m``, ``1.5Gi``, ``2e3`` into an exact number."""
    if isinstance(text, bool):
        raise QuantityError(f"quantities must match the regular expression: {text!r}")
    if isinstance(text, int):
        return Fraction(text)
    if isinstance(text, float):
        return Fraction(str(text))
    s = text.strip()
    match = _QUANTITY_RE.match(s)
    if not s or match is None:
        raise QuantityError(
            f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text!r}"
        )
    number, suffix = match.group(1), match.group(2)
    try:
        value = Fraction(number)
    except ValueError as exc:  # pragma: no cover - regex already guards this
        raise QuantityError(f"invalid quantity {text!r}") from exc
    if suffix in _BINARY:
        return value * _BINARY[suffix]
    if suffix in _DECIMAL:
        return value * _DECIMAL[suffix]
    exp = _EXPONENT_RE.match(suffix)
    if exp is not None:
        return value * Fraction(10) ** int(exp.group(1))
    raise QuantityError(
        f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text!r}"
    )


def is_valid_quantity(text: object) -> bool:
    """True when ``text`` parses as a quantity."""
    if not isinstance(text, str | int | float) or isinstance(text, bool):
        return False
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def milli_value(text: str | int | float) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded up."""
    return math.ceil(parse_quantity(text) * 1000)


def value(text: str | int | float) -> int:
    """``Quantity.Value()``: whole units, rounded up."""
    return math.ceil(parse_quantity(text))


def format_milli_cpu(milli: int) -> str:
    """Render millicores the way kubectl does (``2`` or ``1500m``)."""
    return str(milli // 1000) if milli % 1000 == 0 else f"{milli}m"


def format_bytes(n: int) -> str:
    """Render a byte count with the largest exact binary suffix."""
    for suffix, size in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if n and n % size == 0:
            return f"{n // size}{suffix}"
    return str(n)

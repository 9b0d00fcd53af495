"""Kubernetes resource quantities (``resource.Quantity``), parsed exactly.

Values are kept as :class:`fractions.Fraction` so sums are exact. ``parse_quantity`` keeps what Go's
``ParseQuantity`` keeps (a value finer than nano rounded away from zero, a binary-SI one capped at 2^63-1);
``milli_value``, ``value`` and ``scaled_value`` give the int64 that ``MilliValue()``, ``Value()`` and
``ScaledValue()`` give (apimachinery v0.35), overflow included: kube-scheduler's integer resources are those
int64s, so a node stored with ``cpu: 1e1000`` has 0 millicores there, and here.
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

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
_UINT64_MASK = 2**64 - 1
_NANO = 10**9
# A canonical mantissa of at most this many digits parses into Go's int64Amount (``maxInt64Factors``), a longer
# one into an inf.Dec at nano scale: the two round and overflow differently in ScaledValue.
_INT64_AMOUNT_DIGITS = 18
_INT32_MASK = 2**32 - 1


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
        if not math.isfinite(text):  # a number beyond float64: the caller passes the text it was sent as
            raise QuantityError(f"unable to parse numeric part of quantity: {text!r}")
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
        # ParseQuantity caps a binary-SI magnitude, silently, at 2^63-1 ("8Ei" is 2^63-1).
        binary = _to_nano(value * _BINARY[suffix])
        if abs(binary) > INT64_MAX:
            return Fraction(INT64_MAX if binary > 0 else -INT64_MAX)
        return binary
    if suffix in _DECIMAL:
        return _to_nano(value * _DECIMAL[suffix])
    exp = _EXPONENT_RE.match(suffix)
    if exp is not None:
        exponent = int(exp.group(1))
        if not INT64_MIN <= exponent <= INT64_MAX:  # strconv.ParseInt fails: ErrSuffix
            raise QuantityError(f"unable to parse quantity's suffix: {text!r}")
        # Go keeps int32(exponent): the low 32 bits, two's complement.
        exponent = ((exponent + 2**31) & _INT32_MASK) - 2**31
        return _to_nano(value * Fraction(10) ** exponent)
    raise QuantityError(
        f"quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text!r}"
    )


def _to_nano(value: Fraction) -> Fraction:
    """ParseQuantity keeps nano precision: a finer value rounds away from zero ("0.1n" is 1n)."""
    if (value * _NANO).denominator == 1:
        return value
    nanos = -((-abs(value.numerator) * _NANO) // value.denominator)
    return Fraction(nanos if value > 0 else -nanos, _NANO)


def wrap_int64(n: int) -> int:
    """``n`` as Go's conversions to int64 keep it (``big.Int.Int64``, overflowing arithmetic): the low 64 bits, two's
    complement."""
    if INT64_MIN <= n <= INT64_MAX:
        return n
    return ((n - INT64_MIN) & _UINT64_MASK) + INT64_MIN


def _canonical_mantissa(nanos: int) -> tuple[int, int]:
    """(mantissa, exponent) of ``Quantity.String()`` for ``nanos`` (> 0) billionths: trailing zeros moved into the
    exponent, which is then lowered to a multiple of three."""
    mantissa, exponent = nanos, -9
    while mantissa % 10**16 == 0:  # in strides: 1e1000 has a thousand zeros
        mantissa //= 10**16
        exponent += 16
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    shift = exponent % 3
    return mantissa * 10**shift, exponent - shift


@lru_cache(maxsize=4096)
def _scaled_value_slow(value: Fraction, scale: int) -> int:
    sign = -1 if value < 0 else 1
    nanos = -((-abs(value.numerator) * _NANO) // value.denominator)  # nano precision, away from zero
    mantissa, exponent = _canonical_mantissa(nanos)
    if mantissa < 10**_INT64_AMOUNT_DIGITS:
        # int64Amount{sign*mantissa, exponent}.AsScaledInt64(scale) (exponent >= -9 >= scale - 18 here).
        if exponent < scale:  # negativeScaleInt64: rounds away from zero
            divisor: int = 10 ** (scale - exponent)
            return sign * (-(-mantissa // divisor))
        up = exponent - scale
        exact: int = sign * mantissa * 10**up
        if up in (0, 1, 2, 3, 6, 9):  # int64MultiplyScale*: the wrapped product
            return wrap_int64(exact)
        return exact if INT64_MIN <= exact <= INT64_MAX else 0  # the multiply-by-ten loop gives up with 0
    # inf.Dec at nano scale, through scaledValue: a dif of 9 + scale digits to drop.
    unscaled = sign * nanos
    dif = 9 + scale
    if dif == 0:
        return wrap_int64(unscaled)
    divisor = 10**dif  # dif > 0 here
    if unscaled < INT64_MAX and dif < 19:
        # The int64 path on the wrapped value: Go's division truncates toward zero, then any remainder adds one.
        wrapped = wrap_int64(unscaled)
        quotient = abs(wrapped) // divisor * (-1 if wrapped < 0 else 1)
        return quotient + 1 if quotient * divisor != wrapped else quotient
    quotient, remainder = divmod(unscaled, divisor)  # big.Int's Euclidean DivMod; divisor > 0
    return wrap_int64(wrap_int64(quotient) + (1 if remainder else 0))


def scaled_value(value: Fraction, scale: int) -> int:
    """``Quantity.ScaledValue(scale)`` (``ceil(value / 10^scale)``, -9 <= scale <= 9) of the quantity stored as
    ``value``, as kube-scheduler decodes it from its canonical string: exact while it fits an int64, else what Go
    returns on overflow (int64Amount: the wrapped product or 0; inf.Dec: the low 64 bits), never a bigger int."""
    if value >= 0:
        # The common case: a non-negative value that fits is its ceiling whichever way Go holds it.
        power: int = 10 ** abs(scale)
        if scale <= 0:
            ceiling = -((-value.numerator * power) // value.denominator)
        else:
            ceiling = -((-value.numerator) // (value.denominator * power))
        if ceiling <= INT64_MAX and (value * _NANO).denominator == 1:
            return ceiling
    if not -9 <= scale <= 9:
        raise ValueError(f"scale {scale} is outside -9..9")
    return _scaled_value_slow(value, scale)


def is_valid_quantity(text: object) -> bool:
    """True when ``text`` parses as a quantity."""
    if not isinstance(text, (str, int, float)) or isinstance(text, bool):  # a tuple: cheaper than a union
        return False
    try:
        parse_quantity(text)
    except QuantityError:
        return False
    return True


def milli_value(text: str | int | float) -> int:
    """``Quantity.MilliValue()``: thousandths, rounded up, as an int64 (see ``scaled_value``)."""
    return scaled_value(parse_quantity(text), -3)


def value(text: str | int | float) -> int:
    """``Quantity.Value()``: whole units, rounded up, as an int64 (see ``scaled_value``)."""
    return scaled_value(parse_quantity(text), 0)

"""Quantities as apimachinery v0.35 parses them and turns them into int64s (``MilliValue``, ``Value``).

The expected numbers are Go's: a value that fits an int64 is its ceiling; beyond, what Go's int64 arithmetic
returns (the low 64 bits for an inf.Dec, the wrapped product or 0 for an int64Amount), never a Python int that
NumPy's int64 columns cannot hold.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from kss_sim.kube.quantity import (
    INT64_MAX,
    INT64_MIN,
    QuantityError,
    milli_value,
    parse_quantity,
    scaled_value,
    value,
    wrap_int64,
)


@pytest.mark.parametrize(
    ("text", "milli", "units"),
    [
        # The nodes: kube-apiserver stores both; kube-scheduler's MilliValue of either is 0.
        ("1e1000", 0, 0),
        ("9223372036854775808", 0, INT64_MIN),
        ("9223372036854775808m", INT64_MIN, 9223372036854776),
        # 2^63-1 itself: its thousandths wrap.
        ("9223372036854775807", -1000, INT64_MAX),
        ("-1e1000", 0, 0),
        ("-9223372036854775808", 0, 0),
        ("-9223372036854775809", -1000, -1),
        # An int64Amount (at most 18 digits) multiplied past int64 by ten at a time gives up with 0...
        ("100P", 0, 10**17),
        ("10E", 0, 0),
        ("9E", 0, 9 * 10**18),
        # ... by 1000 at once, the wrapped product.
        ("123456789012345678", -5670419503621183312, 123456789012345678),
        # Binary SI is capped at 2^63-1 when parsed.
        ("8Ei", -1000, INT64_MAX),
        ("7Ei", INT64_MIN, 7 * 2**60),
        # Values that fit: the ceiling, negative ones away from zero.
        ("1Ti", 2**40 * 1000, 2**40),
        ("1.5", 1500, 2),
        ("-1.5", -1500, -2),
        ("1500m", 1500, 2),
        ("0.1n", 1, 1),
        ("0", 0, 0),
    ],
)
def test_milli_value_and_value_are_go_int64s(text: str, milli: int, units: int) -> None:
    assert milli_value(text) == milli
    assert value(text) == units
    np.array([milli_value(text), value(text)], dtype=np.int64)  # never too large for a column


def test_parse_keeps_nano_precision_rounding_away_from_zero() -> None:
    assert parse_quantity("0.1n") == Fraction(1, 10**9)
    assert parse_quantity("-0.1n") == Fraction(-1, 10**9)
    assert parse_quantity("1.0000000001") == Fraction(1_000_000_001, 10**9)


def test_parse_caps_binary_si_at_int64_max() -> None:
    assert parse_quantity("8Ei") == INT64_MAX
    assert parse_quantity("-8Ei") == -INT64_MAX
    assert parse_quantity("7Ei") == 7 * 2**60


def test_decimal_exponent_is_kept_as_int32() -> None:
    assert parse_quantity("1e4294967296") == 1  # int32(2^32) is 0
    with pytest.raises(QuantityError):
        parse_quantity("1e99999999999999999999")  # not an int64: ErrSuffix


def test_wrap_int64_keeps_the_low_64_bits() -> None:
    assert wrap_int64(INT64_MAX) == INT64_MAX
    assert wrap_int64(INT64_MAX + 1) == INT64_MIN
    assert wrap_int64(INT64_MIN - 1) == INT64_MAX
    assert wrap_int64(2**64 * 5 + 7) == 7


def test_scaled_value_of_a_sum_beyond_int64_is_an_int64() -> None:
    total = parse_quantity("9E") + parse_quantity("9E")
    assert INT64_MIN <= scaled_value(total, -3) <= INT64_MAX
    assert INT64_MIN <= scaled_value(total, 0) <= INT64_MAX

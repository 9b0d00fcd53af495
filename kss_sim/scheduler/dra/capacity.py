"""Consumable capacity (DRAConsumableCapacity): how much of a shareable device a request takes, and whether it fits.

Ported from structured/internal/experimental/consumable_capacity.go; amounts are exact fractions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from kss_sim.kube.quantity import parse_quantity
from kss_sim.scheduler.dra.allocated import ConsumedCapacity


class CapacityRequestError(Exception):
    """A request names a capacity the device does not have."""


def _requests(capacity_requirements: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return (capacity_requirements or {}).get("requests") or {}


def _consumed(requested: Any, capacity: Mapping[str, Any]) -> Fraction:
    """``calculateConsumedCapacity``: the request rounded up to what the device's request policy allows."""
    policy = capacity.get("requestPolicy")
    if requested is None:
        if policy is not None and policy.get("default") is not None:
            return parse_quantity(policy["default"])
        return parse_quantity(capacity.get("value") or "0")
    value = parse_quantity(requested)
    if policy is None:
        return value
    valid_range = policy.get("validRange")
    if valid_range is not None and valid_range.get("min") is not None:
        low = parse_quantity(valid_range["min"])
        if value < low:
            return low
        if valid_range.get("step") is None:
            return value
        # Quantity.Value() rounds up to whole units before the arithmetic.
        step = math.ceil(parse_quantity(valid_range["step"]))
        low_int = math.ceil(low)
        added = math.ceil(value) - low_int
        return Fraction(low_int + step * -(-added // step))  # requested >= min: rounds up
    valid_values = policy.get("validValues")
    if valid_values is not None:
        for candidate in valid_values:
            if value <= parse_quantity(candidate):
                return parse_quantity(candidate)
    return value


def _violates_policy(consumed: Fraction, policy: Mapping[str, Any] | None) -> bool:
    """``violatesPolicy``: outside the valid range or step, or not one of the valid values."""
    if policy is None:
        return False
    if policy.get("default") is not None and consumed == parse_quantity(policy["default"]):
        return False
    valid_range = policy.get("validRange")
    if valid_range is not None:
        if valid_range.get("max") is not None and consumed > parse_quantity(valid_range["max"]):
            return True
        if valid_range.get("step") is not None:
            step = math.ceil(parse_quantity(valid_range["step"]))
            low = math.ceil(parse_quantity(valid_range.get("min") or "0"))
            added = math.ceil(consumed) - low
            if added % step != 0:
                return True
        return False
    valid_values = policy.get("validValues") or []
    if valid_values:
        return all(consumed != parse_quantity(v) for v in valid_values)
    return False


def request_fits(
    consumed_so_far: ConsumedCapacity,
    capacity_requirements: Mapping[str, Any] | None,
    device_capacity: Mapping[str, Any],
    allocating: ConsumedCapacity | None,
) -> bool:
    """``CmpRequestOverCapacity``: the request within the policy, and with what is held and allocating, the capacity.

    Raises :class:`CapacityRequestError` when a requested capacity is not defined on the device.
    """
    requests = _requests(capacity_requirements)
    if any(name not in device_capacity for name in requests):
        raise CapacityRequestError("some requested capacity has not been defined")
    for name, cap in device_capacity.items():
        consumed = _consumed(requests.get(name), cap)
        if _violates_policy(consumed, cap.get("requestPolicy")):
            return False
        total = consumed_so_far.get(name, Fraction(0)) + consumed
        if allocating is not None and name in allocating:
            total += allocating[name]
        if total > parse_quantity(cap.get("value") or "0"):
            return False
    return True


def consumed_from_request(
    capacity_requirements: Mapping[str, Any] | None, device_capacity: Mapping[str, Any]
) -> ConsumedCapacity:
    """``GetConsumedCapacityFromRequest``: what the request consumes of each of the device's capacities."""
    requests = _requests(capacity_requirements)
    return {name: _consumed(requests.get(name), cap) for name, cap in device_capacity.items()}


_BINARY_SUFFIXES = (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def _quantity_text(amount: Fraction, sources: list[Any]) -> str:
    """An amount as a quantity string for ``consumedCapacity``.

    The amount keeps the text it came from (the request, the policy's default, minimum or valid value, the
    capacity); a computed amount is written as ``resource.NewQuantity(v, BinarySI)`` renders a whole number.
    """
    for like in sources:
        if like is not None and parse_quantity(like) == amount:
            return str(like)
    if amount.denominator == 1:
        whole = int(amount)
        for suffix, factor in _BINARY_SUFFIXES:
            if whole and whole % factor == 0:
                return f"{whole // factor}{suffix}"
        return str(whole)
    return str(float(amount))


def consumed_texts(
    capacity_requirements: Mapping[str, Any] | None, device_capacity: Mapping[str, Any]
) -> dict[str, str]:
    """The ``consumedCapacity`` of an allocation result: :func:`consumed_from_request` as quantity strings."""
    requests = _requests(capacity_requirements)
    texts: dict[str, str] = {}
    for name, cap in device_capacity.items():
        policy = cap.get("requestPolicy") or {}
        sources = [requests.get(name), policy.get("default"), (policy.get("validRange") or {}).get("min")]
        sources += [*(policy.get("validValues") or []), cap.get("value")]
        texts[name] = _quantity_text(_consumed(requests.get(name), cap), sources)
    return texts

"""How Go's encoding/json names a JSON value in its errors, for every room that words a decoder's refusal."""

from __future__ import annotations

from typing import Any


def json_kind(value: Any) -> str:
    """How encoding/json names a JSON value's kind in its errors."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object" if isinstance(value, dict) else "null"

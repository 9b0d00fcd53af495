"""Numbers beyond float64 (``1e1000``) kept as the text they were sent as.

kube-apiserver keeps a ``runtime.RawExtension`` (a ControllerRevision's ``data``) as the bytes it was sent, a number
no float64 holds included, and serves them back unchanged. kss holds such a number as an ``orjson.Fragment`` of its
text: orjson writes it as it came, so the stored JSON, a GET, a list and a watch carry the number itself. orjson
cannot read it back, so whatever reads stored JSON that may hold one reads it through ``loads``.
"""

from __future__ import annotations

import copyreg
import json
import math
from typing import Any

import orjson

# What orjson reads exactly: an integer within int64 or uint64 (beyond, it reads a float, and so does ``loads``).
_EXACT_INTS = (-(2**63), 2**64 - 1)


def kept(text: str) -> orjson.Fragment:
    """The number ``text`` (JSON's syntax), to be written as it is."""
    return orjson.Fragment(text.encode())


def is_kept(value: Any) -> bool:
    """Whether ``value`` is a number held as its text."""
    return isinstance(value, orjson.Fragment)


def text_of(value: orjson.Fragment) -> str:
    """The text a kept number is written as."""
    return orjson.dumps(value).decode()


def _float_or_kept(text: str) -> float | orjson.Fragment:
    value = float(text)
    return kept(text) if math.isinf(value) else value


def _orjson_int(text: str) -> int | float | orjson.Fragment:
    value = int(text)
    if _EXACT_INTS[0] <= value <= _EXACT_INTS[1]:
        return value
    return _float_or_kept(text)


def loads(raw: bytes | str) -> Any:
    """``raw`` parsed as orjson parses it, but a number beyond float64 kept as its text (orjson refuses it)."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as refused:
        if "infinity" not in str(refused):
            raise
    return json.loads(raw, parse_float=_float_or_kept, parse_int=_orjson_int)


# A kept number is immutable: a deep copy (copy.deepcopy, pickle) makes one with the same text.
copyreg.pickle(orjson.Fragment, lambda value: (kept, (text_of(value),)))

"""What the StatefulSet and DaemonSet controllers share about revisions and rollouts.

- ``template_hash``: ``history.HashControllerRevision`` over the revision's data, the strategic merge patch
  ``{"spec": {"template": {..., "$patch": "replace"}}}`` that ``getPatch`` builds (Go's ``json.Marshal`` of a map:
  keys sorted, compact, ``<``, ``>``, ``&`` escaped), FNV-1 32-bit plus the collision count, rendered with
  ``rand.SafeEncodeString``; ``revision_data`` is that patch, a ControllerRevision's ``data`` (``history.py``).
- ``scaled_value``: ``intstr.GetScaledValueFromIntOrPercent``.
- ``is_available``: ``podutil.IsPodAvailable`` (Ready for at least ``minReadySeconds``) and when it will be.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from kss_sim.controllers.owned import meta, pod_condition

CONTROLLER_REVISION_HASH_LABEL = "controller-revision-hash"  # apps.ControllerRevisionHashLabelKey

_SAFE_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"  # rand.SafeEncodeString's alphabet
_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193
_PERCENT = re.compile(r"^(-?\d+)%$")


def _go_json(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _fnv1_32(data: bytes, h: int = _FNV32_OFFSET) -> int:
    for byte in data:
        h = (h * _FNV32_PRIME) & 0xFFFFFFFF
        h ^= byte
    return h


def safe_encode(text: str) -> str:
    """``rand.SafeEncodeString``: each character mapped into an alphabet without vowels or look-alikes."""
    return "".join(_SAFE_ALPHANUMS[ord(c) % len(_SAFE_ALPHANUMS)] for c in text)


def revision_data(template: Mapping[str, Any] | None) -> dict[str, Any]:
    """A ControllerRevision's ``data`` for a pod template: ``getPatch``'s ``{"spec": {"template": {...,
    "$patch": "replace"}}}``."""
    body = copy.deepcopy(dict(template or {}))
    template_meta = dict(body.get("metadata") or {})
    template_meta.setdefault("creationTimestamp", None)  # Go renders the zero metav1.Time as null
    body["metadata"] = template_meta
    body["$patch"] = "replace"
    return {"spec": {"template": body}}


def template_hash(template: Mapping[str, Any] | None, collision_count: int = 0) -> str:
    """The revision hash of a pod template (see the module docstring)."""
    raw = _go_json(revision_data(template)).encode()
    digest = _fnv1_32(str(collision_count).encode(), _fnv1_32(raw))
    return safe_encode(str(digest))


def scaled_value(value: Any, total: int, *, round_up: bool, default: int = 0) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, ``"N%"`` of ``total`` rounded up or down;
    ``default`` when absent. A string that is not a percentage raises ValueError, as upstream errs."""
    if value is None:
        return default
    if isinstance(value, bool):
        raise ValueError(f"invalid value for IntOrString: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        match = _PERCENT.match(value)
        if match is None:
            if value.lstrip("-").isdigit():
                return int(value)  # kubectl sends "1" for an int given as a string in YAML; Go's intstr parses it
            raise ValueError(f"invalid value for IntOrString: invalid type: string is not a percentage: {value!r}")
        scaled = int(match.group(1)) * total / 100
        return math.ceil(scaled) if round_up else math.floor(scaled)
    raise ValueError(f"invalid value for IntOrString: {value!r}")


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp, or None."""
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def available_at(pod: Mapping[str, Any], min_ready_seconds: int) -> datetime | None:
    """When the pod is (or becomes) available: its Ready transition plus ``minReadySeconds``; None if not Ready.
    ``datetime.min`` (UTC) when available whatever the time (``minReadySeconds`` 0)."""
    condition = pod_condition(pod, "Ready")
    if condition is None or condition.get("status") != "True":
        return None
    if min_ready_seconds <= 0:
        return datetime.min.replace(tzinfo=UTC)
    since = parse_time(condition.get("lastTransitionTime"))
    if since is None:
        return None  # Go's zero time never counts
    # IsPodAvailable wants the transition plus minReadySeconds strictly before now.
    return since + timedelta(seconds=min_ready_seconds, microseconds=1)


def is_available(pod: Mapping[str, Any], min_ready_seconds: int, now: datetime) -> bool:
    """``podutil.IsPodAvailable``."""
    at = available_at(pod, min_ready_seconds)
    return at is not None and at <= now


def int_field(obj: Mapping[str, Any] | None, name: str, default: int) -> int:
    """An integer field, or ``default`` when absent (Go's defaulting of a nil pointer)."""
    value = (obj or {}).get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def creation_order(pod: Mapping[str, Any]) -> tuple[bool, str, str]:
    """``podByCreationTimestampAndPhase``: scheduled pods first, then oldest, then by name."""
    m = meta(pod)
    return (not (pod.get("spec") or {}).get("nodeName"), str(m.get("creationTimestamp") or ""), str(m.get("name")))

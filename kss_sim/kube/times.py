"""Kubernetes' timestamps (RFC 3339, as metav1.Time writes them)."""

from __future__ import annotations

from datetime import datetime
from typing import Any


def parse_time(text: Any) -> datetime | None:
    """The time ``text`` names (``2026-01-02T03:04:05Z``, offsets too), or None when it names none."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None

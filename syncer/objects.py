"""Kubernetes objects as the syncer handles them: plain dicts decoded from JSON.

The syncer never imports ``app`` (it talks to kss over the API only), so it keeps this one definition of its own,
the same as ``kss_sim.kube.objects.Obj``.
"""

from __future__ import annotations

from typing import Any

Obj = dict[str, Any]
"""One Kubernetes object (or any JSON object within one) as decoded JSON."""

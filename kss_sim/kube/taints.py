"""Taints and tolerations as ``k8s.io/api/core/v1`` and ``pkg/apis/core/v1/helper`` match them.

Shared by the scheduler's TaintToleration and NodeUnschedulable plugins and by the DaemonSet controller's
``nodeShouldRunDaemonPod`` (both sides must agree on which taint a toleration covers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

EFFECT_NO_SCHEDULE = "NoSchedule"
EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
EFFECT_NO_EXECUTE = "NoExecute"


@dataclass(frozen=True, slots=True)
class Toleration:
    """A pod toleration with absent fields read as empty strings."""

    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""

    @classmethod
    def from_dict(cls, t: Mapping[str, Any]) -> Toleration:
        """A toleration from its JSON form."""
        return cls(
            key=str(t.get("key") or ""),
            operator=str(t.get("operator") or ""),
            value=str(t.get("value") or ""),
            effect=str(t.get("effect") or ""),
        )

    def tolerates(self, taint: Mapping[str, Any]) -> bool:
        """``Toleration.ToleratesTaint`` with the TaintTolerationComparisonOperators gate off (v1.35 default)."""
        if self.effect and self.effect != (taint.get("effect") or ""):
            return False
        if self.key and self.key != (taint.get("key") or ""):
            return False
        if self.operator in ("", "Equal"):
            return self.value == (taint.get("value") or "")
        # Lt/Gt only match behind the alpha gate; unknown operators never match.
        return self.operator == "Exists"


def tolerations_tolerate_taint(tolerations: Iterable[Toleration], taint: Mapping[str, Any]) -> bool:
    """``v1helper.TolerationsTolerateTaint``: some toleration tolerates the taint."""
    return any(t.tolerates(taint) for t in tolerations)


def find_matching_untolerated_taint(
    taints: Iterable[Mapping[str, Any]], tolerations: Sequence[Toleration], effects: Iterable[str] | None = None
) -> Mapping[str, Any] | None:
    """``v1helper.FindMatchingUntoleratedTaint``: the first taint (with one of ``effects``) no toleration tolerates."""
    wanted = None if effects is None else frozenset(effects)
    for taint in taints:
        if wanted is not None and (taint.get("effect") or "") not in wanted:
            continue
        if not tolerations_tolerate_taint(tolerations, taint):
            return taint
    return None

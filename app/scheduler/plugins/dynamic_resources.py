"""DynamicResources: ResourceClaim allocation (``dynamicresources``), reduced to what the simulator supports.

The simulator has no ResourceClaims, DeviceClasses or ResourceSlices, so the plugin behaves as kube-scheduler
v1.35's does for pods without claims: PreFilter records an empty state and skips, Filter passes, Score is 0,
Reserve/PreBind do nothing and PostFilter has "no new claims to deallocate". A missing state (PreFilter stopped
before this plugin ran) makes the later points fail with "not found", as upstream's CycleState read does.
Pods that do reference claims are rejected in PreFilter as unsupported.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from app.scheduler.columns import IntArray, NodeBatch
from app.scheduler.framework import (
    MAX_NODE_SCORE,
    SKIP,
    CycleState,
    FilterPlugin,
    NodeScore,
    NodeToStatus,
    PostFilterPlugin,
    PostFilterResult,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreFilterResult,
    ReservePlugin,
    ScorePlugin,
    Status,
    error,
    skip,
    success,
    unresolvable,
    unschedulable,
)
from app.scheduler.nodeinfo import NodeInfo, PodInfo
from app.scheduler.plugins.helper import default_normalize_batch, default_normalize_score

NAME = "DynamicResources"
STATE_KEY = NAME
ERR_NOT_FOUND = "not found"
MSG_NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
MSG_CLAIMS_UNSUPPORTED = "resource claims are not supported by this simulator"
DEFAULT_FILTER_TIMEOUT = "10s"

_DURATION_UNITS = {
    "ns": 1e-9,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "m": 60.0,
    "h": 3600.0,
}
_DURATION_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")


def parse_go_duration(text: str) -> float:
    """Seconds in a Go ``time.Duration`` string ("10s", "1m30s", "-1.5h"); ValueError when malformed."""
    s = text
    sign = 1.0
    if s[:1] in ("+", "-"):
        sign = -1.0 if s[0] == "-" else 1.0
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise ValueError(f'time: invalid duration "{text}"')
    total = 0.0
    pos = 0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None:
            raise ValueError(f'time: invalid duration "{text}"')
        total += float(m.group(1)) * _DURATION_UNITS[m.group(2)]
        pos = m.end()
    return sign * total


def has_resource_claims(pod: PodInfo) -> bool:
    """The pod lists ``spec.resourceClaims``."""
    return bool(pod.spec.get("resourceClaims"))


@dataclass(slots=True)
class _StateData:
    """``stateData``: the pod's claims (always none in the simulator)."""

    claims: tuple[dict[str, Any], ...] = ()

    def clone(self) -> _StateData:
        # Upstream shares the state between clones; it is read-only here.
        return self


class DynamicResources(
    PreEnqueuePlugin, PreFilterPlugin, FilterPlugin, PostFilterPlugin, ScorePlugin, ReservePlugin, PreBindPlugin
):
    """``dynamicresources.DynamicResources`` for a cluster without ResourceClaims."""

    name: ClassVar[str] = NAME

    @classmethod
    def defaulted_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        """v1 defaults: ``filterTimeout`` 10s (DRASchedulerFilterTimeout is on); ``bindingTimeout`` stays unset."""
        out = dict(args)
        if out.get("filterTimeout") is None:
            out["filterTimeout"] = DEFAULT_FILTER_TIMEOUT
        return out

    @classmethod
    def validate_args(cls, args: dict[str, Any]) -> list[tuple[str, str]]:
        """``ValidateDynamicResourcesArgs`` with v1.35's default feature gates."""
        errors: list[tuple[str, str]] = []
        timeout = args.get("filterTimeout")
        if timeout is not None:
            try:
                seconds = parse_go_duration(str(timeout))
            except ValueError as exc:
                errors.append(("filterTimeout", f'Invalid value: "{timeout}": {exc}'))
            else:
                if seconds < 0:
                    errors.append(("filterTimeout", f'Invalid value: "{timeout}": must be zero or positive'))
        if args.get("bindingTimeout") is not None:
            errors.append(
                (
                    "bindingTimeout",
                    "Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled",
                )
            )
        return errors

    def _state(self, state: CycleState) -> _StateData | None:
        s = state.get(STATE_KEY)
        return s if isinstance(s, _StateData) else None

    # --- PreEnqueue ---------------------------------------------------------------------------------
    def pre_enqueue(self, pod: PodInfo) -> Status:
        # Claim lookups happen here upstream; unsupported claims are reported by PreFilter instead,
        # so that the attempt (and its message) shows up in the results.
        return success()

    # --- PreFilter / Filter -------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        # Upstream writes an empty state before looking at claims; PostFilter then reads it.
        state.write(STATE_KEY, _StateData())
        if has_resource_claims(pod):
            return None, unresolvable(MSG_CLAIMS_UNSUPPORTED)
        return None, SKIP

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        s = self._state(state)
        if s is None:
            return error(ERR_NOT_FOUND)
        return success()

    # --- PostFilter ---------------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        s = self._state(state)
        if s is None:
            return None, error(ERR_NOT_FOUND)
        if not s.claims:
            return None, unschedulable(MSG_NO_CLAIMS_TO_DEALLOCATE)
        return None, unschedulable("still not schedulable")

    # --- Score --------------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        if self._state(state) is None:
            return 0, error(ERR_NOT_FOUND)
        return 0, success()

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        if self._state(state) is None:
            return [], error(ERR_NOT_FOUND)
        return [0] * len(nodes), success()

    def score_batch(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        if self._state(state) is None:
            return None
        return np.zeros(len(batch), np.int64)

    def has_normalize(self) -> bool:
        return True

    def normalize_batch(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray | None:
        return default_normalize_batch(MAX_NODE_SCORE, False, scores)

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return success()

    # --- Reserve / PreBind --------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if self._state(state) is None:
            return error(ERR_NOT_FOUND)
        return success()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        return None

    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        s = self._state(state)
        if s is None:
            return error(ERR_NOT_FOUND)
        if not s.claims:
            return skip()
        return success()

    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        if self._state(state) is None:
            return error(ERR_NOT_FOUND)
        return success()

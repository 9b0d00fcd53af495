"""A replay's node as its kubelet reports it (``kss node fail|heal``) and kss serve's node lifecycle controller then
taints it: the Ready condition and the not-ready or unreachable taints the replay's scheduler and the taint eviction
controller see (``world.py`` runs the controllers themselves)."""

from __future__ import annotations

import copy
from datetime import datetime

from kss_sim.controllers.node_lifecycle import (
    LAPSED_MESSAGE,
    LAPSED_REASON,
    UNKNOWN_ON_LAPSE,
    UNSCHEDULABLE,
    reconciled_taints,
)
from kss_sim.kube.node_ready import ready_condition
from kss_sim.kube.objects import Obj


def reported_node(node: Obj, report: str, now: datetime) -> Obj:
    """``node`` (a new object) with the Ready condition its kubelet reports (``kss node fail|heal``'s ``report``)
    and the taints the node lifecycle controller gives it for that (not-ready or unreachable, NoSchedule and
    NoExecute; none once Ready again), ``now`` the virtual instant: what the replay's scheduler and the taint
    eviction controller then see."""
    out = copy.deepcopy(node)
    status = out.setdefault("status", {})
    condition = ready_condition(report, now)
    kept = [c for c in status.get("conditions") or [] if isinstance(c, dict) and c.get("type") != "Ready"]
    if report == "unreachable":  # the node lifecycle controller's mark of a lapsed Lease: the pressures Unknown too
        kept = [
            {**c, "status": "Unknown", "reason": LAPSED_REASON, "message": LAPSED_MESSAGE,
             "lastTransitionTime": condition["lastTransitionTime"]} if c.get("type") in UNKNOWN_ON_LAPSE else c
            for c in kept
        ]  # fmt: skip
    status["conditions"] = [*kept, condition]
    # The Ready taints only: a replay's cordon sets spec.unschedulable without the controller's taint (which
    # uncordon would then leave behind), so the unschedulable taint stays as the node has it.
    probe = copy.deepcopy(out)
    has_unschedulable_taint = any(t.get("key") == UNSCHEDULABLE for t in (probe.get("spec") or {}).get("taints") or [])
    probe.setdefault("spec", {})["unschedulable"] = has_unschedulable_taint
    taints = reconciled_taints(probe, now.strftime("%Y-%m-%dT%H:%M:%SZ"))
    if taints is not None:
        spec = out.setdefault("spec", {})
        if taints:
            spec["taints"] = taints
        else:
            spec.pop("taints", None)
    return out

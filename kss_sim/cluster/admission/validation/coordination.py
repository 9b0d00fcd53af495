"""Validation of coordination.k8s.io/v1 Leases as kube-apiserver v1.35 does it (the fields the node Leases and
leader election write).
"""

from __future__ import annotations

from kss_sim.cluster.admission.validation import core
from kss_sim.cluster.admission.validation.metadata import validate_metadata
from kss_sim.cluster.admission.validation.workloads import nonnegative
from kss_sim.cluster.errors import Cause, forbidden, invalid, not_supported
from kss_sim.kube.objects import Obj


def validate_lease(lease: Obj) -> list[Cause]:
    """ValidateLease: a positive duration, non-negative transitions, a preferred holder only with a strategy."""
    causes = validate_metadata(lease, namespaced=True)
    spec = lease.get("spec") or {}
    duration = spec.get("leaseDurationSeconds")
    if isinstance(duration, int) and duration <= 0:
        causes.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    causes += nonnegative("spec.leaseTransitions", spec.get("leaseTransitions"))
    strategy = spec.get("strategy")
    if strategy is not None and strategy != "OldestEmulationVersion":
        causes.append(not_supported("spec.strategy", strategy, ["OldestEmulationVersion"]))
    if spec.get("preferredHolder") and not strategy:
        causes.append(forbidden("spec.preferredHolder", "may only be specified if `strategy` is defined"))
    return causes


# The write paths look validators up in core's tables.
core.VALIDATORS["Lease"] = validate_lease
core.UPDATE_VALIDATORS["Lease"] = lambda new, old: validate_lease(new)

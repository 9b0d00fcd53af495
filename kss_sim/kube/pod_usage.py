"""A pod's usage of a resource as kss sets it by hand: the ``kss.sigs.k8s.io/<resource>-usage`` annotation, which
``kss serve``'s horizontal pod autoscaler reads where a cluster's would read the metrics API
(``kss_sim/controllers/replica_calculator.py``); a replay's usage curves write it, offline and against a server."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

USAGE_ANNOTATION = "kss.sigs.k8s.io/{resource}-usage"


def usage_annotations(curve: Mapping[str, Sequence[tuple[float, str]]], now: float) -> dict[str, str]:
    """The usage annotations a pod has at virtual time ``now`` under ``curve`` (resource -> (time, quantity) steps):
    each resource's latest step so far; a resource whose first step is still to come is left out."""
    wanted: dict[str, str] = {}
    for resource, steps in curve.items():
        current = [value for at, value in steps if at <= now]
        if current:
            wanted[USAGE_ANNOTATION.format(resource=resource)] = current[-1]
    return wanted

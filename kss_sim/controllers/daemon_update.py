"""The DaemonSet's rolling update: ``pkg/controller/daemon/update.go``'s ``rollingUpdate`` and
``findUpdatedPodsOnNode``, as a plan over plain objects that the controller (``daemonset.py``) carries out.

Without ``maxSurge``, old pods are deleted while no more than ``maxUnavailable`` are unavailable; with it, new pods
are created next to available old ones, up to ``maxSurge``, and the old ones go once the new are available.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from kss_sim.controllers.daemon_placement import DaemonPlacement, is_pod_updated, min_ready_seconds, surge_count
from kss_sim.controllers.owned import is_deleting, key_of, meta
from kss_sim.controllers.rollout import is_available, scaled_value
from kss_sim.kube.objects import Obj

log = logging.getLogger("kss_sim.controllers.daemonset")  # the controller's warnings under the controller's name


@dataclass
class DaemonPlan:
    """What one pass decided: pods to delete (names) and nodes to get a new pod."""

    delete: list[str] = field(default_factory=list)
    create: list[str] = field(default_factory=list)


def rolling_update_plan(
    ds: Obj,
    nodes: list[Obj],
    by_node: dict[str, list[Obj]],
    placement: DaemonPlacement,
    hash_: str,
    generation: int | None,
    now: datetime,
) -> DaemonPlan | None:
    """``rollingUpdate``: which old pods to replace within ``maxUnavailable`` (or ``maxSurge``), ``by_node`` the
    DaemonSet's pods by node (``getNodesToDaemonPods``); None for an invalid ``maxSurge`` or ``maxUnavailable``."""
    desired = 0
    for node in nodes:
        if placement.should_run(node)[0]:
            desired += 1
            by_node.setdefault(str(meta(node).get("name")), [])
    rolling = (ds.get("spec") or {}).get("updateStrategy", {}).get("rollingUpdate") or {}
    try:
        max_surge = surge_count(ds, desired)
        max_unavailable = scaled_value(rolling.get("maxUnavailable"), desired, round_up=True, default=1)
    except ValueError:
        log.warning("DaemonSet %s/%s: invalid maxSurge or maxUnavailable", *key_of(ds))
        return None
    if desired > 0 and max_unavailable == 0 and max_surge == 0:
        max_unavailable = 1  # an impossible configuration accepts unavailability, as upstream
    min_ready = min_ready_seconds(ds)
    nodes_by_name = {str(meta(n).get("name")): n for n in nodes}
    plan = DaemonPlan()
    if max_surge == 0:
        unavailable = 0
        replace_now: list[str] = []
        candidates: list[str] = []
        for pods in by_node.values():
            found = find_updated_pods_on_node(pods, hash_, generation)
            if found is None:
                unavailable += 1  # manage cleans this node up
                continue
            new_pod, old_pod = found
            if (old_pod is None) == (new_pod is None):
                unavailable += 1
            elif new_pod is not None:
                if not is_available(new_pod, min_ready, now):
                    unavailable += 1
            else:
                assert old_pod is not None
                if not is_available(old_pod, min_ready, now):
                    replace_now.append(str(meta(old_pod).get("name")))
                elif unavailable < max_unavailable:
                    candidates.append(str(meta(old_pod).get("name")))
        budget = max(0, min(max_unavailable - unavailable, len(candidates)))
        plan.delete = replace_now + candidates[:budget]
        return plan
    surged = 0
    available = 0
    allowed_new: list[str] = []
    candidate_nodes: list[str] = []
    should_not_run: list[str] = []
    for node_name, pods in by_node.items():
        found = find_updated_pods_on_node(pods, hash_, generation)
        if found is None:
            surged += 1
            continue
        new_pod, old_pod = found
        counted = old_pod if old_pod is not None else new_pod
        if counted is not None and is_available(counted, min_ready, now):
            available += 1
        if old_pod is None:
            continue
        target = nodes_by_name.get(node_name)
        if new_pod is None:
            runs_here = target is not None and placement.should_run(target)[0]
            if not is_available(old_pod, min_ready, now):
                if not runs_here:
                    plan.delete.append(str(meta(old_pod).get("name")))
                    continue
                allowed_new.append(node_name)
            elif not runs_here:
                should_not_run.append(str(meta(old_pod).get("name")))
            elif surged < max_surge:
                candidate_nodes.append(node_name)
        elif not is_available(new_pod, min_ready, now):
            surged += 1
        else:
            plan.delete.append(str(meta(old_pod).get("name")))
    # With surge the owner expects full availability: an old pod on a node it may no longer run on goes only
    # once another became available.
    deletable = min(available - desired, len(should_not_run))
    if deletable > 0:
        plan.delete += should_not_run[:deletable]
    remaining = max(0, min(max_surge - surged, len(candidate_nodes)))
    plan.create = allowed_new + candidate_nodes[:remaining]
    return plan


def find_updated_pods_on_node(
    pods: Iterable[Obj], hash_: str, generation: int | None
) -> tuple[Obj | None, Obj | None] | None:
    """``findUpdatedPodsOnNode``: (the new pod, the old pod) of a node; None when it has two of either."""
    new_pod: Obj | None = None
    old_pod: Obj | None = None
    for pod in pods:
        if is_deleting(pod):
            continue
        if is_pod_updated(pod, hash_, generation):
            if new_pod is not None:
                return None
            new_pod = pod
        else:
            if old_pod is not None:
                return None
            old_pod = pod
    return new_pod, old_pod

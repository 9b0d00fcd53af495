"""The node lifecycle controller: kube-controller-manager's ``pkg/controller/nodelifecycle`` in the part that moves
pods (node health from the heartbeat Lease, and the taints), over the virtual cluster.

- Taints follow the node (``TaintNodesByCondition`` and the NoExecute tainting pass): ``spec.unschedulable`` →
  ``node.kubernetes.io/unschedulable:NoSchedule`` (cordon / uncordon); the Ready condition False →
  ``node.kubernetes.io/not-ready`` NoSchedule and NoExecute, Unknown → ``node.kubernetes.io/unreachable``
  NoSchedule and NoExecute; MemoryPressure, DiskPressure, PIDPressure or NetworkUnavailable True → the
  ``memory-pressure``, ``disk-pressure``, ``pid-pressure``, ``network-unavailable`` NoSchedule taints. A NoExecute
  taint carries ``timeAdded``. The node's other taints are left as they are; a node without a Ready condition
  gets no Ready taint. The taint eviction controller (``taint_eviction.py``) acts on the NoExecute ones.
- Health: a node whose Lease in ``kube-node-lease`` has not been renewed for ``node_monitor_grace_period``
  (kube-controller-manager's ``--node-monitor-grace-period``, 50 s) since the later of its ``renewTime`` and the
  moment this controller first saw the node (so a restart after a pause does not fail every node at once, as
  upstream's health map starts each probe at first sight) has its Ready, MemoryPressure, DiskPressure and
  PIDPressure conditions set Unknown (``NodeStatusUnknown``, "Kubelet stopped posting node status."). Above 400
  nodes the simulated kubelet renews less often than every 10 s (``node_lease.py``); the grace period stretches
  in proportion (5,000 nodes: 125 s renewals, 625 s grace), so a lease renewed on time never lapses. In
  ``kss serve`` the simulated kubelet renews every node's lease, so this happens when nothing renews a lease
  (the simulated kubelet off, a lease mirrored from a source cluster whose node stopped). A node without a Lease
  is left as its status says (an imported cluster without the simulated kubelet stays Ready).
- A Ready condition leaving True gets the ``NodeNotReady`` Event "Node NAME status is now: NodeNotReady".

Nothing here sets Ready back to True: that is the kubelet's report, as on a cluster (``kubectl patch node NAME
--subresource status``, or ``kss node heal NAME``). Not done: zone-disruption rate limiting and marking the pods
of a not-ready node NotReady.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from kss_sim.cluster.errors import NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.due import DueQueue
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.node_lease import KUBELET_RENEW_INTERVAL, LEASE_NAMESPACE, renew_interval
from kss_sim.controllers.owned import meta
from kss_sim.kube.node_ready import node_monitor_grace_period, ready_status
from kss_sim.kube.objects import Obj
from kss_sim.kube.taints import EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE

log = logging.getLogger(__name__)

COMPONENT = "node-controller"
NODE_MONITOR_GRACE_PERIOD = node_monitor_grace_period(32)  # 50 s: the default at every release kss serves

UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
NOT_READY = "node.kubernetes.io/not-ready"
UNREACHABLE = "node.kubernetes.io/unreachable"
# TaintNodesByCondition: condition type -> (status that taints, taint key), NoSchedule.
CONDITION_TAINTS: dict[str, tuple[str, str]] = {
    "MemoryPressure": ("True", "node.kubernetes.io/memory-pressure"),
    "DiskPressure": ("True", "node.kubernetes.io/disk-pressure"),
    "PIDPressure": ("True", "node.kubernetes.io/pid-pressure"),
    "NetworkUnavailable": ("True", "node.kubernetes.io/network-unavailable"),
}
MANAGED: frozenset[tuple[str, str]] = frozenset(
    {
        (UNSCHEDULABLE, EFFECT_NO_SCHEDULE),
        (NOT_READY, EFFECT_NO_SCHEDULE),
        (NOT_READY, EFFECT_NO_EXECUTE),
        (UNREACHABLE, EFFECT_NO_SCHEDULE),
        (UNREACHABLE, EFFECT_NO_EXECUTE),
        *((key, EFFECT_NO_SCHEDULE) for _, key in CONDITION_TAINTS.values()),
    }
)
UNKNOWN_ON_LAPSE = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
LAPSED_REASON = "NodeStatusUnknown"
LAPSED_MESSAGE = "Kubelet stopped posting node status."
TICK = ""  # the key whose timer is the earliest lease deadline (no node has an empty name)


def effective_grace(grace: timedelta, nodes: int) -> timedelta:
    """The grace period for a cluster of ``nodes``: stretched as the simulated kubelet's renewal interval is
    above 400 nodes (``node_lease.renew_interval``), so a lease renewed on time never lapses."""
    return grace * max(1.0, renew_interval(nodes) / KUBELET_RENEW_INTERVAL)


def _time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def conditions_of(node: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The node's conditions by type."""
    found = (node.get("status") or {}).get("conditions") or []
    return {str(c.get("type")): c for c in found if isinstance(c, dict)}


def wanted_taints(node: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The (key, effect) of each taint this controller wants on ``node`` now."""
    wanted: set[tuple[str, str]] = set()
    if (node.get("spec") or {}).get("unschedulable"):
        wanted.add((UNSCHEDULABLE, EFFECT_NO_SCHEDULE))
    ready = ready_status(node)
    if ready == "False":
        wanted |= {(NOT_READY, EFFECT_NO_SCHEDULE), (NOT_READY, EFFECT_NO_EXECUTE)}
    elif ready is not None and ready != "True":
        wanted |= {(UNREACHABLE, EFFECT_NO_SCHEDULE), (UNREACHABLE, EFFECT_NO_EXECUTE)}
    conditions = conditions_of(node)
    for kind, (status, key) in CONDITION_TAINTS.items():
        if (conditions.get(kind) or {}).get("status") == status:
            wanted.add((key, EFFECT_NO_SCHEDULE))
    return wanted


def reconciled_taints(node: Mapping[str, Any], now: str) -> list[dict[str, Any]] | None:
    """The node's taints with this controller's as ``wanted_taints`` says (others kept, in order; a kept taint
    keeps its ``timeAdded``), or None when they already are."""
    current = [t for t in (node.get("spec") or {}).get("taints") or [] if isinstance(t, dict)]
    wanted = wanted_taints(node)
    kept = [t for t in current if (t.get("key"), t.get("effect")) not in MANAGED or (t["key"], t["effect"]) in wanted]
    present = {(t.get("key"), t.get("effect")) for t in kept}
    added = [
        {"key": key, "effect": effect, **({"timeAdded": now} if effect == EFFECT_NO_EXECUTE else {})}
        for key, effect in sorted(wanted - present)
    ]
    result = kept + added
    return None if result == current else result


class NodeLifecycleController(ReconcileLoop[str]):
    """Keeps nodes' taints and lease-based health (see the module docstring)."""

    name = "node-lifecycle-controller"
    watched_kinds = ("Node", "Lease")

    def __init__(
        self, store: ClusterPort, *, clock: Clock = utc_now, grace_period: float = NODE_MONITOR_GRACE_PERIOD
    ) -> None:
        """A stopped controller over ``store``; ``grace_period``: seconds a lease may go unrenewed."""
        super().__init__(store, clock=clock)
        self._grace = timedelta(seconds=grace_period)
        self._deadlines: DueQueue[str] = DueQueue()  # node -> when its lease lapses (one loop timer for all)
        self._first_seen: dict[str, datetime] = {}
        self._nodes: set[str] = set()
        self._last_ready: dict[str, str | None] = {}  # the Ready status last seen, for the NodeNotReady event

    def reset(self) -> None:
        self._deadlines.clear()
        self._first_seen.clear()
        self._nodes.clear()
        self._last_ready.clear()

    def observe(self, event_type: str, kind: str, obj: Obj) -> list[str]:
        m = meta(obj)
        name = str(m.get("name") or "")
        if kind == "Lease":
            return [name] if m.get("namespace") == LEASE_NAMESPACE else []
        if event_type == DELETED:
            self._nodes.discard(name)
            self._deadlines.discard(name)
            self._first_seen.pop(name, None)
            self._last_ready.pop(name, None)
            return []
        self._nodes.add(name)
        return [name]

    def resync(self) -> list[str]:
        for entry in self.store.select("Node").items:
            self._nodes.add(entry.name)
            self._last_ready[entry.name] = ready_status(entry.obj)
        return sorted(self._nodes)

    def reconcile(self, name: str) -> None:
        if name == TICK:
            for due in self._deadlines.pop_due(self.now(), 1000):
                self.reconcile(due)
            self._arm()
            return
        try:
            node = self.store.read("Node", None, name).obj
        except NotFound:
            return
        now = self.now()
        self._first_seen.setdefault(name, now)
        node = self._check_lease(name, node, now)
        self._note_ready(name, node)
        taints = reconciled_taints(node, self.timestamp())
        if taints is not None:
            body = {"metadata": {"resourceVersion": meta(node).get("resourceVersion")}, "spec": {"taints": taints}}
            self.store.patch("Node", None, name, body, "merge", manager=COMPONENT)
            log.info("node %s: taints now %s", name, [f"{t['key']}:{t['effect']}" for t in taints] or "none")

    def _check_lease(self, name: str, node: Obj, now: datetime) -> Obj:
        """``tryUpdateNodeHealth`` on the lease: past the grace period, the conditions Unknown; else a timer."""
        try:
            lease = self.store.read("Lease", LEASE_NAMESPACE, name).obj
        except NotFound:
            return node
        renewed = _time((lease.get("spec") or {}).get("renewTime"))
        probed = max(renewed, self._first_seen[name]) if renewed is not None else self._first_seen[name]
        deadline = probed + effective_grace(self._grace, len(self._nodes))
        if now < deadline:
            self._deadlines.schedule(name, deadline)
            self._arm()
            return node
        self._deadlines.discard(name)
        if ready_status(node) == "Unknown":
            return node
        stamp = self.timestamp()
        conditions = conditions_of(node)
        updated = []
        for condition in (node.get("status") or {}).get("conditions") or []:
            if isinstance(condition, dict) and condition.get("type") in UNKNOWN_ON_LAPSE:
                condition = {**condition, "status": "Unknown", "reason": LAPSED_REASON, "message": LAPSED_MESSAGE}
                condition["lastTransitionTime"] = stamp
            updated.append(condition)
        if "Ready" not in conditions:
            updated.append(
                {
                    "type": "Ready",
                    "status": "Unknown",
                    "reason": "NodeStatusNeverUpdated",
                    "message": "Kubelet never posted node status.",
                    "lastHeartbeatTime": stamp,
                    "lastTransitionTime": stamp,
                }
            )
        log.info("node %s: lease not renewed since %s, status Unknown", name, probed.isoformat())
        body = {"metadata": {"resourceVersion": meta(node).get("resourceVersion")}, "status": {"conditions": updated}}
        return self.store.patch("Node", None, name, body, "merge", subresource="status", manager=COMPONENT)

    def _arm(self) -> None:
        earliest = self._deadlines.earliest()
        if earliest is not None:
            self.requeue_at(TICK, earliest)

    def _note_ready(self, name: str, node: Obj) -> None:
        status = ready_status(node)
        before = self._last_ready.get(name)
        self._last_ready[name] = status
        if before == "True" and status != "True":
            self.store.create_event(
                node, "NodeNotReady", f"Node {name} status is now: NodeNotReady", component=COMPONENT
            )

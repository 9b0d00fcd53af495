"""Node heartbeat Leases: the kubelet's part in ``kube-node-lease`` (k8s.io/component-helpers' lease controller as
the kubelet runs it, ``pkg/kubelet/util/nodelease.go``), so ``kubectl describe node`` finds one.

Each node has a ``coordination.k8s.io/v1`` Lease named after it in ``kube-node-lease``: ``holderIdentity`` the
node's name, ``leaseDurationSeconds`` 40, ``renewTime`` (a MicroTime) and an ownerReference to the Node
(``apiVersion: v1``, ``kind: Node``, name and uid, as ``setNodeOwnerFunc`` writes it). It is created when the node
appears, renewed on the controller's clock and deleted with the node. A Lease deleted by hand comes back at the
next renewal, as the kubelet's would.

How often: the kubelet renews every 10 s (a quarter of the duration). Here that holds up to
``renewals_per_second`` × 10 nodes (400 by default); above, the interval stretches so the whole cluster writes at
most ``renewals_per_second`` renewals a second (5,000 nodes: every 125 s). Every renewal is a durable write and a
watch event, so a large cluster's leases look older than a real one's rather than flooding the store and pushing
other changes out of the watch window; the node lifecycle controller, which reads a lease's age, stretches its
grace period in proportion (``node_lifecycle.effective_grace``). Renewals are spread: a lease is next due one
interval after its last renewal, and the stale leases found at start are renewed across the first interval, not
all at once.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

from kss_sim.cluster.errors import AlreadyExists, Conflict, NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.due import DueQueue
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION_SECONDS = 40
KUBELET_RENEW_INTERVAL = timedelta(seconds=LEASE_DURATION_SECONDS / 4)  # nodeLeaseRenewIntervalFraction 0.25
RENEWALS_PER_SECOND = 40.0

TICK = ""  # the key whose timer is the earliest renewal (no node has an empty name)


def renew_interval(nodes: int, renewals_per_second: float = RENEWALS_PER_SECOND) -> timedelta:
    """The kubelet's 10 s, stretched so ``nodes`` leases take at most ``renewals_per_second`` writes a second."""
    return max(KUBELET_RENEW_INTERVAL, timedelta(seconds=nodes / renewals_per_second))


def micro_time(moment: datetime) -> str:
    """``metav1.MicroTime`` as the API writes it (``2006-01-02T15:04:05.000000Z``)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def node_owner(node: Mapping[str, Any]) -> dict[str, Any]:
    """The ownerReference the kubelet puts on its lease."""
    meta = node.get("metadata") or {}
    return {"apiVersion": "v1", "kind": "Node", "name": meta.get("name"), "uid": meta.get("uid")}


def lease_for(node: Mapping[str, Any], now: datetime) -> Obj:
    """A new node Lease, renewed ``now``."""
    name = (node.get("metadata") or {}).get("name")
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": LEASE_NAMESPACE, "ownerReferences": [node_owner(node)]},
        "spec": {"holderIdentity": name, "leaseDurationSeconds": LEASE_DURATION_SECONDS, "renewTime": micro_time(now)},
    }


def _owned_by_node(lease: Mapping[str, Any], name: str) -> bool:
    refs = (lease.get("metadata") or {}).get("ownerReferences") or []
    return any(isinstance(r, dict) and r.get("kind") == "Node" and r.get("name") == name for r in refs)


def _spread(name: str) -> float:
    """A stable fraction in [0, 1) for ``name``: where in an interval its first renewal falls."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "big") / 2**32


class NodeLeaseController(ReconcileLoop[str]):
    """Keeps one heartbeat Lease per node (see the module docstring); ``start``/``stop`` with the app."""

    name = "node-lease"
    watched_kinds = ("Node",)

    def __init__(
        self,
        store: ClusterPort,
        *,
        clock: Clock = utc_now,
        renewals_per_second: float = RENEWALS_PER_SECOND,
        renewals_per_tick: int = 100,
        retry_base_seconds: float = 0.005,
        retry_max_seconds: float = 60.0,
    ) -> None:
        """A stopped controller over ``store``; ``renewals_per_second`` bounds the cluster's renewal rate,
        ``renewals_per_tick`` how many renewals one pass writes before the worker looks at node changes again."""
        super().__init__(store, clock=clock, retry_base_seconds=retry_base_seconds, retry_max_seconds=retry_max_seconds)
        self._rate = renewals_per_second
        self._per_tick = max(1, renewals_per_tick)
        self._nodes: set[str] = set()
        self._renewals: DueQueue[str] = DueQueue()

    @property
    def interval(self) -> timedelta:
        """The renewal interval for the nodes known now."""
        return renew_interval(len(self._nodes), self._rate)

    def reset(self) -> None:
        self._nodes.clear()
        self._renewals.clear()

    def observe(self, event_type: str, kind: str, obj: Obj) -> list[str]:
        name = str((obj.get("metadata") or {}).get("name") or "")
        if event_type == DELETED:
            self._nodes.discard(name)
            self._renewals.discard(name)
        else:
            self._nodes.add(name)
        return [name]

    def resync(self) -> list[str]:
        """Every node, and every node lease whose node is gone (to delete it)."""
        self._nodes = {entry.name for entry in self.store.select("Node").items}
        orphans = [
            entry.name
            for entry in self.store.select("Lease", LEASE_NAMESPACE).items
            if entry.name not in self._nodes and _owned_by_node(entry.obj, entry.name)
        ]
        return sorted(self._nodes) + orphans

    def reconcile(self, key: str) -> None:
        if key == TICK:
            self._renew_due()
        else:
            self._sync(key)

    def _sync(self, name: str, *, renew: bool = False) -> None:
        """Make ``name``'s lease match its node: created, deleted, or due for renewal (now, when ``renew``)."""
        node = self._read("Node", None, name)
        lease = self._read("Lease", LEASE_NAMESPACE, name)
        if node is None:
            self._renewals.discard(name)
            if lease is not None and _owned_by_node(lease, name):
                with contextlib.suppress(NotFound, Conflict):  # already gone, or replaced by someone else's
                    self.store.delete("Lease", LEASE_NAMESPACE, name, uid=lease["metadata"].get("uid"))
            return
        now = self.now()
        if lease is None:
            try:
                self.store.create("Lease", lease_for(node, now), LEASE_NAMESPACE)
            except AlreadyExists:
                self._sync(name, renew=True)  # created meanwhile: renew that one
                return
            self._schedule(name, now + self.interval)
            return
        stale_owner = (lease["metadata"].get("ownerReferences") or []) != [node_owner(node)]
        if renew or stale_owner:
            self._renew(node, lease, now)
            self._schedule(name, now + self.interval)
        elif name not in self._renewals:
            renewed = _parse_time((lease.get("spec") or {}).get("renewTime"))
            due = renewed + self.interval if renewed is not None else None
            if due is None or due <= now:
                due = now + self.interval * _spread(name)  # stale (a restart): spread over one interval
            self._schedule(name, due)

    def _renew(self, node: Obj, lease: Obj, now: datetime) -> None:
        """What the kubelet's renewal writes, with the resourceVersion read: the renew time, itself as holder,
        the duration, and the node as owner."""
        meta = lease["metadata"]
        body = {
            "metadata": {"resourceVersion": meta["resourceVersion"], "ownerReferences": [node_owner(node)]},
            "spec": {
                "holderIdentity": node["metadata"]["name"],
                "leaseDurationSeconds": LEASE_DURATION_SECONDS,
                "renewTime": micro_time(now),
            },
        }
        self.store.patch("Lease", LEASE_NAMESPACE, str(meta["name"]), body, "merge")

    def _renew_due(self) -> None:
        due = self._renewals.pop_due(self.now(), self._per_tick)
        for i, name in enumerate(due):
            try:
                self._sync(name, renew=True)
            except Exception:
                for again in due[i:]:  # back in the queue; the loop retries the tick with backoff
                    self._renewals.schedule(again, self.now())
                self._arm()
                raise
        self._arm()

    def _schedule(self, name: str, when: datetime) -> None:
        self._renewals.schedule(name, when)
        self._arm()

    def _arm(self) -> None:
        earliest = self._renewals.earliest()
        if earliest is not None:
            self.requeue_at(TICK, earliest)

    def _read(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        try:
            return self.store.read(kind, namespace, name).obj  # read-only
        except NotFound:
            return None

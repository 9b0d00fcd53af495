"""The scheduler's cache: the live snapshot kept in step with cluster events.

Nodes keep their order of arrival so the node-tree order (zones by first appearance, round robin)
matches kube-scheduler's; bound pods are tracked by uid so an assumed pod is replaced, not doubled,
when its binding comes back as an event.
"""

from __future__ import annotations

import logging
from typing import Any

from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.pod_shape import POD_DEFECT_MEMO, pod_defect
from kss_sim.scheduler.snapshot import Snapshot, node_tree_order, zone_key

log = logging.getLogger("kss.scheduler")


class SchedulerCache:
    """Owns the Snapshot the scheduling cycle reads and applies node and pod changes to it."""

    def __init__(self, *, pod_level_resources: bool = True) -> None:
        self.snapshot = Snapshot([])
        # The PodLevelResources gate: whether the nodes count pods' pod-level requests.
        self.pod_level_resources = pod_level_resources
        self._nodes: dict[str, dict[str, Any]] = {}  # insertion order = arrival order
        self._pods: dict[str, PodInfo] = {}  # uid -> bound (or assumed) pod
        # The pods this scheduler assumed whose bound version no event has confirmed yet: only these can be forgotten.
        self._assumed: set[str] = set()
        # Bound pods whose node is not known yet (pods may arrive before their node).
        self._orphans: dict[str, PodInfo] = {}
        # Nodes per zone key, and the nodes listing images: with one zone the node tree is the arrival order, and
        # without images no summary changes, so adding the nodes of a large cluster one by one stays linear.
        self._zone_sizes: dict[str, int] = {}
        self._with_images: set[str] = set()

    # --- nodes ----------------------------------------------------------------------------------
    def _reorder(self) -> None:
        """The node list in node-tree order, rebuilt from every node (after a node left or changed zone)."""
        if len(self._zone_sizes) <= 1:
            order: list[str] = list(self._nodes)
        else:
            order = node_tree_order(self._nodes.values())
            # Zones in order of first appearance again (a zone's first node may have gone), as _place expects.
            self._zone_sizes = {
                zone: self._zone_sizes[zone] for zone in dict.fromkeys(map(zone_key, self._nodes.values()))
            }
        self.snapshot.node_info_list = list(map(self.snapshot.node_info_map.__getitem__, order))
        self.snapshot.generation += 1

    def _place(self, ni: NodeInfo, zone: str) -> None:
        """Put a node that arrived last where the node tree lists it, the others keeping their order.

        Before its zone's count is raised: the node is its zone's ``k``-th, so it comes after every node of the
        rounds before ``k`` and, in round ``k``, after the zones listed before its own that still have one.
        Rebuilding the order per node made adding the nodes of a 5,000-node cluster in three zones quadratic
        (~1 minute of the scheduler thread in ``kss serve``).
        """
        k = self._zone_sizes.get(zone, 0)
        position = 0
        before = True
        for other, size in self._zone_sizes.items():
            if other == zone:
                before = False
                position += k
            else:
                position += min(size, k) + (1 if before and size > k else 0)
        current = self.snapshot.node_info_list
        self.snapshot.node_info_list = [*current[:position], ni, *current[position:]]
        self.snapshot.generation += 1

    def _count_node(self, name: str, node: dict[str, Any], sign: int, *, zone: bool = True) -> bool:
        """Keep the zone sizes (unless ``zone`` is False) and the nodes with images in step (``sign`` +1: ``node``
        comes, -1: it goes); True when some node listed images before or after, i.e. the image summaries need a
        refresh."""
        if zone:
            key = zone_key(node)
            left = self._zone_sizes.get(key, 0) + sign
            if left > 0:
                self._zone_sizes[key] = left
            else:
                self._zone_sizes.pop(key, None)
        had_images = bool(self._with_images)
        if sign > 0 and (node.get("status") or {}).get("images"):
            self._with_images.add(name)
        elif sign < 0:
            self._with_images.discard(name)
        return had_images or bool(self._with_images)

    def _refresh_images(self, needed: bool) -> None:
        # Marked, not recomputed: the summaries count every node listing each image, so recomputing them per node
        # made adding a cluster whose nodes list images quadratic (minutes of the scheduler thread at 5,000 nodes
        # in kss serve, the API starved meanwhile); the next cycle recomputes them once (Scheduler.schedule_one).
        if needed:
            self.snapshot.image_states_stale = True

    def add_node(self, node: dict[str, Any]) -> None:
        name = (node.get("metadata") or {}).get("name") or ""
        if name in self._nodes:
            self.update_node(node)
            return
        ni = NodeInfo(node, pod_level_resources=self.pod_level_resources)
        node = ni.node  # without wrongly typed fields (node_shape.py)
        self._nodes[name] = node
        self.snapshot.node_info_map[name] = ni
        for uid, pi in list(self._orphans.items()):
            if pi.node_name == name:
                ni.add_pod(pi)
                del self._orphans[uid]
        self._place(ni, zone_key(node))
        self._refresh_images(self._count_node(name, node, +1))

    def node(self, name: str) -> dict[str, Any] | None:
        """The node object the cache holds by that name, or None."""
        return self._nodes.get(name)

    def update_node(self, node: dict[str, Any]) -> None:
        name = (node.get("metadata") or {}).get("name") or ""
        old = self._nodes.get(name)
        if old is None:
            self.add_node(node)
            return
        ni = NodeInfo(node, pod_level_resources=self.pod_level_resources)
        node = ni.node  # without wrongly typed fields (node_shape.py)
        same_zone = zone_key(old) == zone_key(node)
        if not same_zone:
            # kube-scheduler's node tree removes and re-adds a node whose zone changed.
            del self._nodes[name]
        self._nodes[name] = node
        # A node staying in its zone leaves the zones' order alone (a zone of one would otherwise move last).
        images = self._count_node(name, old, -1, zone=not same_zone)
        images = self._count_node(name, node, +1, zone=not same_zone) or images
        prev = self.snapshot.node_info_map[name]
        for pi in prev.pods:
            ni.add_pod(pi)
        self.snapshot.node_info_map[name] = ni
        if same_zone:  # same place in the node tree
            current = self.snapshot.node_info_list
            i = current.index(prev)
            self.snapshot.node_info_list = [*current[:i], ni, *current[i + 1 :]]
            self.snapshot.generation += 1
        else:
            self._reorder()
        self._refresh_images(images)

    def remove_node(self, name: str) -> None:
        node = self._nodes.pop(name, None)
        if node is None:
            return
        images = self._count_node(name, node, -1)
        ni = self.snapshot.node_info_map.pop(name)
        for pi in ni.pods:
            self._orphans[pi.uid] = pi
        self._reorder()
        self._refresh_images(images)

    # --- pods -----------------------------------------------------------------------------------
    def assume_pod(self, pod: PodInfo) -> None:
        """``AssumePod``: the pod on the node its scheduling cycle chose, until its binding's event confirms it
        (:meth:`add_pod`) or a failed binding cycle forgets it (:meth:`forget_pod`)."""
        self.add_pod(pod)
        if pod.uid in self._pods:
            self._assumed.add(pod.uid)

    def forget_pod(self, uid: str, node_name: str) -> bool:
        """``ForgetPod``: undo :meth:`assume_pod` after a failed binding cycle. A pod an event has confirmed since
        (another binder placed it) keeps its place, as does one on another node than ``node_name``; False then
        (kube-scheduler logs the error and raises no AssignedPodDelete)."""
        current = self._pods.get(uid)
        if current is None:
            return False  # gone already (its deletion freed the node and raised its event): nothing to forget
        if current.node_name != node_name:
            log.error("pod %s was assumed on %s but assigned to %s", current.key, node_name, current.node_name)
            return False
        if uid not in self._assumed:
            log.error("pod %s is not assumed, so it cannot be removed or forgotten", current.key)
            return False
        self.remove_pod(uid)
        return True

    def add_pod(self, pod: PodInfo) -> None:
        """Account for a bound pod (``AddPod``/``UpdatePod``: an assumed one is confirmed); replaces an earlier version
        with the same uid. A malformed pod (pod_shape.py) is left out, as kube-scheduler's informer drops an object
        it cannot decode."""
        if pod.uid in self._pods or pod.uid in self._orphans:  # else nothing to remove (nor assumed: not held)
            self.remove_pod(pod.uid)
        defect = pod.memo(POD_DEFECT_MEMO, lambda: pod_defect(pod.pod))
        if defect is not None:
            log.warning("bound pod %s left out of its node's accounting: %s", pod.key, defect)
            return
        self._pods[pod.uid] = pod
        ni = self.snapshot.node_info_map.get(pod.node_name)
        if ni is None:
            self._orphans[pod.uid] = pod
            return
        ni.add_pod(pod)
        self.snapshot.generation += 1

    def remove_pod(self, uid: str) -> PodInfo | None:
        old = self._pods.pop(uid, None)
        self._orphans.pop(uid, None)
        self._assumed.discard(uid)
        if old is None:
            return None
        ni = self.snapshot.node_info_map.get(old.node_name)
        if ni is not None:
            ni.remove_pod(old)
            self.snapshot.generation += 1
        return old

    def get_pod(self, uid: str) -> PodInfo | None:
        return self._pods.get(uid)

    def is_assumed(self, uid: str) -> bool:
        """``IsAssumedPod``: assumed by this scheduler, its binding not confirmed by an event yet."""
        return uid in self._assumed

    def pod_count(self) -> int:
        return len(self._pods)

    def node_count(self) -> int:
        return len(self._nodes)

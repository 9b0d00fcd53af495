"""The cluster as one scheduling cycle sees it: the ``Snapshot`` of NodeInfos, in kube-scheduler's node-tree order
(``zone_key``, ``node_tree_order``).
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable, Mapping
from typing import Any

import numpy as np

from kss_sim.scheduler.columns import NodeColumns
from kss_sim.scheduler.nodeinfo import ImageStateSummary, NodeInfo, PodInfo
from kss_sim.scheduler.pod_shape import POD_DEFECT_MEMO, pod_defect


def zone_key(node: Mapping[str, Any]) -> str:
    """``utilnode.GetZoneKey``: region and zone, the beta failure-domain labels winning when present."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    zone = labels.get("failure-domain.beta.kubernetes.io/zone")
    if zone is None:
        zone = labels.get("topology.kubernetes.io/zone", "")
    region = labels.get("failure-domain.beta.kubernetes.io/region")
    if region is None:
        region = labels.get("topology.kubernetes.io/region", "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def node_tree_order(nodes: Iterable[Mapping[str, Any]]) -> list[str]:
    """kube-scheduler's node list: zones in order of first appearance, one node of each zone per round."""
    zones: dict[str, list[str]] = {}
    for node in nodes:
        name = (node.get("metadata") or {}).get("name") or ""
        zones.setdefault(zone_key(node), []).append(name)
    result: list[str] = []
    columns = list(zones.values())
    depth = max((len(c) for c in columns), default=0)
    for i in range(depth):
        for column in columns:
            if i < len(column):
                result.append(column[i])
    return result


class Snapshot:
    """The cluster as one scheduling cycle sees it (``cache.Snapshot``): NodeInfos in node-tree order."""

    def __init__(self, node_infos: list[NodeInfo]) -> None:
        self.node_info_list = node_infos
        self.node_info_map: dict[str, NodeInfo] = {ni.name: ni for ni in node_infos}
        self.generation = 0
        # A v1.36 PodGroup cycle's placement being tried (``AssumePlacement``): the only nodes its pods may go to.
        self.placement: list[NodeInfo] | None = None
        self._placement_names: frozenset[str] = frozenset()
        self._columns: NodeColumns | None = None
        # The order nodes reached kube-scheduler's cache (file order): an image's size is the first node's.
        self.cache_order: list[str] = [ni.name for ni in node_infos]
        # Nodes came, changed or went since the image summaries were computed (see ``refresh_image_states``).
        self.image_states_stale = False
        # The node list ``any_defective`` last looked at, and what it found.
        self._defects_of: list[NodeInfo] | None = None
        self._any_defective = False
        # Each node's position in the node list ``_positions`` was built for (see ``in_list_order``).
        self._positions_of: list[NodeInfo] | None = None
        self._positions: dict[str, int] = {}

    @classmethod
    def build(
        cls,
        nodes: Iterable[dict[str, Any]],
        pods: Iterable[dict[str, Any] | PodInfo],
        *,
        pod_level_resources: bool = True,
    ) -> Snapshot:
        """Build NodeInfos for ``nodes`` (in node-tree order) with the bound ``pods`` assigned; with
        ``pod_level_resources`` (the gate) off, the nodes ignore pods' pod-level requests."""
        # NodeInfo first: the node tree reads the labels of the checked nodes (node_shape.py).
        by_name = {ni.name: ni for ni in (NodeInfo(n, pod_level_resources=pod_level_resources) for n in nodes)}
        infos = {name: by_name[name] for name in node_tree_order(ni.node for ni in by_name.values())}
        for p in pods:
            pi = p if isinstance(p, PodInfo) else PodInfo(p)
            ni = infos.get(pi.node_name)
            # A malformed bound pod is left out, as SchedulerCache.add_pod leaves it (pod_shape.py).
            if ni is not None and pi.memo(POD_DEFECT_MEMO, functools.partial(pod_defect, pi.pod)) is None:
                ni.add_pod(pi)
        snap = cls(list(infos.values()))
        snap.cache_order = [name for name in by_name if name in infos]
        snap.refresh_image_states()
        return snap

    def refresh_image_states(self) -> None:
        """Recompute per-node image summaries as the scheduler cache keeps them (``addNodeImageStates``).

        The cache holds one entry per image name: its size comes from the first node (in cache order)
        listing that name, and it counts the nodes listing it.
        """
        sizes: dict[str, int] = {}
        holders: dict[str, set[str]] = {}
        known = set(self.cache_order)
        order = [*self.cache_order, *(ni.name for ni in self.node_info_list if ni.name not in known)]
        for name in order:
            ni = self.node_info_map.get(name)
            if ni is None:
                continue
            for image in (ni.node.get("status") or {}).get("images") or []:
                for image_name in image.get("names") or []:
                    if image_name not in sizes:
                        sizes[image_name] = int(image.get("sizeBytes") or 0)
                    holders.setdefault(image_name, set()).add(ni.name)
        self.image_states_stale = False
        summaries = {n: ImageStateSummary(size=sizes[n], num_nodes=len(h)) for n, h in holders.items()}
        for ni in self.node_info_list:
            states: dict[str, ImageStateSummary] = {}
            for image in (ni.node.get("status") or {}).get("images") or []:
                for image_name in image.get("names") or []:
                    states[image_name] = summaries[image_name]
            ni.image_states = states
        self._columns = None  # image-derived columns are stale

    def columns(self) -> NodeColumns:
        """The nodes as columns, in ``node_info_list`` order, synced with every pod change so far.

        Built again when the node list itself changed (a new list object, or nodes added, removed, replaced).
        """
        cols = self._columns
        infos = self.node_info_list
        if cols is None or cols.infos is not infos or cols.n != len(infos):
            cols = self._columns = NodeColumns(infos)
        else:
            cols.sync()
        return cols

    def get(self, name: str) -> NodeInfo | None:
        return self.node_info_map.get(name)

    def assume_placement(self, nodes: list[NodeInfo]) -> None:
        """``AssumePlacement``: cycles see only ``nodes`` (all of them: no placement) until :meth:`forget_placement`."""
        if len(nodes) == len(self.node_info_list):
            self.forget_placement()
            return
        self.placement = nodes
        self._placement_names = frozenset(ni.name for ni in nodes)

    def forget_placement(self) -> None:
        self.placement = None
        self._placement_names = frozenset()

    def nodes_in_placement(self) -> list[NodeInfo]:
        """``ListNodesInPlacement``: the placement's nodes, or every node when none is assumed."""
        return self.node_info_list if self.placement is None else self.placement

    def in_placement(self, name: str) -> bool:
        """Whether node ``name`` is one a cycle may pick now (``GetNodeInPlacement`` finds it)."""
        return self.placement is None or name in self._placement_names

    def in_list_order(self, names: Collection[str]) -> list[NodeInfo]:
        """The named nodes that exist, in ``node_info_list`` order: the nodes a PreFilterResult allows.

        Looked up by name when they are few (a DaemonSet pod names one node of thousands: a scan of the whole
        list per pod made such pods cost as much as the cluster is large).
        """
        infos = self.node_info_list
        if len(names) * 8 >= len(infos):
            return [ni for ni in infos if ni.name in names]
        if self._positions_of is not infos:
            self._positions = {ni.name: i for i, ni in enumerate(infos)}
            self._positions_of = infos
        positions = self._positions
        return [infos[i] for i in sorted(positions[name] for name in names if name in positions)]

    def any_defective(self) -> bool:
        """Whether some node is malformed (``NodeInfo.defect``); checked again when the node list is replaced."""
        infos = self.node_info_list
        if self._defects_of is not infos:
            self._defects_of = infos
            self._any_defective = any(ni.defect is not None for ni in infos)
        return self._any_defective

    def current_columns(self) -> NodeColumns | None:
        """The columns when they are built for the node list (synced), else None: for code that can use them but
        should not build them."""
        return self._current_columns()

    def _current_columns(self) -> NodeColumns | None:
        """The columns when they match the node list (synced), without building them."""
        cols = self._columns
        if cols is None or cols.infos is not self.node_info_list or cols.n != len(self.node_info_list):
            return None
        cols.sync()
        return cols

    @property
    def have_pods_with_affinity_list(self) -> list[NodeInfo]:
        cols = self._current_columns()
        if cols is not None:
            return [cols.infos[i] for i in np.flatnonzero(cols.num_affinity_pods).tolist()]
        return [ni for ni in self.node_info_list if ni.pods_with_affinity]

    @property
    def have_pods_with_required_anti_affinity_list(self) -> list[NodeInfo]:
        cols = self._current_columns()
        if cols is not None:
            return [cols.infos[i] for i in np.flatnonzero(cols.num_anti_affinity_pods).tolist()]
        return [ni for ni in self.node_info_list if ni.pods_with_required_anti_affinity]

    def num_nodes(self) -> int:
        return len(self.node_info_list)

    def add_pod(self, pi: PodInfo, node_name: str) -> None:
        """Bind a pod in the snapshot (the scheduler cache's assume)."""
        ni = self.node_info_map[node_name]
        ni.add_pod(pi)
        self.generation += 1

    def remove_pod(self, pi: PodInfo) -> None:
        ni = self.node_info_map.get(pi.node_name)
        if ni is not None:
            ni.remove_pod(pi)
            self.generation += 1

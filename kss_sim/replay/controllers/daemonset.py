"""DaemonSets on the virtual clock: one pod per eligible node, placed by the scheduler.

As kube-controller-manager's DaemonSet controller (``app/controllers/daemon_placement.py``): a node should run the
pod when the template's nodeName, node affinity and the taints (against the template's tolerations plus the daemon
ones, ``node.kubernetes.io/*`` NoSchedule/NoExecute) allow; each pod gets the required node affinity ``matchFields
metadata.name In [node]`` and the daemon tolerations, ``controller-revision-hash`` and ``pod-template-generation``
labels. Nodes added get a pod, a pod whose node no longer allows it (a NoExecute taint it does not tolerate) or is
gone is deleted, a pod that finished or was deleted is made again. RollingUpdate replaces old pods with at most
``maxUnavailable`` (default 1) nodes without an available pod, nodes in name order; OnDelete waits for pods to go.
``maxSurge`` is not modelled (as 0).
"""

from __future__ import annotations

from typing import Any

from kss_sim.controllers import daemon_placement as dp
from kss_sim.controllers.owned import pod_from_template
from kss_sim.controllers.rollout import CONTROLLER_REVISION_HASH_LABEL, scaled_value, template_hash
from kss_sim.kube.objects import Obj
from kss_sim.replay.controllers.base import Hub, Owner, TrackedPod, int_spec


class DaemonSetOwner(Owner):
    """One DaemonSet; its pods are tracked by the node each targets."""

    kind = "DaemonSet"
    api_version = "apps/v1"

    def __init__(self, hub: Hub, obj: Obj, run_for: float | None) -> None:
        super().__init__(hub, obj, run_for)

    @property
    def min_ready_seconds(self) -> int:
        return int_spec(self.spec, "minReadySeconds", 0)

    # --- adoption ---------------------------------------------------------------------------------------------
    def may_own(self, pod: Obj) -> bool:
        """Only a pod with a node (``GetTargetNodeName``: its nodeName or its node-name affinity)."""
        return dp.target_node_name(pod) is not None

    def adoption_facts(self, pod: Obj) -> dict[str, Any]:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        revision = str(labels.get(CONTROLLER_REVISION_HASH_LABEL) or "")
        return {"target_node": dp.target_node_name(pod) or "", "revision": revision}

    def _by_node(self) -> dict[str, TrackedPod]:
        return {pod.target_node: pod for pod in self.pods.values()}

    def sync(self) -> None:
        placement = dp.DaemonPlacement.of(self.obj)
        revision = template_hash(self.spec.get("template"))
        nodes = {str((n.get("metadata") or {}).get("name") or ""): n for n in self.hub.actions.node_objects()}
        self._delete_duplicates()
        pods = self._by_node()
        eligible: list[str] = []
        for name in sorted(nodes):
            should_run, may_stay = placement.should_run(nodes[name])
            pod = pods.get(name)
            if pod is not None and not may_stay:
                self.hub.delete_pod(pod)
                continue
            if should_run or (pod is not None and may_stay):
                eligible.append(name)
            if should_run and pod is None:
                self._create(name, revision)
        for name, pod in sorted(pods.items()):
            if name not in nodes:  # its node is gone (a pending pod PodGC has not taken)
                self.hub.delete_pod(pod)
        if (self.spec.get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate":
            self._rolling_update(eligible, revision)

    def _delete_duplicates(self) -> None:
        """``podsShouldBeOnNode``: more than one pod for a node (adopted ones), the oldest stays."""
        kept: dict[str, TrackedPod] = {}
        for pod in sorted(self.pods.values(), key=lambda p: (p.bound_at is None, p.created, p.name)):
            if pod.target_node in kept:
                self.hub.delete_pod(pod)
            else:
                kept[pod.target_node] = pod

    def _create(self, node: str, revision: str) -> None:
        template = dp.daemon_pod_template(self.obj, revision, dp.template_generation(self.obj))
        pod = pod_from_template(self.obj, template, name=self.hub.generate_name(self.namespace, f"{self.name}-"))
        dp.replace_node_name_affinity(pod["spec"], node)
        self.hub.create_pod(self, pod, target_node=node, revision=revision)

    def _rolling_update(self, eligible: list[str], revision: str) -> None:
        """``rollingUpdate`` with maxSurge 0: old pods that are not available go at once; available old pods go
        while fewer than maxUnavailable nodes lack an available pod."""
        pods = self._by_node()
        rolling = (self.spec.get("updateStrategy") or {}).get("rollingUpdate") or {}
        budget = scaled_value(rolling.get("maxUnavailable"), len(eligible), round_up=True, default=1)
        now = self.hub.now
        unavailable = sum(1 for n in eligible if n not in pods or not pods[n].available(self.min_ready_seconds, now))
        replaced = False
        for name in eligible:
            pod = pods.get(name)
            if pod is None or pod.revision == revision:
                continue
            if not pod.available(self.min_ready_seconds, now):
                self.hub.delete_pod(pod)
                replaced = True
            elif unavailable < budget:
                self.hub.delete_pod(pod)
                unavailable += 1
                replaced = True
        if replaced:
            self.hub.mark(self)  # their replacements, at once

    def pod_bound(self, pod: TrackedPod) -> None:
        super().pod_bound(pod)
        if self.min_ready_seconds > 0:
            self.hub.wake(self, (pod.bound_at or self.hub.now) + self.min_ready_seconds)

    def status(self) -> Obj:
        placement = dp.DaemonPlacement.of(self.obj)
        revision = template_hash(self.spec.get("template"))
        desired = sum(1 for n in self.hub.actions.node_objects() if placement.should_run(n)[0])
        pods = list(self.pods.values())
        self.obj["status"] = {
            "desiredNumberScheduled": desired,
            "currentNumberScheduled": sum(1 for p in pods if p.node is not None),
            "numberReady": sum(1 for p in pods if p.bound_at is not None),
            "numberAvailable": sum(1 for p in pods if p.available(self.min_ready_seconds, self.hub.now)),
            "updatedNumberScheduled": sum(1 for p in pods if p.revision == revision),
        }
        return self.obj

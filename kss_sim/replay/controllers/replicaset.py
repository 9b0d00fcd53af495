"""ReplicaSets on the virtual clock: ``spec.replicas`` pods from the template, named ``<rs>-<5 chars>``.

As kube-controller-manager's ReplicaSet controller: too few pods, new ones are made; too many, the surplus is
deleted in ``getPodsToDelete``'s order (``app/controllers/pod_ranking.py``: unscheduled, pending, not ready,
deletion cost, more of the Deployment's pods on the same node, ready for less time, newest). A pod that finished
or was deleted is replaced. ``availableReplicas`` counts pods bound for ``minReadySeconds``.
"""

from __future__ import annotations

from kss_sim.controllers import deployment_util as du
from kss_sim.controllers.owned import pod_from_template
from kss_sim.controllers.pod_ranking import pods_to_delete
from kss_sim.kube.objects import Obj
from kss_sim.replay.controllers.base import Hub, Owner, TrackedPod, int_spec


class ReplicaSetOwner(Owner):
    """One ReplicaSet; ``parent`` is its Deployment when a Deployment made it."""

    kind = "ReplicaSet"
    api_version = "apps/v1"

    def __init__(self, hub: Hub, obj: Obj, run_for: float | None, *, parent: Owner | None = None) -> None:
        super().__init__(hub, obj, run_for, parent=parent)
        self.refresh_status()

    @property
    def replicas(self) -> int:
        return du.replicas(self.obj)

    @property
    def min_ready_seconds(self) -> int:
        return int_spec(self.spec, "minReadySeconds", 0)

    def available_count(self) -> int:
        now = self.hub.now
        return sum(1 for pod in self.pods.values() if pod.available(self.min_ready_seconds, now))

    def refresh_status(self) -> None:
        """``status`` from the pods as they are now (what the Deployment reads)."""
        ready = sum(1 for pod in self.pods.values() if pod.bound_at is not None)
        self.obj["status"] = {
            "replicas": len(self.pods),
            "readyReplicas": ready,
            "availableReplicas": self.available_count(),
            "observedGeneration": self.obj["metadata"].get("generation", 1),
        }

    def sync(self) -> None:
        diff = len(self.pods) - self.replicas
        if diff < 0:
            template = self.spec.get("template")
            for _ in range(-diff):
                name = self.hub.generate_name(self.namespace, f"{self.name}-")
                self.hub.create_pod(self, pod_from_template(self.obj, template, name=name))
        elif diff > 0:
            related = self.related_pods()
            views = {pod.name: self.rank_view(pod) for pod in related}
            candidates = [views[p.name] for p in sorted(self.pods.values(), key=lambda p: p.name)]
            doomed = pods_to_delete(candidates, list(views.values()), diff, self.hub.at(self.hub.now))
            for view in doomed:
                self.hub.delete_pod(self.pods[str(view["metadata"]["name"])])
        self.refresh_status()
        if self.parent is not None:
            self.hub.mark(self.parent)

    def related_pods(self) -> list[TrackedPod]:
        """The pods of every ReplicaSet of the same Deployment (only its own for a bare ReplicaSet)."""
        from kss_sim.replay.controllers.deployment import DeploymentOwner  # the Deployment imports this module

        if isinstance(self.parent, DeploymentOwner):
            return [pod for rs in self.parent.sets for pod in rs.pods.values()]
        return list(self.pods.values())

    def pod_bound(self, pod: TrackedPod) -> None:
        super().pod_bound(pod)
        if self.min_ready_seconds > 0:
            self.hub.wake(self, (pod.bound_at or self.hub.now) + self.min_ready_seconds)

    def scale(self, replicas: int) -> None:
        """Set ``spec.replicas`` (the Deployment scaling it)."""
        if self.replicas != replicas:
            self.obj["spec"]["replicas"] = replicas
            self.hub.mark(self)

    def status(self) -> Obj:
        self.refresh_status()
        return self.obj

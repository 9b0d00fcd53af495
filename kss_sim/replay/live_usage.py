"""A workload's usage curves played against a running ``kss serve`` (``kss replay --target-url``): what the server's
horizontal pod autoscaler reads.

``kss serve`` has no metrics API: its autoscaler reads each pod's ``kss.sigs.k8s.io/<resource>-usage`` annotation
(``kss_sim/kube/pod_usage.py``). So, as the offline replay writes them into its own store (``world.py``), the live
driver merge-patches them on the server: at each step of a curve on every pod the workload owns (down its chain of
controllers: a Deployment's ReplicaSets' pods, a CronJob's Jobs' pods), and on each pod it makes later as the
driver's pod watch sees it arrive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from kss_sim.kube.objects import Obj
from kss_sim.kube.pod_usage import usage_annotations
from kss_sim.replay.live_api import ApiError, Target

WorkloadKey = tuple[str, str, str]  # (kind, namespace, name)
Curve = Mapping[str, Sequence[tuple[float, str]]]  # resource -> (virtual time, quantity) steps
# The kinds whose controller is itself owned (a Deployment's ReplicaSet, a CronJob's Job): looked up on the server.
_OWNED_CONTROLLERS = frozenset(("ReplicaSet", "Job"))


def _controller_ref(obj: Obj) -> Obj | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((r for r in refs if isinstance(r, dict) and r.get("controller")), None)


class UsageFeed:
    """The usage curves of one live run and the pods they set (``target``: the server)."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._curves: dict[WorkloadKey, Curve] = {}
        self._parents: dict[str, WorkloadKey | None] = {}  # an owner's uid -> its own controller (None: none)
        self.patched = 0  # pod annotation writes made

    def set_curve(self, key: WorkloadKey, curve: Curve) -> list[float]:
        """``key``'s pods follow ``curve`` from now on (replacing an earlier one); the times of its steps."""
        self._curves[key] = curve
        return sorted({at for steps in curve.values() for at, _ in steps})

    def step(self, key: WorkloadKey, curve: Curve, now: float) -> None:
        """A step of ``key``'s curve is due: every pod of the workload gets the usage the curve says now."""
        if self._curves.get(key) is not curve:
            return  # replaced by a later curve
        for pod in self.target.pods_in(key[1]):
            if key in self._chain(pod):
                self._write(pod, curve, now)

    def pod_seen(self, pod: Obj, now: float) -> None:
        """A pod arrived on the server: if a workload with a curve owns it, it gets that workload's usage now."""
        if not self._curves or (pod.get("metadata") or {}).get("deletionTimestamp"):
            return
        curve = next((self._curves[k] for k in self._chain(pod) if k in self._curves), None)
        if curve is not None:
            self._write(pod, curve, now)

    def _write(self, pod: Obj, curve: Curve, now: float) -> None:
        meta = pod.get("metadata") or {}
        wanted = usage_annotations(curve, now)
        annotations = meta.get("annotations") or {}
        if not wanted or all(annotations.get(k) == v for k, v in wanted.items()):
            return
        try:
            self.target.merge_patch(
                "Pod", str(meta.get("namespace")), str(meta.get("name")), {"metadata": {"annotations": wanted}}
            )
        except ApiError as exc:
            if exc.code != 404:  # gone meanwhile: nothing to set
                raise
            return
        self.patched += 1

    def _chain(self, pod: Obj) -> list[WorkloadKey]:
        """(kind, namespace, name) of the pod's chain of controllers: its own, then that one's (a ReplicaSet's
        Deployment, a Job's CronJob), read from the server once per owner."""
        namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
        ref = _controller_ref(pod)
        if ref is None:
            return []
        key = (str(ref.get("kind")), namespace, str(ref.get("name")))
        uid = str(ref.get("uid"))
        if uid not in self._parents:
            self._parents[uid] = self._parent_of(key)
        parent = self._parents[uid]
        return [key] if parent is None else [key, parent]

    def _parent_of(self, key: WorkloadKey) -> WorkloadKey | None:
        if key[0] not in _OWNED_CONTROLLERS:
            return None
        try:
            owner = self.target.get(key[0], key[1], key[2])
        except ApiError:
            return None
        ref = _controller_ref(owner)
        return (str(ref.get("kind")), key[1], str(ref.get("name"))) if ref is not None else None

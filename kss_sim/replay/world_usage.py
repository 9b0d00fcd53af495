"""A replay's workload usage curves: the ``kss.sigs.k8s.io/<resource>-usage`` annotations the horizontal controller
reads, written on a workload's pods at each step of its curve (and on each pod it makes later). ``world.py`` asks
for the steps on the virtual clock and runs the controllers."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence

from kss_sim.cluster.errors import NotFound
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.owned import controller_ref, key_of, meta
from kss_sim.kube.objects import Obj
from kss_sim.kube.pod_usage import usage_annotations

Curve = Mapping[str, Sequence[tuple[float, str]]]  # resource -> its pods' usage steps (virtual time, quantity)


class UsageCurves:
    """Each workload's curve, and its pods' annotations as the curve has them at the virtual instant ``now()``."""

    def __init__(self, store: ClusterStore, now: Callable[[], float], *, manager: str) -> None:
        self.store = store
        self._now = now
        self._manager = manager
        # (kind, namespace, name) of a workload -> its curve
        self.curves: dict[tuple[str, str, str], Curve] = {}

    def step(self, key: tuple[str, str, str], curve: Curve) -> None:
        """A step of ``key``'s curve is due: every pod it owns gets its usage now."""
        for pod in self.store.list("Pod", key[1])[0]:
            if key in self.owners_of(pod):
                self.set_usage(pod, curve)

    def set_usage(self, pod: Obj, curve: Curve) -> None:
        """The pod's usage annotations as ``curve`` has them now (a resource whose first step is still to come is
        left as the template set it)."""
        wanted = usage_annotations(curve, self._now())
        annotations = meta(pod).get("annotations") or {}
        if wanted and any(annotations.get(k) != v for k, v in wanted.items()):
            with contextlib.suppress(NotFound):
                self.store.patch(
                    "Pod", *key_of(pod), {"metadata": {"annotations": wanted}}, "merge", manager=self._manager
                )

    def owners_of(self, pod: Obj) -> list[tuple[str, str, str]]:
        """(kind, namespace, name) of the pod's chain of controllers (ReplicaSet, then its Deployment; Job, CronJob)."""
        chain: list[tuple[str, str, str]] = []
        obj: Obj | None = pod
        namespace = key_of(pod)[0]
        for _ in range(8):
            ref = controller_ref(obj) if obj is not None else None
            if ref is None:
                break
            chain.append((str(ref.get("kind")), namespace, str(ref.get("name"))))
            obj = self.store.get(str(ref.get("kind")), namespace, str(ref.get("name")))
        return chain

    def curve_of(self, pod: Obj) -> Curve | None:
        """The curve of the first of the pod's chain of controllers that has one."""
        if not self.curves:
            return None
        return next((self.curves[o] for o in self.owners_of(pod) if o in self.curves), None)

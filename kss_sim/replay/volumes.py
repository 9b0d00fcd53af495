"""VolumeBinding's PreBind in a replay: the claims and volumes it chose, bound on the replay's objects.

On a cluster, PreBind writes the binding (claimRef on a PV, ``volume.kubernetes.io/selected-node`` on a claim to
provision) and waits until the PV controller has bound both ways and a provisioner has made the PV. ``kss serve``
does that work at once through its store (``app/engine_host/volumes.py``); the replay does the same through a
small store over its ``ClusterObjects``, so a claim is Bound to its PV (a provisioned PV pinned to the node) from
the pod's binding on: the pod's next incarnation (a StatefulSet's pod made again) finds its claim bound and goes
where the volume is. Each write bumps the object's resourceVersion (the volume binder's assume cache then takes
the stored object) and raises the queue's PersistentVolume / PersistentVolumeClaim event, as the informers would.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING, Any

from kss_sim.engine_host import volumes
from kss_sim.kube.objects import Obj
from kss_sim.replay import intake
from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler.framework import Code, Status
from kss_sim.scheduler.nodeinfo import PodInfo

if TYPE_CHECKING:
    from kss_sim.replay.engine import Replay


class ReplayVolumeStore:
    """``volumes.VolumeStore`` over a replay's PVs, claims, storage classes and nodes (copies in, copies out)."""

    def __init__(self, run: Replay) -> None:
        self.run = run
        self.changed: set[str] = set()  # the kinds written, for the queue events

    def _table(self, kind: str) -> dict[str, Obj]:
        cluster = self.run.cluster
        tables: dict[str, dict[str, Obj]] = {
            "PersistentVolume": cluster.pvs,
            "PersistentVolumeClaim": cluster.pvcs,
            "StorageClass": cluster.storage_classes,
            "Node": self.run.objects.nodes,  # read only: the provisioned volume's topology
        }
        return tables[kind]

    @staticmethod
    def _key(kind: str, namespace: str | None, name: str) -> str:
        return f"{namespace or 'default'}/{name}" if kind == "PersistentVolumeClaim" else name

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        obj = self._table(kind).get(self._key(kind, namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    def create(self, kind: str, obj: Obj, namespace: str | None = None) -> Obj:
        meta = obj.setdefault("metadata", {})
        key = self._key(kind, namespace or meta.get("namespace"), str(meta.get("name")))
        if key in self._table(kind):
            raise LookupError(f"{kind} {key} already exists")
        intake.stamp(obj, kind=kind, seq=0, epoch=self.run.workload.epoch, now=self.run.now)
        self._table(kind)[key] = obj
        self.changed.add(kind)
        return copy.deepcopy(obj)

    def update(self, kind: str, obj: Obj, *, subresource: str | None = None) -> Obj:
        meta = obj.setdefault("metadata", {})
        key = self._key(kind, meta.get("namespace"), str(meta.get("name")))
        if key not in self._table(kind):
            raise LookupError(f"{kind} {key} is gone")
        meta["resourceVersion"] = str(_version(meta.get("resourceVersion")) + 1)
        stored = copy.deepcopy(obj)
        self._table(kind)[key] = stored
        self.changed.add(kind)
        return copy.deepcopy(stored)


def _version(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def bind_pod_volumes(
    run: Replay, pod: PodInfo, node_name: str, static: list[tuple[Obj, Obj]], dynamic: list[Obj]
) -> Status:
    """PreBind's writes and the controllers' work after them: each chosen PV bound to its claim, each claim to
    provision given a PV on ``node_name`` and bound to it. An error fails the binding cycle (the pod retries)."""
    store = ReplayVolumeStore(run)
    try:
        volumes.bind_pod_volumes(store, pod.namespace, node_name, static, dynamic)
    except LookupError as exc:
        return Status(Code.ERROR, f"binding volumes: {exc}")
    finally:
        if "PersistentVolume" in store.changed:
            run.queue.move_all_to_active_or_backoff(ev.PV_CHANGE)
        if "PersistentVolumeClaim" in store.changed:
            run.queue.move_all_to_active_or_backoff(ev.PVC_CHANGE)
    return Status()


def release_volume_of(run: Replay, claim: Obj) -> None:
    """The PV controller when a bound claim is deleted: its volume is deleted (reclaimPolicy Delete, a provisioned
    volume's usual policy) or Released (Retain: kept for its data, never bound to another claim)."""
    name = str((claim.get("spec") or {}).get("volumeName") or "")
    volume = run.cluster.pvs.get(name)
    if volume is None:
        return
    if (volume.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Delete":
        del run.cluster.pvs[name]
    else:
        store = ReplayVolumeStore(run)
        released = copy.deepcopy(volume)
        released["status"] = {**(released.get("status") or {}), "phase": "Released"}
        store.update("PersistentVolume", released, subresource="status")
    run.queue.move_all_to_active_or_backoff(ev.PV_CHANGE)

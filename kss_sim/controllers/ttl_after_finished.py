"""The TTL-after-finished controller: kube-controller-manager's ``pkg/controller/ttlafterfinished``.

A finished Job (``Complete`` or ``Failed`` True) with ``spec.ttlSecondsAfterFinished`` is deleted that many
seconds after it finished (the terminal condition's transition time), on the controller's clock, with Background
propagation (its pods go through the garbage collector) and the Job's uid as a precondition. Before deleting, the
Job is read again and the expiry recomputed, as upstream does, so a TTL changed meanwhile is honoured.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from kss_sim.cluster.admission.deletion import BACKGROUND, DeleteOptions
from kss_sim.cluster.errors import Conflict, NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.job_parts import finish_time
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.owned import Key, is_deleting, key_of, meta
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)


class TTLAfterFinishedController(ReconcileLoop[Key]):
    """Deletes finished Jobs once their ``ttlSecondsAfterFinished`` has passed."""

    name = "ttl-after-finished-controller"
    watched_kinds = ("Job",)

    def __init__(self, store: ClusterPort, *, clock: Clock = utc_now) -> None:
        """A stopped controller over ``store``; ``clock`` decides when a TTL has passed."""
        super().__init__(store, clock=clock)

    def observe(self, event_type: str, kind: str, obj: Obj) -> list[Key]:
        return [] if event_type == DELETED else [key_of(obj)]

    def resync(self) -> list[Key]:
        return [(entry.namespace, entry.name) for entry in self.store.select("Job").items]

    def reconcile(self, key: Key) -> None:
        try:
            job = self.store.read("Job", key[0], key[1]).obj
        except NotFound:
            return
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        finished = finish_time(job)
        if not isinstance(ttl, int) or isinstance(ttl, bool) or finished is None or is_deleting(job):
            return
        expires = finished + timedelta(seconds=ttl)
        if self.now() < expires:
            self.requeue_at(key, expires)
            return
        log.info("Job %s/%s: ttlSecondsAfterFinished passed, deleting it", *key)
        try:
            self.store.delete(
                "Job",
                key[0],
                key[1],
                uid=str(meta(job).get("uid") or "") or None,
                options=DeleteOptions(propagation_policy=BACKGROUND),
            )
        except (NotFound, Conflict):
            return  # gone, or another Job of that name now: it has its own TTL

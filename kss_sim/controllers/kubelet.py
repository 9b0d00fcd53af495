"""The simulated kubelet: what every node's kubelet would do with the pods bound to it, for the whole cluster.

- A pod bound to an existing node (``spec.nodeName`` set, phase Pending, not being deleted) starts at once:
  phase Running, ready, with host and pod IPs, a start time and its containers' statuses (``pod_status``,
  ``pod_network``), written as a kubelet writes it (the ``status`` subresource, with the resourceVersion it was
  computed from; a conflict is retried by the loop). A pod whose node does not exist stays as it is until the node
  appears; one whose node has no free pod address waits with kubelet's ``FailedCreatePodSandBox`` Warning.
- A pod annotated ``kss.sigs.k8s.io/run-duration: <Go duration>`` exits that long after its containers (re)started,
  on the controller's clock, with ``kss.sigs.k8s.io/exit-code`` (default 0). Then, as the kubelet's ``getPhase``:
  restartPolicy Never → Succeeded (exit 0) or Failed; OnFailure → Succeeded on 0, restarted otherwise; Always →
  restarted (``restartCount`` + 1, the exit in ``lastState``; at once: kss has no CrashLoopBackOff). A finished
  pod's resources are released by the scheduler, as for any Succeeded or Failed pod; its addresses here.
- A running pod with readiness gates is Ready once every gate's condition is True (the kubelet's rule).
- A bound pod deleted gracefully (``deletionTimestamp``, ``deletionGracePeriodSeconds`` above 0) is finished when
  its grace period is over, at its ``deletionTimestamp`` on the controller's clock: its containers, killed at the
  end of the period, exit 137, and the pod is written Failed (the status manager's ``TerminatePod`` makes every
  pod that was Pending or Running Failed); then the status manager deletes it with a grace period of 0 (its uid
  as precondition), and it is gone but for finalizers. Until then it holds its node (its resources for the
  scheduler, its addresses here), as containers that take their whole grace period to stop would. A node whose
  Ready condition is False or Unknown, or that does not exist, has no kubelet to do this: its pods stay
  Terminating (until it is Ready again, pod GC, or a delete with a grace period of 0).

Pods that are already Running (an import, a synced cluster) are left as they are, but for their run duration. The
end of every run and every grace period is kept in one ``DueQueue`` (one loop timer, whatever the number of pods).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.errors import Conflict, NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.cluster.storage.versions import DEFAULT_MANAGER
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.due import DueQueue
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.owned import is_deleting, is_terminated, key_of
from kss_sim.controllers.pod_network import PodAddresses, host_ips, pod_ranges, range_text
from kss_sim.controllers.pod_status import (
    RUN_DURATION_ANNOTATION,
    ends_with,
    exit_code,
    finished_status,
    ready_conditions,
    restarted_status,
    run_duration,
    run_started_at,
    running_status,
)
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

COMPONENT = "kubelet"
WATCHED_KINDS = ("Pod", "Node")
INVALID_ANNOTATION = "InvalidAnnotation"
SANDBOX_FAILED = "FailedCreatePodSandBox"
KILLED_EXIT_CODE = 137  # 128 + SIGKILL: the containers did not stop within the grace period

_Key = tuple[str, str]  # (namespace, name)
TICK: _Key = ("", "")  # the key whose timer is the earliest end of a run (no pod has an empty name)


def _spec(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = pod.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _phase(pod: Mapping[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _pod_ips(pod: Mapping[str, Any]) -> list[str]:
    status = pod.get("status") or {}
    ips = [str(p.get("ip")) for p in status.get("podIPs") or [] if isinstance(p, dict) and p.get("ip")]
    return ips or ([str(status["podIP"])] if status.get("podIP") else [])


def _terminating(pod: Mapping[str, Any]) -> bool:
    """Bound and deleted gracefully: the kubelet finishes it when its grace period is over. A grace period of 0 is
    a pod held by finalizers only (or marked by them), which the kubelet has nothing more to do with."""
    meta = pod.get("metadata") or {}
    return bool(meta.get("deletionTimestamp") and meta.get("deletionGracePeriodSeconds") and _spec(pod).get("nodeName"))


def _time(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


class KubeletController(ReconcileLoop[_Key]):
    """Starts bound pods and ends their runs (see the module docstring); ``start``/``stop`` with the app."""

    name = "kubelet"
    watched_kinds = WATCHED_KINDS

    def __init__(
        self,
        store: ClusterPort,
        *,
        clock: Clock = utc_now,
        retry_base_seconds: float = 0.005,
        retry_max_seconds: float = 60.0,
        runs_per_tick: int = 200,
    ) -> None:
        """A stopped kubelet over ``store``; ``runs_per_tick``: how many ended runs one pass writes before the
        worker looks at new changes again."""
        super().__init__(store, clock=clock, retry_base_seconds=retry_base_seconds, retry_max_seconds=retry_max_seconds)
        self._runs_per_tick = max(1, runs_per_tick)
        self._addresses = PodAddresses()
        self._runs: DueQueue[_Key] = DueQueue()
        self._waiting: dict[str, set[_Key]] = {}  # node -> bound pods waiting for it (missing, or no free address)
        self._warned: dict[str, set[str]] = {}  # pod uid -> reasons already reported by an Event
        self._leaving: dict[_Key, list[str]] = {}  # pod -> addresses a reported pod took, until it has new ones

    def reset(self) -> None:
        self._addresses.clear()
        self._runs.clear()
        self._waiting.clear()
        self._warned.clear()
        self._leaving.clear()

    # --- what changed ---------------------------------------------------------------------------------------
    def observe(self, event_type: str, kind: str, obj: Obj) -> list[_Key]:
        if kind == "Node":
            name = str((obj.get("metadata") or {}).get("name") or "")
            if event_type == DELETED:
                self._addresses.forget_node(name)
                return []
            return sorted(self._waiting.pop(name, ()))
        return self._observe_pod(event_type, obj)

    def _observe_pod(self, event_type: str, pod: Obj) -> list[_Key]:
        key = key_of(pod)
        node = str(_spec(pod).get("nodeName") or "")
        if event_type == DELETED or is_terminated(pod) or not node:
            self._runs.discard(key)
            self._leaving.pop(key, None)
            if event_type == DELETED:
                self._warned.pop(str(pod["metadata"].get("uid") or ""), None)
            freed = self._addresses.release(key)
            # A freed address may be what a pod waiting on that node needs.
            keys = sorted(self._waiting.pop(freed, ())) if freed else []
            # Written Failed at the end of its grace period but not deleted yet (a restart in between): finish it.
            return [*keys, key] if event_type != DELETED and _terminating(pod) else keys
        if _terminating(pod):
            return [key]
        phase = _phase(pod)
        if phase == "Pending":
            return [] if is_deleting(pod) else [key]
        if phase != "Running":
            return []
        displaced: list[_Key] = []
        if not _spec(pod).get("hostNetwork") and _pod_ips(pod):
            displaced = self._addresses.record(key, node, _pod_ips(pod))
        wants_end = key not in self._runs and RUN_DURATION_ANNOTATION in ((pod["metadata"].get("annotations")) or {})
        return [key, *displaced] if wants_end or _spec(pod).get("readinessGates") else displaced

    def resync(self) -> list[_Key]:
        """Index the addresses of running pods; queue bound pending pods and running ones with a run to end."""
        keys: list[_Key] = []
        for entry in self.store.select("Pod").items:
            keys += self._observe_pod("ADDED", entry.obj)
        return keys

    # --- reconcile ------------------------------------------------------------------------------------------
    def reconcile(self, key: _Key) -> None:
        if key == TICK:
            self._end_due_runs()
        else:
            self._sync(key)

    def _sync(self, key: _Key) -> None:
        namespace, name = key
        try:
            pod = self.store.read("Pod", namespace, name).obj  # read-only
        except NotFound:
            return
        if _terminating(pod):
            self._finish_termination(key, pod)
            return
        if is_deleting(pod) or not _spec(pod).get("nodeName"):
            return
        phase = _phase(pod)
        if phase == "Pending":
            self._start(key, pod)
        elif phase == "Running":
            self._check_run(key, pod)

    def _start(self, key: _Key, pod: Obj) -> None:
        node_name = str(_spec(pod)["nodeName"])
        try:
            node = self.store.read("Node", None, node_name).obj
        except NotFound:
            self._waiting.setdefault(node_name, set()).add(key)
            return
        hosts = host_ips(node)
        allocated = not _spec(pod).get("hostNetwork")
        if allocated:
            ranges = pod_ranges(node)
            ips = self._addresses.allocate(key, node_name, ranges)
            if ips is None:
                self._waiting.setdefault(node_name, set()).add(key)
                message = (
                    "Failed to create pod sandbox: failed to allocate for range 0: no IP addresses available in "
                    f"range set: {range_text(ranges[0])}"
                )
                self._warn_once(pod, SANDBOX_FAILED, message)
                return
        else:
            ips = hosts
        now = self.timestamp()
        status = running_status(pod, now=now, host_ips=hosts, pod_ips=ips)
        try:
            self._write_status(pod, status)
        except (Conflict, NotFound):
            if allocated:
                self._addresses.release(key)
            raise
        for reason_text in (run_duration(pod)[1], exit_code(pod)[1]):
            if reason_text:
                self._warn_once(pod, INVALID_ANNOTATION, reason_text)
        duration = run_duration(pod)[0]
        if duration is not None:
            self._schedule_end(key, self._at(now) + duration)

    def _check_run(self, key: _Key, pod: Obj) -> None:
        """A running pod: a new address for one another pod took (``PodAddresses.record``); keep Ready in step
        with its readiness gates; end its run when its time has come."""
        if self._addresses.displaced(key) or key in self._leaving:
            pod = self._readdress(key, pod)
        if _spec(pod).get("readinessGates"):
            conditions = ready_conditions(pod, self.timestamp())
            if conditions != (pod.get("status") or {}).get("conditions"):
                pod = self._write_status(pod, {**(pod.get("status") or {}), "conditions": conditions})
        duration = run_duration(pod)[0]
        started = run_started_at(pod)
        start = _time(started) if started else None
        if duration is None or start is None:
            return
        end = start + duration
        if self.now() < end:
            self._schedule_end(key, end)
            return
        code = exit_code(pod)[0]
        phase = ends_with(str(_spec(pod).get("restartPolicy") or "Always"), code)
        now = self.timestamp()
        if phase is None:
            self._write_status(pod, restarted_status(pod, code=code, now=now))
            self._schedule_end(key, self._at(now) + duration)
        else:
            self._write_status(pod, finished_status(pod, phase=phase, code=code, now=now))
            log.debug("pod %s/%s: %s (exit code %d)", key[0], key[1], phase, code)

    def _finish_termination(self, key: _Key, pod: Obj) -> None:
        """At the end of the pod's grace period, delete it as the kubelet's status manager does (``canBeDeleted``:
        a grace period of 0, the uid as precondition); before, wait for it."""
        meta = pod["metadata"]
        end = _time(str(meta["deletionTimestamp"]))
        if end is not None and self.now() < end:
            self._schedule_end(key, end)
            return
        self._runs.discard(key)
        node_name = str(_spec(pod).get("nodeName"))
        if not self._node_runs_kubelet(node_name):
            self._waiting.setdefault(node_name, set()).add(key)  # the node's next change looks again
            return
        if not is_terminated(pod):
            killed = finished_status(pod, phase="Failed", code=KILLED_EXIT_CODE, now=self.timestamp())
            pod = self._write_status(pod, killed)  # a conflict: the loop retries the whole step
            meta = pod["metadata"]
        try:
            self.store.delete(
                "Pod",
                key[0],
                key[1],
                uid=str(meta.get("uid") or "") or None,
                options=DeleteOptions(grace_period_seconds=0, graceful=True),
            )
        except (NotFound, Conflict):
            return  # gone already, or another pod of that name now: its own kubelet work
        log.debug("pod %s/%s: terminated after its grace period of %ss", *key, meta.get("deletionGracePeriodSeconds"))

    def _node_runs_kubelet(self, node_name: str) -> bool:
        """Whether the node exists with a kubelet reporting: its Ready condition, if it has one, is True."""
        try:
            node = self.store.read("Node", None, node_name).obj
        except NotFound:
            return False
        for condition in (node.get("status") or {}).get("conditions") or []:
            if isinstance(condition, dict) and condition.get("type") == "Ready":
                return condition.get("status") == "True"
        return True  # a node nobody reports conditions for (a bare test node) is taken as up

    def _readdress(self, key: _Key, pod: Obj) -> Obj:
        """Give ``pod`` free addresses on its node in place of those a reported pod took, and write them (again
        after a failed write, as long as the status still shows the addresses it had to leave)."""
        if self._addresses.displaced(key):
            node_name = str(_spec(pod)["nodeName"])
            try:
                node = self.store.read("Node", None, node_name).obj
            except NotFound:
                return pod  # the node's pods go with it
            if self._addresses.allocate(key, node_name, pod_ranges(node)) is None:
                log.debug("pod %s/%s: its address is another pod's, and %s has no free one", *key, node_name)
                return pod
            self._leaving[key] = _pod_ips(pod)
        ips = self._addresses.given(key)
        if self._leaving.get(key) != _pod_ips(pod) or ips is None:
            self._leaving.pop(key, None)  # the status moved on (a mirror's own addresses): nothing to write
            return pod
        status = {**(pod.get("status") or {}), "podIP": ips[0], "podIPs": [{"ip": ip} for ip in ips]}
        written = self._write_status(pod, status)  # a conflict: the loop retries, and this writes them then
        log.info("pod %s/%s: address %s taken by another pod, now %s", *key, self._leaving.pop(key), ips)
        return written

    def _end_due_runs(self) -> None:
        """End the runs whose time has come, a bounded batch at a time."""
        due = self._runs.pop_due(self.now(), self._runs_per_tick)
        for i, key in enumerate(due):
            try:
                self._sync(key)
            except Exception:
                # Put this one and the rest back and let the loop retry the tick with backoff.
                for again in due[i:]:
                    self._runs.schedule(again, self.now())
                self._arm()
                raise
        self._arm()

    # --- helpers --------------------------------------------------------------------------------------------
    def _write_status(self, pod: Obj, status: Obj) -> Obj:
        """A merge patch of the status from the version it was computed from; returns the stored pod (read-only)."""
        meta = pod["metadata"]
        return self.store.merge_pod_status(
            str(meta.get("namespace") or ""),
            str(meta["name"]),
            status,
            resource_version=str(meta["resourceVersion"]),
            manager=DEFAULT_MANAGER,
        )

    def _schedule_end(self, key: _Key, when: datetime) -> None:
        self._runs.schedule(key, when)
        self._arm()

    def _arm(self) -> None:
        earliest = self._runs.earliest()
        if earliest is not None:
            self.requeue_at(TICK, earliest)

    def _at(self, timestamp: str) -> datetime:
        parsed = _time(timestamp)
        return parsed if parsed is not None else self.now()

    def _warn_once(self, pod: Obj, reason: str, message: str) -> None:
        """A Warning Event about the pod, once per pod and reason."""
        uid = str(pod["metadata"].get("uid") or "")
        reported = self._warned.setdefault(uid, set())
        if message in reported:
            return
        reported.add(message)
        self.store.create_event(pod, reason, message, type="Warning", component=COMPONENT)

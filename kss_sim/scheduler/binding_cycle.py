"""From the chosen node to the binding: Reserve, Permit (and waiting in it), PreBind, Bind, PostBind.

kube-scheduler assumes the pod on its node, runs Reserve and Permit at the end of the scheduling cycle, then binds in
a goroutine that first blocks in ``WaitOnPermit`` while a Permit plugin holds the pod. Here a pod that must wait
stays assumed (its reservation held, seen by every later cycle) in the scheduler's :class:`WaitingPods`; the attempt
returns ``waiting``, and :meth:`BindingCycle.resolve_waiting` finishes the binding cycle once the pod is allowed, or
fails it as kube-scheduler's ``handleBindingCycleError`` does once it is rejected or times out on the scheduler's clock.

``BindingCycle`` is a mixin of ``cycle.Scheduler``, which defines the state declared here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.extender import Extender, ExtenderError
from kss_sim.scheduler.framework import Code, CycleState, Status
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.record import Attempt
from kss_sim.scheduler.runtime import Framework, status_text
from kss_sim.scheduler.snapshot import Snapshot
from kss_sim.scheduler.waiting import WaitingPod, WaitingPods

if TYPE_CHECKING:
    from kss_sim.scheduler.cycle import ScheduleOptions

WAIT_WORD = "wait"  # a Permit plugin's record while it holds the pod (kube-scheduler-simulator's word)
EXPECTATION_GATE = "NominatedNodeNameForExpectation"


@dataclass
class _Held:
    """What a waiting pod's binding cycle needs when it resumes."""

    fwk: Framework
    state: CycleState
    att: Attempt
    opts: ScheduleOptions
    pod: PodInfo  # the pod as it was popped (not the assumed copy)


@dataclass
class Settled:
    """A waiting pod whose wait ended: its attempt is now final (``scheduled``, ``unschedulable`` or ``error``)."""

    attempt: Attempt
    pod: PodInfo
    waited: float


class BindingCycle:
    """The binding side of ``Scheduler``."""

    frameworks: dict[str, Framework]
    extenders: list[Extender]
    snapshot: Snapshot
    cache: SchedulerCache | None
    clock: Callable[[], float]
    waiting_pods: WaitingPods

    def _assume_and_bind(
        self, fwk: Framework, state: CycleState, pod: PodInfo, node_name: str, att: Attempt, opts: ScheduleOptions
    ) -> None:
        att.suggested_host = node_name
        att.tie_break = opts.tie_break
        if opts.judge_only:
            att.result = "scheduled"  # where it would go; the cluster and the cache are left as they were
            return
        assumed = PodInfo(_with_node_name(pod.pod, node_name))
        assumed.inherit(pod)
        if self.cache is not None:
            self.cache.assume_pod(assumed)
        else:
            self.snapshot.add_pod(assumed, node_name)
        st = fwk.run_reserve_plugins_reserve(state, assumed, node_name)
        for reserve_pl in fwk.reserve:
            att.reserve[reserve_pl.name] = (
                "success" if st.is_success() or st.plugin != reserve_pl.name else st.message()
            )
        if not st.is_success():
            self._forget(fwk, state, assumed, node_name)
            att.result = "error" if st.code == Code.ERROR else "unschedulable"
            att.message = st.message()
            att.clears_nomination = True
            return
        st, waits = fwk.run_permit_plugins(state, assumed, node_name)
        for pl in fwk.permit:
            if pl.name in waits:
                att.permit[pl.name] = WAIT_WORD
                att.permit_timeout[pl.name] = waits[pl.name]
            else:
                att.permit[pl.name] = status_text(st) if st.plugin == pl.name else "success"
        if state.pod_group_cycle is not None and (st.is_wait() or st.is_success()):
            # A PodGroup scheduling cycle's try (podGroupPodSchedulingAlgorithm): the pod stays assumed and
            # reserved so its siblings see it; the group's cycle takes it back or binds it once all were tried.
            state.pod_group_cycle.hold(fwk, state, pod, assumed, node_name, att, st)
            return
        if opts.run_binding_cycle and (st.is_wait() or st.is_success()) and fwk.gate_enabled(EXPECTATION_GATE):
            # bindingCycle's start (NominatedNodeNameForExpectation): the PreBind pre-flights, and the pod nominated
            # to its node while PreBind has work or a Permit plugin holds it.
            pre_flight = fwk.run_pre_bind_pre_flights(state, assumed, node_name)
            if not (pre_flight.is_success() or pre_flight.is_skip()):
                if pre_flight.plugin:
                    att.prebind[pre_flight.plugin] = pre_flight.message()
                self._forget(fwk, state, assumed, node_name)
                att.result = "error"
                att.message = pre_flight.message()
                att.clears_nomination = True
                return
            if (pre_flight.is_success() or st.is_wait()) and fwk.handle.actions is not None:
                fwk.handle.actions.nominate_for_binding(pod, node_name)
        if st.is_wait():
            wp = WaitingPod(assumed, node_name, waits, self.clock())
            wp.context = _Held(fwk, state, att, opts, pod)
            self.waiting_pods.add(wp)
            att.result = "waiting"
            att.message = st.message()
            att.waiting_on = node_name
            return
        if not st.is_success():
            self._forget(fwk, state, assumed, node_name)
            att.result = "unschedulable" if st.is_rejected() else "error"
            att.message = st.message()
            att.clears_nomination = True
            return
        self._bind_assumed(fwk, state, pod, assumed, node_name, att, opts)

    def _bind_assumed(
        self,
        fwk: Framework,
        state: CycleState,
        pod: PodInfo,
        assumed: PodInfo,
        node_name: str,
        att: Attempt,
        opts: ScheduleOptions,
    ) -> None:
        """PreBind, Bind (an extender binder first), PostBind; a failure forgets the assumed pod (an error)."""
        if opts.run_binding_cycle:
            st = fwk.run_pre_bind_plugins(state, assumed, node_name)
            for prebind_pl in fwk.pre_bind:
                att.prebind[prebind_pl.name] = (
                    "success" if st.is_success() or st.plugin != prebind_pl.name else st.message()
                )
            if st.is_success():
                bound, st = self._extenders_binding(fwk, assumed, node_name, att) if self.extenders else (False, st)
                if not bound:
                    st = fwk.run_bind_plugins(state, assumed, node_name)
                    if fwk.bind:
                        att.bind[st.plugin or fwk.bind[0].name] = status_text(st)
            if not st.is_success():
                self._forget(fwk, state, assumed, node_name)
                att.result = "error"
                att.message = st.message()
                att.clears_nomination = True
                return
            fwk.run_post_bind_plugins(state, assumed, node_name)
        att.result = "scheduled"
        att.bound_to = node_name
        att.message = ""
        for f in self.frameworks.values():
            f.handle.delete_nominated_pod(pod)

    def _extenders_binding(self, fwk: Framework, pod: PodInfo, node_name: str, att: Attempt) -> tuple[bool, Status]:
        """``extendersBinding``: the first binder extender interested in the pod binds it instead of the Bind plugins
        (an ignorable one that fails is skipped). The simulator then writes the binding the extender accepted
        through the cluster's pod actions, as an extender would through the API server."""
        for ext in self.extenders:
            if not ext.is_binder() or not ext.is_interested(pod):
                continue
            key = ext.record_name
            try:
                ext.bind(pod, node_name)
            except ExtenderError as exc:
                att.extender_results.setdefault("bind", {})[ext.name] = {"Error": str(exc)}
                if ext.is_ignorable():
                    att.extenders.setdefault(key, {})["bind"] = f"ignored error: {exc}"
                    continue
                att.bind[key] = str(exc)
                att.extenders.setdefault(key, {})["bind"] = f"error: {exc}"
                return True, Status(Code.ERROR, str(exc), plugin=key)
            att.extenders.setdefault(key, {})["bind"] = "success"
            att.extender_results.setdefault("bind", {})[ext.name] = {"Error": ""}
            actions = fwk.handle.actions
            st = actions.bind(pod, node_name) if actions is not None else Status()
            att.bind[key] = status_text(st)
            return True, st
        return False, Status()

    def _forget(self, fwk: Framework, state: CycleState, assumed: PodInfo, node_name: str) -> None:
        fwk.run_reserve_plugins_unreserve(state, assumed, node_name)
        if self.cache is not None:
            self.cache.forget_pod(assumed.uid, node_name)
        else:
            self.snapshot.remove_pod(assumed)

    # --- waiting in Permit ------------------------------------------------------------------------------------
    def next_permit_deadline(self) -> float | None:
        """When the earliest waiting pod times out, on the scheduler's clock (None: nothing waits on a timer)."""
        return self.waiting_pods.next_deadline()

    def reject_waiting_pod(self, uid: str) -> bool:
        """``RejectWaitingPod`` (the pod was deleted): resolved by the next :meth:`resolve_waiting`."""
        return self.waiting_pods.reject_pod(uid)

    def resolve_waiting(self) -> list[Settled]:
        """Finish every waiting pod whose wait ended (allowed, rejected, timed out), in the order they began to wait.

        An allowed pod runs PreBind, Bind and PostBind; a rejected one is unreserved (which may reject its siblings:
        Coscheduling's Unreserve does) and forgotten, its attempt unschedulable with the message kube-scheduler's
        binding cycle gives (``0/1 nodes are available: 1 <reason>.``). Repeats until no outcome is left.
        """
        settled: list[Settled] = []
        if not self.waiting_pods:
            return settled
        while True:
            now = self.clock()
            done = self.waiting_pods.settled(now)
            if not done:
                return settled
            for wp in done:
                held: _Held = wp.context
                att = held.att
                verdict = wp.outcome
                assert verdict is not None
                waited = max(0.0, now - wp.since)
                att.permit_wait = {
                    "node": wp.node_name,
                    "waitedSeconds": round(waited, 6),
                    "outcome": "allowed" if verdict.allowed else "rejected",
                    "plugin": verdict.plugin,
                    "message": verdict.message,
                }
                att.waiting_on = None
                if verdict.allowed:
                    self._bind_assumed(held.fwk, held.state, held.pod, wp.pod, wp.node_name, att, held.opts)
                else:
                    self._forget(held.fwk, held.state, wp.pod, wp.node_name)
                    att.result = "unschedulable"
                    att.message = f"0/1 nodes are available: 1 {verdict.message}."
                    if verdict.plugin:
                        att.permit[verdict.plugin] = verdict.message
                    att.rejected_by = verdict.plugin
                    att.clears_nomination = True
                settled.append(Settled(att, held.pod, waited))

    def waiting(self) -> list[dict[str, Any]]:
        """The pods waiting in Permit now, for the UI and the API: pod, node, plugins pending, waited and remaining s.

        Read from other threads: each pod's deadlines are copied once (a dict copy is atomic under the GIL) and
        everything is computed from the copy."""
        now = self.clock()
        rows = []
        for wp in self.waiting_pods:
            deadlines = dict(wp.deadlines)
            pending = sorted(deadlines)
            rows.append(
                {
                    "pod": wp.pod.key,
                    "node": wp.node_name,
                    "pendingPlugins": pending,
                    "waitingSeconds": max(0.0, now - wp.since),
                    "remainingSeconds": max(0.0, min(deadlines.values()) - now) if deadlines else 0.0,
                }
            )
        return rows


def _with_node_name(pod: dict[str, Any], node_name: str) -> dict[str, Any]:
    out = dict(pod)
    out["spec"] = dict(pod.get("spec") or {})
    out["spec"]["nodeName"] = node_name
    return out

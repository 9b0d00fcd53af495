"""Pods waiting in Permit: kube-scheduler's ``waitingPodsMap`` and ``waitingPod`` on the scheduler's clock.

A Permit plugin that answers Wait keeps the pod assumed (its reservation held) until every waiting plugin allows it,
one rejects it, or a plugin's timeout passes. kube-scheduler blocks a binding goroutine on a channel; here the
outcome is set on the :class:`WaitingPod` and the scheduler resolves it after the cycle that decided it (or when a
deadline passes on its clock), so a run stays single-threaded and reproducible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from kss_sim.scheduler.nodeinfo import PodInfo

# No plugin may make a pod wait longer (runtime.maxTimeout).
MAX_PERMIT_TIMEOUT = 15 * 60.0


def timeout_message(seconds: float, plugin: str) -> str:
    """``rejected due to timeout after waiting 10s at plugin Coscheduling`` (Go's Duration text)."""
    return f"rejected due to timeout after waiting {go_duration(seconds)} at plugin {plugin}"


def go_duration(seconds: float) -> str:
    """``time.Duration.String()`` for the whole and fractional seconds a Permit timeout has: 10s, 1m0s, 1.5s."""
    if seconds == 0:
        return "0s"
    if seconds < 1:
        ms = seconds * 1000
        return f"{ms:g}ms"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    text = f"{secs:.9f}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{int(hours)}h{int(minutes)}m{text}"
    if minutes:
        return f"{int(minutes)}m{text}"
    return text


@dataclass(frozen=True, slots=True)
class PermitVerdict:
    """How a wait ended: allowed by every plugin, or rejected by ``plugin`` with ``message``."""

    allowed: bool
    plugin: str = ""
    message: str = ""


class WaitingPod:
    """A pod held in Permit (``framework.WaitingPod``): plugins allow or reject it by name."""

    def __init__(self, pod: PodInfo, node_name: str, timeouts: dict[str, float], now: float) -> None:
        self.pod = pod
        self.node_name = node_name
        self.since = now
        self.timeouts = dict(timeouts)
        # plugin -> deadline on the scheduler's clock; a plugin leaves when it allows the pod.
        self.deadlines = {plugin: now + seconds for plugin, seconds in timeouts.items()}
        # Set once every plugin allowed or one rejected; None while waiting.
        self.outcome: PermitVerdict | None = None
        # What the scheduler needs to finish the binding cycle (framework, cycle state, attempt record).
        self.context: Any = None

    def get_pod(self) -> PodInfo:
        return self.pod

    def get_pending_plugins(self) -> list[str]:
        """The plugins that have not allowed the pod yet."""
        return sorted(self.deadlines)

    def allow(self, plugin: str) -> None:
        """``Allow``: ``plugin`` lets the pod go; once no plugin is pending, the binding cycle may continue."""
        if self.outcome is not None:
            return
        self.deadlines.pop(plugin, None)
        if not self.deadlines:
            self.outcome = PermitVerdict(True)

    def reject(self, plugin: str, message: str) -> None:
        """``Reject``: the pod leaves Permit unschedulable; the first answer wins, as on kube-scheduler's channel."""
        if self.outcome is None:
            self.outcome = PermitVerdict(False, plugin, message)

    def next_deadline(self) -> float | None:
        return min(self.deadlines.values()) if self.deadlines and self.outcome is None else None

    def expire(self, now: float) -> bool:
        """Reject the pod if a pending plugin's timeout has passed (the earliest first); True if it did."""
        if self.outcome is not None or not self.deadlines:
            return False
        plugin, deadline = min(self.deadlines.items(), key=lambda item: (item[1], item[0]))
        if now < deadline:
            return False
        self.reject(plugin, timeout_message(self.timeouts[plugin], plugin))
        return True


class WaitingPods:
    """``waitingPodsMap``: one per scheduler, shared by its profiles, keyed by pod uid (insertion ordered)."""

    def __init__(self) -> None:
        self._pods: dict[str, WaitingPod] = {}

    def add(self, wp: WaitingPod) -> None:
        self._pods[wp.pod.uid] = wp

    def remove(self, uid: str) -> WaitingPod | None:
        return self._pods.pop(uid, None)

    def get(self, uid: str) -> WaitingPod | None:
        return self._pods.get(uid)

    def reject_pod(self, uid: str) -> bool:
        """``RejectWaitingPod``: reject the pod if it waits (it was deleted); True if it was waiting."""
        wp = self._pods.get(uid)
        if wp is None:
            return False
        wp.reject("", "removed")
        return True

    def iterate(self, callback: Callable[[WaitingPod], None]) -> None:
        """``IterateOverWaitingPods``: the callback may allow or reject (the map is not changed while iterating)."""
        for wp in list(self._pods.values()):
            callback(wp)

    def __iter__(self) -> Iterator[WaitingPod]:
        return iter(list(self._pods.values()))

    def __len__(self) -> int:
        return len(self._pods)

    def next_deadline(self) -> float | None:
        """The earliest pending plugin deadline, or None when nothing waits on a timer."""
        deadlines = [d for wp in self._pods.values() if (d := wp.next_deadline()) is not None]
        return min(deadlines) if deadlines else None

    def settled(self, now: float) -> list[WaitingPod]:
        """Hand out (and forget) every pod with an outcome, in arrival order; when none has one, the pod whose timeout
        passed first, alone: its failure (Unreserve) may decide its siblings before their own timers do."""
        done = [wp for wp in self._pods.values() if wp.outcome is not None]
        if not done:
            expired = [wp for wp in self._pods.values() if (d := wp.next_deadline()) is not None and d <= now]
            if not expired:
                return []
            first = min(expired, key=lambda wp: wp.next_deadline() or now)
            first.expire(now)
            done = [first]
        for wp in done:
            del self._pods[wp.pod.uid]
        return done

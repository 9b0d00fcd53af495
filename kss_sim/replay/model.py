"""What a replay produces and what its observers see: per-pod records, samples over time, the run's state.

The engine (``engine.py``) fills :class:`PodRecord` for every pod that arrives and calls each :class:`Observer` as
the run goes; the metrics (``metrics.py``), the results recorder and the progress bar are observers. Times are
virtual seconds from the workload's start.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from kss_sim.kube.versions import DEFAULT_KUBE_VERSION
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.record import Attempt

# PodRecord.outcome values
PENDING = "pending"  # never bound (yet)
RUNNING = "running"  # bound and not finished when the run ended
SUCCEEDED = "succeeded"  # ran its runFor and left
# Deleted (endAt, a delete event, its node removed, its owner scaled down); once bound, gone after its grace period.
DELETED = "deleted"
PREEMPTED = "preempted"  # a preemption victim, gone after its grace period (a controller's is replaced at once)
# Evicted (PodRecord.reason says why) and gone after its grace period, or still Terminating at the end where no
# kubelet finishes it (its node failed).
EVICTED = "evicted"

# PodRecord.reason of an evicted pod: a NoExecute taint, a drain (the eviction API), its node's failure (the node
# lifecycle controller's not-ready or unreachable taint).
TAINT = "taint"
DRAIN = "drain"
NODE_FAILURE = "nodeFailure"
EVICTION_REASONS = (TAINT, DRAIN, NODE_FAILURE)
# PodRecord.reason of a pod deleted by the pod GC, its node missing (its DisruptionTarget condition's
# DeletionByPodGC).
POD_GC = "podGC"


@dataclass(slots=True)
class PodRecord:
    """One pod's life in the run."""

    key: str  # namespace/name
    uid: str
    arrival: float
    owner: str = ""  # Kind/name of its controller ("" for a bare pod)
    priority: int = 0
    first_attempt: float | None = None
    bound_at: float | None = None
    node: str | None = None
    attempts: int = 0
    preemptions: int = 0  # times it was a preemption victim
    finished_at: float | None = None
    outcome: str = PENDING
    # When it was deleted gracefully while bound (deleted, preempted, evicted): it then held its node, Terminating,
    # until its kubelet ended it at the end of its grace period (finished_at).
    terminating_at: float | None = None
    evicted_at: float | None = None  # when it was evicted (it then terminates for its grace period)
    reason: str = ""  # an evicted pod's cause (EVICTION_REASONS); POD_GC for a deleted one the pod GC collected
    last_message: str = ""  # the last failed attempt's message (kube-scheduler's FailedScheduling text)
    requests: dict[str, float] = field(default_factory=dict)  # resource -> amount (cpu in cores, memory in bytes)

    @property
    def wait(self) -> float | None:
        """Seconds from arrival to binding (None if never bound)."""
        return None if self.bound_at is None else self.bound_at - self.arrival


class ReplayState(Protocol):
    """The run as observers may read it (read-only; the engine owns every object)."""

    @property
    def now(self) -> float: ...

    @property
    def nodes(self) -> Iterable[NodeInfo]: ...

    @property
    def cluster(self) -> ClusterObjects: ...

    @property
    def pods(self) -> Mapping[str, PodRecord]: ...  # every pod that arrived, by uid

    def queue_counts(self) -> dict[str, int]: ...  # active / backoff / unschedulable / gated

    def pending_pods(self) -> int: ...  # arrived, not bound, not gone

    def running_pods(self) -> int: ...  # bound, not finished


class Observer(Protocol):
    """Sees the run as it goes; every method is optional to act on but must exist."""

    def on_start(self, state: ReplayState) -> None: ...

    def on_attempt(self, state: ReplayState, attempt: Attempt, pod: PodInfo) -> None: ...

    def on_sample(self, state: ReplayState) -> None: ...  # every --interval of virtual time, and at the end

    def on_end(self, state: ReplayState) -> None: ...


class NullObserver:
    """An observer that does nothing: subclass and override what you need."""

    def on_start(self, state: ReplayState) -> None:
        return None

    def on_attempt(self, state: ReplayState, attempt: Attempt, pod: PodInfo) -> None:
        return None

    def on_sample(self, state: ReplayState) -> None:
        return None

    def on_end(self, state: ReplayState) -> None:
        return None


@dataclass
class ReplayResult:
    """What ``Replay.run`` returns: the records, the run's own facts, and whatever the observers collected."""

    workload: str
    pods: list[PodRecord]
    virtual_seconds: float  # the virtual time the run reached
    attempts: int
    wall_seconds: float
    config: dict[str, Any]  # the KubeSchedulerConfiguration in effect at the start (as given, not defaulted)
    seed: int
    kube_version: str = DEFAULT_KUBE_VERSION  # the Kubernetes version simulated (``1.35``)
    extras: dict[str, Any] = field(default_factory=dict)

"""The scheduling framework's vocabulary: statuses, cycle state, plugin interfaces and the handle.

Mirrors ``k8s.io/kube-scheduler/framework`` (v1.35). Plugins subclass the interfaces for the
extension points they implement; the runtime (``runtime.py``) calls them in profile order.
"""

from __future__ import annotations

import copy
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import IntEnum
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from kss_sim.kube.versions import KubeVersion, kube_version
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.columns import BoolArray, IntArray, NodeBatch
from kss_sim.scheduler.extender import Extender
from kss_sim.scheduler.nodeinfo import NodeInfo, NodeWithout, PodInfo
from kss_sim.scheduler.snapshot import Snapshot
from kss_sim.scheduler.waiting import WaitingPod, WaitingPods

if TYPE_CHECKING:
    from kss_sim.scheduler.runtime import Framework

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1


class Code(IntEnum):
    """``framework.Code``."""

    SUCCESS = 0
    ERROR = 1
    UNSCHEDULABLE = 2
    UNSCHEDULABLE_AND_UNRESOLVABLE = 3
    WAIT = 4
    SKIP = 5
    PENDING = 6

    @property
    def label(self) -> str:
        return _CODE_LABELS[self]


_CODE_LABELS = {
    Code.SUCCESS: "Success",
    Code.ERROR: "Error",
    Code.UNSCHEDULABLE: "Unschedulable",
    Code.UNSCHEDULABLE_AND_UNRESOLVABLE: "UnschedulableAndUnresolvable",
    Code.WAIT: "Wait",
    Code.SKIP: "Skip",
    Code.PENDING: "Pending",
}


class Status:
    """``framework.Status``: a code, reasons, and the plugin that produced it."""

    __slots__ = ("code", "plugin", "reasons")

    def __init__(self, code: Code = Code.SUCCESS, *reasons: str, plugin: str = "") -> None:
        self.code = code
        self.reasons: list[str] = list(reasons)
        self.plugin = plugin

    def message(self) -> str:
        return ", ".join(self.reasons)

    def is_success(self) -> bool:
        return self.code == Code.SUCCESS

    def is_skip(self) -> bool:
        return self.code == Code.SKIP

    def is_wait(self) -> bool:
        return self.code == Code.WAIT

    def is_rejected(self) -> bool:
        """Unschedulable, UnschedulableAndUnresolvable or Pending."""
        return self.code in (Code.UNSCHEDULABLE, Code.UNSCHEDULABLE_AND_UNRESOLVABLE, Code.PENDING)

    def with_plugin(self, plugin: str) -> Status:
        self.plugin = plugin
        return self

    def __repr__(self) -> str:
        return f"Status({self.code.label}, {self.reasons!r}, plugin={self.plugin!r})"


class _SharedStatus(Status):
    """One status object handed to many callers, so it cannot be changed (``with_plugin`` and assignments raise)."""

    __slots__ = ()

    def __init__(self, code: Code) -> None:
        object.__setattr__(self, "code", code)
        object.__setattr__(self, "reasons", [])
        object.__setattr__(self, "plugin", "")

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"a shared {self.code.label} status cannot be changed (set {name})")


# Skip as PreFilter and PreScore plugins return it (the runtime only reads those); success() and skip() give
# statuses of one's own.
SKIP = _SharedStatus(Code.SKIP)


def success() -> Status:
    return Status(Code.SUCCESS)


def skip() -> Status:
    return Status(Code.SKIP)


def unschedulable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE, *reasons)


def unresolvable(*reasons: str) -> Status:
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, *reasons)


def error(msg: str) -> Status:
    return Status(Code.ERROR, msg)


class CycleState:
    """Per-cycle scratch space shared by a profile's plugins (``framework.CycleState``)."""

    __slots__ = ("_data", "pod_group_cycle", "skip_filter_plugins", "skip_pre_bind_plugins", "skip_score_plugins")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter_plugins: set[str] = set()
        self.skip_score_plugins: set[str] = set()
        # The PreBind plugins whose pre-flight said Skip, once the binding cycle ran them (None: not run).
        self.skip_pre_bind_plugins: set[str] | None = None
        # Set while a v1.36 PodGroup scheduling cycle tries the pod (``SetPodGroupSchedulingCycle``): Reserve and
        # Permit run, and the pod is then held by the group's trial (podgroup_cycle.py), never bound from here.
        self.pod_group_cycle: Any = None

    def read(self, key: str) -> Any:
        """The value written under ``key``; KeyError when absent (upstream's ErrNotFound)."""
        return self._data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._data.get(key, default)

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def delete(self, key: str) -> None:
        self._data.pop(key, None)

    def clone(self) -> CycleState:
        """Deep enough for preemption's what-if runs: values with ``clone()`` are cloned, others deep-copied."""
        c = CycleState()
        for k, v in self._data.items():
            cloner = getattr(v, "clone", None)
            c._data[k] = cloner() if callable(cloner) else copy.deepcopy(v)
        c.skip_filter_plugins = set(self.skip_filter_plugins)
        c.skip_score_plugins = set(self.skip_score_plugins)
        c.skip_pre_bind_plugins = None if self.skip_pre_bind_plugins is None else set(self.skip_pre_bind_plugins)
        c.pod_group_cycle = self.pod_group_cycle
        return c


@dataclass(slots=True)
class PreFilterResult:
    """Restricts the nodes to evaluate; ``None`` node_names means all nodes."""

    node_names: set[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.all_nodes():
            return PreFilterResult(None if self.node_names is None else set(self.node_names))
        if self.all_nodes():
            return PreFilterResult(set(other.node_names or ()))
        return PreFilterResult(set(self.node_names or ()) & set(other.node_names or ()))


@dataclass(slots=True)
class PostFilterResult:
    """What a PostFilter plugin achieved: the nominated node, as upstream's ``NewPostFilterResultWithNominatedNode``
    (``ModeOverride``): empty, the pod's nomination is cleared. A plugin that changes nothing returns None."""

    nominated_node_name: str = ""
    victims: list[str] = field(default_factory=list)


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int


class NodeToStatus:
    """Filter statuses per node, with a default for nodes never evaluated (``framework.NodeToStatus``)."""

    def __init__(self, absent: Status | None = None) -> None:
        self.statuses: dict[str, Status] = {}
        self.absent = absent or Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE)

    def get(self, node_name: str) -> Status:
        return self.statuses.get(node_name, self.absent)

    def set(self, node_name: str, status: Status) -> None:
        self.statuses[node_name] = status

    def __len__(self) -> int:
        return len(self.statuses)

    def nodes_for_codes(self, snapshot: Snapshot, *codes: Code) -> list[NodeInfo]:
        """Nodes whose status has one of ``codes`` (absent nodes use the default status)."""
        statuses, absent = self.statuses, self.absent
        return [ni for ni in snapshot.node_info_list if statuses.get(ni.name, absent).code in codes]


class Plugin:
    """Every plugin has an upstream name."""

    name: ClassVar[str] = ""

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        self.handle = handle
        self.args: dict[str, Any] = args or {}

    @classmethod
    def defaulted_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        """The plugin's args with kube-scheduler's v1 defaults filled in (override per plugin)."""
        return dict(args)

    @classmethod
    def validate_args(cls, args: dict[str, Any]) -> list[tuple[str, str]]:
        """Problems with ``args`` as (field path under args, message); empty when valid."""
        return []

    def events_to_register(self) -> Sequence[str | ClusterEventWithHint] | None:
        """``EnqueueExtensions``: the cluster events that may make a pod this plugin rejected schedulable again
        ("Node/Add", "Pod/Add", "AssignedPod/Delete", "PodGroup/Update", ... see docs/plugins.md), each alone
        (its hint taken as Queue) or with a QueueingHintFn (:class:`ClusterEventWithHint`). None, the default,
        means every event (the safe choice for a plugin that does not say)."""
        return None


class QueueingHint(IntEnum):
    """``fwk.QueueingHint``: whether an event may make a pod a plugin rejected schedulable."""

    QUEUE_SKIP = 0
    QUEUE = 1


QUEUE = QueueingHint.QUEUE
QUEUE_SKIP = QueueingHint.QUEUE_SKIP

# ``QueueingHintFn(pod, oldObj, newObj)``: the pod the plugin rejected and the event's objects (a Node's dict, a
# pod's PodInfo, a listed object's dict; None for the side an add or a delete has not).
QueueingHintFn = Callable[[PodInfo, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    """``fwk.ClusterEventWithHint``: a registered event and the function judging it (None: always Queue)."""

    event: str
    hint: QueueingHintFn | None = None


def events_with_hints(events: Iterable[str], hint: QueueingHintFn | None) -> list[ClusterEventWithHint]:
    """Several events judged by one function (upstream registers an ActionType mask with one hint)."""
    return [ClusterEventWithHint(e, hint) for e in events]


class QueueSortPlugin(Plugin, ABC):
    @abstractmethod
    def less(self, a: QueuedPodInfoLike, b: QueuedPodInfoLike) -> bool: ...


class QueuedPodInfoLike(Protocol):
    """What QueueSort compares: the pod and when it was (re)queued."""

    @property
    def pod_info(self) -> PodInfo: ...

    @property
    def timestamp(self) -> float: ...

    @property
    def initial_attempt_timestamp(self) -> float | None:
        """When the pod first entered activeQ (scheduler clock); None before it has."""
        ...


class PreEnqueuePlugin(Plugin, ABC):
    @abstractmethod
    def pre_enqueue(self, pod: PodInfo) -> Status: ...


class PreFilterExtensions(ABC):
    """Incremental updates of PreFilter state when pods are added/removed in what-if runs."""

    @abstractmethod
    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node_info: NodeInfo) -> Status: ...

    @abstractmethod
    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node_info: NodeInfo) -> Status: ...


class PreFilterPlugin(Plugin, ABC):
    @abstractmethod
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None


class FilterPlugin(Plugin, ABC):
    # False when ``filter`` reads only the pod, the node object (name, labels, spec) and what PreFilter wrote, never
    # the pods on the node or what PreFilter extensions' AddPod/RemovePod change, and writes nothing: its verdict is
    # then the same on a copy of the node with pods taken off or put back, so a preemption dry run may ask it on the
    # node itself, once. Read for in-tree plugins only (a user's subclass may read more).
    filter_reads_pods: ClassVar[bool] = True

    @abstractmethod
    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status: ...

    def filter_without(self, state: CycleState, pod: PodInfo, node: NodeWithout) -> Status | None:
        """The status ``filter`` would give on a copy of ``node.node_info`` with ``node``'s removed pods taken off,
        from the aggregates of ``node`` (nothing copied, nothing written); None when it cannot say that way.

        Optional (in-tree plugins only): a preemption dry run then need not copy the node.
        """
        return None

    def reprieve_without(self, state: CycleState, pod: PodInfo, node: NodeWithout) -> Callable[[PodInfo], bool] | None:
        """For a preemption dry run in which this plugin is the only one reading pods: a function that puts one of
        ``node``'s removed pods back and answers whether ``filter_without`` still passes, taking it off again when
        not (``node`` itself is left as it is: the function keeps its own count); None when it cannot say that way.

        Optional (in-tree plugins with ``filter_without`` only): the reprieve walk then builds no status per pod.
        """
        return None

    def filter_nodes(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> BoolArray | None:
        """Batch Filter: per node of ``batch``, whether ``filter`` would succeed; None when not vectorised.

        Optional. The framework then calls ``filter`` per node; with a mask it asks ``filter`` only for the
        status of nodes that fail (when it needs the message), so the two must agree exactly.
        """
        return None

    def filter_keys(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        """Batch Filter for recording: per node of ``batch``, 0 where ``filter`` succeeds, else a non-negative key
        such that nodes with equal keys get equal statuses (code and reasons) from ``filter``, each given by
        ``filter_status_of_key``; None when not vectorised that way.

        Optional. Recording then needs one look-up per distinct key (usually a few) and no ``filter_nodes``.
        """
        return None

    def filter_status_keys(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        """For nodes of ``batch`` that ``filter_nodes`` rejected: non-negative keys such that nodes with equal keys
        get equal statuses (code and reasons) from ``filter``; None when unknown.

        Optional. Recording asks ``filter`` for one node per distinct key instead of every rejected node.
        """
        return None

    def filter_status_of_key(self, state: CycleState, pod: PodInfo, key: int) -> Status | None:
        """The status ``filter`` gives a node whose ``filter_keys`` key is ``key`` (a new object), when the
        key alone decides it; None to ask ``filter`` on a node.

        Optional. Recording then needs no node per distinct key.
        """
        return None


class PostFilterPlugin(Plugin, ABC):
    @abstractmethod
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]: ...


class PreScorePlugin(Plugin, ABC):
    @abstractmethod
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status: ...


class ScorePlugin(Plugin, ABC):
    """Score one pod on one node; ``score_nodes`` scores many nodes at once (override to vectorise)."""

    @abstractmethod
    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]: ...

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        scores: list[int] = []
        for ni in nodes:
            s, st = self.score(state, pod, ni)
            if not st.is_success():
                return scores, st
            scores.append(s)
        return scores, success()

    def score_batch(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        """Batch Score: the raw scores of every node of ``batch`` (int64), or None when not vectorised.

        Optional; only called when the plugin's state is in order (PreScore ran). Errors are left to
        ``score_nodes``: return None to have it called instead.
        """
        return None

    def has_normalize(self) -> bool:
        return False

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        return success()

    def normalize_batch(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray | None:
        """Batch NormalizeScore: a new array as ``normalize_score`` would leave the scores, or None."""
        return None


@dataclass
class Placement:
    """``fwk.Placement``: a set of nodes a v1.36 PodGroup cycle may place the whole group on (named, for a topology
    domain, by it)."""

    name: str
    nodes: list[NodeInfo]


@dataclass
class PodGroupAssignments:
    """``fwk.PodGroupAssignments``: a placement on which the group is feasible and where its pods would go (pod
    key -> node; the pods that fit nowhere are absent)."""

    placement: Placement
    proposed: dict[str, str]


class PlacementGeneratePlugin(Plugin, ABC):
    """v1.36's PlacementGenerate point: the placements a PodGroup cycle tries, from a parent placement."""

    @abstractmethod
    def generate_placements(
        self, namespace: str, pod_group: str, parent: Placement
    ) -> tuple[list[Placement], Status]: ...


class PlacementScorePlugin(Plugin, ABC):
    """v1.36's PlacementScore point: a feasible placement's score (then normalized to 0..100, weighted)."""

    @abstractmethod
    def score_placement(
        self, namespace: str, pod_group: str, assignments: PodGroupAssignments
    ) -> tuple[int, Status]: ...

    def normalize_placement_scores(self, namespace: str, pod_group: str, scores: list[int]) -> Status:
        """``NormalizePlacementScore``, in place; none by default."""
        return success()


class ReservePlugin(Plugin, ABC):
    @abstractmethod
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status: ...

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        return None


class PermitPlugin(Plugin, ABC):
    @abstractmethod
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]: ...


class PreBindPlugin(Plugin, ABC):
    def pre_bind_pre_flight(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return success()

    @abstractmethod
    def pre_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status: ...


class BindPlugin(Plugin, ABC):
    @abstractmethod
    def bind(self, state: CycleState, pod: PodInfo, node_name: str) -> Status: ...


class PostBindPlugin(Plugin, ABC):
    @abstractmethod
    def post_bind(self, state: CycleState, pod: PodInfo, node_name: str) -> None: ...


class PodActions(ABC):
    """What plugins may ask of the cluster outside the cycle (preemption deletes victims, binders bind)."""

    @abstractmethod
    def bind(self, pod: PodInfo, node_name: str) -> Status: ...

    @abstractmethod
    def delete_victim(
        self, victim: PodInfo, preemptor: PodInfo, preempting_group: dict[str, Any] | None = None
    ) -> Status:
        """``PreemptPod``; ``preempting_group``: the PodGroup preempting as one (workload-aware preemption), of
        which ``preemptor`` is a pod."""

    @abstractmethod
    def set_nominated_node(self, pod: PodInfo, node_name: str) -> None: ...

    def clear_nominated_node(self, pod: PodInfo) -> None:
        """``ClearNominatedNodeName``: the pod's status loses its nomination (preemption took its node for a
        higher-priority pod); the nominator has forgotten it already. Actions without pod status keep nothing."""
        return None

    def nominate_for_binding(self, pod: PodInfo, node_name: str) -> None:
        """The binding cycle's ``updatePod`` (NominatedNodeNameForExpectation): the assumed pod's status names the
        node it is about to be bound to, before it waits in Permit or PreBind works, for the API's readers (the
        nominator does not take an assumed pod; the binding clears it). Actions without pod status keep nothing."""
        return None

    def bind_volumes(
        self,
        pod: PodInfo,
        node_name: str,
        static: list[tuple[dict[str, Any], dict[str, Any]]],
        dynamic: list[dict[str, Any]],
    ) -> Status | None:
        """Write VolumeBinding's decisions to the cluster: (PV, claim) pairs to bind, claims to provision.

        ``None`` means these actions do not handle volumes (the plugin then keeps them in memory only).
        """
        return None

    def update_resource_claim(self, claim: dict[str, Any], *, status: bool) -> dict[str, Any] | None:
        """Write a ResourceClaim as DynamicResources' client does (its ``status`` subresource with ``status``),
        guarded by its resourceVersion: the stored object back. Raises ``dra.dra_manager.ClaimConflict``
        on a conflict, another exception for any other refusal. ``None``: these actions do not write claims (the
        plugin then keeps them in memory only)."""
        return None

    def get_resource_claim(self, namespace: str, name: str) -> dict[str, Any] | None:
        """The ResourceClaim as the API has it now (a GET after a conflict); None when gone or not handled."""
        return None

    def create_resource_claim(self, claim: dict[str, Any]) -> dict[str, Any] | None:
        """Create a ResourceClaim (DynamicResources' claim for a pod's extended resources, named from its
        ``generateName``): the stored object. ``None``: these actions do not write claims (kept in memory)."""
        return None

    def delete_resource_claim(self, namespace: str, name: str) -> bool:
        """Delete a ResourceClaim (DynamicResources' claim for a pod's extended resources, once its finalizer is
        gone; a claim already gone counts as deleted). False: these actions do not write claims (in memory)."""
        return False

    def update_extended_resource_claim_status(self, pod: PodInfo, value: dict[str, Any]) -> None:
        """Write the pod's ``status.extendedResourceClaimStatus`` (``value``); these actions may not write pods
        (the plugin sets it on the PodInfo as well)."""
        return None


class Handle:
    """What a plugin can reach: the cycle's snapshot, the listers, the nominator and the framework."""

    def __init__(self, cluster: ClusterObjects, actions: PodActions | None = None) -> None:
        self.cluster = cluster
        self.actions = actions
        self.snapshot: Snapshot = Snapshot([])
        self.framework: Framework | None = None
        # The scheduler's extenders (``Handle.Extenders()``), set by the Scheduler; preemption offers them its
        # candidates.
        self.extenders: Sequence[Extender] = ()
        # Pods nominated to nodes (by preemption): node name -> pods.
        self.nominated_pods: dict[str, list[PodInfo]] = {}
        # Pods held in Permit, shared by every profile of a scheduler (set by the Scheduler).
        self.waiting_pods = WaitingPods()
        # The scheduler's clock (seconds; virtual in offline runs) and where activated pods go (set by the host).
        self.clock: Callable[[], float] = time.monotonic
        self.activator: Callable[[list[PodInfo]], None] | None = None
        # The feature gates the scheduler runs with (name -> on; absent: the default version's default) and its
        # Kubernetes version (plugins whose code differs between releases read it), set by the host.
        self.feature_gates: dict[str, bool] = {}
        self.kube_version: KubeVersion = kube_version()

    def gate_enabled(self, name: str) -> bool:
        """Whether feature gate ``name`` is on for this scheduler: as set, else its Kubernetes version's default."""
        return self.kube_version.effective_gates(self.feature_gates)[name]

    def get_waiting_pod(self, uid: str) -> WaitingPod | None:
        """``GetWaitingPod``: the pod with this uid if it is waiting in Permit."""
        return self.waiting_pods.get(uid)

    def iterate_over_waiting_pods(self, callback: Callable[[WaitingPod], None]) -> None:
        """``IterateOverWaitingPods``: call ``callback`` with each pod waiting in Permit (it may allow or reject)."""
        self.waiting_pods.iterate(callback)

    def reject_waiting_pod(self, uid: str) -> bool:
        """``RejectWaitingPod``: reject the pod if it waits (as when it is deleted); True if it was waiting."""
        return self.waiting_pods.reject_pod(uid)

    def activate(self, pods: Iterable[PodInfo]) -> None:
        """``Activate``: move these pending pods to activeQ now (e.g. a gang's siblings); no-op offline."""
        if self.activator is not None:
            self.activator(list(pods))

    def now(self) -> float:
        """The scheduler's clock, in seconds (the virtual clock offline)."""
        return self.clock()

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return self.nominated_pods.get(node_name, [])

    def add_nominated_pod(self, pod: PodInfo, node_name: str) -> None:
        self.delete_nominated_pod(pod)
        self.nominated_pods.setdefault(node_name, []).append(pod)

    def delete_nominated_pod(self, pod: PodInfo) -> None:
        for name, pods in list(self.nominated_pods.items()):
            kept = [p for p in pods if p.uid != pod.uid]
            if kept:
                self.nominated_pods[name] = kept
            else:
                del self.nominated_pods[name]

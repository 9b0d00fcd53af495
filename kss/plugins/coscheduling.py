"""Coscheduling: gang scheduling by PodGroup, as kubernetes-sigs/scheduler-plugins' ``pkg/coscheduling`` does it.

Pods labelled ``scheduling.x-k8s.io/pod-group: <name>`` belong to the PodGroup ``<name>`` of their namespace
(``scheduling.x-k8s.io/v1alpha1``: ``spec.minMember``, ``spec.minResources``, ``spec.scheduleTimeoutSeconds``).
A group's pods wait in Permit, holding their nodes, until ``minMember`` of them are assigned; then all go at once.
If that does not happen in time, or one of them cannot be placed, every waiting sibling is rejected and the
reservations are released. The behaviour, messages and numbers are upstream's (the plugin as vendored with
kube-scheduler v1.35); docs/plugins.md ("Coscheduling") says how to enable it.

Written only against kss's public plugin API (``kss.framework``) and the standard library. Where upstream relies
on something a kube-scheduler build has and kss does not, this module does the same job:

- **Assigned pods** (upstream's ``assignedPodsByPG``, fed by Permit and by a pod informer that sees bound pods
  added and deleted): a pod counts once Permit let it through or made it wait (until Unreserve takes it out), and
  while the pod lister still has it; pods the lister shows bound (``spec.nodeName``) and pods waiting in Permit count
  too, so the count survives a new configuration (a new plugin instance) as upstream's survives a restart.
- **Clocks**: upstream's go-caches (``permittedPG``, expiring after ``permitWaitingTimeSeconds``, 3 s when that is
  0; ``backedOffPG``, after ``podGroupBackoffSeconds``) and the time of a group's last failure run on the scheduler's
  clock (``handle.now()``, virtual offline), so a simulation is reproducible.
- **QueueSort** compares wall times, as upstream does: a group's pods sort by the group's ``creationTimestamp``
  (RFC 3339), or by its last failure once it failed; other pods (and pods whose group does not exist) by when they
  first entered the queue (upstream's ``InitialAttemptTimestamp``). The queue's times are on the scheduler's clock,
  so they are turned into wall time with one offset, ``wall_clock() - handle.now()``, taken at the first
  comparison: exact in ``kss serve`` (a monotonic clock), and in an offline run it keeps queue times in their order.
- **Quantities**: ``resource gap: map[...]`` prints the remaining request as Go's ``%v`` prints a
  ``resource.Quantity`` (``{{2000 -3} {<nil>}  DecimalSI}``); a quantity that needed an ``inf.Dec`` (e.g.
  ``1.5Gi``) shows its value where Go shows a pointer.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Context, Decimal
from fractions import Fraction
from typing import Any

from kss.framework import (
    Code,
    CycleState,
    Handle,
    NodeInfo,
    NodeToStatus,
    PermitPlugin,
    PodInfo,
    PostFilterPlugin,
    PostFilterResult,
    PreFilterPlugin,
    PreFilterResult,
    QueuedPodInfoLike,
    QueueSortPlugin,
    ReservePlugin,
    Status,
    WaitingPod,
    success,
    unresolvable,
    unschedulable,
)

POD_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"
POD_GROUP_KIND = "PodGroup"
PERMIT_STATE_KEY = "PermitCoscheduling"

# apis/config/v1 defaults.
DEFAULT_PERMIT_WAITING_TIME_SECONDS = 60
DEFAULT_POD_GROUP_BACKOFF_SECONDS = 0
DEFAULT_POD_GROUP_REJECT_PERCENTAGE = 10
_DEFAULTS = {
    "permitWaitingTimeSeconds": DEFAULT_PERMIT_WAITING_TIME_SECONDS,
    "podGroupBackoffSeconds": DEFAULT_POD_GROUP_BACKOFF_SECONDS,
    "podGroupRejectPercentage": DEFAULT_POD_GROUP_REJECT_PERCENTAGE,
}
_ARGS = tuple(_DEFAULTS)

DEFAULT_WAIT_TIME = 60.0  # util.DefaultWaitTime: neither the group nor the args give a timeout
PERMITTED_PG_DEFAULT_EXPIRATION = 3.0  # gocache.New(3*time.Second, ...)
BACKED_OFF_PG_DEFAULT_EXPIRATION = 10.0  # gocache.New(10*time.Second, ...)
# time.Time{} (0001-01-01T00:00:00Z) in Unix seconds: the creation time of a PodGroup without creationTimestamp.
GO_ZERO_TIME = -62135596800.0


class Coscheduling(QueueSortPlugin, PreFilterPlugin, PostFilterPlugin, PermitPlugin, ReservePlugin):
    """Schedules the pods of a PodGroup all or none."""

    name = "Coscheduling"

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, self.defaulted_args(args or {}))
        self.schedule_timeout = float(self.args["permitWaitingTimeSeconds"])
        backoff = int(self.args["podGroupBackoffSeconds"])
        self.pg_backoff: float | None = float(backoff) if backoff > 0 else None
        self.pg_reject_threshold = float(self.args["podGroupRejectPercentage"]) / 100.0
        self._permitted_pg = _ExpiringKeys(handle.now, PERMITTED_PG_DEFAULT_EXPIRATION)
        self._backed_off_pg = _ExpiringKeys(handle.now, BACKED_OFF_PG_DEFAULT_EXPIRATION)
        self._last_failed: dict[str, float] = {}  # group -> the scheduler's clock at its last failure
        self._assigned: dict[str, dict[str, str]] = {}  # group -> pod name -> uid, from Permit until Unreserve
        # Wall time for QueueSort (tests replace it); the offset to the scheduler's clock is fixed at first use.
        self.wall_clock: Callable[[], float] = time.time
        self._wall_offset: float | None = None

    # --- args ---------------------------------------------------------------------------------
    @classmethod
    def defaulted_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        """``SetDefaults_CoschedulingArgs``: 60 s in Permit, no group backoff, reject at a 10 % gap."""
        out = dict(args)
        for key, default in _DEFAULTS.items():
            if out.get(key) is None:
                out[key] = default
        return out

    @classmethod
    def validate_args(cls, args: dict[str, Any]) -> list[tuple[str, str]]:
        """``ValidateCoschedulingArgs`` (and the strict decoding before it: known fields, integers)."""
        problems: list[tuple[str, str]] = [(key, f'unknown field "{key}"') for key in args if key not in _ARGS]
        for key in _ARGS:
            value = args.get(key)
            if isinstance(value, bool) or not isinstance(value, int):
                problems.append((key, f"Invalid value: {value!r}: must be an integer"))
            elif key != "podGroupRejectPercentage" and value < 0:
                problems.append((key, f"Invalid value: {value}: must be greater than 0"))
            elif key == "podGroupRejectPercentage" and not 0 <= value <= 100:
                problems.append((key, f"Invalid value: {value}: must be between 0 and 100"))
        return problems

    def events_to_register(self) -> list[str]:
        """A new pod (a sibling may complete the group) and a PodGroup added or changed."""
        return ["Pod/Add", "PodGroup/Add", "PodGroup/Update"]

    # --- QueueSort ------------------------------------------------------------------------------
    def less(self, a: QueuedPodInfoLike, b: QueuedPodInfoLike) -> bool:
        """Higher priority first; then the earlier group creation (or last failure) or first queueing; then
        ``namespace/name``."""
        pa, pb = a.pod_info, b.pod_info
        if pa.priority != pb.priority:
            return pa.priority > pb.priority
        ta = self.creation_timestamp(pa, self._wall(_initial_attempt(a)))
        tb = self.creation_timestamp(pb, self._wall(_initial_attempt(b)))
        if ta == tb:
            return pa.key < pb.key
        return ta < tb

    def creation_timestamp(self, pod: PodInfo, ts: float) -> float:
        """``GetCreationTimestamp`` (wall seconds): the group's last failure, else its creation; ``ts`` for a pod
        without a group or whose group does not exist."""
        group = pod.labels.get(POD_GROUP_LABEL, "")
        if not group:
            return ts
        full = f"{pod.namespace}/{group}"
        failed = self._last_failed.get(full)
        if failed is not None:
            return self._wall(failed)
        pg = self._get_pod_group(pod.namespace, group)
        return ts if pg is None else pg.creation

    def _wall(self, t: float) -> float:
        if self._wall_offset is None:
            self._wall_offset = self.wall_clock() - self.handle.now()
        return t + self._wall_offset

    # --- PreFilter ------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        """Refuse (UnschedulableAndUnresolvable: preemption cannot help) a pod whose group failed recently, has
        fewer than ``minMember`` pods (gated ones not counting), or cannot get ``minResources`` from the cluster."""
        reason = self._pre_filter(pod)
        if reason:
            return None, unresolvable(reason)
        return None, success()

    def _pre_filter(self, pod: PodInfo) -> str:
        full, pg = self.pod_group(pod)
        if pg is None:
            return ""
        if full in self._backed_off_pg:
            return f"podGroup {full} failed recently"
        pods = self.handle.cluster.pods_in_pod_group(pod.namespace, pg.name)
        quorum_gap = pg.min_member - len(pods)
        if quorum_gap > 0:
            return (
                f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                f"current pods number: {len(pods)}, minMember of group: {pg.min_member}"
            )
        # Gated siblings cannot be scheduled yet: tolerated only while minMember is still reachable without them.
        for sibling in pods:
            if (sibling.get("spec") or {}).get("schedulingGates"):
                quorum_gap += 1
            if quorum_gap > 0:
                return f"pre-filter pod {pod.name} cannot proceed due to gated pods in the same PodGroup"
        if pg.min_resources is None:
            return ""
        # Only resources are checked here: a group that passes may still fail Filter (affinity, taints...).
        if full in self._permitted_pg:
            return ""
        request = {name: Quantity.parse(text) for name, text in pg.min_resources.items()}
        request["pods"] = Quantity(pg.min_member, 0, DECIMAL_SI)
        gap = check_cluster_resource(self.handle.snapshot.node_info_list, request, full)
        if gap:
            return gap
        self._permitted_pg.add(full, self.schedule_timeout)
        return ""

    # --- PostFilter -----------------------------------------------------------------------------
    def post_filter(
        self, state: CycleState, pod: PodInfo, statuses: NodeToStatus
    ) -> tuple[PostFilterResult | None, Status]:
        """A pod of a group fits nowhere: unless enough of the group is assigned (or the gap to ``minMember`` is
        within ``podGroupRejectPercentage``), reject its waiting siblings, back the group off and say so."""
        full, pg = self.pod_group(pod)
        if pg is None:
            return PostFilterResult(), unschedulable("can not find pod group")
        assigned = self.assigned_pod_count(pod.namespace, pg.name)
        if assigned >= pg.min_member:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        not_assigned = float(pg.min_member - assigned) / float(pg.min_member)
        if not_assigned <= self.pg_reject_threshold:
            return PostFilterResult(), Status(Code.UNSCHEDULABLE)
        # If the nth pod failed, the others would very likely fail too: free what the waiting ones hold.
        self._reject_waiting_siblings(pod.namespace, pg.name, "optimistic rejection in PostFilter")
        siblings = self.handle.cluster.pods_in_pod_group(pod.namespace, pg.name) if self.pg_backoff else []
        if self.pg_backoff is not None and len(siblings) >= pg.min_member:
            self._backed_off_pg.add(full, self.pg_backoff)
        self._permitted_pg.discard(full)
        self._last_failed[full] = self.handle.now()
        return PostFilterResult(), unschedulable(
            f"PodGroup {full} gets rejected due to Pod {pod.name} is unschedulable even after PostFilter"
        )

    # --- Reserve --------------------------------------------------------------------------------
    def reserve(self, state: CycleState, pod: PodInfo, node_name: str) -> Status:
        return success()

    def unreserve(self, state: CycleState, pod: PodInfo, node_name: str) -> None:
        """The pod will not be bound (rejected while waiting, timed out, a later plugin failed): it no longer
        counts, and every waiting sibling is rejected."""
        full, pg = self.pod_group(pod)
        if pg is None:
            return
        self._unassign(full, pod)
        self._reject_waiting_siblings(pod.namespace, pg.name, "rejection in Unreserve")
        self._permitted_pg.discard(full)
        self._last_failed[full] = self.handle.now()

    # --- Permit ---------------------------------------------------------------------------------
    def permit(self, state: CycleState, pod: PodInfo, node_name: str) -> tuple[Status, float]:
        """Wait until ``minMember`` pods of the group are assigned; the pod that completes the group lets every
        waiting sibling go."""
        full, pg = self.pod_group(pod)
        if not full:
            return success(), 0
        if pg is None:
            return unschedulable("PodGroup not found"), 0
        self._assigned.setdefault(full, {})[pod.name] = pod.uid
        assigned = self.assigned_pod_count(pod.namespace, pg.name, permitting=pod)
        if assigned >= pg.min_member:
            self._last_failed.pop(full, None)

            def allow(wp: WaitingPod) -> None:
                if _full_name(wp.get_pod()) == full:
                    wp.allow(self.name)

            self.handle.iterate_over_waiting_pods(allow)
            return success(), 0
        if assigned == 1:
            # The group's first pod to get here wakes its siblings (only the first: issue #682).
            state.write(PERMIT_STATE_KEY, PermitState(activate=True))
        wait = self.schedule_timeout
        group_wait = _wait_time(pg, self.schedule_timeout)
        if group_wait != 0:
            wait = group_wait
        self._activate_siblings(pod, state)
        return Status(Code.WAIT), wait

    def _activate_siblings(self, pod: PodInfo, state: CycleState) -> None:
        group = pod.labels.get(POD_GROUP_LABEL, "")
        marker = state.get(PERMIT_STATE_KEY)
        if not group or not isinstance(marker, PermitState) or not marker.activate:
            return
        siblings = [
            PodInfo(p) for p in self.handle.cluster.pods_in_pod_group(pod.namespace, group) if _uid(p) != pod.uid
        ]
        if siblings:
            self.handle.activate(siblings)

    # --- the group and its assigned pods ----------------------------------------------------------
    def pod_group(self, pod: PodInfo) -> tuple[str, PodGroup | None]:
        """``GetPodGroup``: ``namespace/group`` ("" without the label) and the PodGroup (None when it does not
        exist or cannot be read)."""
        group = pod.labels.get(POD_GROUP_LABEL, "")
        if not group:
            return "", None
        return f"{pod.namespace}/{group}", self._get_pod_group(pod.namespace, group)

    def _get_pod_group(self, namespace: str, name: str) -> PodGroup | None:
        obj = self.handle.cluster.get_object(POD_GROUP_KIND, namespace, name)
        return None if obj is None else decode_pod_group(obj)

    def assigned_pod_count(self, namespace: str, group: str, *, permitting: PodInfo | None = None) -> int:
        """``GetAssignedPodCount``: the group's pods let through or held by Permit (and not unreserved since) that
        still exist, the pods the lister shows bound, and the pods waiting in Permit, each name once."""
        full = f"{namespace}/{group}"
        pods = self.handle.cluster.pods_in_pod_group(namespace, group)
        present = {_name(p): _uid(p) for p in pods}
        names = {_name(p) for p in pods if (p.get("spec") or {}).get("nodeName")}
        permitted = self._assigned.get(full, {})
        for pod_name, uid in list(permitted.items()):
            alive = present.get(pod_name) == uid or self.handle.get_waiting_pod(uid) is not None
            if alive or (permitting is not None and permitting.uid == uid):
                names.add(pod_name)
            else:
                del permitted[pod_name]  # deleted since (upstream's informer DeleteFunc)
        if not permitted:
            self._assigned.pop(full, None)

        def waiting(wp: WaitingPod) -> None:
            if _full_name(wp.get_pod()) == full:
                names.add(wp.get_pod().name)

        self.handle.iterate_over_waiting_pods(waiting)
        return len(names)

    def _unassign(self, full: str, pod: PodInfo) -> None:
        permitted = self._assigned.get(full)
        if permitted is not None:
            permitted.pop(pod.name, None)
            if not permitted:
                del self._assigned[full]

    def _reject_waiting_siblings(self, namespace: str, group: str, message: str) -> None:
        def reject(wp: WaitingPod) -> None:
            waiting = wp.get_pod()
            if waiting.namespace == namespace and waiting.labels.get(POD_GROUP_LABEL, "") == group:
                wp.reject(self.name, message)

        self.handle.iterate_over_waiting_pods(reject)


@dataclass(slots=True)
class PermitState:
    """What Permit leaves in the cycle state: whether the group's siblings are to be woken."""

    activate: bool = False


# --- PodGroups --------------------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class PodGroup:
    """The fields of a ``scheduling.x-k8s.io/v1alpha1`` PodGroup this plugin reads."""

    name: str
    min_member: int
    min_resources: dict[str, str] | None  # resource -> quantity text (None when unset)
    schedule_timeout_seconds: int | None
    creation: float  # metadata.creationTimestamp in Unix seconds


_INT32 = (-(2**31), 2**31 - 1)


def decode_pod_group(obj: Mapping[str, Any]) -> PodGroup | None:
    """The PodGroup as the plugin's client decodes it; None when it would not decode (the plugin then treats the
    group as not found, as upstream's failed ``client.Get`` does)."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    if not isinstance(meta, Mapping) or not isinstance(spec, Mapping):
        return None
    min_member = spec.get("minMember")
    if min_member is None:
        min_member = 0
    if not _is_int32(min_member):
        return None
    timeout = spec.get("scheduleTimeoutSeconds")
    if timeout is not None and not _is_int32(timeout):
        return None
    raw_resources = spec.get("minResources")
    min_resources: dict[str, str] | None = None
    if raw_resources is not None:
        if not isinstance(raw_resources, Mapping):
            return None
        min_resources = {}
        for name, value in raw_resources.items():
            text = _quantity_text(value)
            if text is None:
                return None
            try:
                Quantity.parse(text)
            except ValueError:
                return None
            min_resources[str(name)] = text
    created = meta.get("creationTimestamp")
    creation = GO_ZERO_TIME
    if created:
        parsed = _parse_rfc3339(created)
        if parsed is None:
            return None
        creation = parsed
    return PodGroup(str(meta.get("name") or ""), int(min_member), min_resources, timeout, creation)


def _is_int32(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and _INT32[0] <= value <= _INT32[1]


def _quantity_text(value: Any) -> str | None:
    """A quantity as its JSON text: a string, or a number written without quotes."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, int | float):
        return repr(value)
    return None


def _parse_rfc3339(text: Any) -> float | None:
    if not isinstance(text, str):
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


def _wait_time(pg: PodGroup, schedule_timeout: float) -> float:
    """``GetWaitTimeDuration``: the group's scheduleTimeoutSeconds, else permitWaitingTimeSeconds, else 60 s."""
    if pg.schedule_timeout_seconds is not None:
        return float(pg.schedule_timeout_seconds)
    if schedule_timeout != 0:
        return schedule_timeout
    return DEFAULT_WAIT_TIME


def _initial_attempt(q: QueuedPodInfoLike) -> float:
    """When the pod first entered the queue: the queue's ``initial_attempt_timestamp`` when it has one, else its
    timestamp (the same time until the pod is first retried)."""
    first = getattr(q, "initial_attempt_timestamp", None)
    return float(first) if first is not None else float(q.timestamp)


def _full_name(pod: PodInfo) -> str:
    """``GetPodGroupFullName``: ``namespace/group``, "" without the label."""
    group = pod.labels.get(POD_GROUP_LABEL, "")
    return f"{pod.namespace}/{group}" if group else ""


def _name(pod: Mapping[str, Any]) -> str:
    return str((pod.get("metadata") or {}).get("name") or "")


def _uid(pod: Mapping[str, Any]) -> str:
    """The uid as ``PodInfo`` gives it (``namespace/name`` for a pod without one)."""
    meta = pod.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace') or 'default'}/{meta.get('name') or ''}")


# --- go-cache on the scheduler's clock ---------------------------------------------------------------------------
class _ExpiringKeys:
    """The keys of a go-cache: ``add`` leaves an unexpired key as it is, 0 means the default expiration and a
    negative one never expires; a key is gone once the clock is past its expiry."""

    def __init__(self, clock: Callable[[], float], default_expiration: float) -> None:
        self._clock = clock
        self._default = default_expiration
        self._expiry: dict[str, float] = {}

    def add(self, key: str, expiration: float) -> None:
        if key in self:
            return
        if expiration == 0:
            expiration = self._default
        self._expiry[key] = self._clock() + expiration if expiration > 0 else math.inf

    def discard(self, key: str) -> None:
        self._expiry.pop(key, None)

    def __contains__(self, key: object) -> bool:
        if not isinstance(key, str):
            return False
        expiry = self._expiry.get(key)
        if expiry is None:
            return False
        if self._clock() > expiry:
            del self._expiry[key]
            return False
        return True


# --- CheckClusterResource -------------------------------------------------------------------------------------------
def check_cluster_resource(nodes: Sequence[NodeInfo], request: dict[str, Quantity], group: str) -> str:
    """``CheckClusterResource``: take what each node has left (its pods of ``group`` not counted) off ``request``
    until nothing is missing; "" then, else ``resource gap: map[...]`` with what is still missing."""
    for node_info in nodes:
        left = node_left_resources(node_info, group)
        for name in list(request):
            quantity = request[name].copy()
            quantity.sub(left.get(name, Quantity()))
            if quantity.sign() <= 0:
                del request[name]
                continue
            request[name] = quantity
        if not request:
            return ""
    return f"resource gap: {go_resource_list(request)}"


def node_left_resources(node_info: NodeInfo, group: str) -> dict[str, Quantity]:
    """``getNodeResource``: allocatable minus what the node's pods outside ``group`` request, pods included, as
    ``util.ResourceList`` makes quantities of it."""
    outside = [p for p in node_info.pods if _full_name(p) != group]
    inside = [p for p in node_info.pods if _full_name(p) == group]
    alloc, requested = node_info.allocatable, node_info.requested
    milli_cpu = requested.milli_cpu - sum(p.requests.milli_cpu for p in inside)
    memory = requested.memory - sum(p.requests.memory for p in inside)
    ephemeral = requested.ephemeral_storage - sum(p.requests.ephemeral_storage for p in inside)
    left = {
        "cpu": Quantity(alloc.milli_cpu - milli_cpu, -3, DECIMAL_SI),
        "memory": Quantity(alloc.memory - memory, 0, BINARY_SI),
        "pods": Quantity(alloc.allowed_pod_number - len(outside), 0, BINARY_SI),
        "ephemeral-storage": Quantity(alloc.ephemeral_storage - ephemeral, 0, BINARY_SI),
    }
    for name, amount in alloc.scalar_resources.items():
        used = requested.scalar_resources.get(name, 0) - sum(p.requests.scalar_resources.get(name, 0) for p in inside)
        left[name] = Quantity(amount - used, 0, BINARY_SI if name.startswith("hugepages-") else DECIMAL_SI)
    return left


def go_resource_list(resources: Mapping[str, Quantity]) -> str:
    """A ``v1.ResourceList`` as Go's ``%v`` prints it: keys sorted, each quantity as its struct."""
    return "map[" + " ".join(f"{name}:{resources[name].go_value()}" for name in sorted(resources)) + "]"


# --- resource.Quantity ------------------------------------------------------------------------------------------
DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_NANO_SCALE = -9
_MAX_INT64_FACTORS = 18
_DECIMAL_SUFFIXES = {"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")
_FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def _fits_int64(value: int) -> bool:
    return _INT64_MIN <= value <= _INT64_MAX


class Quantity:
    """``resource.Quantity`` as far as CheckClusterResource takes it: an int64 amount with a base-10 scale, or an
    exact decimal (``dec``) when that cannot hold the value; its format and the text it was parsed from (kept only
    when that text is canonical, and dropped by arithmetic, as Go caches it)."""

    __slots__ = ("dec", "format", "scale", "text", "value")

    def __init__(
        self, value: int = 0, scale: int = 0, fmt: str = "", *, dec: Fraction | None = None, text: str = ""
    ) -> None:
        self.value = value
        self.scale = scale
        self.format = fmt
        self.dec = dec
        self.text = text

    @classmethod
    def parse(cls, text: str) -> Quantity:
        """``ParseQuantity``; ValueError for text that is not a quantity."""
        if not text:
            raise ValueError(_FORMAT_WRONG)
        if text == "0":
            return cls(0, 0, DECIMAL_SI, text=text)
        positive, number, num, denom, suffix = _scan_quantity(text)
        base, exponent, fmt = _interpret_suffix(suffix)
        precision, scale, mantissa = 0, 0, 1
        if fmt == BINARY_SI:
            if exponent >= 0 and not denom:
                mantissa = 1 << exponent
                precision = 15 - len(num) - int(exponent * 3 / 10) - 1
            else:
                precision = -1
        else:
            scale = exponent
            precision = _MAX_INT64_FACTORS - (len(num) + len(denom))
        if precision >= 0:
            scale -= len(denom)
            if scale >= _NANO_SCALE:
                shifted = num + denom
                digits = int(shifted)
                result = digits * mantissa
                if _fits_int64(result):
                    if not positive:
                        result = -result
                    canonical = (
                        exponent % 10 == 0 and digits & 0x07 != 0
                        if fmt == BINARY_SI
                        else scale % 3 == 0 and not shifted.endswith("000") and shifted[0] != "0"
                    )
                    return cls(result, scale, fmt, text=text if canonical else "")
        amount = Fraction(number) if number.lstrip("+-") else Fraction(0)
        amount *= Fraction(10) ** exponent if base == 10 else Fraction(2) ** exponent
        negative = amount < 0
        amount = abs(amount)
        if amount != 0:  # rounded up to the nano, so a tiny request still asks for something
            amount = Fraction(math.ceil(amount * 10**9), 10**9)
        if fmt == BINARY_SI and amount > _INT64_MAX:
            amount = Fraction(_INT64_MAX)
        if fmt == BINARY_SI and 0 < amount < 1:
            fmt = DECIMAL_SI
        return cls(fmt=fmt, dec=-amount if negative else amount)

    def copy(self) -> Quantity:
        return Quantity(self.value, self.scale, self.format, dec=self.dec, text=self.text)

    def is_zero(self) -> bool:
        return self.dec == 0 if self.dec is not None else self.value == 0

    def sign(self) -> int:
        amount = self.dec if self.dec is not None else self.value
        return (amount > 0) - (amount < 0)

    def sub(self, other: Quantity) -> None:
        """``Sub``: in place; int64 arithmetic matching scales, an exact decimal once that would overflow."""
        self.text = ""
        if self.is_zero():
            self.format = other.format
        if self.dec is None and other.dec is None and self._add_int(-other.value, other.scale):
            return
        self.dec = self.as_fraction() - other.as_fraction()
        self.value, self.scale = 0, 0

    def _add_int(self, value: int, scale: int) -> bool:
        """``int64Amount.Add``: False, leaving the amount as it was, when the result would overflow int64."""
        if value == 0:
            return True
        if self.value == 0:
            self.value, self.scale = value, scale
            return True
        if self.scale == scale:
            total = self.value + value
        elif self.scale > scale:
            shifted = self.value * 10 ** (self.scale - scale)
            if not _fits_int64(shifted):
                return False
            total = shifted + value
        else:
            shifted = value * 10 ** (scale - self.scale)
            if not _fits_int64(shifted):
                return False
            total = self.value + shifted
        if not _fits_int64(total):
            return False
        self.value, self.scale = total, min(self.scale, scale)
        return True

    def as_fraction(self) -> Fraction:
        return self.dec if self.dec is not None else Fraction(self.value) * Fraction(10) ** self.scale

    def go_value(self) -> str:
        """The struct as ``%v`` prints it: ``{{amount scale} {<nil>} cached-text Format}``."""
        dec = "<nil>" if self.dec is None else _decimal_text(self.dec)
        return f"{{{{{self.value} {self.scale}}} {{{dec}}} {self.text} {self.format}}}"

    def __repr__(self) -> str:
        return f"Quantity({self.go_value()})"


def _scan_quantity(text: str) -> tuple[bool, str, str, str, str]:
    """``parseQuantityString``: (positive, the number as written, its integer digits without leading zeros or
    "0", its fraction digits, the suffix); ValueError when something follows a valid suffix."""
    positive = True
    pos, end = 0, len(text)
    if text[0] in "+-":
        positive = text[0] == "+"
        pos = 1
    while pos < end and text[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "0", "", ""
    start = pos
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    num = text[start:pos] or "0"
    if pos >= end:
        return positive, text, num, "", ""
    denom = ""
    if text[pos] == ".":
        pos += 1
        start = pos
        while pos < end and text[pos] in _DIGITS:
            pos += 1
        denom = text[start:pos]
        if pos >= end:
            return positive, text, num, denom, ""
    number = text[:pos]
    suffix_start = pos
    while pos < end and text[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and text[pos] in "+-":
        pos += 1
    while pos < end and text[pos] in _DIGITS:
        pos += 1
    if pos < end:
        raise ValueError(_FORMAT_WRONG)
    return positive, number, num, denom, text[suffix_start:]


def _interpret_suffix(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) of a quantity suffix; ValueError for an unknown one."""
    if suffix in _DECIMAL_SUFFIXES:
        return 10, _DECIMAL_SUFFIXES[suffix], DECIMAL_SI
    if suffix in _BINARY_SUFFIXES:
        return 2, _BINARY_SUFFIXES[suffix], BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        exponent = suffix[1:]
        if exponent.lstrip("+-").isdigit() and exponent.count("+") + exponent.count("-") <= 1:
            return 10, int(exponent), DECIMAL_EXPONENT
    raise ValueError("unable to parse quantity's suffix")


def _decimal_text(value: Fraction) -> str:
    """An exact decimal's digits (quantities are whole multiples of 10^-9 here, so the division is exact)."""
    context = Context(prec=80)
    quotient = context.divide(Decimal(value.numerator), Decimal(value.denominator))
    return format(context.normalize(quotient), "f")

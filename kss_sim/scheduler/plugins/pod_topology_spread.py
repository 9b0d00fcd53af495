"""PodTopologySpread: spread matching pods evenly over topology domains (upstream ``podtopologyspread``).

Filtering honours the pod's ``DoNotSchedule`` constraints: ``matching pods in the node's domain
+ self-match - global minimum`` must not exceed ``maxSkew`` (the minimum is 0 while fewer than
``minDomains`` domains exist). Scoring uses the ``ScheduleAnyway`` constraints: a node scores
``Σ count · ln(domains + 2) + (maxSkew - 1)``, rounded, and normalization reverses it so that the
least crowded domain gets 100. Pods without constraints of their own get the configured default
constraints, with a selector taken from the Services / controllers that select them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import orjson

from kss_sim.kube.labels import RequiredNodeAffinity, label_key_errors
from kss_sim.kube.objects import Obj
from kss_sim.kube.taints import EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, Toleration, find_matching_untolerated_taint
from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler.columns import BoolArray, IntArray, NodeBatch, NodeColumns, NodeView
from kss_sim.scheduler.framework import (
    MAX_NODE_SCORE,
    QUEUE,
    QUEUE_SKIP,
    SKIP,
    ClusterEventWithHint,
    Code,
    CycleState,
    FilterPlugin,
    Handle,
    NodeScore,
    PreFilterExtensions,
    PreFilterPlugin,
    PreFilterResult,
    PreScorePlugin,
    QueueingHint,
    ScorePlugin,
    Status,
    error,
    events_with_hints,
    success,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins.helper import assigned_or_nominated, node_labels, node_taints

NAME = "PodTopologySpread"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME
_BATCH_IGNORED_KEY = "ScoreBatch" + NAME  # (the scores score_batch returned, the nodes PreScore left out)

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

# Upstream's systemDefaultConstraints, in its order (hostname first: the float sum depends on it).
SYSTEM_DEFAULT_CONSTRAINTS: list[dict[str, Any]] = [
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
]

MAX_INT32 = 2**31 - 1
# Pod shapes whose counts are kept per set of node columns (PreFilter and PreScore each), least recently used
# dropped first.
_SHAPE_CACHE_MAX = 64
INVALID_SCORE = -1


# --- label selectors (apimachinery ``labels.Selector``) --------------------------------------------


class SelectorError(ValueError):
    """A label selector that ``metav1.LabelSelectorAsSelector`` rejects."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One ``labels.Requirement``: key, operator (In, NotIn, Exists, DoesNotExist) and values."""

    key: str
    operator: str
    values: frozenset[str]

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.operator == "In":
            return self.key in labels and labels[self.key] in self.values
        if self.operator == "NotIn":
            return self.key not in labels or labels[self.key] not in self.values
        if self.operator == "Exists":
            return self.key in labels
        return self.key not in labels  # DoesNotExist


@dataclass(frozen=True, slots=True)
class Selector:
    """``labels.Selector``: ``nothing`` is ``labels.Nothing()``; no requirements is ``labels.Everything()``."""

    requirements: tuple[Requirement, ...] = ()
    nothing: bool = False

    def empty(self) -> bool:
        """``Selector.Empty()``: true only for Everything (Nothing is not empty)."""
        return not self.nothing and not self.requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    def add(self, reqs: Iterable[Requirement]) -> Selector:
        if self.nothing:
            return self
        return Selector((*self.requirements, *reqs))


NOTHING = Selector(nothing=True)
EVERYTHING = Selector()


def selector_from_set(labels: Mapping[str, str]) -> Selector:
    """``labels.Set(...).AsSelector()``: one equality requirement per key (sorted, as upstream sorts them)."""
    return Selector(tuple(Requirement(k, "In", frozenset([v])) for k, v in sorted(labels.items())))


def label_selector_as_selector(ls: Mapping[str, Any] | None) -> Selector:
    """``metav1.LabelSelectorAsSelector``: nil matches nothing, an empty selector everything."""
    if ls is None:
        return NOTHING
    match_labels: Mapping[str, str] = ls.get("matchLabels") or {}
    exprs: list[Mapping[str, Any]] = ls.get("matchExpressions") or []
    if not match_labels and not exprs:
        return EVERYTHING
    reqs = [Requirement(k, "In", frozenset([v])) for k, v in match_labels.items()]
    for expr in exprs:
        op = expr.get("operator")
        values = list(expr.get("values") or [])
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise SelectorError(f'"{op}" is not a valid label selector operator')
        if op in ("In", "NotIn") and not values:
            raise SelectorError("values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty")
        if op in ("Exists", "DoesNotExist") and values:
            raise SelectorError(
                "values: Invalid value: "
                + json.dumps(values)
                + ": values set must be empty for exists and does not exist"
            )
        reqs.append(Requirement(str(expr.get("key") or ""), str(op), frozenset(values)))
    return Selector(tuple(sorted(reqs, key=lambda r: r.key)))


# --- node inclusion (nodeaffinity.RequiredNodeAffinity, taints) ------------------------------------


def required_node_affinity(pod: PodInfo) -> RequiredNodeAffinity:
    """``nodeaffinity.GetRequiredNodeAffinity``: the pod's nodeSelector AND required node affinity, parsed once."""
    return pod.memo(f"{NAME}:requiredNodeAffinity", lambda: RequiredNodeAffinity(pod.spec))


def _tolerations(pod: PodInfo) -> list[Toleration]:
    """The pod's tolerations, parsed once per pod."""
    return pod.memo(f"{NAME}:tolerations", lambda: [Toleration.from_dict(t) for t in pod.spec.get("tolerations") or []])


def _has_untolerated_do_not_schedule_taint(node_info: NodeInfo, tolerations: list[Toleration]) -> bool:
    effects = (EFFECT_NO_SCHEDULE, EFFECT_NO_EXECUTE)
    return find_matching_untolerated_taint(node_info.taints, tolerations, effects) is not None


# --- constraints -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Constraint:
    """Upstream's internal ``topologySpreadConstraint``: a v1 constraint with its selector parsed."""

    max_skew: int
    topology_key: str
    selector: Selector
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def match_node_inclusion_policies(self, pod: PodInfo, node_info: NodeInfo, affinity: RequiredNodeAffinity) -> bool:
        """Whether the node counts for this constraint under nodeAffinityPolicy / nodeTaintsPolicy."""
        if self.node_affinity_policy == HONOR and not affinity.matches(node_info.labels, node_info.name):
            return False
        return not (
            self.node_taints_policy == HONOR and _has_untolerated_do_not_schedule_taint(node_info, _tolerations(pod))
        )


def _filter_constraints(
    constraints: Iterable[Mapping[str, Any]], pod_labels: Mapping[str, str], action: str
) -> list[Constraint]:
    """``filterTopologySpreadConstraints``: the constraints with ``whenUnsatisfiable == action``, parsed."""
    result: list[Constraint] = []
    for c in constraints:
        if c.get("whenUnsatisfiable") != action:
            continue
        selector = label_selector_as_selector(c.get("labelSelector"))
        keys: list[str] = c.get("matchLabelKeys") or []
        if keys:
            # The API server already merged these; merging again is harmless and mirrors the scheduler.
            match_labels = {k: pod_labels[k] for k in keys if k in pod_labels}
            if match_labels and not selector.nothing:
                selector = selector_from_set(match_labels).add(selector.requirements)
        min_domains = c.get("minDomains")
        result.append(
            Constraint(
                max_skew=int(c.get("maxSkew") or 0),
                topology_key=str(c.get("topologyKey") or ""),
                selector=selector,
                min_domains=1 if min_domains is None else int(min_domains),
                node_affinity_policy=c.get("nodeAffinityPolicy") or HONOR,
                node_taints_policy=c.get("nodeTaintsPolicy") or IGNORE,
            )
        )
    return result


def node_labels_match_spread_constraints(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    """Every constraint's topology key is a label of the node."""
    return all(c.topology_key in labels for c in constraints)


def _involved_in_spreading(incoming: PodInfo, pod: PodInfo) -> bool:
    """``involvedInTopologySpreading``: the pod itself, or a bound or nominated pod of its namespace."""
    if incoming.uid == pod.uid:
        return True
    return assigned_or_nominated(incoming) and incoming.namespace == pod.namespace


def count_pods_match_selector(pods: Iterable[PodInfo], selector: Selector, namespace: str) -> int:
    """Pods in ``namespace``, not terminating, matching ``selector`` (an Everything selector counts none)."""
    if selector.empty():
        return 0
    count = 0
    for p in pods:
        if p.namespace != namespace or (p.pod.get("metadata") or {}).get("deletionTimestamp") is not None:
            continue
        if selector.matches(p.labels):
            count += 1
    return count


def _namespace_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace") or "default")


def _name_of(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _controller_of(pod: PodInfo) -> Mapping[str, Any] | None:
    for ref in (pod.pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref  # type: ignore[no-any-return]
    return None


def _find_named(objs: Iterable[Mapping[str, Any]], namespace: str, name: str) -> Mapping[str, Any] | None:
    for o in objs:
        if _namespace_of(o) == namespace and _name_of(o) == name:
            return o
    return None


# --- critical paths and states ---------------------------------------------------------------------


class CriticalPaths:
    """The two smallest (domain, count) pairs of a constraint; ``paths[0]`` always holds the minimum."""

    __slots__ = ("num0", "num1", "val0", "val1")

    def __init__(self) -> None:
        self.val0 = ""
        self.num0 = MAX_INT32
        self.val1 = ""
        self.num1 = MAX_INT32

    def update(self, tp_val: str, num: int) -> None:
        if tp_val == self.val0 or tp_val == self.val1:
            if tp_val == self.val0:
                self.num0 = num
            else:
                self.num1 = num
            if self.num0 > self.num1:
                self.val0, self.num0, self.val1, self.num1 = self.val1, self.num1, self.val0, self.num0
        elif num < self.num0:
            self.val1, self.num1 = self.val0, self.num0
            self.val0, self.num0 = tp_val, num
        elif num < self.num1:
            self.val1, self.num1 = tp_val, num

    def copy(self) -> CriticalPaths:
        c = CriticalPaths()
        c.val0, c.num0, c.val1, c.num1 = self.val0, self.num0, self.val1, self.num1
        return c

    def __repr__(self) -> str:
        return f"CriticalPaths(({self.val0!r}, {self.num0}), ({self.val1!r}, {self.num1}))"


class PreFilterState:
    """What PreFilter computed: matching pods per domain and the critical paths, per hard constraint."""

    __slots__ = ("constraints", "critical_paths", "tp_value_to_match_num")

    def __init__(
        self,
        constraints: list[Constraint],
        critical_paths: list[CriticalPaths],
        tp_value_to_match_num: list[dict[str, int]],
    ) -> None:
        self.constraints = constraints
        self.critical_paths = critical_paths
        self.tp_value_to_match_num = tp_value_to_match_num

    def min_match_num(self, i: int, min_domains: int) -> int:
        """The global minimum for skew; 0 while fewer than ``minDomains`` domains are eligible."""
        if len(self.tp_value_to_match_num[i]) < min_domains:
            return 0
        return self.critical_paths[i].num0

    def clone(self) -> PreFilterState:
        return PreFilterState(
            self.constraints,  # shared: they never change
            [p.copy() for p in self.critical_paths],
            [dict(m) for m in self.tp_value_to_match_num],
        )


class PreScoreState:
    """What PreScore computed for the soft constraints; read-only afterwards, so clone shares it."""

    __slots__ = ("constraints", "ignored_nodes", "topology_normalizing_weight", "topology_value_to_pod_counts")

    def __init__(self) -> None:
        self.constraints: list[Constraint] = []
        self.ignored_nodes: set[str] = set()
        self.topology_value_to_pod_counts: list[dict[str, int]] = []
        self.topology_normalizing_weight: list[float] = []

    def clone(self) -> PreScoreState:
        return self


def topology_normalizing_weight(size: int) -> float:
    """``ln(size + 2)``: counts in smaller topologies weigh less than in bigger ones."""
    return math.log(float(size + 2))


def score_for_count(cnt: int, max_skew: int, tp_weight: float) -> float:
    return float(cnt) * tp_weight + float(max_skew - 1)


def go_round(x: float) -> int:
    """Go's ``math.Round``: half away from zero (Python's ``round`` rounds half to even)."""
    t = math.trunc(x)
    if abs(x - t) >= 0.5:
        t += int(math.copysign(1, x))
    return int(t)


# --- args ------------------------------------------------------------------------------------------


def _go_value(v: Any) -> str:
    """How ``field.Error`` prints a value: strings quoted, numbers bare."""
    if isinstance(v, str):
        return json.dumps(v)
    return str(v)


# --- the plugin ------------------------------------------------------------------------------------


class PodTopologySpread(PreFilterPlugin, FilterPlugin, PreScorePlugin, ScorePlugin, PreFilterExtensions):
    """Upstream ``PodTopologySpread``."""

    name: ClassVar[str] = NAME

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        a = self.defaulted_args(self.args)
        self.system_defaulted = a["defaultingType"] == SYSTEM_DEFAULTING
        self.default_constraints: list[dict[str, Any]] = (
            SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else list(a.get("defaultConstraints") or [])
        )
        # The default constraints parsed per action: they carry no labelSelector (validated), so their selector is
        # Nothing and matchLabelKeys never merge: the result is the same for every pod.
        self._parsed_defaults: dict[str, list[Constraint]] = {}

    # --- EnqueueExtensions ------------------------------------------------------------------------
    def events_to_register(self) -> list[ClusterEventWithHint]:
        """A pod added, relabelled or deleted; a node added, deleted, relabelled or its taints changed."""
        return [
            *events_with_hints(("Pod/Add", ev.POD_UPDATE, ev.POD_DELETE), self.is_schedulable_after_pod_change),
            *events_with_hints(
                (ev.NODE_ADD, ev.NODE_DELETE, ev.NODE_UPDATE_LABEL, ev.NODE_UPDATE_TAINT),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(self, pod: PodInfo, old: PodInfo | None, new: PodInfo | None) -> QueueingHint:
        """A bound or nominated pod of the namespace whose labels (now or before) match a hard constraint, or
        whose relabelling changes which constraints it matches."""
        if (new is not None and not _involved_in_spreading(new, pod)) or (
            old is not None and not _involved_in_spreading(old, pod)
        ):
            return QUEUE_SKIP
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except ValueError:
            return QUEUE
        if new is not None and old is not None:
            if (
                pod.uid == new.uid
                and (new.spec.get("tolerations") or []) != (old.spec.get("tolerations") or [])
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return QUEUE
            if new.labels == old.labels:
                return QUEUE_SKIP
            changed = any(c.selector.matches(old.labels) != c.selector.matches(new.labels) for c in constraints)
            return QUEUE if changed else QUEUE_SKIP
        changed_pod = new if new is not None else old
        if changed_pod is None:
            return QUEUE_SKIP
        return QUEUE if any(c.selector.matches(changed_pod.labels) for c in constraints) else QUEUE_SKIP

    def is_schedulable_after_node_change(self, pod: PodInfo, old: Obj | None, new: Obj | None) -> QueueingHint:
        """A node gaining or losing every topology key, or (having them) a topology value or its taints changed;
        a node added or deleted having them."""
        try:
            constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        except ValueError:
            return QUEUE
        was = old is not None and node_labels_match_spread_constraints(node_labels(old), constraints)
        now = new is not None and node_labels_match_spread_constraints(node_labels(new), constraints)
        if old is not None and new is not None:
            if was != now:
                return QUEUE
            before, after = node_labels(old), node_labels(new)
            keys_changed = any(before.get(c.topology_key) != after.get(c.topology_key) for c in constraints)
            if now and (keys_changed or node_taints(old) != node_taints(new)):
                return QUEUE
            return QUEUE_SKIP
        return QUEUE if (now if new is not None else was) else QUEUE_SKIP

    # --- args -------------------------------------------------------------------------------------
    @classmethod
    def defaulted_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        """``SetDefaults_PodTopologySpreadArgs``: defaultingType System when unset."""
        out = dict(args)
        if not out.get("defaultingType"):
            out["defaultingType"] = SYSTEM_DEFAULTING
        out.setdefault("defaultConstraints", [])
        if out["defaultConstraints"] is None:
            out["defaultConstraints"] = []
        return out

    @classmethod
    def validate_args(cls, args: dict[str, Any]) -> list[tuple[str, str]]:
        """``ValidatePodTopologySpreadArgs``."""
        errs: list[tuple[str, str]] = []
        dtype = args.get("defaultingType")
        constraints: list[dict[str, Any]] = args.get("defaultConstraints") or []
        if dtype not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            errs.append(
                ("defaultingType", f'Unsupported value: {_go_value(dtype)}: supported values: "System", "List"')
            )
        elif dtype == SYSTEM_DEFAULTING and constraints:
            errs.append(
                ("defaultingType", f"Invalid value: {_go_value(dtype)}: when .defaultConstraints are not empty")
            )
        for i, c in enumerate(constraints):
            p = f"defaultConstraints[{i}]"
            if not isinstance(c, dict):
                errs.append((p, "must be an object"))
                continue
            max_skew = c.get("maxSkew") or 0
            if not isinstance(max_skew, int) or max_skew <= 0:
                errs.append((f"{p}.maxSkew", f"Invalid value: {_go_value(max_skew)}: not in valid range (0, inf)"))
            key = c.get("topologyKey") or ""
            if not key:
                errs.append((f"{p}.topologyKey", "Required value: can not be empty"))
            else:
                for msg in label_key_errors(str(key)):
                    errs.append((f"{p}.topologyKey", f"Invalid value: {_go_value(key)}: {msg}"))
            when = c.get("whenUnsatisfiable") or ""
            if not when:
                errs.append((f"{p}.whenUnsatisfiable", "Required value: can not be empty"))
            elif when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
                errs.append(
                    (
                        f"{p}.whenUnsatisfiable",
                        f'Unsupported value: {_go_value(when)}: supported values: "DoNotSchedule", "ScheduleAnyway"',
                    )
                )
            if c.get("labelSelector") is not None:
                errs.append(
                    (
                        f"{p}.labelSelector",
                        "Forbidden: constraint must not define a selector, as they deduced for each pod",
                    )
                )
            for other in constraints[:i]:
                if (
                    isinstance(other, dict)
                    and other.get("topologyKey") == c.get("topologyKey")
                    and other.get("whenUnsatisfiable") == c.get("whenUnsatisfiable")
                ):
                    errs.append((p, f'Duplicate value: "{{{c.get("topologyKey")}, {c.get("whenUnsatisfiable")}}}"'))
                    break
        return errs

    # --- constraints ------------------------------------------------------------------------------
    def _constraints(self, pod: PodInfo, action: str) -> list[Constraint]:
        """The pod's own constraints for ``action``, or the default ones when it has none."""
        own: list[dict[str, Any]] = pod.spec.get("topologySpreadConstraints") or []
        if own:
            return pod.memo(f"{NAME}:constraints:{action}", lambda: _filter_constraints(own, pod.labels, action))
        return self._build_default_constraints(pod, action)

    def _build_default_constraints(self, pod: PodInfo, action: str) -> list[Constraint]:
        """``buildDefaultConstraints``: the defaults for ``action`` with the pod's deduced selector."""
        constraints = self._parsed_defaults.get(action)
        if constraints is None:
            constraints = _filter_constraints(self.default_constraints, pod.labels, action)
            if all(c.selector.nothing for c in constraints):
                self._parsed_defaults[action] = constraints
        if not constraints:
            return []
        selector = self._default_selector(pod)
        if selector.empty():
            return []
        return [
            Constraint(
                c.max_skew, c.topology_key, selector, c.min_domains, c.node_affinity_policy, c.node_taints_policy
            )
            for c in constraints
        ]

    def _default_selector(self, pod: PodInfo) -> Selector:
        """``helper.DefaultSelector``: Services selecting the pod, plus its controlling RC / RS / StatefulSet."""
        cluster = self.handle.cluster
        owner = _controller_of(pod)
        if not cluster.services and owner is None:
            return EVERYTHING  # no Service and no controller to take a selector from (labels.Set{}.AsSelector())
        label_set: dict[str, str] = {}
        for svc in cluster.services:
            if _namespace_of(svc) != pod.namespace:
                continue
            sel = (svc.get("spec") or {}).get("selector")
            if sel is None:
                continue  # a Service without a selector selects nothing
            if all(pod.labels.get(k) == v for k, v in sel.items()):
                label_set.update(sel)
        selector = selector_from_set(label_set)
        if owner is None:
            return selector
        api_version = str(owner.get("apiVersion") or "")
        if api_version.count("/") > 1:
            return selector
        kind = owner.get("kind")
        name = str(owner.get("name") or "")
        if api_version == "v1" and kind == "ReplicationController":
            rc = _find_named(cluster.replication_controllers, pod.namespace, name)
            if rc is not None:
                label_set.update((rc.get("spec") or {}).get("selector") or {})
                selector = selector_from_set(label_set)
        elif api_version == "apps/v1" and kind in ("ReplicaSet", "StatefulSet"):
            objs = cluster.replica_sets if kind == "ReplicaSet" else cluster.stateful_sets
            obj = _find_named(objs, pod.namespace, name)
            if obj is not None:
                try:
                    other = label_selector_as_selector((obj.get("spec") or {}).get("selector"))
                except SelectorError:
                    return selector
                if not other.nothing:
                    selector = selector.add(other.requirements)
        return selector

    # --- PreFilter --------------------------------------------------------------------------------
    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        try:
            s = self._cal_pre_filter_state(pod, nodes)
        except SelectorError as exc:
            return None, error(f"get constraints from pod: obtaining pod's hard topology spread constraints: {exc}")
        if not s.constraints:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, success()

    def _cal_pre_filter_state(self, pod: PodInfo, all_nodes: Sequence[NodeInfo]) -> PreFilterState:
        constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return PreFilterState([], [], [])
        tp_counts = self._cached_counts(pod, constraints, all_nodes)
        if tp_counts is None:
            tp_counts = self._count(pod, constraints, all_nodes)
        paths: list[CriticalPaths] = []
        for counts in tp_counts:
            cp = CriticalPaths()
            for value, num in counts.items():
                cp.update(value, num)
            paths.append(cp)
        return PreFilterState(constraints, paths, tp_counts)

    def _count(
        self, pod: PodInfo, constraints: list[Constraint], all_nodes: Sequence[NodeInfo]
    ) -> list[dict[str, int]]:
        """Matching pods per domain of each constraint, over every eligible node (domains without pods count 0)."""
        tp_counts: list[dict[str, int]] = [{} for _ in constraints]
        affinity = required_node_affinity(pod)
        for ni in all_nodes:
            labels = ni.labels
            if not node_labels_match_spread_constraints(labels, constraints):
                continue
            for i, c in enumerate(constraints):
                if not c.match_node_inclusion_policies(pod, ni, affinity):
                    continue
                value = labels[c.topology_key]
                count = count_pods_match_selector(ni.pods, c.selector, pod.namespace)
                tp_counts[i][value] = tp_counts[i].get(value, 0) + count
        return tp_counts

    def _cached_counts(
        self, pod: PodInfo, constraints: list[Constraint], all_nodes: Sequence[NodeInfo]
    ) -> list[dict[str, int]] | None:
        """``_count`` of an earlier pod of the same shape, brought up to date with the pod changes since (the
        domains depend on the nodes only; a change of nodes gives new columns and a fresh count); None when there
        is none to reuse (it is computed and kept then). A copy: PreFilter's state changes its counts."""
        counts = self._shape_counts("preFilterCounts", pod, constraints, all_nodes, prescore=False)
        return None if counts is None else [dict(m) for m in counts]

    def _shape_counts(
        self,
        name: str,
        pod: PodInfo,
        constraints: list[Constraint],
        all_nodes: Sequence[NodeInfo],
        *,
        prescore: bool,
    ) -> list[dict[str, int]] | None:
        """The counts per domain kept under ``name`` for the pod's shape, brought up to date from the pod journal
        (computed and kept when there are none, or when the journal no longer reaches back); None for a pod
        without a shape or nodes other than the snapshot's. PreScore's counts leave hostname constraints out."""
        key = _spread_key(pod)
        snapshot = self.handle.snapshot
        if key is None or all_nodes is not snapshot.node_info_list:
            return None
        cols = snapshot.columns()
        cache: dict[str, tuple[int, list[dict[str, int]]]] = cols.cached(f"{NAME}:{name}", dict)
        entry = cache.pop(key, None)  # taken out and put back last: the least recently used shape goes first
        counts: list[dict[str, int]] | None = None
        if entry is not None:
            seq, counts = entry
            changes = cols.changes_since(seq)
            if changes is None:
                counts = None
            else:
                self._replay(counts, pod, constraints, changes, skip_hostname=prescore)
        if counts is None:
            counts = (
                self._score_counts(pod, constraints, all_nodes)
                if prescore
                else self._count(pod, constraints, all_nodes)
            )
        if len(cache) >= _SHAPE_CACHE_MAX:
            cache.pop(next(iter(cache)))
        cache[key] = (cols.journal_end(), counts)
        return counts

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(self, state: CycleState, pod: PodInfo, pod_to_add: PodInfo, node_info: NodeInfo) -> Status:
        return self._update_with_pod(state, pod_to_add, pod, node_info, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, pod_to_remove: PodInfo, node_info: NodeInfo) -> Status:
        return self._update_with_pod(state, pod_to_remove, pod, node_info, -1)

    def _update_with_pod(
        self, state: CycleState, updated: PodInfo, preemptor: PodInfo, node_info: NodeInfo, delta: int
    ) -> Status:
        s, st = _read_pre_filter_state(state)
        if s is None:
            return st
        if updated.namespace != preemptor.namespace or not node_info.node:
            return success()
        if not node_labels_match_spread_constraints(node_info.labels, s.constraints):
            return success()
        affinity = required_node_affinity(preemptor)
        for i, c in enumerate(s.constraints):
            if not c.selector.matches(updated.labels):
                continue
            if not c.match_node_inclusion_policies(preemptor, node_info, affinity):
                continue
            v = node_info.labels[c.topology_key]
            counts = s.tp_value_to_match_num[i]
            counts[v] = counts.get(v, 0) + delta
            s.critical_paths[i].update(v, counts[v])
        return success()

    # --- Filter -----------------------------------------------------------------------------------
    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        s, st = _read_pre_filter_state(state)
        if s is None:
            return st
        if not s.constraints:
            return success()
        labels = node_info.labels
        for i, c in enumerate(s.constraints):
            tp_val = labels.get(c.topology_key)
            if tp_val is None:
                return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ERR_REASON_NODE_LABEL_NOT_MATCH)
            min_match = s.min_match_num(i, c.min_domains)
            self_match = 1 if c.selector.matches(pod.labels) else 0
            match_num = s.tp_value_to_match_num[i].get(tp_val, 0)
            if match_num + self_match - min_match > c.max_skew:
                return Status(Code.UNSCHEDULABLE, ERR_REASON_CONSTRAINTS_NOT_MATCH)
        return success()

    def filter_nodes(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> BoolArray | None:
        """``filter`` on label columns: the node has every topology key and no constraint's skew is exceeded."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return None
        ok: BoolArray = np.ones(len(batch), np.bool_)
        for i, c in enumerate(s.constraints):
            codes, table = batch.cols.label_codes(c.topology_key)
            node_codes = batch.take(codes)
            counts = np.zeros(len(table) + 1, np.int64)  # the last slot (code -1) is for nodes without the key
            for value, num in s.tp_value_to_match_num[i].items():
                code = table.get(value)
                if code is not None:
                    counts[code] = num
            self_match = 1 if c.selector.matches(pod.labels) else 0
            skew = counts[node_codes] + self_match - s.min_match_num(i, c.min_domains)
            ok &= (node_codes >= 0) & (skew <= c.max_skew)
        return ok

    def filter_status_keys(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        """1 where the first failing constraint lacks the node's topology label, else 0 (skew exceeded)."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            return None
        keys: IntArray = np.zeros(len(batch), np.int64)
        decided: BoolArray = np.zeros(len(batch), np.bool_)
        for i, c in enumerate(s.constraints):
            codes, table = batch.cols.label_codes(c.topology_key)
            node_codes = batch.take(codes)
            counts = np.zeros(len(table) + 1, np.int64)
            for value, num in s.tp_value_to_match_num[i].items():
                code = table.get(value)
                if code is not None:
                    counts[code] = num
            self_match = 1 if c.selector.matches(pod.labels) else 0
            missing = node_codes < 0
            skewed = counts[node_codes] + self_match - s.min_match_num(i, c.min_domains) > c.max_skew
            keys[~decided & missing] = 1
            decided |= missing | skewed
        return keys

    # --- PreScore ---------------------------------------------------------------------------------
    def pre_score(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> Status:
        all_nodes = self.handle.snapshot.node_info_list
        if not all_nodes:
            return SKIP
        s = PreScoreState()
        # Only non-system-default rules require every topology label: with the system defaults a node
        # without a zone label is still spread by hostname.
        require_all = bool(pod.spec.get("topologySpreadConstraints")) or not self.system_defaulted
        try:
            self._init_pre_score_state(s, pod, nodes, require_all)
        except SelectorError as exc:
            return error("calculating preScoreState: obtaining pod's soft topology spread constraints: " + str(exc))
        if not s.constraints:
            return SKIP
        if any(s.topology_value_to_pod_counts):  # only hostname constraints: nothing to count here
            totals = self._cached_score_counts(pod, s.constraints, all_nodes) if require_all else None
            if totals is None:
                self._count_candidate_domains(s, pod, all_nodes, require_all)
            else:
                for counts, total in zip(s.topology_value_to_pod_counts, totals, strict=True):
                    for value in counts:
                        counts[value] = total.get(value, 0)
        state.write(PRE_SCORE_STATE_KEY, s)
        return success()

    def _count_candidate_domains(
        self, s: PreScoreState, pod: PodInfo, all_nodes: Sequence[NodeInfo], require_all: bool
    ) -> None:
        """Matching pods in each candidate domain of each constraint, over every eligible node."""
        affinity = required_node_affinity(pod)
        for ni in all_nodes:
            labels = ni.labels
            if require_all and not node_labels_match_spread_constraints(labels, s.constraints):
                continue
            for i, c in enumerate(s.constraints):
                if not c.match_node_inclusion_policies(pod, ni, affinity):
                    continue
                # A missing label reads as "" (a domain of its own when system defaults allow it).
                value = labels.get(c.topology_key, "")
                counts = s.topology_value_to_pod_counts[i]
                if value not in counts:
                    continue  # no candidate node in this domain (hostname counts are done in Score)
                counts[value] += count_pods_match_selector(ni.pods, c.selector, pod.namespace)

    def _score_counts(
        self, pod: PodInfo, constraints: list[Constraint], all_nodes: Sequence[NodeInfo]
    ) -> list[dict[str, int]]:
        """Matching pods in every domain of each non-hostname constraint, over every node with all the topology
        labels that the constraint's inclusion policies admit (PreScore's counts before they are narrowed to the
        candidate domains)."""
        totals: list[dict[str, int]] = [{} for _ in constraints]
        affinity = required_node_affinity(pod)
        for ni in all_nodes:
            labels = ni.labels
            if not node_labels_match_spread_constraints(labels, constraints):
                continue
            for i, c in enumerate(constraints):
                if c.topology_key == LABEL_HOSTNAME or not c.match_node_inclusion_policies(pod, ni, affinity):
                    continue
                value = labels[c.topology_key]
                totals[i][value] = totals[i].get(value, 0) + count_pods_match_selector(
                    ni.pods, c.selector, pod.namespace
                )
        return totals

    def _cached_score_counts(
        self, pod: PodInfo, constraints: list[Constraint], all_nodes: Sequence[NodeInfo]
    ) -> list[dict[str, int]] | None:
        """``_score_counts`` of an earlier pod of the same shape, brought up to date with the pod changes since, as
        ``_cached_counts`` does for PreFilter: PreScore counted every pod of every node for each pod (~36 % of the
        scheduler's time with 1,000 nodes and 10,000 pods in ``bench/serve_big.py``). None for a pod without
        constraints of its own (the default ones also depend on Services and controllers)."""
        return self._shape_counts("preScoreCounts", pod, constraints, all_nodes, prescore=True)

    @staticmethod
    def _replay(
        counts: list[dict[str, int]],
        pod: PodInfo,
        constraints: list[Constraint],
        changes: Sequence[tuple[PodInfo, NodeInfo, int]],
        *,
        skip_hostname: bool,
    ) -> None:
        """Bring per-domain counts of matching pods up to date with pod changes (added: +1, removed: -1)."""
        affinity = required_node_affinity(pod)
        for other, ni, sign in changes:
            if other.namespace != pod.namespace or not node_labels_match_spread_constraints(ni.labels, constraints):
                continue
            if (other.pod.get("metadata") or {}).get("deletionTimestamp") is not None:
                continue
            for i, c in enumerate(constraints):
                if skip_hostname and c.topology_key == LABEL_HOSTNAME:
                    continue
                if c.selector.empty() or not c.selector.matches(other.labels):
                    continue
                if not c.match_node_inclusion_policies(pod, ni, affinity):
                    continue
                value = ni.labels[c.topology_key]
                counts[i][value] = counts[i].get(value, 0) + sign

    def _init_pre_score_state(
        self, s: PreScoreState, pod: PodInfo, filtered: Sequence[NodeInfo], require_all: bool
    ) -> None:
        s.constraints = self._constraints(pod, SCHEDULE_ANYWAY)
        if not s.constraints:
            return
        s.topology_value_to_pod_counts = [{} for _ in s.constraints]
        positions = None
        cols = self.handle.snapshot.current_columns()  # the batch path's (None: not built, nothing to reuse)
        if cols is not None and isinstance(filtered, NodeView) and filtered.infos is cols.infos:
            positions = filtered.positions
        elif cols is not None and filtered is cols.infos:
            positions = np.arange(cols.n, dtype=np.int64)
        if cols is not None and positions is not None:
            self._domains_on_columns(s, cols, positions, require_all)
        else:
            for ni in filtered:
                labels = ni.labels
                if require_all and not node_labels_match_spread_constraints(labels, s.constraints):
                    s.ignored_nodes.add(ni.name)
                    continue
                for i, c in enumerate(s.constraints):
                    if c.topology_key == LABEL_HOSTNAME:
                        continue
                    s.topology_value_to_pod_counts[i].setdefault(labels.get(c.topology_key, ""), 0)
        weights: list[float] = []
        for i, c in enumerate(s.constraints):
            size = len(s.topology_value_to_pod_counts[i])
            if c.topology_key == LABEL_HOSTNAME:
                size = len(filtered) - len(s.ignored_nodes)
            weights.append(topology_normalizing_weight(size))
        s.topology_normalizing_weight = weights

    @staticmethod
    def _domains_on_columns(s: PreScoreState, cols: NodeColumns, positions: IntArray, require_all: bool) -> None:
        """``_init_pre_score_state``'s walk over the filtered nodes on label columns: the nodes missing a topology
        label (when all are required) and each constraint's domains in order of first appearance (a loop per node
        was ~6 % of the scheduler's time with 5,000 nodes)."""
        codes = [cols.label_codes(c.topology_key)[0][positions] for c in s.constraints]
        keep = np.ones(len(positions), np.bool_)
        if require_all:
            for column in codes:
                keep &= column >= 0
            if not keep.all():
                names = cols.names
                s.ignored_nodes.update(names[p] for p in positions[~keep].tolist())
        for i, c in enumerate(s.constraints):
            if c.topology_key == LABEL_HOSTNAME:
                continue
            kept = codes[i][keep]
            unique, first = np.unique(kept, return_index=True)
            values = list(cols.label_codes(c.topology_key)[1])  # code -> value
            counts = s.topology_value_to_pod_counts[i]
            for code in unique[np.argsort(first)].tolist():
                counts.setdefault("" if code < 0 else values[code], 0)  # a missing label reads as ""

    # --- Score ------------------------------------------------------------------------------------
    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        s, st = _read_pre_score_state(state)
        if s is None:
            return 0, st
        return self._score(s, pod, node_info), success()

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        s, st = _read_pre_score_state(state)
        if s is None:
            return [], st
        return [self._score(s, pod, ni) for ni in nodes], success()

    def score_batch(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        """``score`` on label columns: the same float sum, constraint by constraint, and Go's rounding (at 5,000
        nodes the per-node loop and the NodeScore list for NormalizeScore were ~1/6 of the scheduler's time)."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return None  # score_nodes reports the missing state
        n = len(batch)
        total = np.zeros(n, np.float64)
        for i, c in enumerate(s.constraints):
            codes, table = batch.cols.label_codes(c.topology_key)
            node_codes = batch.take(codes)
            present = node_codes >= 0
            if c.topology_key == LABEL_HOSTNAME:
                nodes = batch.nodes
                cnt = np.fromiter(
                    (
                        count_pods_match_selector(nodes[j].pods, c.selector, pod.namespace) if ok else 0
                        for j, ok in enumerate(present.tolist())
                    ),
                    np.int64,
                    n,
                )
            else:
                by_code = np.full(len(table) + 1, -1, np.int64)  # -1: a domain PreScore did not count
                for value, num in s.topology_value_to_pod_counts[i].items():
                    code = table.get(value)
                    if code is not None:
                        by_code[code] = num
                cnt = by_code[node_codes]
                if bool((present & (cnt < 0) & ~self._ignored(s, batch)).any()):
                    return None  # score_nodes fails as upstream's map lookup would not
            scored = cnt.astype(np.float64) * s.topology_normalizing_weight[i] + float(c.max_skew - 1)
            total = np.where(present, total + scored, total)
        whole = np.floor(total)  # scores are never negative: Go's half away from zero is half up
        rounded = (whole + (total - whole >= 0.5)).astype(np.int64)
        ignored = self._ignored(s, batch)
        rounded[ignored] = 0
        # NormalizeScore leaves these nodes out: it gets this very array next (see normalize_batch).
        state.write(_BATCH_IGNORED_KEY, (rounded, ignored))
        return rounded

    @staticmethod
    def _ignored(s: PreScoreState, batch: NodeBatch) -> BoolArray:
        """The batch's nodes PreScore left out (missing a topology label)."""
        if not s.ignored_nodes:
            return np.zeros(len(batch), np.bool_)
        ignored = s.ignored_nodes
        return np.fromiter((name in ignored for name in batch.names()), np.bool_, len(batch))

    @staticmethod
    def _score(s: PreScoreState, pod: PodInfo, node_info: NodeInfo) -> int:
        if node_info.name in s.ignored_nodes:
            return 0
        labels = node_info.labels
        score = 0.0
        for i, c in enumerate(s.constraints):
            tp_val = labels.get(c.topology_key)
            if tp_val is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                cnt = count_pods_match_selector(node_info.pods, c.selector, pod.namespace)
            else:
                cnt = s.topology_value_to_pod_counts[i][tp_val]
            score += score_for_count(cnt, c.max_skew, s.topology_normalizing_weight[i])
        return go_round(score)

    def has_normalize(self) -> bool:
        return True

    def normalize_batch(self, state: CycleState, pod: PodInfo, scores: IntArray) -> IntArray | None:
        """``normalize_score`` on the array ``score_batch`` returned (None for scores from anywhere else)."""
        stored = state.get(_BATCH_IGNORED_KEY)
        if not isinstance(stored, tuple) or stored[0] is not scores:
            return None
        ignored: BoolArray = stored[1]
        counted = scores[~ignored]
        out = np.zeros(len(scores), np.int64)
        if not len(counted):
            return out
        min_score, max_score = int(counted.min()), int(counted.max())
        if max_score == 0:
            out[~ignored] = MAX_NODE_SCORE
        else:
            out[~ignored] = MAX_NODE_SCORE * (max_score + min_score - counted) // max_score
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo, scores: list[NodeScore]) -> Status:
        s, st = _read_pre_score_state(state)
        if s is None:
            return st
        min_score = 2**63 - 1
        max_score = 0
        for ns in scores:
            if ns.name in s.ignored_nodes:
                ns.score = INVALID_SCORE
                continue
            min_score = min(min_score, ns.score)
            max_score = max(max_score, ns.score)
        for ns in scores:
            if ns.score == INVALID_SCORE:
                ns.score = 0
            elif max_score == 0:
                ns.score = MAX_NODE_SCORE
            else:
                ns.score = MAX_NODE_SCORE * (max_score + min_score - ns.score) // max_score
        return success()


def _spread_key(pod: PodInfo) -> str | None:
    """What the PreFilter counts depend on besides the cluster's nodes and pods: the pod's namespace, labels,
    own constraints, node selection and tolerations. None for pods without constraints of their own (the default
    ones also depend on Services and controllers)."""

    def build() -> str | None:
        spec = pod.spec
        own = spec.get("topologySpreadConstraints")
        if not own:
            return None
        affinity = spec.get("affinity") or {}
        parts = (
            pod.namespace,
            pod.labels,
            own,
            spec.get("nodeSelector"),
            affinity.get("nodeAffinity"),
            spec.get("tolerations"),
        )
        try:
            return orjson.dumps(
                parts, option=orjson.OPT_SORT_KEYS
            ).decode()  # exact size (orjson's bytes keep a 4 KB buffer)
        except TypeError:
            return None

    return pod.memo(f"{NAME}:spreadKey", build)


def _read_pre_filter_state(state: CycleState) -> tuple[PreFilterState | None, Status]:
    value = state.get(PRE_FILTER_STATE_KEY)
    if value is None:
        return None, error(f'reading "{PRE_FILTER_STATE_KEY}" from cycleState: not found')
    if not isinstance(value, PreFilterState):
        return None, error(f"{value!r} convert to podtopologyspread.preFilterState error")
    return value, success()


def _read_pre_score_state(state: CycleState) -> tuple[PreScoreState | None, Status]:
    value = state.get(PRE_SCORE_STATE_KEY)
    if value is None:
        return None, error(f'error reading "{PRE_SCORE_STATE_KEY}" from cycleState: not found')
    if not isinstance(value, PreScoreState):
        return None, error(f"{value!r}  convert to podtopologyspread.preScoreState error")
    return value, success()

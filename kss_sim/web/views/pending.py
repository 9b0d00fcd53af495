"""Why a pod is pending, in amounts: what it requests beside the most any node has free and allocatable, and which
taints, labels or affinity terms keep it off how many nodes.

Computed when the pod page renders, from the cluster as it is now (the store's nodes, each node's allocation from
the scheduler's cache or the pods), so it complements kube-scheduler's message, which names plugins and counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kss_sim import figures
from kss_sim.kube.labels import NodeSelectorTerm, RequiredNodeAffinity
from kss_sim.kube.objects import Obj, metadata_of
from kss_sim.kube.taints import EFFECT_NO_EXECUTE, EFFECT_NO_SCHEDULE, Toleration, tolerations_tolerate_taint
from kss_sim.web.formatting import CPU, EPHEMERAL_STORAGE, MEMORY, PODS
from kss_sim.web.ports import DraRequestSummary, ResourceAmounts, StoredEntry

# NodeUnschedulable's taint: a cordoned node keeps off pods that do not tolerate it.
CORDON_TAINT = {"key": "node.kubernetes.io/unschedulable", "effect": EFFECT_NO_SCHEDULE}
_KEEPS_OFF = (EFFECT_NO_SCHEDULE, EFFECT_NO_EXECUTE)


@dataclass(frozen=True, slots=True)
class ResourceNeed:
    """One resource the pod requests, against the roomiest nodes of the cluster now."""

    resource: str
    requested: str
    most_free: str
    most_free_node: str
    most_allocatable: str
    nodes_with_room: int  # nodes with at least the requested amount free
    verdict: str  # "never" (no node is that big), "now" (none has it free now), "fits"

    @property
    def sentence(self) -> str:
        """``no node of this cluster can ever hold it`` / ``no node has that much free now`` / ``3 nodes have room``."""
        if self.verdict == "never":
            return "no node of this cluster can ever hold it"
        if self.verdict == "now":
            return "no node has that much free now"
        return f"{_nodes(self.nodes_with_room)} {'has' if self.nodes_with_room == 1 else 'have'} that much free"


@dataclass(slots=True)
class PendingDiagnosis:
    """Why the pod fits nowhere now, in amounts and concrete obstacles."""

    nodes: int
    resources: list[ResourceNeed] = field(default_factory=list)
    room_for_all: int = 0  # nodes with every request free at once
    obstacles: list[str] = field(default_factory=list)  # taints, labels, affinity: "3 nodes have taint ..."
    # The pod's claim requests against the whole cluster's devices, shown first: for a pod DynamicResources keeps
    # pending they are the answer, its taints and amounts beside the point.
    claims: list[DraRequestSummary] = field(default_factory=list)

    @property
    def shown(self) -> bool:
        """Whether there is anything to say."""
        return bool(self.claims or self.resources or self.obstacles or self.resources_summary)

    @property
    def resources_summary(self) -> str:
        """Whether some node has room for every request at once, when each request alone fits somewhere."""
        if not self.resources or any(r.verdict != "fits" for r in self.resources):
            return ""
        if self.room_for_all == 0:
            return "each request fits on some node, but no node has all of them free at once"
        return f"{_nodes(self.room_for_all)} of {self.nodes} have room for all of it now"


def _nodes(n: int) -> str:
    return f"{n} node" if n == 1 else f"{n} nodes"


def _some_of(n: int, total: int, verb: str) -> str:
    """``1 of 3 nodes lacks``, ``2 of 3 nodes lack``: the verb agreeing with ``n``."""
    agreed = verb + ("es" if verb.endswith("ch") else "s") if n == 1 else verb
    return f"{n} of {_nodes(total)} {agreed}"


def _requested_resources(requests: ResourceAmounts) -> list[tuple[str, int]]:
    wanted = [(CPU, requests.milli_cpu), (MEMORY, requests.memory), (EPHEMERAL_STORAGE, requests.ephemeral_storage)]
    wanted += sorted(requests.scalar_resources.items())
    return [(name, amount) for name, amount in wanted if amount > 0]


def _of(amounts: ResourceAmounts, resource: str) -> int:
    if resource == CPU:
        return amounts.milli_cpu
    if resource == MEMORY:
        return amounts.memory
    if resource == EPHEMERAL_STORAGE:
        return amounts.ephemeral_storage
    if resource == PODS:
        return amounts.pods
    return amounts.scalar_resources.get(resource, 0)


def _resource_needs(
    wanted: list[tuple[str, int]], nodes: Sequence[tuple[str, ResourceAmounts, ResourceAmounts, int]]
) -> tuple[list[ResourceNeed], int]:
    """Each wanted resource against the nodes' (name, requested, allocatable, pod count); and how many nodes have
    room for all of it at once (one pod slot included, as NodeResourcesFit counts)."""
    needs: list[ResourceNeed] = []
    fits_all = [True] * len(nodes)
    for resource, amount in [*wanted, (PODS, 1)]:
        best_free, best_node, best_allocatable, room = 0, "", 0, 0
        for i, (name, requested, allocatable, pod_count) in enumerate(nodes):
            total = _of(allocatable, resource)
            free = total - (pod_count if resource == PODS else _of(requested, resource))
            if free > best_free or not best_node:
                best_free, best_node = free, name
            best_allocatable = max(best_allocatable, total)
            if free >= amount:
                room += 1
            else:
                fits_all[i] = False
        verdict = "never" if amount > best_allocatable else ("now" if amount > best_free else "fits")
        if resource == PODS and verdict == "fits":
            continue  # one pod slot: worth a line only when it is what is missing
        needs.append(
            ResourceNeed(
                resource,
                figures.quantity(resource, amount),
                figures.quantity(resource, max(best_free, 0)),
                best_node,
                figures.quantity(resource, best_allocatable),
                room,
                verdict,
            )
        )
    return needs, sum(fits_all)


def _taint_text(taint: Mapping[str, Any]) -> str:
    value = taint.get("value")
    return f"{taint.get('key') or ''}{'=' + str(value) if value else ''}:{taint.get('effect') or ''}"


def _taint_obstacles(pod: Obj, nodes: Sequence[Obj]) -> list[str]:
    """Per taint no toleration of the pod tolerates, how many nodes carry it (cordons apart)."""
    tolerations = [Toleration.from_dict(t) for t in (pod.get("spec") or {}).get("tolerations") or []]

    def untolerated(taint: Mapping[str, Any]) -> bool:
        return (taint.get("effect") or "") in _KEEPS_OFF and not tolerations_tolerate_taint(tolerations, taint)

    per_taint: Counter[str] = Counter()
    cordoned = 0
    cordon_keeps_off = untolerated(CORDON_TAINT)
    # Thousands of nodes share a few taint lists: each distinct list is judged once.
    judged: dict[tuple[tuple[Any, Any, Any], ...], set[str]] = {}
    for node in nodes:
        spec = node.get("spec") or {}
        unschedulable = bool(spec.get("unschedulable"))
        if unschedulable and cordon_keeps_off:
            cordoned += 1
        taints = spec.get("taints")
        if not taints:
            continue
        # A cordoned node also carries the cordon's taint (the node lifecycle controller's): counted once, as
        # cordoned.
        if unschedulable:
            taints = [t for t in taints if (t.get("key"), t.get("effect")) != (CORDON_TAINT["key"], EFFECT_NO_SCHEDULE)]
        key = tuple((t.get("key"), t.get("value"), t.get("effect")) for t in taints)
        texts = judged.get(key)
        if texts is None:
            texts = judged[key] = {_taint_text(t) for t in taints if untolerated(t)}
        for text in texts:
            per_taint[text] += 1
    out = [f"{_nodes(cordoned)} {'is' if cordoned == 1 else 'are'} cordoned (unschedulable)"] if cordoned else []
    for text, n in sorted(per_taint.items(), key=lambda kv: (-kv[1], kv[0])):
        out.append(f"{_nodes(n)} {'has' if n == 1 else 'have'} taint {text} the pod does not tolerate")
    return out


def _requirement_text(expr: Mapping[str, Any]) -> str:
    values = expr.get("values") or []
    shown = f" [{', '.join(str(v) for v in values)}]" if values else ""
    return f"{expr.get('key')} {expr.get('operator')}{shown}"


def _affinity_obstacles(pod: Obj, nodes: Sequence[Obj]) -> list[str]:
    """Which label of the nodeSelector, or which requirement of the required node affinity, how many nodes miss."""
    spec = pod.get("spec") or {}
    required = RequiredNodeAffinity(spec)
    if not required.selector and required.node_selector is None:
        return []  # nothing the nodes' labels could miss
    labelled = [(metadata_of(n).get("labels") or {}, str(metadata_of(n).get("name") or "")) for n in nodes]
    out: list[str] = []
    for key, value in sorted(required.selector.items()):
        missing = sum(1 for labels, _ in labelled if labels.get(key) != value)
        if missing:
            out.append(f"{_some_of(missing, len(nodes), 'lack')} label {key}={value} (nodeSelector)")
    if required.node_selector is None:
        return out
    affinity = (spec.get("affinity") or {}).get("nodeAffinity") or {}
    terms = (affinity.get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    matching = sum(1 for labels, name in labelled if required.node_selector.matches(labels, name))
    if matching == len(nodes):
        return out
    if len(terms) != 1:
        missing = len(nodes) - matching
        out.append(f"{_some_of(missing, len(nodes), 'match')} none of the {len(terms)} node affinity terms")
        return out
    term = terms[0]
    for part in ("matchExpressions", "matchFields"):
        for expr in term.get(part) or []:
            alone = NodeSelectorTerm({part: [expr]})
            missing = sum(1 for labels, name in labelled if not alone.matches(labels, name))
            if missing:
                out.append(f"{_some_of(missing, len(nodes), 'fail')} node affinity {_requirement_text(expr)}")
    return out


def why_pending(
    pod: Obj,
    requests: ResourceAmounts,
    nodes: Sequence[StoredEntry],
    totals: Callable[[StoredEntry], tuple[ResourceAmounts, ResourceAmounts, int]],
) -> PendingDiagnosis:
    """The pod's requests against the nodes' room now (``totals``: a node's requested, allocatable and pod count, as
    ``Allocations.totals`` answers), and the taints and labels that keep it off nodes."""
    rows = [(entry.name, *totals(entry)) for entry in nodes]
    diagnosis = PendingDiagnosis(len(rows))
    if rows:
        diagnosis.resources, diagnosis.room_for_all = _resource_needs(_requested_resources(requests), rows)
    objs = [entry.obj for entry in nodes]
    diagnosis.obstacles = _taint_obstacles(pod, objs) + _affinity_obstacles(pod, objs)
    return diagnosis

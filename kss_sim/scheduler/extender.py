"""Scheduler extenders: kube-scheduler's ``HTTPExtender`` (``pkg/scheduler/extender.go``) over an injected transport.

An extender is a webhook kube-scheduler calls after its Filter plugins (``filterVerb``: it may drop nodes), beside
its Score plugins (``prioritizeVerb``: scores 0..10, times ``weight``, scaled to MaxNodeScore) and instead of the
Bind plugins (``bindVerb``). The engine stays pure: the HTTP call is a :class:`ExtenderTransport` built for each
extender by a factory the host passes in (``app/extender_http`` in ``kss serve`` and ``kss simulate``).

The wire format is ``k8s.io/kube-scheduler/extender/v1``, whose Go structs carry no JSON tags: kube-scheduler
sends the field names as they are (``Pod``, ``Nodes`` a v1 NodeList or ``NodeNames`` for a ``nodeCacheCapable``
extender; ``PodName``, ``PodNamespace``, ``PodUID``, ``Node`` to bind; ``Pod``, ``NodeNameToVictims`` or
``NodeNameToMetaVictims`` (``Pods``, ``NumPDBViolations``, ``UID``) to preempt), and reads answers
(ExtenderFilterResult ``NodeNames`` / ``Nodes``, ``FailedNodes``, ``FailedAndUnresolvableNodes``, ``Error``;
HostPriorityList ``[{Host, Score}]``; ExtenderBindingResult ``Error``; ExtenderPreemptionResult) matching keys
case-insensitively, as encoding/json does. kss does the same, so an extender written for kube-scheduler works here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.snapshot import Snapshot

# extenderv1.MaxExtenderPriority; an extender's score is scaled by MaxNodeScore / MaxExtenderPriority.
MAX_EXTENDER_PRIORITY = 10
MAX_NODE_SCORE = 100
# extender.go's DefaultExtenderTimeout, used when httpTimeout is unset or zero.
DEFAULT_EXTENDER_TIMEOUT_SECONDS = 5.0
# framework.ExtenderName: put among a pod's unschedulable plugins when an extender dropped nodes.
EXTENDER_NAME = "Extender"
# The CycleState key under which preemption leaves its preempt calls (record name -> outcome) for the attempt record.
PREEMPT_CALLS_STATE_KEY = "kss/extenders/preempt"
# ... and each extender's answer (urlPrefix -> {"NodeNameToMetaVictims": ...}) for the extender-preempt-result.
PREEMPT_ANSWERS_STATE_KEY = "kss/extenders/preempt-answers"


@dataclass(frozen=True)
class ManagedResource:
    name: str
    ignored_by_scheduler: bool = False


@dataclass(frozen=True)
class ExtenderConfig:
    """One entry of KubeSchedulerConfiguration's ``extenders`` (validated by ``config.parse_config``)."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls_config: dict[str, Any] | None = None
    http_timeout: float = DEFAULT_EXTENDER_TIMEOUT_SECONDS  # seconds
    node_cache_capable: bool = False
    managed_resources: tuple[ManagedResource, ...] = field(default_factory=tuple)
    ignorable: bool = False

    @property
    def record_name(self) -> str:
        """The column the extender's verdicts and scores are recorded under, beside the plugins'."""
        return f"Extender({self.url_prefix})"


class ExtenderError(Exception):
    """A failed call: no answer, a timeout, a non-200 code, an undecodable body, or the answer's ``error``."""


class ExtenderTransport(Protocol):
    """POSTs ``body`` as JSON to ``<urlPrefix>/<verb>`` and returns the decoded answer; raises ExtenderError."""

    def post(self, verb: str, body: dict[str, Any], timeout: float) -> Any: ...


TransportFactory = Callable[[ExtenderConfig], ExtenderTransport]


@dataclass
class FilterResult:
    """An extender's Filter answer: the nodes it kept (in its order) and the ones it failed, with reasons."""

    nodes: list[NodeInfo]
    failed: dict[str, str]
    failed_and_unresolvable: dict[str, str]


@dataclass
class Victims:
    """``extenderv1.Victims``: the pods to evict on a node (most important first) and how many violate a PDB."""

    pods: list[PodInfo]
    num_pdb_violations: int = 0


class Extender(Protocol):
    """``framework.Extender``, as the cycle uses it."""

    @property
    def name(self) -> str: ...

    @property
    def record_name(self) -> str: ...

    @property
    def weight(self) -> int: ...

    def is_ignorable(self) -> bool: ...

    def is_interested(self, pod: PodInfo) -> bool: ...

    def is_filter(self) -> bool: ...

    def is_prioritizer(self) -> bool: ...

    def is_binder(self) -> bool: ...

    def supports_preemption(self) -> bool: ...

    def filter(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> FilterResult: ...

    def prioritize(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[tuple[str, int]]: ...

    def bind(self, pod: PodInfo, node_name: str) -> None: ...

    def process_preemption(
        self, pod: PodInfo, node_to_victims: dict[str, Victims], snapshot: Snapshot
    ) -> dict[str, Victims]: ...


def _field(obj: Any, name: str) -> Any:
    """A field of a decoded Go struct: the key matched case-insensitively, as encoding/json does (exact first)."""
    if not isinstance(obj, dict):
        return None
    if name in obj:
        return obj[name]
    lower = name.lower()
    for k, v in obj.items():
        if isinstance(k, str) and k.lower() == lower:
            return v
    return None


def _json_kind(value: Any) -> str:
    """A JSON value as encoding/json's UnmarshalTypeError names it."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return f"number {value}" if isinstance(value, float) and not value.is_integer() else "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _is_strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _is_string_map(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(v, str) for v in value.values())


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class HTTPExtender:
    """``HTTPExtender``: the verbs of one configured extender, sent through its transport."""

    def __init__(self, config: ExtenderConfig, transport: ExtenderTransport) -> None:
        self.config = config
        self.transport = transport
        self.managed = frozenset(r.name for r in config.managed_resources)

    @property
    def name(self) -> str:
        return self.config.url_prefix

    @property
    def record_name(self) -> str:
        return self.config.record_name

    @property
    def weight(self) -> int:
        return self.config.weight

    def is_ignorable(self) -> bool:
        return self.config.ignorable

    def is_filter(self) -> bool:
        return bool(self.config.filter_verb)

    def is_prioritizer(self) -> bool:
        return bool(self.config.prioritize_verb)

    def is_binder(self) -> bool:
        return bool(self.config.bind_verb)

    def supports_preemption(self) -> bool:
        return bool(self.config.preempt_verb)

    def is_interested(self, pod: PodInfo) -> bool:
        """Without managedResources every pod; else a pod whose containers or init containers request or limit one
        of them."""
        if not self.managed:
            return True
        spec = pod.spec
        for key in ("containers", "initContainers"):
            for c in spec.get(key) or []:
                res = c.get("resources") or {}
                for kind in ("requests", "limits"):
                    if any(name in self.managed for name in res.get(kind) or {}):
                        return True
        return False

    def _args(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> dict[str, Any]:
        if self.config.node_cache_capable:
            return {"Pod": pod.pod, "Nodes": None, "NodeNames": [ni.name for ni in nodes]}
        node_list = {"kind": "NodeList", "apiVersion": "v1", "metadata": {}, "items": [ni.node for ni in nodes]}
        return {"Pod": pod.pod, "Nodes": node_list, "NodeNames": None}

    def _send(self, verb: str, body: dict[str, Any]) -> Any:
        return self.transport.post(verb, body, self.config.http_timeout)

    def _decoded(self, value: Any, ok: Callable[[Any], bool], where: str, go_type: str) -> Any:
        """``value`` when it is null or decodes into ``go_type``; else the ExtenderError kube-scheduler's extender
        client returns when encoding/json cannot decode the answer (naming the extender and the field)."""
        if value is None or ok(value):
            return value
        raise ExtenderError(
            f"extender {self.name!r}: json: cannot unmarshal {_json_kind(value)} into Go struct field {where} "
            f"of type {go_type}"
        )

    def _filter_answer(self, result: Any) -> tuple[list[str] | None, list[str] | None, dict[str, str], dict[str, str]]:
        """ExtenderFilterResult's fields, each checked as encoding/json decodes it: (node names, names of the
        returned Nodes' items, failed, failed and unresolvable); ``Error`` raised."""
        where = "ExtenderFilterResult."
        error = self._decoded(_field(result, "Error"), lambda v: isinstance(v, str), where + "Error", "string")
        names = self._decoded(_field(result, "NodeNames"), _is_strings, where + "NodeNames", "[]string")
        failed = self._decoded(
            _field(result, "FailedNodes"), _is_string_map, where + "FailedNodes", "v1.FailedNodesMap"
        )
        unresolvable = self._decoded(
            _field(result, "FailedAndUnresolvableNodes"),
            _is_string_map,
            where + "FailedAndUnresolvableNodes",
            "v1.FailedNodesMap",
        )
        nodes = self._decoded(_field(result, "Nodes"), lambda v: isinstance(v, dict), where + "Nodes", "v1.NodeList")
        items: list[str] | None = None
        if nodes is not None:
            raw = self._decoded(
                _field(nodes, "Items"), lambda v: isinstance(v, list), where + "Nodes.items", "[]v1.Node"
            )
            items = []
            for item in raw or []:
                item = self._decoded(item, lambda v: isinstance(v, dict), where + "Nodes.items", "v1.Node")
                meta = self._decoded(
                    (item or {}).get("metadata"), lambda v: isinstance(v, dict), where + "Nodes.items.metadata",
                    "v1.ObjectMeta",
                )  # fmt: skip
                name = self._decoded(
                    (meta or {}).get("name"),
                    lambda v: isinstance(v, str),
                    where + "Nodes.items.metadata.name",
                    "string",
                )
                items.append(name or "")
        if error:
            raise ExtenderError(error)
        return names, items, failed or {}, unresolvable or {}

    def filter(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> FilterResult:
        if not self.config.filter_verb:
            return FilterResult(list(nodes), {}, {})
        result = self._send(self.config.filter_verb, self._args(pod, nodes))
        if not isinstance(result, dict):
            raise ExtenderError(f"extender {self.name!r} answered filter with {type(result).__name__}, not an object")
        names, items, failed, unresolvable = self._filter_answer(result)
        by_name = {ni.name: ni for ni in nodes}
        kept: list[NodeInfo] = []
        if self.config.node_cache_capable and names is not None:
            for name in names:
                ni = by_name.get(name)
                if ni is None:
                    raise ExtenderError(
                        f"extender {self.name!r} claims a filtered node {name!r} which is not found in the input "
                        "node list"
                    )
                kept.append(ni)
        elif items is not None:
            # kube-scheduler keeps the Node objects the extender sent back; the simulator keeps its own NodeInfo
            # for each (an extender that is not node-cache capable echoes the nodes it was given).
            for name in items:
                ni = by_name.get(name)
                if ni is None:
                    raise ExtenderError(f"extender {self.name!r} returned node {name!r} which it was not given")
                kept.append(ni)
        return FilterResult(kept, dict(failed), dict(unresolvable))

    def prioritize(self, pod: PodInfo, nodes: Sequence[NodeInfo]) -> list[tuple[str, int]]:
        if not self.config.prioritize_verb:
            return [(ni.name, 0) for ni in nodes]
        result = self._send(self.config.prioritize_verb, self._args(pod, nodes))
        if not isinstance(result, list):
            raise ExtenderError(f"extender {self.name!r} answered prioritize with {type(result).__name__}, not a list")
        out: list[tuple[str, int]] = []
        for entry in result:
            if not isinstance(entry, dict):
                raise ExtenderError(f"extender {self.name!r}: a HostPriority must be an object")
            score = _field(entry, "Score") or 0
            if isinstance(score, bool) or not isinstance(score, int):
                raise ExtenderError(f"extender {self.name!r}: score {score!r} of host {_field(entry, 'Host')!r}")
            host = self._decoded(_field(entry, "Host"), lambda v: isinstance(v, str), "HostPriority.Host", "string")
            out.append((host or "", score))
        return out

    def bind(self, pod: PodInfo, node_name: str) -> None:
        if not self.config.bind_verb:
            raise ExtenderError("unexpected empty bindVerb in extender")
        meta = pod.pod.get("metadata") or {}
        body = {
            "PodName": meta.get("name", ""),
            "PodNamespace": meta.get("namespace", ""),
            "PodUID": meta.get("uid", ""),
            "Node": node_name,
        }
        result = self._send(self.config.bind_verb, body)
        if result is None:
            return
        if not isinstance(result, dict):
            raise ExtenderError(
                f"extender {self.name!r}: json: cannot unmarshal {_json_kind(result)} into Go value of type "
                "v1.ExtenderBindingResult"
            )
        error = self._decoded(
            _field(result, "Error"), lambda v: isinstance(v, str), "ExtenderBindingResult.Error", "string"
        )
        if error:
            raise ExtenderError(error)

    def process_preemption(
        self, pod: PodInfo, node_to_victims: dict[str, Victims], snapshot: Snapshot
    ) -> dict[str, Victims]:
        """``ProcessPreemption``: send the candidates' victims (UIDs only to a node-cache-capable extender), read
        back ``nodeNameToMetaVictims`` and map each UID to the pod on that node in ``snapshot``
        (``convertToVictims``). A node missing from the snapshot or a UID not on its node is an error."""
        if not self.config.preempt_verb:
            raise ExtenderError(f"preempt verb is not defined for extender {self.name} but run into ProcessPreemption")
        if self.config.node_cache_capable:
            meta = {
                name: {"Pods": [{"UID": p.uid} for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
                for name, v in node_to_victims.items()
            }
            body: dict[str, Any] = {"Pod": pod.pod, "NodeNameToVictims": None, "NodeNameToMetaVictims": meta}
        else:
            full = {
                name: {"Pods": [p.pod for p in v.pods], "NumPDBViolations": v.num_pdb_violations}
                for name, v in node_to_victims.items()
            }
            body = {"Pod": pod.pod, "NodeNameToVictims": full, "NodeNameToMetaVictims": None}
        result = self._send(self.config.preempt_verb, body)
        if not isinstance(result, dict):
            raise ExtenderError(f"extender {self.name!r} answered preempt with {type(result).__name__}, not an object")
        returned = _field(result, "nodeNameToMetaVictims") or {}
        if not isinstance(returned, dict):
            raise ExtenderError(f"extender {self.name!r}: nodeNameToMetaVictims must be an object")
        out: dict[str, Victims] = {}
        where = "ExtenderPreemptionResult.NodeNameToMetaVictims"
        for node_name, meta_victims in returned.items():
            self._decoded(meta_victims, lambda v: isinstance(v, dict), where, "v1.MetaVictims")
            node_info = snapshot.get(str(node_name))
            if node_info is None:
                raise ExtenderError(f'nodeinfo not found for node name "{node_name}"')
            num = _field(meta_victims, "numPDBViolations") or 0
            if isinstance(num, bool) or not isinstance(num, int):
                raise ExtenderError(f"extender {self.name!r}: numPDBViolations {num!r} on node {node_name!r}")
            meta_pods = self._decoded(
                _field(meta_victims, "pods"), lambda v: isinstance(v, list), where + ".Pods", "[]*v1.MetaPod"
            )
            pods: list[PodInfo] = []
            for meta_pod in meta_pods or []:
                self._decoded(meta_pod, lambda v: isinstance(v, dict), where + ".Pods", "v1.MetaPod")
                raw_uid = _field(meta_pod, "uid")
                uid = self._decoded(raw_uid, lambda v: isinstance(v, str), where + ".Pods.UID", "types.UID") or ""
                found = next((p for p in node_info.pods if p.uid == uid), None)
                if found is None:
                    raise ExtenderError(
                        f"extender: {self.name} claims to preempt pod (UID: {uid}) on node: {node_name}, but the pod "
                        "is not found on that node"
                    )
                pods.append(found)
            out[str(node_name)] = Victims(pods, num)
        return out


def build_extenders(configs: Sequence[ExtenderConfig], transport_for: TransportFactory) -> list[Extender]:
    """``NewHTTPExtender`` for each configured extender, in configuration order."""
    return [HTTPExtender(c, transport_for(c)) for c in configs]


def extender_score(score: int, weight: int) -> int:
    """An extender's contribution to a node's total: ``score * weight * (MaxNodeScore / MaxExtenderPriority)``."""
    return score * weight * (MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY)

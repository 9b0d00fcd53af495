"""The simulator's explanation of a DynamicResources rejection: each request of each claim against one node's devices.

kube-scheduler says only "cannot allocate all claims" for a node. This counts, per request, the devices the node
can use, those the device class's selectors take, those the request's selectors take too, and how many of them
are not allocated, from the scheduler's listers (the DRA manager's claims, classes, slices and allocated devices)
as they are now. It does not run the allocator: constraints across requests (``matchAttribute``) and several
requests competing for the same devices are not weighed, so "enough" for each request alone can still be refused.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kss_sim.kube.labels import NodeSelector
from kss_sim.kube.objects import Obj
from kss_sim.scheduler.dra.allocated import DeviceID
from kss_sim.web.dra_devices import NodeDevice, devices_on_node, pod_claim_refs
from kss_sim.web.ports import DraRequestExplanation, DraRequestSummary


@dataclass(slots=True)
class DraListers:
    """What the explanation reads: claims by ``namespace/name``, classes by name, slices, allocated devices."""

    claims: Callable[[str, str], Obj | None]
    classes: Mapping[str, Obj]
    slices: Sequence[Obj]
    allocated: set[DeviceID]
    _views: dict[int, Any] = field(default_factory=dict)

    def view(self, device: NodeDevice) -> Any:
        """The device's CEL view, built once per explanation."""
        view = self._views.get(id(device.device))
        if view is None:
            from kss_sim.kube.dra.cel import device_view  # loaded with the first selector (see _matches)

            view = self._views[id(device.device)] = device_view(device.driver, device.device)
        return view


def _expressions(selectors: Any) -> list[str]:
    return [str((s.get("cel") or {}).get("expression") or "") for s in selectors or [] if s.get("cel")]


class _SelectorFailed(Exception):
    """A selector that does not compile or fails on a device: the request cannot be allocated (an error upstream)."""


def _matches(listers: DraListers, expressions: list[str], device: NodeDevice) -> bool:
    # The CEL compiler and its protobuf descriptors load with the first selector, not at every server's start.
    from kss_sim.kube.dra.cel import CelCompileError, CelEvaluationError, compile_selector

    for expression in expressions:
        try:
            if not compile_selector(expression).matches(listers.view(device)):
                return False
        except (CelCompileError, CelEvaluationError) as exc:
            raise _SelectorFailed(f"selector {expression!r} fails on device {device.name}: {exc}") from exc
    return True


def _short(expressions: list[str]) -> str:
    return " && ".join(expressions) if expressions else ""


@dataclass(frozen=True, slots=True)
class _Taken:
    """A request's devices among some devices: of its class, matching its selectors too, and of those free."""

    of_class: list[NodeDevice]
    matching: list[NodeDevice]
    free: list[NodeDevice]


def _take(listers: DraListers, spec: Mapping[str, Any], devices: list[NodeDevice]) -> _Taken | str:
    """The devices one exact request (or firstAvailable alternative) can take, or why it can take none (a class
    that does not exist, a selector that fails)."""
    class_name = str(spec.get("deviceClassName") or "")
    device_class = listers.classes.get(class_name)
    if device_class is None:
        return f"device class {class_name} does not exist"
    class_selectors = _expressions((device_class.get("spec") or {}).get("selectors"))
    request_selectors = _expressions(spec.get("selectors"))
    try:
        of_class = [d for d in devices if _matches(listers, class_selectors, d)]
        matching = [d for d in of_class if _matches(listers, request_selectors, d)]
    except _SelectorFailed as exc:
        return str(exc)
    admin = bool(spec.get("adminAccess"))
    return _Taken(of_class, matching, [d for d in matching if admin or DeviceID(*d.key) not in listers.allocated])


def _satisfied(spec: Mapping[str, Any], taken: _Taken) -> bool:
    """Whether these devices alone satisfy the request: all matching ones free (All), else enough free."""
    if spec.get("allocationMode") == "All":
        return bool(taken.matching) and len(taken.free) == len(taken.matching)
    return len(taken.free) >= int(spec.get("count") or 1)


def _wanted(spec: Mapping[str, Any]) -> str:
    return "all" if spec.get("allocationMode") == "All" else str(int(spec.get("count") or 1))


def _request(
    listers: DraListers, claim: str, name: str, spec: Mapping[str, Any], devices: list[NodeDevice]
) -> DraRequestExplanation:
    """One exact request (or firstAvailable alternative) against the node's devices."""
    class_name = str(spec.get("deviceClassName") or "")
    all_mode = spec.get("allocationMode") == "All"
    count = int(spec.get("count") or 1)
    wanted = _wanted(spec)

    def row(of_class: int, matching: int, free: int, sentence: str, fits: bool) -> DraRequestExplanation:
        return DraRequestExplanation(
            claim, name, class_name, wanted, len(devices), of_class, matching, free, sentence, fits
        )

    taken = _take(listers, spec, devices)
    if isinstance(taken, str):
        return row(0, 0, 0, taken, False)
    if not devices:
        return row(0, 0, 0, "no ResourceSlice offers this node any device", False)
    if not taken.of_class:
        return row(0, 0, 0, f"no device here matches device class {class_name}'s selectors", False)
    if not taken.matching:
        selectors = _short(_expressions(spec.get("selectors")))
        return row(len(taken.of_class), 0, 0, f"no device matches selector {selectors}", False)
    n_class, n_match, n_free = len(taken.of_class), len(taken.matching), len(taken.free)
    if all_mode:
        if n_free < n_match:
            return row(n_class, n_match, n_free, f"only {n_free} of {n_match} matching devices free, all wanted", False)
        return row(n_class, n_match, n_free, f"all {n_match} matching devices free", True)
    if n_free < count:
        sentence = f"only {n_free} of {n_match} matching devices free, {count} wanted"
        return row(n_class, n_match, n_free, sentence, False)
    return row(n_class, n_match, n_free, f"{n_free} of {n_match} matching devices free, {count} wanted", True)


def _allocated_claim(claim: str, allocation: Mapping[str, Any], node: Mapping[str, Any]) -> DraRequestExplanation:
    devices = [str(r.get("device")) for r in (allocation.get("devices") or {}).get("results") or []]
    named = ", ".join(devices) or "no devices"
    selector = allocation.get("nodeSelector")
    here = selector is None or NodeSelector(selector).matches_node(node)
    sentence = (
        f"already allocated ({named}); usable on this node"
        if here
        else f"already allocated ({named}) where its nodeSelector points, not on this node"
    )
    return DraRequestExplanation(claim, "-", "", "-", 0, 0, 0, 0, sentence, here)


def explain_on_node(
    pod: Mapping[str, Any], node: Mapping[str, Any], listers: DraListers
) -> list[DraRequestExplanation]:
    """Each request of each of the pod's claims against the devices this node can use."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    devices = devices_on_node(listers.slices, node)
    out: list[DraRequestExplanation] = []
    for ref in pod_claim_refs(pod):
        if ref.claim is None:
            out.append(DraRequestExplanation(
                f"{namespace}/?", ref.pod_claim, "", "-", 0, 0, 0, 0, "claim not created from its template yet", False
            ))  # fmt: skip
            continue
        key = f"{namespace}/{ref.claim}"
        claim = listers.claims(namespace, ref.claim)
        if claim is None:
            out.append(DraRequestExplanation(key, "-", "", "-", 0, 0, 0, 0, "claim not found", False))
            continue
        allocation = (claim.get("status") or {}).get("allocation")
        if allocation:
            out.append(_allocated_claim(key, allocation, node))
            continue
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            name = str(request.get("name") or "")
            if request.get("exactly") is not None:
                out.append(_request(listers, key, name, request["exactly"], devices))
            for sub in request.get("firstAvailable") or []:
                out.append(_request(listers, key, f"{name}/{sub.get('name')}", sub, devices))
    return out


@dataclass(slots=True)
class _Tally:
    """One request's devices and nodes across the cluster (devices by key: a network-attached one serves many)."""

    claim: str
    request: str
    spec: Mapping[str, Any]
    of_class: set[tuple[str, str, str]] = field(default_factory=set)
    matching: set[tuple[str, str, str]] = field(default_factory=set)
    free: set[tuple[str, str, str]] = field(default_factory=set)
    nodes_of_class: int = 0
    nodes_matching: int = 0
    nodes_fitting: int = 0
    failure: str = ""  # a class that does not exist, a selector that fails: the same on every node

    def add(self, taken: _Taken, satisfied: bool) -> None:
        self.of_class.update(d.key for d in taken.of_class)
        self.matching.update(d.key for d in taken.matching)
        self.free.update(d.key for d in taken.free)
        self.nodes_of_class += bool(taken.of_class)
        self.nodes_matching += bool(taken.matching)
        self.nodes_fitting += satisfied

    def summary(self) -> DraRequestSummary:
        class_name = str(self.spec.get("deviceClassName") or "")
        selector = _short(_expressions(self.spec.get("selectors")))
        wanted = _wanted(self.spec)
        n_class, n_match, n_free = len(self.of_class), len(self.matching), len(self.free)
        if self.failure:
            sentence = self.failure
        elif not n_class:
            sentence = f"no node of this cluster can use a device of class {class_name}"
        elif not n_match:
            sentence = f"none of the {n_class} devices of class {class_name} matches the selector"
        elif not self.nodes_fitting:
            what = "all its matching devices" if wanted == "all" else f"{wanted} matching devices"
            sentence = f"no node has {what} free now ({n_free} of {n_match} free in the cluster)"
        else:
            sentence = f"{self.nodes_fitting} node{'' if self.nodes_fitting == 1 else 's'} could satisfy it now"
        return DraRequestSummary(
            self.claim, self.request, class_name, selector, wanted, n_class, n_match, n_free,
            self.nodes_of_class, self.nodes_matching, self.nodes_fitting, sentence, self.nodes_fitting > 0,
        )  # fmt: skip


def _claim_summary(claim: str, sentence: str, fits: bool) -> DraRequestSummary:
    return DraRequestSummary(claim, "-", "", "", "-", 0, 0, 0, 0, 0, 0, sentence, fits)


def summarize_in_cluster(
    pod: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], listers: DraListers
) -> list[DraRequestSummary]:
    """Each request of each of the pod's claims against the devices of every node at once: what the per-node
    explanations, one node at a time, leave the reader to add up (a model no node has, a class no slice offers)."""
    namespace = str((pod.get("metadata") or {}).get("namespace") or "default")
    entries: list[DraRequestSummary | _Tally] = []
    for ref in pod_claim_refs(pod):
        if ref.claim is None:
            entries.append(_claim_summary(f"{namespace}/?", "claim not created from its template yet", False))
            continue
        key = f"{namespace}/{ref.claim}"
        claim = listers.claims(namespace, ref.claim)
        if claim is None:
            entries.append(_claim_summary(key, "claim not found", False))
            continue
        allocation = (claim.get("status") or {}).get("allocation")
        if allocation:
            held = [str(r.get("device")) for r in (allocation.get("devices") or {}).get("results") or []]
            entries.append(_claim_summary(key, f"already allocated ({', '.join(held) or 'no devices'})", True))
            continue
        for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
            name = str(request.get("name") or "")
            if request.get("exactly") is not None:
                entries.append(_Tally(key, name, request["exactly"]))
            for sub in request.get("firstAvailable") or []:
                entries.append(_Tally(key, f"{name}/{sub.get('name')}", sub))
    tallies = [e for e in entries if isinstance(e, _Tally)]
    if tallies:
        # Slices for one node read once, not once per node: thousands of nodes each publish their own.
        own: dict[str, list[Obj]] = {}
        shared: list[Obj] = []
        for s in listers.slices:
            spec = s.get("spec") or {}
            if spec.get("nodeName") and not spec.get("perDeviceNodeSelection"):
                own.setdefault(str(spec["nodeName"]), []).append(s)
            else:
                shared.append(s)
        for node in nodes:
            name = str((node.get("metadata") or {}).get("name") or "")
            devices = devices_on_node([*own.get(name, ()), *shared], node)
            for tally in tallies:
                if tally.failure:
                    continue
                taken = _take(listers, tally.spec, devices)
                if isinstance(taken, str):
                    tally.failure = taken
                else:
                    tally.add(taken, _satisfied(tally.spec, taken))
    return [e.summary() if isinstance(e, _Tally) else e for e in entries]

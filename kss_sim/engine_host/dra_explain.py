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
from kss_sim.web.ports import DraRequestExplanation


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


def _request(
    listers: DraListers, claim: str, name: str, spec: Mapping[str, Any], devices: list[NodeDevice]
) -> DraRequestExplanation:
    """One exact request (or firstAvailable alternative) against the node's devices."""
    class_name = str(spec.get("deviceClassName") or "")
    all_mode = spec.get("allocationMode") == "All"
    count = int(spec.get("count") or 1)
    wanted = "all" if all_mode else str(count)

    def row(of_class: int, matching: int, free: int, sentence: str, fits: bool) -> DraRequestExplanation:
        return DraRequestExplanation(
            claim, name, class_name, wanted, len(devices), of_class, matching, free, sentence, fits
        )

    device_class = listers.classes.get(class_name)
    if device_class is None:
        return row(0, 0, 0, f"device class {class_name} does not exist", False)
    class_selectors = _expressions((device_class.get("spec") or {}).get("selectors"))
    request_selectors = _expressions(spec.get("selectors"))
    try:
        of_class = [d for d in devices if _matches(listers, class_selectors, d)]
        matching = [d for d in of_class if _matches(listers, request_selectors, d)]
    except _SelectorFailed as exc:
        return row(0, 0, 0, str(exc), False)
    admin = bool(spec.get("adminAccess"))
    free = [d for d in matching if admin or DeviceID(*d.key) not in listers.allocated]
    if not devices:
        return row(0, 0, 0, "no ResourceSlice offers this node any device", False)
    if not of_class:
        return row(0, 0, 0, f"no device here matches device class {class_name}'s selectors", False)
    if not matching:
        return row(len(of_class), 0, 0, f"no device matches selector {_short(request_selectors)}", False)
    n_class, n_match, n_free = len(of_class), len(matching), len(free)
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

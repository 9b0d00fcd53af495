"""An allocation turned into ``claim.status.allocation`` (``AllocationResult``) as upstream's ``Allocate`` ends.

Keys appear in the order of the Go structs' fields and empty optional fields are left out, as kube-apiserver
would store and serve them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kss_sim.kube.objects import Obj
from kss_sim.scheduler.dra.allocated import ConsumedCapacity
from kss_sim.scheduler.dra.devices import DeviceInfo, SliceInfo
from kss_sim.scheduler.dra.requests import RequestData


class NodeSelectorError(Exception):
    """A slice's node selector the allocation result cannot carry (more than one term)."""


@dataclass(slots=True, eq=False)
class DeviceResult:
    """``internalDeviceResult``: one device taken for a request or subrequest."""

    request: str  # the request's name, or the subrequest's
    parent_request: str  # the request holding the subrequest, "" otherwise
    device: DeviceInfo
    slice: SliceInfo
    admin_access: bool
    share_id: str | None = None
    consumed: ConsumedCapacity | None = None
    consumed_texts: dict[str, str] | None = None

    def request_name(self) -> str:
        return f"{self.parent_request}/{self.request}" if self.parent_request else self.request


def _request_tolerations(claim: Mapping[str, Any], result: DeviceResult) -> list[Any]:
    """``lookupRequest(claim).tolerations()``: the tolerations of the request or subrequest the device is for."""
    wanted = result.parent_request or result.request
    for request in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []:
        if request.get("name") != wanted:
            continue
        if not result.parent_request:
            return list((request.get("exactly") or {}).get("tolerations") or [])
        for sub in request.get("firstAvailable") or []:
            if sub.get("name") == result.request:
                return list(sub.get("tolerations") or [])
    return []


def _device_result(claim: Mapping[str, Any], r: DeviceResult, with_tolerations: bool, with_binding: bool) -> Obj:
    out: Obj = {"request": r.request_name(), "driver": r.device.id.driver, "pool": r.device.id.pool}
    out["device"] = r.device.id.device
    if r.admin_access:
        out["adminAccess"] = True
    if with_tolerations:
        tolerations = _request_tolerations(claim, r)
        if tolerations:
            out["tolerations"] = copy.deepcopy(tolerations)
    if with_binding:
        if r.device.binding_conditions:
            out["bindingConditions"] = list(r.device.binding_conditions)
        if r.device.binding_failure_conditions:
            out["bindingFailureConditions"] = list(r.device.binding_failure_conditions)
    if r.share_id is not None:
        out["shareID"] = r.share_id
    if r.consumed_texts:
        out["consumedCapacity"] = dict(r.consumed_texts)
    return out


def _device_configuration(config: Mapping[str, Any]) -> Obj:
    """The inlined ``DeviceConfiguration`` of a class or claim config entry (``opaque``)."""
    return {k: copy.deepcopy(v) for k, v in config.items() if k != "requests"}


def _configs(claim: Mapping[str, Any], chosen: Sequence[RequestData]) -> list[Obj]:
    """Class configs once per class (listing the requests using it), then the claim's configs, as upstream adds them."""
    configs: list[Obj] = []
    class_ranges: dict[str, tuple[int, int]] = {}
    for data in chosen:
        device_class = data.device_class
        if device_class is None:
            continue
        class_name = str((device_class.get("metadata") or {}).get("name") or "")
        span = class_ranges.get(class_name)
        if span is not None:
            for i in range(*span):
                configs[i]["requests"].append(data.request_name())
            continue
        start = len(configs)
        for config in (device_class.get("spec") or {}).get("config") or []:
            configs.append({"source": "FromClass", "requests": [data.request_name()], **_device_configuration(config)})
        class_ranges[class_name] = (start, len(configs))
    requests = ((claim.get("spec") or {}).get("devices") or {}).get("requests") or []
    for config in ((claim.get("spec") or {}).get("devices") or {}).get("config") or []:
        names = list(config.get("requests") or [])
        entry = {"source": "FromClaim", **({"requests": names} if names else {}), **_device_configuration(config)}
        if not names:
            configs.append(copy.deepcopy(entry))
            continue
        # Upstream appends the entry once per request it names (and per chosen subrequest it names).
        for i, request in enumerate(requests):
            if request.get("name") in names:
                configs.append(copy.deepcopy(entry))
                continue
            data = chosen[i]
            if data.parent is None:
                continue
            if data.request_name() in names:
                configs.append(copy.deepcopy(entry))
    return configs


def _same_requirement(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return (
        a.get("key") == b.get("key")
        and a.get("operator") == b.get("operator")
        and set(a.get("values") or []) == set(b.get("values") or [])
    )


def _add_requirements(source: Sequence[Mapping[str, Any]], target: list[Obj]) -> None:
    for requirement in source:
        if not any(_same_requirement(existing, requirement) for existing in target):
            target.append(copy.deepcopy(dict(requirement)))


def _node_selector(results: Sequence[DeviceResult], node_name: str, name_from_slice: bool) -> Obj | None:
    """``createNodeSelector``: pinned to the node if any device is node-local, else the slices' selectors merged."""
    fields: list[Obj] = []
    expressions: list[Obj] = []
    for r in results:
        if r.slice.per_device_node_selection:
            local, selector = r.device.node_name, r.device.node_selector
        else:
            local, selector = r.slice.node_name, r.slice.node_selector
        if local is not None or r.device.binds_to_node:
            # The incubating and stable implementations name the device's node; the experimental one the target.
            value = local if name_from_slice and local is not None else node_name
            requirement = {"key": "metadata.name", "operator": "In", "values": [value]}
            return {"nodeSelectorTerms": [{"matchFields": [requirement]}]}
        if selector is not None:
            terms = selector.get("nodeSelectorTerms") or []
            if len(terms) == 1:
                _add_requirements(terms[0].get("matchFields") or [], fields)
                _add_requirements(terms[0].get("matchExpressions") or [], expressions)
            elif len(terms) > 1:
                raise NodeSelectorError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
    if not fields and not expressions:
        return None
    term: Obj = {}
    if expressions:
        term["matchExpressions"] = expressions
    if fields:
        term["matchFields"] = fields
    return {"nodeSelectorTerms": [term]}


def build_allocation_result(
    claim: Mapping[str, Any],
    results: Sequence[DeviceResult],
    chosen: Sequence[RequestData],
    node: Mapping[str, Any],
    *,
    with_tolerations: bool,
    with_binding: bool,
    name_from_slice: bool,
) -> Obj:
    """One claim's ``AllocationResult``: device results, configs and the node selector."""
    devices: Obj = {}
    if results:
        devices["results"] = [_device_result(claim, r, with_tolerations, with_binding) for r in results]
    configs = _configs(claim, chosen)
    if configs:
        devices["config"] = configs
    out: Obj = {"devices": devices}
    node_name = str((node.get("metadata") or {}).get("name") or "")
    selector = _node_selector(results, node_name, name_from_slice)
    if selector is not None:
        out["nodeSelector"] = selector
    return out

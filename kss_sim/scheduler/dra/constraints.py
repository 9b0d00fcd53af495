"""A claim's ``constraints``: ``matchAttribute`` (and, experimental only, ``distinctAttribute``).

Constraints are monotonic: once adding a device fails, adding more never helps, so the search backtracks at once.
Every successful :meth:`add` is undone by exactly one :meth:`remove` with the same arguments.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kss_sim.scheduler.dra.allocated import DeviceID

_VALUE_KINDS = ("string", "int", "bool", "version")


def lookup_attribute(attributes: Mapping[str, Any], device: DeviceID, name: str) -> Mapping[str, Any] | None:
    """``lookupAttribute``: the fully qualified name, or the bare name when its domain is the driver's."""
    attr: Mapping[str, Any] | None = attributes.get(name)
    if attr is not None:
        return attr
    domain, sep, short = name.partition("/")
    if not sep or domain != device.driver:
        return None
    attr = attributes.get(short)
    return attr


def _kind(attr: Mapping[str, Any]) -> str | None:
    """Which value an attribute holds, in the order upstream's switch tests them."""
    for kind in _VALUE_KINDS:
        if attr.get(kind) is not None:
            return kind
    return None


class _RequestScoped:
    """Which requests a constraint covers (all when it names none)."""

    __slots__ = ("attribute_name", "request_names")

    def __init__(self, request_names: list[str], attribute_name: str) -> None:
        self.request_names = frozenset(request_names)
        self.attribute_name = attribute_name

    def applies(self, request: str, subrequest: str) -> bool:
        if not self.request_names:
            return True
        if not subrequest:
            return request in self.request_names
        return request in self.request_names or f"{request}/{subrequest}" in self.request_names


class MatchAttributeConstraint(_RequestScoped):
    """``matchAttributeConstraint``: every device has the attribute, with the first device's value."""

    __slots__ = ("attribute", "num_devices")

    def __init__(self, request_names: list[str], attribute_name: str) -> None:
        super().__init__(request_names, attribute_name)
        self.attribute: Mapping[str, Any] | None = None
        self.num_devices = 0

    def add(self, request: str, subrequest: str, attributes: Mapping[str, Any], device: DeviceID) -> bool:
        if not self.applies(request, subrequest):
            return True
        attr = lookup_attribute(attributes, device, self.attribute_name)
        if attr is None:
            return False
        if self.num_devices == 0:
            self.attribute = attr
            self.num_devices = 1
            return True
        kind = _kind(attr)
        if kind is None:
            return False
        first = self.attribute or {}
        if first.get(kind) is None or first[kind] != attr[kind]:
            return False
        self.num_devices += 1
        return True

    def remove(self, request: str, subrequest: str, attributes: Mapping[str, Any], device: DeviceID) -> None:
        if not self.applies(request, subrequest):
            return
        self.num_devices -= 1


class DistinctAttributeConstraint(_RequestScoped):
    """``distinctAttributeConstraint``: every device has the attribute, each with a value no other one has.

    Values are remembered per request name, as upstream does (two devices of one request overwrite each other).
    """

    __slots__ = ("attributes", "num_devices")

    def __init__(self, request_names: list[str], attribute_name: str) -> None:
        super().__init__(request_names, attribute_name)
        self.attributes: dict[str, Mapping[str, Any]] = {}
        self.num_devices = 0

    def add(self, request: str, subrequest: str, attributes: Mapping[str, Any], device: DeviceID) -> bool:
        if not self.applies(request, subrequest):
            return True
        attr = lookup_attribute(attributes, device, self.attribute_name)
        if attr is None:
            return False
        if self.num_devices == 0:
            self.attributes[request] = attr
            self.num_devices = 1
            return True
        if not self._distinct(attr):
            return False
        self.attributes[request] = attr
        self.num_devices += 1
        return True

    def _distinct(self, attr: Mapping[str, Any]) -> bool:
        kind = _kind(attr)
        if kind is None:
            # Upstream's loop rejects an unknown value type only when there is something to compare with.
            return not self.attributes
        return all(other.get(kind) is None or other[kind] != attr[kind] for other in self.attributes.values())

    def remove(self, request: str, subrequest: str, attributes: Mapping[str, Any], device: DeviceID) -> None:
        if not self.applies(request, subrequest):
            return
        self.attributes.pop(request, None)
        self.num_devices -= 1


Constraint = MatchAttributeConstraint | DistinctAttributeConstraint

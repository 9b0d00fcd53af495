"""A claim's requests and subrequests read alike (upstream's ``requestAccessor``), and what is known about each."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kss_sim.scheduler.dra.devices import DeviceInfo, SliceInfo
from kss_sim.scheduler.dra.pools import Pool

MODE_EXACT_COUNT = "ExactCount"
MODE_ALL = "All"
ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize


@dataclass(frozen=True, slots=True)
class RequestView:
    """``exactDeviceRequestAccessor`` / ``deviceSubRequestAccessor``: one request or subrequest's fields."""

    name: str
    device_class_name: str
    allocation_mode: str
    count: int
    admin_access: bool
    has_admin_access: bool  # the field is set at all (true or false)
    selectors: list[Mapping[str, Any]]
    tolerations: list[Mapping[str, Any]]
    capacity: Mapping[str, Any] | None

    @classmethod
    def exact(cls, request: Mapping[str, Any]) -> RequestView:
        """A request's ``exactly`` part, named after the request."""
        exactly = request.get("exactly") or {}
        admin = exactly.get("adminAccess")
        return cls(
            name=str(request.get("name") or ""),
            device_class_name=str(exactly.get("deviceClassName") or ""),
            allocation_mode=str(exactly.get("allocationMode") or ""),
            count=int(exactly.get("count") or 0),
            admin_access=bool(admin),
            has_admin_access=admin is not None,
            selectors=list(exactly.get("selectors") or []),
            tolerations=list(exactly.get("tolerations") or []),
            capacity=exactly.get("capacity"),
        )

    @classmethod
    def sub(cls, subrequest: Mapping[str, Any]) -> RequestView:
        """A ``firstAvailable`` entry (subrequests never have admin access)."""
        return cls(
            name=str(subrequest.get("name") or ""),
            device_class_name=str(subrequest.get("deviceClassName") or ""),
            allocation_mode=str(subrequest.get("allocationMode") or ""),
            count=int(subrequest.get("count") or 0),
            admin_access=False,
            has_admin_access=False,
            selectors=list(subrequest.get("selectors") or []),
            tolerations=list(subrequest.get("tolerations") or []),
            capacity=subrequest.get("capacity"),
        )


@dataclass(slots=True, eq=False)
class Candidate:
    """``deviceWithID``: a device with the slice and pool it was found in."""

    device: DeviceInfo
    slice: SliceInfo
    pool: Pool | None


@dataclass(slots=True, eq=False)
class RequestData:
    """``requestData``: a request or subrequest with its class and how many devices it needs."""

    request: RequestView
    parent: RequestView | None
    device_class: Mapping[str, Any] | None = None
    num_devices: int = 0
    selected_sub_index: int = 0  # on the entry of subrequest 0: which subrequest was allocated
    all_devices: list[Candidate] = field(default_factory=list)  # allocationMode All: the devices, chosen up front

    def request_name(self) -> str:
        """``request`` or ``request/subrequest``, as results and configs name it."""
        if self.parent is not None:
            return f"{self.parent.name}/{self.request.name}"
        return self.request.name

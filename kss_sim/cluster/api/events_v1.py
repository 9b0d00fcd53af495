"""events.k8s.io/v1 Events: the core/v1 Events the store holds, served in the newer group-version.

kube-apiserver keeps one Event resource in storage and converts it to the version a request names
(pkg/apis/events/v1's conversion: ``regarding`` is ``involvedObject``, ``note`` is ``message``,
``reportingController`` is core's ``reportingComponent``, ``deprecatedSource``/``deprecatedFirstTimestamp``/
``deprecatedLastTimestamp``/``deprecatedCount`` are ``source``/``firstTimestamp``/``lastTimestamp``/``count``; the
other fields keep their names). kss does the same at the API's edges (``views``): a request's body (an object, a
patch of either kind, an apply configuration) is renamed into the core form and handed to the core/v1 handlers, and
what they answer (objects, lists, Tables, watch events) is renamed back. So an Event created through either API is
seen through both, and the store, Event series and expiry only ever see core/v1 Events.
"""

from __future__ import annotations

from typing import Any

from kss_sim.cluster.admission.patch import JSON_PATCH
from kss_sim.cluster.admission.validation.events import events_v1_request
from kss_sim.cluster.api.views import Conversion
from kss_sim.cluster.errors import ApiError
from kss_sim.cluster.kinds.registry import BY_KIND, EVENTS_V1

API_VERSION = EVENTS_V1.api_version
# events.k8s.io/v1 field -> core/v1 field, where the names differ.
_TO_CORE = {
    "regarding": "involvedObject",
    "note": "message",
    "reportingController": "reportingComponent",
    "deprecatedSource": "source",
    "deprecatedFirstTimestamp": "firstTimestamp",
    "deprecatedLastTimestamp": "lastTimestamp",
    "deprecatedCount": "count",
}
_TO_V1 = {core: v1 for v1, core in _TO_CORE.items()}
# Core's names events.k8s.io/v1 does not have: unknown fields in a v1 body, never renamed into the core form.
_CORE_ONLY = frozenset(_TO_V1)
# events.k8s.io/v1 fields Go leaves out when empty (omitempty on a string, number or pointer).
_OMITTED_EMPTY = frozenset(
    {
        "series",
        "reportingController",
        "reportingInstance",
        "action",
        "reason",
        "related",
        "note",
        "type",
        "deprecatedCount",
    }
)


def to_v1(event: dict[str, Any]) -> dict[str, Any]:
    """A core/v1 Event (or a part of one: a watch bookmark) in its events.k8s.io/v1 form."""
    out: dict[str, Any] = {"kind": "Event", "apiVersion": API_VERSION}
    for key, value in event.items():
        if key in ("kind", "apiVersion"):
            continue
        name = _TO_V1.get(key, key)
        if name in _OMITTED_EMPTY and value in (None, "", 0):
            continue
        out[name] = value
    return out


def to_core(event: dict[str, Any]) -> dict[str, Any]:
    """An events.k8s.io/v1 Event, patch or apply configuration in the core/v1 form (only the fields it has)."""
    out: dict[str, Any] = {}
    for key, value in event.items():
        if key == "apiVersion" and value == API_VERSION:
            value = "v1"
        out[_TO_CORE.get(key, key)] = value
    return out


def _json_patch_to_core(operations: Any) -> Any:
    """A JSON patch's paths (``/note``, ``/regarding/name``) renamed to the core form's."""
    if not isinstance(operations, list):
        return operations  # refused by the core handler as it refuses any malformed JSON patch
    renamed = []
    for op in operations:
        if isinstance(op, dict):
            op = dict(op)
            for key in ("path", "from"):
                path = op.get(key)
                if isinstance(path, str) and path.startswith("/"):
                    head, slash, rest = path[1:].partition("/")
                    op[key] = "/" + _TO_CORE.get(head, head) + slash + rest
        renamed.append(op)
    return renamed


def _regrouped(exc: ApiError) -> ApiError:
    """A core handler's error about Events as kube-apiserver words it for events.k8s.io (``events.events.k8s.io
    "x" not found``, ``Event.events.k8s.io "x" is invalid``)."""
    details = exc.details
    if not details or details.get("group") or details.get("kind") not in ("events", "Event"):
        return exc
    kind = str(details["kind"])
    if exc.message.startswith(f'{kind} "'):
        exc.message = f"{kind}.{EVENTS_V1.group}" + exc.message[len(kind) :]
        exc.args = (exc.message,)
    exc.details = {**details, "group": EVENTS_V1.group}
    return exc


def _pop_core_only(body: dict[str, Any]) -> list[str]:
    """Core-only names in an events.k8s.io/v1 body: unknown fields there, removed before anything is renamed into
    the core form (where they would count)."""
    unknown = [key for key in body if key in _CORE_ONLY]
    for key in unknown:
        del body[key]
    return unknown


def _rename_patch(content_type: str, patch: Any) -> Any:
    """A merge, strategic merge or JSON patch of an events.k8s.io/v1 Event in the core form."""
    if content_type == JSON_PATCH:
        return _json_patch_to_core(patch)
    return to_core(patch) if isinstance(patch, dict) else patch


CONVERSION = Conversion(
    view=EVENTS_V1,
    stored=BY_KIND["Event"],
    to_view=to_v1,
    to_stored=to_core,
    pop_unknown=_pop_core_only,
    rename_patch=_rename_patch,
    regroup=_regrouped,
    # The store validates the writes made inside by events.k8s.io/v1's rules (its 422s: nothing stored).
    during_write=events_v1_request,
)

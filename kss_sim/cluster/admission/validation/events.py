"""events.k8s.io/v1 Event writes: kube-apiserver's ``ValidateEventCreate`` and ``ValidateEventUpdate`` for that
request version.

Both group-versions write the same stored Events, so the rules depend on the request, not the object: upstream's
strategy reads the request's group-version from its context, and kss's events.k8s.io handler sets
``EVENTS_V1_REQUEST`` around the write (``events_v1_request``). The object is the stored (core/v1) form, so fields
are named as upstream's internal type names them (``involvedObject.namespace``, ``message``, ``source``), except
``reportingController``, which only core/v1 requests call ``reportingComponent``. A core/v1 write keeps
``core.validate_event``'s rules.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime
from typing import Any

from kss_sim.cluster.admission.validation.metadata import qualified_name_errors
from kss_sim.cluster.errors import Cause, invalid, required

# Whether the write being validated came through events.k8s.io/v1 (set by the API for that request alone).
EVENTS_V1_REQUEST: ContextVar[bool] = ContextVar("events_v1_request", default=False)


@contextmanager
def events_v1_request() -> Iterator[None]:
    """Validate the Event writes made inside as events.k8s.io/v1 requests."""
    token = EVENTS_V1_REQUEST.set(True)
    try:
        yield
    finally:
        EVENTS_V1_REQUEST.reset(token)


# pkg/apis/core/validation/events.go's limits.
REPORTING_INSTANCE_LIMIT = 128
ACTION_LIMIT = 128
REASON_LIMIT = 128
NOTE_LIMIT = 1024
# Namespaces a new-style Event about a cluster-scoped object may live in.
_CLUSTER_EVENT_NAMESPACES = ("default", "kube-system")


def _unset(value: Any) -> bool:
    """A Go zero value as the JSON decoder leaves it: absent, null, empty or 0."""
    return value in (None, "", 0, {})


def _longer(path: str, value: Any, limit: int) -> list[Cause]:
    return [invalid(path, "", f"can have at most {limit} characters")] if len(str(value or "")) > limit else []


def _legacy_new_style(event: dict[str, Any]) -> list[Cause]:
    """legacyValidateEvent for an Event with eventTime set, as an events.k8s.io request names the fields."""
    causes: list[Cause] = []
    namespace = (event.get("metadata") or {}).get("namespace") or ""
    involved = event.get("involvedObject") or {}
    involved_ns = (involved.get("namespace") or "") if isinstance(involved, dict) else ""
    if not involved_ns and namespace not in _CLUSTER_EVENT_NAMESPACES:
        causes.append(invalid("involvedObject.namespace", involved_ns, "does not match event.namespace"))
    controller = str(event.get("reportingComponent") or "")
    if not controller:
        causes.append(required("reportingController"))
    causes += qualified_name_errors("reportingController", controller)
    if not event.get("reportingInstance"):
        causes.append(required("reportingInstance"))
    causes += _longer("reportingInstance", event.get("reportingInstance"), REPORTING_INSTANCE_LIMIT)
    if not event.get("action"):
        causes.append(required("action"))
    causes += _longer("action", event.get("action"), ACTION_LIMIT)
    if not event.get("reason"):
        causes.append(required("reason"))
    causes += _longer("reason", event.get("reason"), REASON_LIMIT)
    causes += _longer("message", event.get("message"), NOTE_LIMIT)
    return causes


def _series(event: dict[str, Any]) -> list[Cause]:
    series = event.get("series")
    if not isinstance(series, dict):
        return []
    causes: list[Cause] = []
    count = series.get("count")
    if not isinstance(count, int) or count < 2:
        causes.append(invalid("series.count", "", "should be at least 2"))
    if _unset(series.get("lastObservedTime")):
        causes.append(required("series.lastObservedTime"))
    return causes


def validate_events_v1_create(event: dict[str, Any]) -> list[Cause]:
    """What an events.k8s.io/v1 create must satisfy beyond a core/v1 one's rules: eventTime, the reporting
    controller and instance, action and reason set; the deprecated core fields unset; a series of at least 2."""
    causes = _legacy_new_style(event) if not _unset(event.get("eventTime")) else []
    causes += _series(event)
    if _unset(event.get("eventTime")):
        causes.append(required("eventTime"))
    kind = event.get("type") or ""
    if kind not in ("Normal", "Warning"):
        causes.append(invalid("type", "", f"has invalid value: {kind}"))
    for path in ("firstTimestamp", "lastTimestamp", "count"):
        if not _unset(event.get(path)):
            causes.append(invalid(path, "", "needs to be unset"))
    source = event.get("source") or {}
    if isinstance(source, dict) and (source.get("component") or source.get("host")):
        causes.append(invalid("source", "", "needs to be unset"))
    return causes


# ------------------------------------------------------------------------------------------------------- updates

# core.ObjectReference's and core.EventSource's fields in Go's order, as %#v prints them.
_REFERENCE_FIELDS = (
    ("Kind", "kind"),
    ("Namespace", "namespace"),
    ("Name", "name"),
    ("UID", "uid"),
    ("APIVersion", "apiVersion"),
    ("ResourceVersion", "resourceVersion"),
    ("FieldPath", "fieldPath"),
)
_SOURCE_FIELDS = (("Component", "component"), ("Host", "host"))


def _go_struct(type_name: str, fields: tuple[tuple[str, str], ...], value: Any) -> str:
    value = value if isinstance(value, dict) else {}
    inner = ", ".join(f'{go}:"{value.get(key) or ""}"' for go, key in fields)
    return f"{type_name}{{{inner}}}"


def _go_time(value: Any) -> str:
    """A metav1.Time or MicroTime as its String() prints it (the zero time for an unset one)."""
    if not value:
        return "0001-01-01 00:00:00 +0000 UTC"
    moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    if moment.microsecond:
        text += f".{moment.microsecond:06d}".rstrip("0")
    return text + " +0000 UTC"


def _shown(path: str, value: Any) -> str:
    """The value of an immutable Event field as a field error shows it."""
    if path in ("involvedObject", "related"):
        if path == "related" and value is None:
            return "null"
        return _go_struct("core.ObjectReference", _REFERENCE_FIELDS, value)
    if path == "source":
        return _go_struct("core.EventSource", _SOURCE_FIELDS, value)
    if path in ("firstTimestamp", "lastTimestamp", "eventTime"):
        return _go_time(value)
    if path == "count":
        return str(value or 0)
    return f'"{value or ""}"'


# ValidateEventUpdate's immutable fields, in its order (reason is checked twice upstream, so said twice).
_IMMUTABLE = (
    "involvedObject",
    "reason",
    "message",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "count",
    "reason",
    "type",
    "eventTime",
    "action",
    "related",
    "reportingComponent",
    "reportingInstance",
)


def _same(path: str, new: Any, old: Any) -> bool:
    if path in ("involvedObject", "source", "related"):
        return {k: v for k, v in (new or {}).items() if v} == {k: v for k, v in (old or {}).items() if v}
    if path in ("firstTimestamp", "lastTimestamp", "eventTime"):
        return _go_time(new) == _go_time(old)  # kube-apiserver tolerates sub-microsecond changes of eventTime
    return (new or None) == (old or None)


def validate_events_v1_update(new: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    """What an events.k8s.io/v1 update adds to a core/v1 one's rules: a changed series valid, and every field but
    the series and the metadata immutable."""
    causes = _legacy_new_style(new) if not _unset(new.get("eventTime")) else []
    if new.get("series") != old.get("series"):
        causes += _series(new)
    for path in _IMMUTABLE:
        if not _same(path, new.get(path), old.get(path)):
            shown = "reportingController" if path == "reportingComponent" else path
            causes.append(
                Cause(shown, "FieldValueInvalid", f"Invalid value: {_shown(path, new.get(path))}: field is immutable")
            )
    return causes

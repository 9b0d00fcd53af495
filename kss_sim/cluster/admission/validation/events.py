"""events.k8s.io/v1 Event creates: kube-apiserver's ``ValidateEventCreate`` for that request version.

The object is the stored (core/v1) form the request converts to, so fields are named as upstream's internal type
names them (``involvedObject.namespace``, ``message``, ``source``), except ``reportingController``, which only
core/v1 requests call ``reportingComponent``. A core/v1 create keeps ``core.validate_event``'s rules.
"""

from __future__ import annotations

from typing import Any

from kss_sim.cluster.admission.validation.metadata import qualified_name_errors
from kss_sim.cluster.errors import Cause, invalid, required

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

"""Typed errors of the virtual cluster and their ``metav1.Status`` form (reason, code, details) as kube-apiserver."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Cause:
    """One ``metav1.StatusCause``: what is wrong with which field."""

    field: str
    reason: str  # FieldValueInvalid, FieldValueRequired, FieldValueForbidden, FieldValueNotSupported, ...
    message: str

    def to_dict(self) -> dict[str, str]:
        """The JSON shape of a StatusCause."""
        return {"reason": self.reason, "message": self.message, "field": self.field}


def invalid(field: str, value: Any, detail: str) -> Cause:
    """``field.Invalid``."""
    shown = f'"{value}"' if isinstance(value, str) else ("null" if value is None else str(value))
    return Cause(field, "FieldValueInvalid", f"Invalid value: {shown}: {detail}")


def required(field: str, detail: str = "") -> Cause:
    """``field.Required``."""
    return Cause(field, "FieldValueRequired", "Required value" + (f": {detail}" if detail else ""))


def forbidden(field: str, detail: str) -> Cause:
    """``field.Forbidden``."""
    return Cause(field, "FieldValueForbidden", f"Forbidden: {detail}")


def not_supported(field: str, value: Any, allowed: list[str]) -> Cause:
    """``field.NotSupported``."""
    quoted = ", ".join(f'"{a}"' for a in allowed)
    return Cause(field, "FieldValueNotSupported", f'Unsupported value: "{value}": supported values: {quoted}')


def duplicate(field: str, value: Any) -> Cause:
    """``field.Duplicate``."""
    return Cause(field, "FieldValueDuplicate", f'Duplicate value: "{value}"')


class ApiError(Exception):
    """An error with a Kubernetes Status representation."""

    code = 500
    reason = "InternalError"

    def __init__(self, message: str, *, details: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def to_status(self) -> dict[str, Any]:
        """The ``metav1.Status`` body."""
        status: dict[str, Any] = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details is not None:
            status["details"] = self.details
        return status


def _qualified(resource: str, group: str) -> str:
    """The resource as kube-apiserver names it in messages: ``pods``, ``priorityclasses.scheduling.k8s.io``."""
    return f"{resource}.{group}" if group else resource


def _details(name: str, group: str, kind: str) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if group:
        d["group"] = group
    d["kind"] = kind
    return d


class BadRequest(ApiError):
    """400: the request itself is malformed."""

    code = 400
    reason = "BadRequest"


class Unauthorized(ApiError):
    """401: missing or wrong bearer token."""

    code = 401
    reason = "Unauthorized"


class Forbidden(ApiError):
    """403: admission refused the request (for example an unknown PriorityClass)."""

    code = 403
    reason = "Forbidden"

    def __init__(self, resource: str, name: str, detail: str, *, group: str = "") -> None:
        qualified = _qualified(resource, group)
        subject = f'{qualified} "{name}"' if name else qualified
        super().__init__(f"{subject} is forbidden: {detail}", details=_details(name, group, resource))


class NamespaceTerminating(Forbidden):
    """403 from the NamespaceLifecycle admission: no new content in a namespace being deleted (with the
    ``NamespaceTerminating`` cause clients look for)."""

    def __init__(self, resource: str, name: str, namespace: str, *, group: str = "") -> None:
        detail = f"unable to create new content in namespace {namespace} because it is being terminated"
        super().__init__(resource, name, detail, group=group)
        cause = {
            "reason": "NamespaceTerminating",
            "message": f"namespace {namespace} is being terminated",
            "field": "metadata.namespace",
        }
        self.details = {**(self.details or {}), "causes": [cause]}


class NotFound(ApiError):
    """404: no such object (or no such resource type)."""

    code = 404
    reason = "NotFound"

    def __init__(self, resource: str, name: str, *, group: str = "") -> None:
        super().__init__(f'{_qualified(resource, group)} "{name}" not found', details=_details(name, group, resource))


class UnknownResource(ApiError):
    """404 for a path that names no resource this server serves."""

    code = 404
    reason = "NotFound"

    def __init__(self) -> None:
        super().__init__("the server could not find the requested resource", details={})


class MethodNotAllowed(ApiError):
    """405: the resource does not support this verb."""

    code = 405
    reason = "MethodNotAllowed"

    def __init__(self, verb: str) -> None:
        super().__init__(f"the server does not allow this method on the requested resource ({verb})", details={})


class AlreadyExists(ApiError):
    """409: create of a name that is taken."""

    code = 409
    reason = "AlreadyExists"

    def __init__(self, resource: str, name: str, *, group: str = "") -> None:
        super().__init__(
            f'{_qualified(resource, group)} "{name}" already exists', details=_details(name, group, resource)
        )


class Conflict(ApiError):
    """409: optimistic concurrency failed, or the operation contradicts current state."""

    code = 409
    reason = "Conflict"

    def __init__(self, resource: str, name: str, detail: str, *, group: str = "") -> None:
        super().__init__(
            f'Operation cannot be fulfilled on {_qualified(resource, group)} "{name}": {detail}',
            details=_details(name, group, resource),
        )


STALE = "the object has been modified; please apply your changes to the latest version and try again"


class Gone(ApiError):
    """410 Expired: a resourceVersion older than the watch window."""

    code = 410
    reason = "Expired"


class Expired(Gone):
    """410: the requested resourceVersion was compacted away."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class Invalid(ApiError):
    """422: the object fails validation; ``causes`` name the fields."""

    code = 422
    reason = "Invalid"

    def __init__(self, kind: str, name: str, causes: list[Cause], *, group: str = "") -> None:
        self.causes = causes
        qualified = f"{kind}.{group}" if group else kind
        parts = [f"{c.field}: {c.message}" if c.field else c.message for c in causes]
        joined = parts[0] if len(parts) == 1 else "[" + ", ".join(parts) + "]"
        details = _details(name, group, kind)
        details["causes"] = [c.to_dict() for c in causes]
        super().__init__(f'{qualified} "{name}" is invalid: {joined}', details=details)


class RequestEntityTooLarge(ApiError):
    """413: body above ``max_body_bytes``."""

    code = 413
    reason = "RequestEntityTooLarge"

    def __init__(self, limit: int) -> None:
        super().__init__(f"Request entity too large: limit is {limit}", details={})


class UnsupportedMediaType(ApiError):
    """415: a patch or body content type this server does not speak."""

    code = 415
    reason = "UnsupportedMediaType"


class NotAcceptable(ApiError):
    """406: the client accepts no representation the server can produce."""

    code = 406
    reason = "NotAcceptable"


class TooManyRequests(ApiError):
    """429 (``NewTooManyRequests``): try again later; ``retry_after`` seconds (0: unsaid) and the causes, as
    ``(type, message)`` pairs, go in the details (a blocked eviction's ``DisruptionBudget`` cause)."""

    code = 429
    reason = "TooManyRequests"

    def __init__(self, message: str, *, retry_after: int = 0, causes: list[tuple[str, str]] | None = None) -> None:
        details: dict[str, Any] = {"causes": [{"reason": kind, "message": text} for kind, text in causes or []]}
        if retry_after > 0:
            details["retryAfterSeconds"] = retry_after
        super().__init__(message, details=details)
        self.retry_after = retry_after


class Timeout(ApiError):
    """504 (``NewTimeoutError``): the request could not be completed in time (writes kept conflicting)."""

    code = 504
    reason = "Timeout"

    def __init__(self, message: str, *, retry_after: int = 0) -> None:
        super().__init__(f"Timeout: {message}", details={"retryAfterSeconds": retry_after} if retry_after else {})


class InternalError(ApiError):
    """500: the database refused a write; nothing was changed."""

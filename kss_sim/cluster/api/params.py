"""The query parameters of resource requests, decoded and validated as kube-apiserver does.

kube-apiserver decodes the query into ``ListOptions`` / ``CreateOptions`` / ... first: a number that Go's
``strconv.ParseInt`` refuses is a 400 with its message; then it validates the options (422, ``ListOptions.meta.k8s.io
"" is invalid: ...``); a ``resourceVersion`` that is not a uint64 is refused by the storage layer (400, ``invalid
resource version: ...``). A flag is false only when absent, ``0`` or ``false``: any other value (``maybe``) is true.
``timeoutSeconds`` is not capped; ``limit`` below 1 means no limit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from kss_sim.cluster.errors import BadRequest, Cause, Invalid, forbidden, not_supported

_SIGNED = re.compile(r"[+-]?[0-9]+\Z")
_UNSIGNED = re.compile(r"[0-9]+\Z")
_INT64 = (-(2**63), 2**63 - 1)
_UINT64_MAX = 2**64 - 1
_META_GROUP = "meta.k8s.io"
_RV = "resourceVersion"
_FIELD_VALIDATION = ["", "Ignore", "Strict", "Warn"]  # sets.NewString(...).List(): sorted, the empty default first


class Query(Protocol):
    """What this module reads of a request's query (Starlette's ``QueryParams``)."""

    def getlist(self, key: str) -> list[str]: ...


def _quote(text: str) -> str:
    """Go's ``%q`` of ``text``, as strconv's messages show it."""
    return json.dumps(text, ensure_ascii=False)


def flag(query: Query, name: str) -> bool:
    """A boolean parameter as apimachinery converts it: absent, ``0`` or ``false`` (any case) are false; anything
    else, the empty string included, is true."""
    values = query.getlist(name)
    if not values:
        return False
    return not (values[0] == "0" or values[0].lower() == "false")


def int64(query: Query, name: str) -> int | None:
    """An int64 parameter (``limit``, ``timeoutSeconds``): None when absent; ``BadRequest`` with
    ``strconv.ParseInt``'s message when Go could not parse the first value."""
    values = query.getlist(name)
    if not values:
        return None
    text = values[0]
    if not _SIGNED.match(text):
        raise BadRequest(f"strconv.ParseInt: parsing {_quote(text)}: invalid syntax")
    value = int(text)
    if not _INT64[0] <= value <= _INT64[1]:
        raise BadRequest(f"strconv.ParseInt: parsing {_quote(text)}: value out of range")
    return value


def resource_version(text: str) -> int | None:
    """A request's ``resourceVersion``: None for none or ``0`` (any version), else the uint64 it names;
    ``BadRequest`` as the storage layer refuses one ``strconv.ParseUint`` cannot parse (``-1``, ``abc``)."""
    if text in ("", "0"):
        return None
    problem = None
    if not _UNSIGNED.match(text):
        problem = "invalid syntax"
    elif int(text) > _UINT64_MAX:
        problem = "value out of range"
    if problem is not None:
        raise BadRequest(
            f"invalid resource version: resourceVersion: Invalid value: {_quote(text)}: "
            f"strconv.ParseUint: parsing {_quote(text)}: {problem}"
        )
    return int(text)


@dataclass(frozen=True, slots=True)
class ListOptions:
    """A list's or watch's options, decoded and validated."""

    watch: bool
    resource_version: int | None
    limit: int | None  # None: no limit (absent, or below 1 as kube-apiserver takes it)
    timeout_seconds: int | None
    send_initial_events: bool
    allow_bookmarks: bool


NO_OPTIONS = ListOptions(
    watch=False,
    resource_version=None,
    limit=None,
    timeout_seconds=None,
    send_initial_events=False,
    allow_bookmarks=False,
)


def list_options(query: Query) -> ListOptions:
    """The ``ListOptions`` of a list, watch or collection delete, refused as kube-apiserver refuses them: an
    unparsable number 400, options that contradict each other 422, an unparsable ``resourceVersion`` 400."""
    watch = flag(query, "watch")
    limit = int64(query, "limit")
    timeout = int64(query, "timeoutSeconds")
    rv_text = _first(query.getlist("resourceVersion"))
    match = _first(query.getlist("resourceVersionMatch"))
    continue_token = _first(query.getlist("continue"))
    initial_events = query.getlist("sendInitialEvents")
    causes = (
        _watch_causes(match, bool(initial_events), continue_token)
        if watch
        else _list_causes(match, rv_text, continue_token, bool(initial_events))
    )
    if causes:
        raise Invalid("ListOptions", "", causes, group=_META_GROUP)
    return ListOptions(
        watch=watch,
        resource_version=resource_version(rv_text),
        limit=limit if limit is not None and limit > 0 else None,
        timeout_seconds=timeout,
        send_initial_events=flag(query, "sendInitialEvents"),
        allow_bookmarks=flag(query, "allowWatchBookmarks"),
    )


def _first(values: Sequence[str]) -> str:
    return values[0] if values else ""


def _list_causes(match: str, rv_text: str, continue_token: str, initial_events: bool) -> list[Cause]:
    """apimachinery's ValidateListOptions for a list."""
    causes: list[Cause] = []
    if match:
        if not rv_text:
            causes.append(
                forbidden("resourceVersionMatch", f"resourceVersionMatch is forbidden unless {_RV} is provided")
            )
        if continue_token:
            causes.append(
                forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided")
            )
        if match not in ("Exact", "NotOlderThan"):
            causes.append(not_supported("resourceVersionMatch", match, ["Exact", "NotOlderThan", ""]))
        if match == "Exact" and rv_text == "0":
            causes.append(
                forbidden("resourceVersionMatch", 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"')
            )
    if initial_events:
        causes.append(forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    return causes


def _watch_causes(match: str, initial_events: bool, continue_token: str) -> list[Cause]:
    """apimachinery's validation of a watch's ListOptions (the WatchList feature on, as in v1.35)."""
    causes: list[Cause] = []
    if initial_events and match != "NotOlderThan":
        causes.append(
            forbidden("resourceVersionMatch", "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")
        )
    if match:
        if not initial_events:
            causes.append(
                forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                )
            )
        if match != "NotOlderThan":
            causes.append(not_supported("resourceVersionMatch", match, ["NotOlderThan"]))
        if continue_token:
            causes.append(
                forbidden("resourceVersionMatch", "resourceVersionMatch is forbidden when continue is provided")
            )
    return causes


_OPTIONS_KIND = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions", "DELETE": "DeleteOptions"}


def write_options(query: Query, method: str, extra_dry_run: Sequence[str] = ()) -> bool:
    """Whether a write is a dry run; ``Invalid`` (422, ``CreateOptions.meta.k8s.io "" is invalid: ...``) for a
    ``dryRun`` other than ``All`` or an unknown ``fieldValidation``, as kube-apiserver validates its write options.
    ``extra_dry_run``: the ``dryRun`` of a DELETE's body (DeleteOptions)."""
    dry_run = [*query.getlist("dryRun"), *extra_dry_run]
    causes: list[Cause] = []
    if any(value != "All" for value in dry_run):
        shown = "[]string{" + ", ".join(_quote(v) for v in dry_run) + "}"
        causes.append(Cause("dryRun", "FieldValueNotSupported", f'Unsupported value: {shown}: supported values: "All"'))
    kind = _OPTIONS_KIND.get(method, "CreateOptions")
    if kind != "DeleteOptions":
        mode = _first(query.getlist("fieldValidation"))
        if mode not in _FIELD_VALIDATION:
            causes.append(not_supported("fieldValidation", mode, _FIELD_VALIDATION))
    if causes:
        raise Invalid(kind, "", causes, group=_META_GROUP)
    return bool(dry_run)

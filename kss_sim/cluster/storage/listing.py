"""A list's page: the entries of one kind a selector matches, in (namespace, name) order, after a continue token."""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass

import orjson

from kss_sim.cluster.errors import BadRequest
from kss_sim.cluster.kinds.registry import KindInfo
from kss_sim.cluster.kinds.stored import StoredObject
from kss_sim.cluster.storage.selectors import Selector


@dataclass(frozen=True, slots=True)
class ListResult:
    """One page of a list: entries in (namespace, name) order, the list's resourceVersion, paging state."""

    items: list[StoredObject]
    resource_version: int
    continue_token: str
    remaining: int | None


def _encode_continue(resource_version: int, namespace: str, name: str) -> str:
    token = orjson.dumps({"v": "meta.k8s.io/v1", "rv": resource_version, "start": [namespace, name]})
    return base64.urlsafe_b64encode(token).decode()


def decode_continue(token: str) -> tuple[str, str]:
    """The (namespace, name) a continue token starts after; ``BadRequest`` when it is not one."""
    try:
        data = orjson.loads(base64.urlsafe_b64decode(token.encode()))
        namespace, name = data["start"]
        return str(namespace), str(name)
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise BadRequest(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
        ) from None


def page(
    info: KindInfo,
    entries: Mapping[tuple[str, str], StoredObject],
    resource_version: int,
    namespace: str | None,
    selector: Selector | None,
    *,
    limit: int | None,
    start: tuple[str, str] | None,
) -> ListResult:
    """The entries of ``entries`` (one kind's, at ``resource_version``) in ``namespace`` that ``selector``
    matches, after ``start``; at most ``limit`` of them, with a continue token and a count of the rest."""
    items: list[StoredObject] = []
    remaining = 0
    more_key: tuple[str, str] | None = None
    for key in sorted(entries):
        if info.namespaced and namespace and key[0] != namespace:
            continue
        if start is not None and key <= start:
            continue
        entry = entries[key]
        if selector is not None and not selector.empty:
            if entry.decoded is None and not selector.may_match_raw(entry.raw):
                continue  # a packed object that cannot match: not decoded
            if not selector.matches(entry.obj):
                continue
        if limit is not None and len(items) >= limit:
            if more_key is None:
                more_key = (items[-1].namespace, items[-1].name)
            remaining += 1
            continue
        items.append(entry)
    token = _encode_continue(resource_version, *more_key) if more_key is not None else ""
    return ListResult(items, resource_version, token, remaining if more_key is not None else None)

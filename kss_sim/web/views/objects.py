"""The objects page: objects of any kind the cluster serves, searched and paged."""

from __future__ import annotations

from kss_sim.web.formatting import Page, paginate
from kss_sim.web.ports import Store, StoredEntry


def objects_view(store: Store, kind: str, *, q: str = "", page: int = 1) -> Page[StoredEntry]:
    """One page of objects of one kind, matching ``q`` in namespace/name."""
    items = store.select(kind).items
    t = q.strip().lower()
    if t:
        items = [e for e in items if t in e.name.lower() or t in e.namespace.lower()]
    return paginate(items, page)

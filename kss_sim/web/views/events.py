"""The Events about one object, as the pod and node pages list them."""

from __future__ import annotations

from kss_sim.kube.objects import Obj
from kss_sim.web.ports import Store


def events_for(store: Store, kind: str, namespace: str | None, name: str, limit: int = 20) -> list[Obj]:
    """The newest Events about one object (what ``kubectl describe`` lists)."""
    ns = namespace or "default"
    # A field selector, as kubectl describe asks: the store decodes only the Events that can be about it.
    found, _ = store.list("Event", ns if kind != "Node" else None, field_selector=_about(kind, name))
    found.sort(key=lambda o: (str(o.get("lastTimestamp") or ""), int(o["metadata"]["resourceVersion"])))
    return found[-limit:][::-1]


def _about(kind: str, name: str) -> str:
    escaped = name.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")  # names never need it
    return f"involvedObject.name={escaped},involvedObject.kind={kind}"

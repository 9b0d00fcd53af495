"""The Events about one object, as the pod and node pages list them."""

from __future__ import annotations

from kss_sim.kube.objects import Obj
from kss_sim.web.ports import Store


def events_for(store: Store, kind: str, namespace: str | None, name: str, limit: int = 20) -> list[Obj]:
    """The newest Events about one object (what ``kubectl describe`` lists)."""
    ns = namespace or "default"
    found = [
        e.obj
        for e in store.select("Event", ns if kind != "Node" else None).items
        if (e.obj.get("involvedObject") or {}).get("name") == name
        and (e.obj.get("involvedObject") or {}).get("kind") == kind
    ]
    found.sort(key=lambda o: (str(o.get("lastTimestamp") or ""), int(o["metadata"]["resourceVersion"])))
    return found[-limit:][::-1]

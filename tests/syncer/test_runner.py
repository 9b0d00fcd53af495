"""The assembled syncer over fakes: start-up lists kinds in apply order and the sink drains them in order."""

from __future__ import annotations

import time

from syncer.kinds import DEFAULT
from syncer.runner import Syncer, SyncOptions
from tests.syncer.fakes import FakeSource, FakeTarget, node, page, pod


def test_start_up_applies_kinds_in_order_then_follows_watches() -> None:
    namespace = {"metadata": {"name": "team", "uid": "src-ns", "resourceVersion": "1"}}
    lists = {k.name: [[page(rv="9")]] for k in DEFAULT}
    lists["Namespace"] = [[page(namespace, rv="9")]]
    lists["Node"] = [[page(node("n1"), rv="9")]]
    lists["Pod"] = [[page(pod("running", namespace="team", node="n1"), rv="9")]]
    source = FakeSource(lists=lists, watches={"Pod": [[{"type": "ADDED", "object": pod("new", namespace="team")}]]})
    target = FakeTarget()
    syncer = Syncer(source, target, SyncOptions())
    syncer.start()
    try:
        deadline = time.monotonic() + 10
        while target.find("Pod", "new", "team") is None and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        syncer.shutdown()
    creates = [(kind, name) for verb, kind, name in target.calls if verb == "create"]
    assert creates == [("Namespace", "team"), ("Node", "n1"), ("Pod", "running"), ("Pod", "new")]
    assert target.objects[("Pod", "team", "running")]["spec"]["nodeName"] == "n1"
    assert "nodeName" not in target.objects[("Pod", "team", "new")]["spec"]
    assert [c[0] for c in source.list_calls] == [k.name for k in DEFAULT]

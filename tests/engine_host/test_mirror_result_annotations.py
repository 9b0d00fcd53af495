"""The scheduler's process holds a bound pod without the result annotations; reads of the pod still give them whole.

A bound pod's result annotations (kB of per-node maps) are never read by the scheduler, which reads a pod's only to
carry their history into its next attempt; held by the node-column journal in thousands of versions, they were most
of the child's memory and of what its C heap churned through (issue #35's soak)."""

from __future__ import annotations

from typing import Any

import orjson

from kss_sim.engine_host.scheduler_process import MirrorStore
from kss_sim.kube.objects import Obj
from kss_sim.results import annotations as result_annotations

USER_KEY = "example.com/team"


def _pod(name: str, rv: int, node: str | None) -> bytes:
    annotations = {
        USER_KEY: "a",
        result_annotations.FILTER_RESULT: '{"n1":{"NodeResourcesFit":"passed"}}',
        result_annotations.RESULT_HISTORY: "[]",
    }
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}]}
    if node is not None:
        spec["nodeName"] = node
    return orjson.dumps(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "resourceVersion": str(rv), "annotations": annotations},
            "spec": spec,
        }
    )


def _mirror_with(changes: list[tuple[int, str, str, bytes]]) -> tuple[MirrorStore, list[Obj]]:
    mirror = MirrorStore(channel=None)  # type: ignore[arg-type]  # nothing is sent: only the change stream is fed
    seen: list[Obj] = []
    mirror.add_listener(lambda _type, _kind, obj: seen.append(obj), ["Pod"])
    mirror.apply_changes(changes, max(rv for rv, *_ in changes))
    return mirror, seen


def test_a_bound_pod_is_held_without_its_result_annotations_and_read_whole() -> None:
    mirror, seen = _mirror_with([(5, "ADDED", "Pod", _pod("p", 5, "n1"))])
    assert seen[0]["metadata"]["annotations"] == {USER_KEY: "a"}
    assert mirror.select("Pod").items[0].obj["metadata"]["annotations"] == {USER_KEY: "a"}
    got = mirror.get("Pod", "default", "p")
    assert got is not None
    assert got["metadata"]["annotations"][result_annotations.FILTER_RESULT]
    listed, _ = mirror.list("Pod")
    assert result_annotations.RESULT_HISTORY in listed[0]["metadata"]["annotations"]


def test_a_pending_pod_keeps_them_for_the_history_of_its_next_attempt() -> None:
    _, seen = _mirror_with([(5, "ADDED", "Pod", _pod("p", 5, None))])
    assert result_annotations.RESULT_HISTORY in seen[0]["metadata"]["annotations"]


def test_a_bound_pod_with_only_result_annotations_is_held_with_none() -> None:
    raw = orjson.loads(_pod("p", 5, "n1"))
    del raw["metadata"]["annotations"][USER_KEY]
    _, seen = _mirror_with([(5, "ADDED", "Pod", orjson.dumps(raw))])
    assert "annotations" not in seen[0]["metadata"]

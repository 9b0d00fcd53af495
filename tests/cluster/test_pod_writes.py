"""The binding (``ClusterStore.bind_pod``, app/cluster/storage/pod_writes.py): the next version is built from the stored
one, new dicts only where it changes, so it must leave every earlier version as it was published; the result annotations
it carries are validated as the pod's metadata would be (new keys, total size), refusing the whole binding."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from kss_sim.cluster.errors import BadRequest, Conflict, Invalid
from kss_sim.cluster.storage.store import ClusterStore
from tests.scheduler.factories import make_pod


def _published_intact(store: ClusterStore) -> bool:
    return all(e.obj == orjson.loads(e.raw) for e in store.events_since(0))


@pytest.fixture
def store() -> ClusterStore:
    s = ClusterStore(None)
    pod = make_pod(name="p", labels={"app": "a"}, requests={"cpu": "1"})
    pod["metadata"]["annotations"] = {"keep": "1", "drop": "2"}
    s.create("Pod", pod, "default")
    conditions = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"},
        {"type": "Example", "status": "True"},
    ]
    s.patch("Pod", "default", "p", {"status": {"conditions": conditions}}, "merge", subresource="status")
    return s


def test_a_binding_changes_only_the_node_the_condition_and_the_annotations(store: ClusterStore) -> None:
    before = store.get("Pod", "default", "p")
    assert before is not None
    bound = store.bind_pod("default", "p", "n1", annotations={"result": "ok", "drop": None})
    after = store.get("Pod", "default", "p")
    assert after == bound
    assert after is not None and after is not bound
    assert after["spec"] == {**before["spec"], "nodeName": "n1"}
    assert after["metadata"]["annotations"] == {"keep": "1", "result": "ok"}
    conditions = after["status"]["conditions"]
    assert [c["type"] for c in conditions] == ["Example", "PodScheduled"]
    assert conditions[1]["status"] == "True" and conditions[1]["lastProbeTime"] is None
    assert int(after["metadata"]["resourceVersion"]) == int(before["metadata"]["resourceVersion"]) + 1
    strip = ("metadata", "spec", "status")
    assert {k: v for k, v in after.items() if k not in strip} == {k: v for k, v in before.items() if k not in strip}
    meta_rest = {k: v for k, v in after["metadata"].items() if k not in ("annotations", "resourceVersion")}
    assert meta_rest == {k: v for k, v in before["metadata"].items() if k not in ("annotations", "resourceVersion")}
    assert _published_intact(store)  # the version before the binding is as it was published


def test_without_a_copy_the_binding_hands_back_the_stored_version(store: ClusterStore) -> None:
    result = store.bind_pod("default", "p", "n1", copy=False)
    assert result is store.read("Pod", "default", "p").obj


@pytest.mark.parametrize(
    ("annotations", "field"),
    [
        ({"not a key!": "x"}, "metadata.annotations"),
        ({"big": "x" * (256 * 1024)}, "metadata.annotations"),
    ],
)
def test_bad_result_annotations_refuse_the_binding_and_change_nothing(
    store: ClusterStore, annotations: dict[str, Any], field: str
) -> None:
    before = store.get("Pod", "default", "p")
    with pytest.raises(Invalid) as refused:
        store.bind_pod("default", "p", "n1", annotations=annotations)
    assert [c.field for c in refused.value.causes] == [field]
    assert store.get("Pod", "default", "p") == before
    store.bind_pod("default", "p", "n1")  # and the pod can still be bound
    with pytest.raises(Conflict):
        store.bind_pod("default", "p", "n2")


def test_a_status_write_checks_the_types_of_the_status_it_brings(store: ClusterStore) -> None:
    before = store.get("Pod", "default", "p")
    with pytest.raises(BadRequest) as refused:
        store.update_pod_status("default", "p", {"phase": 5})
    message = "cannot unmarshal number into Go struct field PodStatus.status.phase of type v1.PodPhase"
    assert message in str(refused.value)
    assert store.get("Pod", "default", "p") == before


def test_a_status_write_reaches_a_pod_stored_before_the_type_check(store: ClusterStore) -> None:
    # An older database may hold what the API now refuses; the scheduler must still be able to say why such a pod
    # does not schedule (PodScheduled=False), so only the status a write brings is type-checked.
    stored = store.read("Pod", "default", "p").obj
    stored["metadata"]["ownerReferences"] = "x"  # as loaded from such a database
    written = store.update_pod_status("default", "p", {"phase": "Pending", "conditions": []})
    assert written["metadata"]["ownerReferences"] == "x" and written["status"]["phase"] == "Pending"

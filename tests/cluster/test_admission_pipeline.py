"""Every write the store makes runs its object through the one admission pipeline
(``kss_sim.cluster.admission.pipeline``): each write path is driven through a store whose pipeline records the
steps it is asked for, and the pipeline's answers (namespace lifecycle, served kinds, validation) are the ones the
API gives."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.admission.pipeline import AdmissionPipeline
from kss_sim.cluster.errors import BadRequest, Forbidden, Invalid, NamespaceTerminating, NotFound
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.kube.objects import Obj

_STEPS = (
    "decode",
    "check_served",
    "create_request",
    "admit_namespace",
    "admit_create",
    "admit_update",
    "prepare_update",
    "validate_create",
    "validate_update",
    "validate_annotations",
    "validate_binding",
    "validate_event",
    "created_fields",
    "track_fields",
    "check_deletable",
    "deletable",
)


def _recording(store: ClusterStore) -> list[str]:
    """The names of the pipeline steps ``store``'s writes call from now on, in order."""
    pipeline: AdmissionPipeline = store._admission
    steps: list[str] = []
    for name in _STEPS:
        method = getattr(pipeline, name)

        def recorded(*args: Any, _name: str = name, _method: Callable[..., Any] = method, **kwargs: Any) -> Any:
            steps.append(_name)
            return _method(*args, **kwargs)

        setattr(pipeline, name, recorded)  # the store's parts hold this object: they call the recording
    return steps


def _pod(name: str, namespace: str = "default") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]},
    }


@pytest.fixture
def store() -> ClusterStore:
    store = ClusterStore(None)
    store.create("Node", {"metadata": {"name": "n1"}})
    store.create("Pod", _pod("p"))
    return store


def test_create_is_decoded_admitted_validated_and_owned(store: ClusterStore) -> None:
    steps = _recording(store)
    store.create("Pod", _pod("q"))
    assert steps == [
        "check_served",
        "create_request",
        "decode",
        "admit_namespace",
        "created_fields",
        "admit_create",
        "validate_create",
    ]


@pytest.mark.parametrize("write", ["update", "patch", "apply", "update_status", "update_pod_status"])
def test_each_update_path_is_admitted_validated_and_owned(store: ClusterStore, write: str) -> None:
    pod = store.get("Pod", "default", "p")
    assert pod is not None
    steps = _recording(store)
    if write == "update":
        pod["metadata"]["labels"] = {"a": "b"}
        store.update("Pod", pod)
    elif write == "patch":
        store.patch("Pod", "default", "p", {"metadata": {"labels": {"a": "b"}}})
    elif write == "apply":
        store.apply("Pod", "default", "p", {**_pod("p"), "metadata": {"name": "p", "labels": {"a": "b"}}}, manager="m")
    elif write == "update_status":
        store.update_status("Pod", "default", "p", {"phase": "Pending"})
    else:
        store.update_pod_status("default", "p", {"phase": "Pending"})
    through_the_resource = write in {"update", "patch", "apply"}
    # A status write keeps the stored spec and metadata; a pod's status strategy has a PrepareForUpdate of its own.
    prepared = ["prepare_update"]
    assert steps[-4 - len(prepared) :] == ["decode", "admit_update", *prepared, "track_fields", "validate_update"]
    assert ("check_served" in steps) == through_the_resource


def test_kubelet_status_merge_and_binding_and_events_are_checked_by_the_pipeline(store: ClusterStore) -> None:
    steps = _recording(store)
    store.bind_pod("default", "p", "n1", annotations={"example.com/result": "ok"})
    assert steps == ["validate_binding", "validate_annotations"]
    steps.clear()
    pod = store.get("Pod", "default", "p")
    assert pod is not None
    store.merge_pod_status("default", "p", {"phase": "Running"}, resource_version=None, manager="kubelet")
    assert steps == ["prepare_update", "validate_update", "track_fields"]
    steps.clear()
    store.create_event(pod, "Scheduled", "bound")
    assert steps == ["validate_event", "admit_namespace"]


def test_deletes_ask_the_pipeline_what_may_go(store: ClusterStore) -> None:
    store.create("Pod", _pod("q"))
    steps = _recording(store)
    store.delete("Pod", "default", "p")
    assert steps == ["check_deletable"]
    steps.clear()
    store.delete_collection("Pod", "default")
    assert steps == ["deletable"]
    with pytest.raises(Forbidden):
        store.delete("Namespace", None, "default")


def test_builtin_objects_and_namespaces_made_on_demand_come_from_the_pipeline() -> None:
    store = ClusterStore(None)
    store.ensure_builtins()
    assert store.get("Namespace", None, "kube-system") is not None
    assert store.get("PriorityClass", None, "system-node-critical") is not None
    store.create("ConfigMap", {"metadata": {"name": "c", "namespace": "team"}})
    namespace = store.get("Namespace", None, "team")
    assert namespace is not None
    assert namespace["status"] == {"phase": "Active"}
    assert namespace["spec"] == {"finalizers": ["kubernetes"]}


def test_a_create_in_a_missing_namespace_is_not_found_without_creating_on_demand() -> None:
    store = ClusterStore(None, auto_create_namespaces=False)
    with pytest.raises(NotFound) as missing:
        store.create("ConfigMap", {"metadata": {"name": "c", "namespace": "team"}})
    assert missing.value.message == 'namespaces "team" not found'


def test_a_terminating_namespace_refuses_every_create_and_the_recorder_drops_its_events(
    store: ClusterStore, caplog: pytest.LogCaptureFixture
) -> None:
    store.create("Namespace", {"metadata": {"name": "team"}})
    store.create("Pod", _pod("held", "team"))
    held = store.get("Pod", "team", "held")
    assert held is not None
    assert store.create_event(held, "Scheduled", "bound") is not None  # recorded while the namespace is Active
    store.delete("Namespace", None, "team", options=DeleteOptions(graceful=True))
    with pytest.raises(NamespaceTerminating) as refused:
        store.create("ConfigMap", {"metadata": {"name": "late", "namespace": "team"}})
    assert refused.value.message == (
        'configmaps "late" is forbidden: unable to create new content in namespace team because it is being terminated'
    )
    # NamespaceLifecycle exempts no Event: a client's is refused as any other create ...
    client_event = {
        "metadata": {"name": "held.client", "namespace": "team"},
        "involvedObject": {"kind": "Pod", "namespace": "team", "name": "held"},
        "reason": "Noted",
        "message": "by a client",
        "type": "Normal",
    }
    with pytest.raises(NamespaceTerminating):
        store.create("Event", client_event)
    # ... and the server's own recorders drop theirs, logged and never raised (client-go's recordToSink).
    with caplog.at_level(logging.DEBUG, logger="kss_sim.cluster.storage.pod_writes"):
        assert store.create_event(held, "Killing", "Stopping container c", component="kubelet") is None
    assert "Server rejected event team/Killing (will not retry!)" in caplog.text
    # A repeat of an Event already there is an update, which the plugin lets through: it still counts.
    repeat = store.create_event(held, "Scheduled", "bound")
    assert repeat is not None and repeat["count"] == 2
    assert [(e["reason"], e["count"]) for e in store.list("Event", "team")[0]] == [("Scheduled", 2)]


def test_a_kind_not_served_is_refused_before_decoding() -> None:
    store = ClusterStore(None, kube_version="1.33")
    with pytest.raises(BadRequest) as refused:
        store.create("Workload", {"metadata": {"name": "w"}})
    assert "is not served" in refused.value.message


def test_an_invalid_update_names_the_stored_object(store: ClusterStore) -> None:
    with pytest.raises(Invalid) as refused:
        store.patch("Pod", "default", "p", {"metadata": {"labels": {"bad key!": "x"}}})
    assert refused.value.code == 422
    assert 'Pod "p" is invalid' in refused.value.message

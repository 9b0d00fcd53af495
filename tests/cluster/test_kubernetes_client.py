"""The official ``kubernetes`` Python client against a real ``kss serve``: every kind, watches, 410."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.cluster.factories import node, objects_of_every_kind
from tests.conftest import Server

# kind -> (API class, method suffix, namespaced)
APIS: dict[str, tuple[type, str, bool]] = {
    "Namespace": (client.CoreV1Api, "namespace", False),
    "Node": (client.CoreV1Api, "node", False),
    "Pod": (client.CoreV1Api, "pod", True),
    "PersistentVolume": (client.CoreV1Api, "persistent_volume", False),
    "PersistentVolumeClaim": (client.CoreV1Api, "persistent_volume_claim", True),
    "Event": (client.CoreV1Api, "event", True),
    "StorageClass": (client.StorageV1Api, "storage_class", False),
    "CSINode": (client.StorageV1Api, "csi_node", False),
    "PriorityClass": (client.SchedulingV1Api, "priority_class", False),
    "PodDisruptionBudget": (client.PolicyV1Api, "pod_disruption_budget", True),
    "ControllerRevision": (client.AppsV1Api, "controller_revision", True),
    "HorizontalPodAutoscaler": (client.AutoscalingV2Api, "horizontal_pod_autoscaler", True),
    "ConfigMap": (client.CoreV1Api, "config_map", True),
    "Secret": (client.CoreV1Api, "secret", True),
    "ServiceAccount": (client.CoreV1Api, "service_account", True),
    "Service": (client.CoreV1Api, "service", True),
    "Endpoints": (client.CoreV1Api, "endpoints", True),
    "EndpointSlice": (client.DiscoveryV1Api, "endpoint_slice", True),
    "ReplicationController": (client.CoreV1Api, "replication_controller", True),
    "CSIDriver": (client.StorageV1Api, "csi_driver", False),
    "CSIStorageCapacity": (client.StorageV1Api, "csi_storage_capacity", True),
    "VolumeAttachment": (client.StorageV1Api, "volume_attachment", False),
    "Role": (client.RbacAuthorizationV1Api, "role", True),
    "RoleBinding": (client.RbacAuthorizationV1Api, "role_binding", True),
    "ClusterRole": (client.RbacAuthorizationV1Api, "cluster_role", False),
    "ClusterRoleBinding": (client.RbacAuthorizationV1Api, "cluster_role_binding", False),
}


@pytest.fixture(scope="module")
def api_client(server: Server) -> Iterator[client.ApiClient]:
    """An ApiClient configured from ``kss kubeconfig``."""
    api = config.new_client_from_config(str(server.kubeconfig))
    yield api
    api.close()


def _call(api_client: client.ApiClient, kind: str, verb: str, namespace: str | None) -> Callable[..., Any]:
    cls, suffix, namespaced = APIS[kind]
    api = cls(api_client)
    if not namespaced:
        return getattr(api, f"{verb}_{suffix}")  # type: ignore[no-any-return]
    # A partial keeps the method's signature, where watch.Watch finds the list's return type.
    return functools.partial(getattr(api, f"{verb}_namespaced_{suffix}"), namespace=namespace)


def test_every_kind_create_list_watch_patch_delete(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    start = core.list_node().metadata.resource_version
    for kind, obj in objects_of_every_kind("kc"):
        ns = obj["metadata"].get("namespace")
        created = _call(api_client, kind, "create", ns)(body=obj)
        assert created.metadata.name == obj["metadata"]["name"] and created.metadata.uid

        listing = _call(api_client, kind, "list", ns)()
        assert obj["metadata"]["name"] in [item.metadata.name for item in listing.items]

        stream = watch.Watch().stream(_call(api_client, kind, "list", ns), resource_version=start, timeout_seconds=1)
        seen = [(e["type"], e["object"].metadata.name) for e in stream]
        assert ("ADDED", obj["metadata"]["name"]) in seen

        patched = _call(api_client, kind, "patch", ns)(
            name=obj["metadata"]["name"], body={"metadata": {"labels": {"patched": "yes"}}}
        )
        assert patched.metadata.labels["patched"] == "yes"
        assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)

    for kind, obj in reversed(objects_of_every_kind("kc")):
        ns = obj["metadata"].get("namespace")
        _call(api_client, kind, "delete", ns)(name=obj["metadata"]["name"])
        if kind == "Namespace":  # Terminating until the namespace controller (not run here) has emptied it
            assert _call(api_client, kind, "read", ns)(name=obj["metadata"]["name"]).status.phase == "Terminating"
            continue
        with pytest.raises(ApiException) as missing:
            _call(api_client, kind, "read", ns)(name=obj["metadata"]["name"])
        assert missing.value.status == 404


def test_watch_resumes_from_a_resource_version_and_gets_410_after_compaction(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    rv = core.list_node().metadata.resource_version
    core.create_node(node("resume-1"))
    core.patch_node("resume-1", {"spec": {"unschedulable": True}})
    core.delete_node("resume-1")
    events = [
        (e["type"], e["object"].metadata.name)
        for e in watch.Watch().stream(core.list_node, resource_version=rv, timeout_seconds=1)
    ]
    assert events == [("ADDED", "resume-1"), ("MODIFIED", "resume-1"), ("DELETED", "resume-1")]

    # The session server keeps a 200-event window; push the starting point out of it.
    for i in range(230):
        core.create_namespaced_event(
            "default",
            {"metadata": {"name": f"churn-{i}"}, "involvedObject": {"kind": "Node", "name": "x"}, "reason": "Churn"},
        )
    with pytest.raises(ApiException) as gone:
        list(watch.Watch().stream(core.list_node, resource_version=rv, timeout_seconds=1))
    assert gone.value.status == 410
    core.delete_collection_namespaced_event("default")
    assert core.list_namespaced_event("default").items == []


def test_watch_with_bookmarks_and_selectors(api_client: client.ApiClient) -> None:
    core = client.CoreV1Api(api_client)
    rv = core.list_namespaced_pod("sel-watch").metadata.resource_version
    pod = {"metadata": {"name": "p", "labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    core.create_namespaced_pod("sel-watch", pod)
    core.patch_namespaced_pod("p", "sel-watch", {"metadata": {"labels": {"app": "b"}}})
    events = [
        (e["type"], e["object"].metadata.labels["app"])
        for e in watch.Watch().stream(
            core.list_namespaced_pod, "sel-watch", label_selector="app=a", resource_version=rv, timeout_seconds=1
        )
    ]
    # Leaving the selection is a DELETED for this watcher.
    assert events == [("ADDED", "a"), ("DELETED", "b")]

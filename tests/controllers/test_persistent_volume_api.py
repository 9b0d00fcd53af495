"""The PV controller through ``kss serve`` with its scheduler off, the test playing an external scheduler with
the official Python client, as kube-scheduler's VolumeBinding does it: for a WaitForFirstConsumer claim it sets the
chosen PV's claimRef (or, to provision, the claim's ``volume.kubernetes.io/selected-node``), waits until the
claim is bound, then posts the pod's Binding (issue #33 item 2)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from kubernetes import client, config

from tests.conftest import Server, start_server

T = TypeVar("T")


@pytest.fixture(scope="module")
def external(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """``kss serve`` with its controllers and no scheduler of its own."""
    workdir: Path = tmp_path_factory.mktemp("kss-pv")
    server = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}", env={"KSS_SCHEDULER_ENABLED": "false"})
    yield server
    server.stop()


@pytest.fixture(scope="module")
def core(external: Server) -> Any:
    api = config.new_client_from_config(str(external.kubeconfig))  # type: ignore[no-untyped-call]
    return client.CoreV1Api(api)


@pytest.fixture(scope="module")
def storage(external: Server) -> Any:
    api = config.new_client_from_config(str(external.kubeconfig))  # type: ignore[no-untyped-call]
    return client.StorageV1Api(api)


def wait_for(read: Callable[[], T | None], timeout: float = 20.0) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = read()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out")


def claim_phase(core: Any, name: str) -> str:
    return str(core.read_namespaced_persistent_volume_claim(name, "default").status.phase or "")


def pod_with_claim(name: str, claim: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
            "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}],
        },
    }


def bind(core: Any, pod: str, node: str) -> None:
    """The scheduler's Binding (the client cannot read its empty answer, as with kube-scheduler's own client)."""
    body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": pod}, "target": {"kind": "Node", "name": node}}
    core.create_namespaced_binding("default", body, _preload_content=False)


def claim(name: str, cls: str, size: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": size}},
            "storageClassName": cls,
        },
    }


@pytest.fixture(scope="module")
def cluster(core: Any, storage: Any) -> None:
    for name in ("node-a", "node-b"):
        core.create_node(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
                "status": {"capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
            }
        )
    for name, provisioner in (("local", "kubernetes.io/no-provisioner"), ("csi", "hostpath.csi.k8s.io")):
        storage.create_storage_class(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": name},
                "provisioner": provisioner,
                "volumeBindingMode": "WaitForFirstConsumer",
            }
        )


def test_an_external_binder_sees_a_static_claim_bound_to_the_volume_it_chose(core: Any, cluster: None) -> None:
    core.create_persistent_volume(
        {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": "local-b"},
            "spec": {
                "capacity": {"storage": "10Gi"},
                "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local",
                "local": {"path": "/mnt/disk"},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "kubernetes.io/hostname", "operator": "In", "values": ["node-b"]}
                                ]
                            }
                        ]
                    }
                },
            },
        }
    )
    core.create_namespaced_persistent_volume_claim("default", claim("static", "local", "5Gi"))
    core.create_namespaced_pod("default", pod_with_claim("uses-static", "static"))
    assert wait_for(lambda: core.read_persistent_volume("local-b").status.phase) == "Available"
    assert claim_phase(core, "static") == "Pending"

    # PreBind: the chosen volume's claimRef (GetBindVolumeToClaim), then wait for the PV controller.
    pvc = core.read_namespaced_persistent_volume_claim("static", "default")
    ref = {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "static", "apiVersion": "v1"}
    ref |= {"uid": pvc.metadata.uid, "resourceVersion": pvc.metadata.resource_version}
    patch = {
        "metadata": {"annotations": {"pv.kubernetes.io/bound-by-controller": "yes"}},
        "spec": {"claimRef": ref},
    }
    core.patch_persistent_volume("local-b", patch)
    assert wait_for(lambda: claim_phase(core, "static") == "Bound")
    bind(core, "uses-static", "node-b")

    bound = core.read_namespaced_persistent_volume_claim("static", "default")
    assert bound.spec.volume_name == "local-b"
    assert bound.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert bound.status.capacity == {"storage": "10Gi"}
    assert core.read_persistent_volume("local-b").status.phase == "Bound"
    assert core.read_namespaced_pod("uses-static", "default").spec.node_name == "node-b"


def test_an_external_binder_sees_a_claim_provisioned_on_the_node_it_selected(core: Any, cluster: None) -> None:
    core.create_namespaced_persistent_volume_claim("default", claim("dynamic", "csi", "2Gi"))
    core.create_namespaced_pod("default", pod_with_claim("uses-dynamic", "dynamic"))
    assert wait_for(lambda: claim_phase(core, "dynamic")) == "Pending"

    # PreBind for a claim to provision: the selected node, then wait for the provisioner and the PV controller.
    annotation = {"volume.kubernetes.io/selected-node": "node-a"}
    core.patch_namespaced_persistent_volume_claim("dynamic", "default", {"metadata": {"annotations": annotation}})
    assert wait_for(lambda: claim_phase(core, "dynamic") == "Bound")
    bind(core, "uses-dynamic", "node-a")

    pvc = core.read_namespaced_persistent_volume_claim("dynamic", "default")
    volume = core.read_persistent_volume(pvc.spec.volume_name)
    assert volume.metadata.name == f"pvc-{pvc.metadata.uid}"
    assert volume.metadata.annotations == {"pv.kubernetes.io/provisioned-by": "hostpath.csi.k8s.io"}
    assert volume.spec.claim_ref.uid == pvc.metadata.uid
    terms = volume.spec.node_affinity.required.node_selector_terms
    assert [(e.key, e.values) for e in terms[0].match_expressions] == [("kubernetes.io/hostname", ["node-a"])]
    assert pvc.metadata.annotations["volume.kubernetes.io/storage-provisioner"] == "hostpath.csi.k8s.io"
    assert core.read_namespaced_pod("uses-dynamic", "default").spec.node_name == "node-a"

    # The claim deleted, its provisioned volume (reclaimPolicy Delete) goes too.
    core.delete_namespaced_pod("uses-dynamic", "default", grace_period_seconds=0)
    core.delete_namespaced_persistent_volume_claim("dynamic", "default")
    wait_for(lambda: not any(v.metadata.name == volume.metadata.name for v in core.list_persistent_volume().items))

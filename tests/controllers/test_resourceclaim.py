"""The resourceclaim controller (app/controllers/resourceclaim.py) over an in-memory ClusterStore: claims made
from templates for pods, owned by them and listed in their status; reuse of a claim the pod already owns; a
missing template as a Warning Event; reservedFor kept to pods that may still run, deallocation of scheduler-made
allocations, deletion of a done pod's generated claim and, with the garbage collector, of a deleted pod's; the claim
kube-scheduler makes for a pod's extended resources (DRAExtendedResource) left alone, and released the same way."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import uvicorn

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.controllers.garbage_collector import GarbageCollector
from kss_sim.controllers.resourceclaim import (
    DELETE_PROTECTION_FINALIZER,
    POD_CLAIM_NAME_ANNOTATION,
    ResourceClaimController,
    generate_name,
)
from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import kube_version
from kss_sim.main import create_app
from kss_sim.serve_cli import kubeconfig
from tests.conftest import KUBECTL, free_port

NS = "default"


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def template(name: str = "gpu-template", **request: Any) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "metadata": {"labels": {"team": "ml"}, "annotations": {"note": "from the template"}},
            "spec": {
                "devices": {
                    "requests": [{"name": "gpu", **(request or {"exactly": {"deviceClassName": "gpu.example.com"}})}]
                }
            },
        },
    }


def user_claim(name: str) -> Obj:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": NS},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
    }


def pod(name: str, *claims: Obj, node: str = "") -> Obj:
    spec: Obj = {
        "containers": [
            {"name": "main", "image": "busybox", "resources": {"claims": [{"name": c["name"]} for c in claims]}}
        ],
        "resourceClaims": list(claims),
    }
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}


def from_template(claim: str, tmpl: str = "gpu-template") -> Obj:
    return {"name": claim, "resourceClaimTemplateName": tmpl}


def by_name(claim: str, name: str) -> Obj:
    return {"name": claim, "resourceClaimName": name}


ALLOCATION = {
    "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"}]},
    "nodeSelector": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]
    },
}


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(clock: Clock) -> ClusterStore:
    return ClusterStore(None, clock=clock)


@pytest.fixture
def claims(store: ClusterStore, clock: Clock) -> Iterator[ResourceClaimController]:
    controller = ResourceClaimController(store, clock=clock)
    controller.start()
    try:
        yield controller
    finally:
        controller.stop()


def settle(*controllers: Any) -> None:
    for _ in range(3):  # one controller's writes wake another
        for c in controllers:
            assert c.wait_idle(10)


def generated(store: ClusterStore) -> list[Obj]:
    return [e.copy() for e in store.select("ResourceClaim", NS).items]


def allocate(store: ClusterStore, name: str, *pods: Obj) -> Obj:
    """What the scheduler's PreBind writes: the finalizer, the allocation, the pods in reservedFor."""
    claim = store.get("ResourceClaim", NS, name)
    assert claim is not None
    claim["metadata"]["finalizers"] = [DELETE_PROTECTION_FINALIZER]
    claim = store.update("ResourceClaim", claim)
    claim["status"] = {
        "allocation": ALLOCATION,
        "reservedFor": [{"resource": "pods", "name": p["metadata"]["name"], "uid": p["metadata"]["uid"]} for p in pods],
    }
    return store.update("ResourceClaim", claim, subresource="status")


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached"
        time.sleep(0.01)


def test_a_pod_with_a_template_gets_a_claim_it_owns_listed_in_its_status(
    store: ClusterStore, claims: ResourceClaimController
) -> None:
    store.create("ResourceClaimTemplate", template())
    created_pod = store.create("Pod", pod("trainer", from_template("gpu")))
    settle(claims)

    [claim] = generated(store)
    m = claim["metadata"]
    assert m["generateName"] == "trainer-gpu-"
    assert m["name"].startswith("trainer-gpu-") and len(m["name"]) == len("trainer-gpu-") + 5
    assert m["labels"] == {"team": "ml"}
    assert m["annotations"] == {"note": "from the template", POD_CLAIM_NAME_ANNOTATION: "gpu"}
    assert m["ownerReferences"] == [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "name": "trainer",
            "uid": created_pod["metadata"]["uid"],
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    stored_template = store.get("ResourceClaimTemplate", NS, "gpu-template")
    assert stored_template is not None
    assert claim["spec"] == stored_template["spec"]["spec"]

    current = store.get("Pod", NS, "trainer")
    assert current is not None
    assert current["status"]["resourceClaimStatuses"] == [{"name": "gpu", "resourceClaimName": m["name"]}]
    writers = {(f["manager"], f["operation"], f.get("subresource")) for f in current["metadata"]["managedFields"]}
    assert ("ResourceClaimController", "Apply", "status") in writers


def test_every_template_claim_of_a_pod_stays_listed(store: ClusterStore, claims: ResourceClaimController) -> None:
    store.create("ResourceClaimTemplate", template())
    store.create("ResourceClaimTemplate", template("nic-template"))
    store.create("ResourceClaim", user_claim("shared"))
    store.create(
        "Pod",
        pod("trainer", from_template("gpu"), from_template("nic", "nic-template"), by_name("data", "shared")),
    )
    settle(claims)

    names = {
        c["metadata"].get("annotations", {}).get(POD_CLAIM_NAME_ANNOTATION): c["metadata"]["name"]
        for c in generated(store)
    }
    assert set(names) == {"gpu", "nic", None}  # None: the user's own claim, untouched
    current = store.get("Pod", NS, "trainer")
    assert current is not None
    assert current["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": names["gpu"]},
        {"name": "nic", "resourceClaimName": names["nic"]},
    ]


def test_a_claim_the_pod_already_owns_is_reused_after_a_lost_status_write(store: ClusterStore, clock: Clock) -> None:
    store.create("ResourceClaimTemplate", template())
    store.create("Pod", pod("trainer", from_template("gpu")))
    first = ResourceClaimController(store, clock=clock)
    first.start()
    settle(first)
    first.stop()
    [claim] = generated(store)
    # As if the controller had died between creating the claim and recording it in the pod status.
    store.patch("Pod", NS, "trainer", {"status": {"resourceClaimStatuses": None}}, subresource="status")

    again = ResourceClaimController(store, clock=clock)
    again.start()
    try:
        settle(again)
    finally:
        again.stop()
    assert [c["metadata"]["name"] for c in generated(store)] == [claim["metadata"]["name"]]
    current = store.get("Pod", NS, "trainer")
    assert current is not None
    assert current["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}
    ]


def test_a_recorded_claim_the_pod_does_not_own_is_replaced(
    store: ClusterStore, claims: ResourceClaimController
) -> None:
    store.create("ResourceClaim", user_claim("someone-elses"))
    store.create("ResourceClaimTemplate", template())
    store.create("Pod", pod("trainer", from_template("gpu")))
    settle(claims)
    [claim] = [c for c in generated(store) if c["metadata"]["name"] != "someone-elses"]
    store.delete("ResourceClaim", NS, claim["metadata"]["name"])
    store.patch(
        "Pod",
        NS,
        "trainer",
        {"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "someone-elses"}]}},
        subresource="status",
    )
    settle(claims)

    [replacement] = [c for c in generated(store) if c["metadata"]["name"] != "someone-elses"]
    assert replacement["metadata"]["name"] != claim["metadata"]["name"]
    current = store.get("Pod", NS, "trainer")
    assert current is not None
    assert current["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": replacement["metadata"]["name"]}
    ]


def test_a_missing_template_is_a_warning_event_and_the_pod_waits_for_it(
    store: ClusterStore, claims: ResourceClaimController
) -> None:
    store.create("Pod", pod("trainer", from_template("gpu")))
    settle(claims)

    assert generated(store) == []
    current = store.get("Pod", NS, "trainer")
    assert current is not None and not current.get("status", {}).get("resourceClaimStatuses")
    [event] = [e.obj for e in store.select("Event", NS).items if e.obj["involvedObject"]["name"] == "trainer"]
    assert event["type"] == "Warning"
    assert event["reason"] == "FailedResourceClaimCreation"
    assert event["message"] == (
        'PodResourceClaim gpu: resource claim template "gpu-template": '
        'resourceclaimtemplate.resource.k8s.io "gpu-template" not found'
    )
    assert event["source"] == {"component": "resource_claim"}

    store.create("ResourceClaimTemplate", template())
    settle(claims)
    [claim] = generated(store)
    current = store.get("Pod", NS, "trainer")
    assert current is not None
    assert current["status"]["resourceClaimStatuses"] == [
        {"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}
    ]


def test_retries_of_a_missing_template_back_off_on_the_clock_and_count_on_one_event(
    store: ClusterStore, claims: ResourceClaimController, clock: Clock
) -> None:
    store.create("Pod", pod("trainer", from_template("gpu")))
    settle(claims)
    for _ in range(5):
        clock.advance(1.0)
        claims.poke()
        time.sleep(0.05)
        settle(claims)
    [event] = [e.obj for e in store.select("Event", NS).items if e.obj["involvedObject"]["name"] == "trainer"]
    assert event["count"] == 6  # the first try and one retry per second of the clock (5 ms, 10 ms, ... apart)


@pytest.mark.parametrize(
    ("request_fields", "switch", "message"),
    [
        (
            {"exactly": {"deviceClassName": "gpu.example.com", "adminAccess": True}},
            "admin_access_enabled",
            "admin access is requested, but the feature is disabled",
        ),
        (
            {"firstAvailable": [{"name": "big", "deviceClassName": "gpu.example.com"}]},
            "prioritized_list_enabled",
            "template includes a prioritized list of subrequests, but the feature is disabled",
        ),
    ],
)
def test_a_template_using_a_feature_the_controller_has_off_makes_no_claim(
    store: ClusterStore, clock: Clock, request_fields: Obj, switch: str, message: str
) -> None:
    # kube-controller-manager with DRAAdminAccess / DRAPrioritizedList off while kube-apiserver has them on.
    store.create("ResourceClaimTemplate", template(**request_fields))
    store.create("Pod", pod("trainer", from_template("gpu")))
    controller = ResourceClaimController(store, clock=clock)
    assert getattr(controller, switch) is True  # the v1.35 defaults
    setattr(controller, switch, False)
    controller.start()
    try:
        settle(controller)
    finally:
        controller.stop()
    assert generated(store) == []
    [event] = [e.obj for e in store.select("Event", NS).items if e.obj["involvedObject"]["name"] == "trainer"]
    assert (event["reason"], event["message"]) == ("FailedResourceClaimCreation", f"PodResourceClaim gpu: {message}")


def test_long_names_are_cut_in_proportion_to_leave_room_for_five_random_characters() -> None:
    assert generate_name("web-0", "gpu") == "web-0-gpu-"
    pod_name, claim = "p" * 50, "c" * 30  # "p…-c…-" is 82 characters
    cut = generate_name(pod_name, claim)
    assert cut == "p" * (50 * 57 // 82) + "-" + "c" * (30 * 57 // 82)
    assert len(cut) <= 57


def test_a_finished_pod_releases_its_claim_which_is_deallocated_and_deleted(
    store: ClusterStore, claims: ResourceClaimController
) -> None:
    store.create("ResourceClaimTemplate", template())
    trainer = store.create("Pod", pod("trainer", from_template("gpu"), node="node-1"))
    settle(claims)
    [claim] = generated(store)
    allocate(store, claim["metadata"]["name"], trainer)
    settle(claims)
    assert len(generated(store)) == 1  # a running pod keeps its claim as it is

    store.patch("Pod", NS, "trainer", {"status": {"phase": "Succeeded"}}, subresource="status")
    settle(claims)
    assert generated(store) == []


def test_a_shared_claim_keeps_its_running_pods_and_is_deallocated_when_the_last_goes(
    store: ClusterStore, claims: ResourceClaimController
) -> None:
    store.create("ResourceClaim", user_claim("shared"))
    first = store.create("Pod", pod("first", by_name("gpu", "shared"), node="node-1"))
    second = store.create("Pod", pod("second", by_name("gpu", "shared"), node="node-1"))
    allocate(store, "shared", first, second)
    settle(claims)

    store.delete("Pod", NS, "first")
    settle(claims)
    claim = store.get("ResourceClaim", NS, "shared")
    assert claim is not None
    assert claim["status"]["reservedFor"] == [{"resource": "pods", "name": "second", "uid": second["metadata"]["uid"]}]
    assert claim["status"]["allocation"] == ALLOCATION
    assert claim["metadata"]["finalizers"] == [DELETE_PROTECTION_FINALIZER]

    store.patch("Pod", NS, "second", {"status": {"phase": "Failed"}}, subresource="status")
    settle(claims)
    claim = store.get("ResourceClaim", NS, "shared")
    assert claim is not None  # the user's claim stays, free again
    assert "reservedFor" not in claim.get("status", {}) and "allocation" not in claim.get("status", {})
    assert not claim["metadata"].get("finalizers")


def test_a_pod_replaced_under_the_same_name_loses_the_old_reservation(
    store: ClusterStore, claims: ResourceClaimController
) -> None:
    store.create("ResourceClaim", user_claim("shared"))
    old = store.create("Pod", pod("worker", by_name("gpu", "shared"), node="node-1"))
    allocate(store, "shared", old)
    claims.stop()  # the deletion and re-creation happen while the controller is down
    store.delete("Pod", NS, "worker")
    store.create("Pod", pod("worker", by_name("gpu", "shared")))
    claims.start()
    settle(claims)
    claim = store.get("ResourceClaim", NS, "shared")
    assert claim is not None
    assert "reservedFor" not in claim.get("status", {}) and "allocation" not in claim.get("status", {})


def test_an_allocation_not_made_by_the_scheduler_is_kept_when_unreserved(
    store: ClusterStore, claims: ResourceClaimController
) -> None:
    store.create("ResourceClaim", user_claim("driver-made"))
    worker = store.create("Pod", pod("worker", by_name("gpu", "driver-made"), node="node-1"))
    claim = store.get("ResourceClaim", NS, "driver-made")
    assert claim is not None
    claim["status"] = {
        "allocation": ALLOCATION,
        "reservedFor": [{"resource": "pods", "name": "worker", "uid": worker["metadata"]["uid"]}],
    }
    store.update("ResourceClaim", claim, subresource="status")
    settle(claims)
    store.delete("Pod", NS, "worker")
    settle(claims)
    claim = store.get("ResourceClaim", NS, "driver-made")
    assert claim is not None
    assert "reservedFor" not in claim["status"] and claim["status"]["allocation"] == ALLOCATION


def test_a_pod_bound_without_the_scheduler_is_added_to_its_allocated_claim(
    store: ClusterStore, claims: ResourceClaimController
) -> None:
    store.create("ResourceClaim", user_claim("shared"))
    first = store.create("Pod", pod("first", by_name("gpu", "shared"), node="node-1"))
    allocate(store, "shared", first)
    late = store.create("Pod", pod("late", by_name("gpu", "shared"), node="node-1"))
    settle(claims)
    claim = store.get("ResourceClaim", NS, "shared")
    assert claim is not None
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [first["metadata"]["uid"], late["metadata"]["uid"]]

    # A finished pod is never put back (kubernetes#141274): it is only taken out.
    store.patch("Pod", NS, "late", {"status": {"phase": "Succeeded"}}, subresource="status")
    settle(claims)
    claim = store.get("ResourceClaim", NS, "shared")
    assert claim is not None
    assert [r["uid"] for r in claim["status"]["reservedFor"]] == [first["metadata"]["uid"]]


def test_an_unscheduled_pod_being_deleted_releases_its_reservation(
    store: ClusterStore, claims: ResourceClaimController
) -> None:
    store.create("ResourceClaim", user_claim("shared"))
    body = pod("pending", by_name("gpu", "shared"))
    body["metadata"]["finalizers"] = ["example.com/hold"]
    pending = store.create("Pod", body)
    allocate(store, "shared", pending)
    settle(claims)
    store.delete("Pod", NS, "pending")  # held by its finalizer, with a deletionTimestamp
    settle(claims)
    claim = store.get("ResourceClaim", NS, "shared")
    assert claim is not None
    assert "reservedFor" not in claim["status"] and "allocation" not in claim["status"]


def test_a_deleted_pods_claim_is_deallocated_and_removed_by_the_garbage_collector(
    store: ClusterStore, clock: Clock
) -> None:
    controller = ResourceClaimController(store, clock=clock)
    collector = GarbageCollector(store, clock=clock)
    store.create("ResourceClaimTemplate", template())
    trainer = store.create("Pod", pod("trainer", from_template("gpu"), node="node-1"))
    for c in (controller, collector):
        c.start()
    try:
        settle(controller, collector)
        [claim] = generated(store)
        allocate(store, claim["metadata"]["name"], trainer)
        settle(controller, collector)
        store.delete("Pod", NS, "trainer")
        settle(controller, collector)
        wait_for(lambda: generated(store) == [])
    finally:
        for c in (controller, collector):
            c.stop()


EXTENDED_ANNOTATION = "resource.kubernetes.io/extended-resource-claim"


def scheduler_claim(owner: Obj) -> Obj:
    """The claim kube-scheduler's DynamicResources creates for a pod's extended resources (DRAExtendedResource)."""
    m = owner["metadata"]
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": f"{m['name']}-extended-resources-abcde",
            "namespace": NS,
            "annotations": {EXTENDED_ANNOTATION: "true"},
            "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": m["name"], "uid": m["uid"], "controller": True}
            ],
        },
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
    }


def gpu_pod(name: str, node: str = "") -> Obj:
    """A pod asking for an extended resource (no spec.resourceClaims)."""
    body = pod(name, node=node)
    body["spec"]["containers"][0]["resources"] = {
        "requests": {"example.com/gpu": "1"},
        "limits": {"example.com/gpu": "1"},
    }
    return body


def scheduled_with_extended_claim(store: ClusterStore, name: str) -> tuple[Obj, str]:
    """A pod bound with the claim PreBind created, allocated, reserved and named in the pod's status."""
    trainer = store.create("Pod", gpu_pod(name, node="node-1"))
    claim = store.create("ResourceClaim", scheduler_claim(trainer))
    claim_name = claim["metadata"]["name"]
    allocate(store, claim_name, trainer)
    status = {"resourceClaimName": claim_name, "requestMappings": [
        {"containerName": "main", "resourceName": "example.com/gpu", "requestName": "gpu"}]}  # fmt: skip
    store.patch("Pod", NS, name, {"status": {"extendedResourceClaimStatus": status}}, subresource="status")
    return trainer, claim_name


@pytest.fixture
def store136(clock: Clock) -> ClusterStore:
    """A store with v1.36's gates (DRAExtendedResource on), as ``kss serve --kube-version 1.36`` opens it."""
    return ClusterStore(None, clock=clock, feature_gates=kube_version("1.36").effective_gates(), kube_version="1.36")


@pytest.fixture
def claims136(store136: ClusterStore, clock: Clock) -> Iterator[ResourceClaimController]:
    controller = ResourceClaimController(store136, clock=clock)
    controller.start()
    try:
        yield controller
    finally:
        controller.stop()


def test_the_scheduler_s_claim_of_a_pending_pod_is_left_alone(
    store136: ClusterStore, claims136: ResourceClaimController
) -> None:
    # A claim of an earlier attempt (the scheduler deletes or reuses it): nothing to make, release or delete here.
    waiting = store136.create("Pod", gpu_pod("waiting"))
    claim = store136.create("ResourceClaim", scheduler_claim(waiting))
    settle(claims136)
    [kept] = generated(store136)
    assert kept["metadata"]["resourceVersion"] == claim["metadata"]["resourceVersion"]
    current = store136.get("Pod", NS, "waiting")
    assert current is not None
    assert "resourceClaimStatuses" not in (current.get("status") or {})


def test_the_scheduler_s_claim_of_a_finished_pod_is_deallocated_and_deleted(
    store136: ClusterStore, claims136: ResourceClaimController
) -> None:
    scheduled_with_extended_claim(store136, "trainer")
    settle(claims136)
    [claim] = generated(store136)
    assert claim["status"]["reservedFor"][0]["name"] == "trainer"  # a running pod keeps it

    store136.patch("Pod", NS, "trainer", {"status": {"phase": "Succeeded"}}, subresource="status")
    settle(claims136)
    assert generated(store136) == []


def test_the_scheduler_s_claim_of_a_deleted_pod_is_deallocated_and_removed_by_the_garbage_collector(
    store136: ClusterStore, clock: Clock
) -> None:
    controller = ResourceClaimController(store136, clock=clock)
    collector = GarbageCollector(store136, clock=clock)
    scheduled_with_extended_claim(store136, "trainer")
    for c in (controller, collector):
        c.start()
    try:
        settle(controller, collector)
        assert len(generated(store136)) == 1
        store136.delete("Pod", NS, "trainer")
        settle(controller, collector)
        wait_for(lambda: generated(store136) == [])
    finally:
        for c in (controller, collector):
            c.stop()


def test_without_the_gate_the_scheduler_s_claim_of_a_finished_pod_waits_for_its_own_events(clock: Clock) -> None:
    # As `kss serve --kube-version 1.35` opens it: DRAExtendedResource alpha and off (on by default from v1.36).
    store = ClusterStore(None, clock=clock, feature_gates=kube_version("1.35").effective_gates(), kube_version="1.35")
    controller = ResourceClaimController(store, clock=clock)
    controller.start()
    try:
        scheduled_with_extended_claim(store, "trainer")
        settle(controller)
        store.patch("Pod", NS, "trainer", {"status": {"phase": "Succeeded"}}, subresource="status")
        settle(controller)
        [claim] = generated(store)  # the pod's event names no claim: its reservation stays until the claim changes
        assert claim["status"]["reservedFor"][0]["name"] == "trainer"
    finally:
        controller.stop()


def test_a_claim_deleted_while_allocated_and_unused_loses_its_finalizer(
    store: ClusterStore, claims: ResourceClaimController
) -> None:
    store.create("ResourceClaim", user_claim("leftover"))
    allocate(store, "leftover")  # allocated, reserved for nobody
    settle(claims)
    store.delete("ResourceClaim", NS, "leftover")
    settle(claims)
    assert store.get("ResourceClaim", NS, "leftover") is None


LIVE_MANIFEST = """
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: gpu-template
spec:
  metadata:
    labels:
      team: ml
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
---
apiVersion: v1
kind: Pod
metadata:
  name: trainer
spec:
  containers:
  - name: main
    image: busybox
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: gpu-template
---
apiVersion: v1
kind: Pod
metadata:
  name: server
spec:
  nodeName: node-1
  containers:
  - name: main
    image: busybox
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: gpu-template
---
apiVersion: v1
kind: Pod
metadata:
  name: orphan
spec:
  containers:
  - name: main
    image: busybox
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: no-such-template
"""


@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")
def test_live_app_claims_from_templates_with_kubectl(tmp_path: Path) -> None:
    # The app's controllers are off: the test runs the resourceclaim controller and the garbage collector around
    # the app's store, as ControllerManager will once they are wired in. No scheduler or kubelet: kubectl plays
    # their parts (the allocation a scheduler writes, the phase a kubelet writes).
    app = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'kss.db'}", controllers=False, kubelet=False, scheduler_enabled=False
        )
    )
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    controllers = [ResourceClaimController(app.state.store), GarbageCollector(app.state.store)]
    for controller in controllers:
        controller.start()
    config_path = tmp_path / "kubeconfig"
    config_path.write_text(kubeconfig(f"http://127.0.0.1:{port}"))

    def kubectl(*args: str, stdin: str | None = None) -> str:
        proc = subprocess.run(
            [KUBECTL, "--kubeconfig", str(config_path), *args],
            capture_output=True,
            text=True,
            input=stdin,
            timeout=60,
            env={**os.environ, "KUBECACHEDIR": str(tmp_path / "kubecache")},
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    def claims_by_pod() -> dict[str, Obj]:
        listed = json.loads(kubectl("get", "resourceclaims", "-o", "json"))["items"]
        return {c["metadata"]["ownerReferences"][0]["name"]: c for c in listed}

    try:
        kubectl("apply", "-f", "-", stdin=LIVE_MANIFEST)
        wait_for(lambda: set(claims_by_pod()) == {"trainer", "server"})
        claims_now = claims_by_pod()
        pods = {p["metadata"]["name"]: p for p in json.loads(kubectl("get", "pods", "-o", "json"))["items"]}
        for pod_name in ("trainer", "server"):
            claim = claims_now[pod_name]
            assert claim["metadata"]["name"].startswith(f"{pod_name}-gpu-")
            assert claim["metadata"]["labels"] == {"team": "ml"}
            assert claim["metadata"]["ownerReferences"] == [
                {
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "name": pod_name,
                    "uid": pods[pod_name]["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ]
            listed = kubectl("get", "pod", pod_name, "-o", "jsonpath={.status.resourceClaimStatuses}")
            assert json.loads(listed) == [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}]
        described = kubectl("describe", "pod", "orphan")
        assert "FailedResourceClaimCreation" in described
        assert 'resourceclaimtemplate.resource.k8s.io "no-such-template" not found' in described

        # A driver (or the scheduler) allocates the bound pod's claim; the controller reserves it for the pod.
        served = claims_now["server"]["metadata"]["name"]
        kubectl(
            "patch",
            "resourceclaim",
            served,
            "--type=merge",
            "-p",
            json.dumps({"metadata": {"finalizers": [DELETE_PROTECTION_FINALIZER]}}),
        )
        kubectl(
            "patch",
            "resourceclaim",
            served,
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"allocation": ALLOCATION}}),
        )

        def reserved_for() -> str:
            return kubectl("get", "resourceclaim", served, "-o", "jsonpath={.status.reservedFor[*].name}")

        wait_for(lambda: reserved_for() == "server")

        kubectl("delete", "pod", "trainer", "--grace-period=1")  # it ends after a second, not the default 30 s
        wait_for(lambda: set(claims_by_pod()) == {"server"})

        # The pod finishes: its reservation goes, the allocation with it, and then its generated claim.
        kubectl(
            "patch",
            "pod",
            "server",
            "--subresource=status",
            "--type=merge",
            "-p",
            json.dumps({"status": {"phase": "Succeeded"}}),
        )
        wait_for(lambda: claims_by_pod() == {})
    finally:
        for controller in controllers:
            controller.stop()
        server.should_exit = True
        thread.join(timeout=30)

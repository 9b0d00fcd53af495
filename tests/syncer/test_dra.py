"""DRA kinds over fakes: DeviceClasses, ResourceSlices, ResourceClaimTemplates and ResourceClaims mirrored by default
(where both ends serve them) before pods, claims a pod owns left to the simulator's resourceclaim controller, a
claim's status (the source scheduler's allocation) never copied."""

from __future__ import annotations

from typing import Any

from syncer.kinds import (
    DEFAULT,
    DEVICE_CLASS,
    POD,
    RESOURCE_CLAIM,
    RESOURCE_CLAIM_TEMPLATE,
    RESOURCE_SLICE,
    parse_kinds,
)
from syncer.objects import Obj
from syncer.sink import ADDED, MODIFIED, Event, Sink
from syncer.translate import SOURCE_UID_ANNOTATION
from tests.syncer.fakes import FakeTarget


def _obj(kind: str, name: str, namespace: str | None = None, **fields: Any) -> Obj:
    meta: Obj = {"name": name, "uid": f"src-{name}", "resourceVersion": "5"}
    if namespace:
        meta["namespace"] = namespace
    return {"apiVersion": "resource.k8s.io/v1", "kind": kind, "metadata": meta, **fields}


def _claim_spec() -> Obj:
    return {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}


def test_dra_kinds_are_optional_defaults_before_pods() -> None:
    names = [k.name for k in DEFAULT]
    for kind in (DEVICE_CLASS, RESOURCE_SLICE, RESOURCE_CLAIM_TEMPLATE, RESOURCE_CLAIM):
        assert kind.optional and kind.name in names
    assert names.index("DeviceClass") < names.index("ResourceSlice") < names.index("Pod")
    assert names.index("ResourceClaim") < names.index("Pod"), "a pod's named claim exists before the pod"
    assert parse_kinds("pods,resourceclaims,resourceclaimtemplates") == (RESOURCE_CLAIM_TEMPLATE, RESOURCE_CLAIM, POD)
    assert parse_kinds("resourceslices,deviceclasses") == (DEVICE_CLASS, RESOURCE_SLICE)
    assert RESOURCE_CLAIM.path("ml", "c", "status") == "/apis/resource.k8s.io/v1/namespaces/ml/resourceclaims/c/status"


def test_classes_slices_templates_and_standalone_claims_are_mirrored_without_status() -> None:
    target = FakeTarget()
    sink = Sink(target)
    selectors = [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]
    sink.apply(Event(ADDED, DEVICE_CLASS, _obj("DeviceClass", "gpu", spec={"selectors": selectors}), initial=True))
    slice_spec = {"driver": "gpu.example.com", "nodeName": "n1", "pool": {"name": "n1", "resourceSliceCount": 1}}
    sink.apply(Event(ADDED, RESOURCE_SLICE, _obj("ResourceSlice", "n1-gpu", spec=slice_spec), initial=True))
    template = _obj("ResourceClaimTemplate", "one", "ml", spec={"spec": _claim_spec()})
    sink.apply(Event(ADDED, RESOURCE_CLAIM_TEMPLATE, template, initial=True))
    allocated = {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "d", "pool": "n1",
                                                         "device": "gpu-0"}]}}}  # fmt: skip
    shared = _obj("ResourceClaim", "shared", "ml", spec=_claim_spec(), status=allocated)
    sink.apply(Event(ADDED, RESOURCE_CLAIM, shared, initial=True))

    assert target.find("DeviceClass", "gpu") is not None
    mirrored_slice = target.find("ResourceSlice", "n1-gpu")
    assert mirrored_slice is not None and mirrored_slice["spec"]["nodeName"] == "n1"
    assert target.find("ResourceClaimTemplate", "one", "ml") is not None
    claim = target.find("ResourceClaim", "shared", "ml")
    assert claim is not None and claim["status"] == {}, "the source scheduler's allocation is not copied"
    assert claim["metadata"]["annotations"][SOURCE_UID_ANNOTATION] == "src-shared"

    sink.apply(Event(MODIFIED, RESOURCE_CLAIM, {**shared, "status": {**allocated, "reservedFor": []}}))
    claim = target.find("ResourceClaim", "shared", "ml")
    assert claim is not None and claim["status"] == {}


def test_claims_made_for_a_pod_are_left_to_the_simulators_controller() -> None:
    target = FakeTarget()
    sink = Sink(target)
    owned = _obj("ResourceClaim", "train-gpu-x7k2p", "ml", spec=_claim_spec())
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "v1", "kind": "Pod", "name": "train", "uid": "src-train", "controller": True}
    ]
    sink.apply(Event(ADDED, RESOURCE_CLAIM, owned, initial=True))
    assert target.find("ResourceClaim", "train-gpu-x7k2p", "ml") is None
    assert ("create", "ResourceClaim", "train-gpu-x7k2p") not in target.writes()

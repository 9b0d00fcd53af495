"""The mirroring rules as pure functions."""

from __future__ import annotations

import copy

from syncer import translate
from syncer.kinds import NODE, POD, PV, parse_kinds
from tests.syncer.fakes import apply_merge_patch, pod

RESULT = "kube-scheduler-simulator.sigs.k8s.io/selected-node"


def _no_pvc(_ns: str, _name: str) -> str | None:
    return None


def _production_pod() -> dict:
    obj = pod("web-1", node="node-a", labels={"app": "web"})
    obj["metadata"].update(
        generation=3,
        managedFields=[{"manager": "kube-controller-manager"}],
        finalizers=["example.com/hold"],
        ownerReferences=[{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "rs-1"}],
        annotations={"team": "a", RESULT: "elsewhere"},
    )
    obj["spec"].update(
        serviceAccountName="web",
        serviceAccount="web",
        automountServiceAccountToken=True,
        volumes=[
            {"name": "kube-api-access-x1", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
            {"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
        ],
    )
    obj["spec"]["containers"][0]["volumeMounts"] = [
        {"name": "kube-api-access-x1", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"},
        {"name": "data", "mountPath": "/data"},
    ]
    return obj


def test_pod_create_clears_server_metadata_owner_references_and_service_account() -> None:
    source = _production_pod()
    want = translate.desired(POD, source, keep_binding=False, pvc_uid=_no_pvc)
    meta = want["metadata"]
    for field in ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "finalizers"):
        assert field not in meta, field
    assert "ownerReferences" not in meta
    assert meta["annotations"] == {"team": "a", translate.SOURCE_UID_ANNOTATION: "src-web-1"}
    spec = want["spec"]
    assert not {"serviceAccountName", "serviceAccount", "automountServiceAccountToken"} & spec.keys()
    assert spec["volumes"] == [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}}]
    assert spec["containers"][0]["volumeMounts"] == [{"name": "data", "mountPath": "/data"}]
    assert source["metadata"]["ownerReferences"], "the source object itself is left untouched"


def test_pod_arrives_unscheduled_unless_it_is_existing_load() -> None:
    source = _production_pod()
    live = translate.desired(POD, source, keep_binding=False, pvc_uid=_no_pvc)
    assert "nodeName" not in live["spec"] and "status" not in live
    existing = translate.desired(POD, source, keep_binding=True, pvc_uid=_no_pvc)
    assert existing["spec"]["nodeName"] == "node-a"
    assert existing["status"] == {"phase": "Running"}


def test_bound_pv_claim_ref_uid_names_the_simulators_pvc() -> None:
    pv = {
        "metadata": {"name": "pv-1", "uid": "src-pv"},
        "spec": {"claimRef": {"kind": "PersistentVolumeClaim", "namespace": "db", "name": "data", "uid": "src-pvc"}},
        "status": {"phase": "Bound"},
    }
    lookup = {("db", "data"): "sim-pvc"}
    want = translate.desired(PV, pv, keep_binding=False, pvc_uid=lambda ns, n: lookup.get((ns, n)))
    assert want["spec"]["claimRef"]["uid"] == "sim-pvc"
    assert want["kind"] == "PersistentVolume" and want["apiVersion"] == "v1"
    orphan = translate.desired(PV, pv, keep_binding=False, pvc_uid=_no_pvc)
    assert "uid" not in orphan["spec"]["claimRef"], "no PVC in the simulator: the claim is by name only"


def test_update_patch_holds_exactly_what_the_source_changed() -> None:
    old = pod("job", labels={"app": "batch"}, schedulingGates=[{"name": "quota"}])
    new = copy.deepcopy(old)
    new["metadata"]["labels"]["tier"] = "gold"
    del new["spec"]["schedulingGates"]
    new["metadata"]["resourceVersion"] = "7"
    before = translate.desired(POD, old, keep_binding=False, pvc_uid=_no_pvc)
    after = translate.desired(POD, new, keep_binding=False, pvc_uid=_no_pvc)
    patch = translate.update_patch(POD, before, after, None)
    assert patch == {"metadata": {"labels": {"tier": "gold"}}, "spec": {"schedulingGates": None}}


def test_update_without_history_never_moves_a_pod_or_drops_simulator_annotations() -> None:
    source = pod("job", labels={"app": "batch", "v": "2"})
    want = translate.desired(POD, source, keep_binding=False, pvc_uid=_no_pvc)
    current = translate.desired(POD, pod("job", labels={"app": "batch"}), keep_binding=False, pvc_uid=_no_pvc)
    current["spec"]["nodeName"] = "chosen-by-simulator"
    current["metadata"]["annotations"][RESULT] = "chosen-by-simulator"
    patch = translate.update_patch(POD, None, want, current)
    assert patch == {"metadata": {"labels": {"v": "2"}}}
    result = apply_merge_patch(current, patch)
    assert result["spec"]["nodeName"] == "chosen-by-simulator"
    assert result["metadata"]["annotations"][RESULT] == "chosen-by-simulator"


def test_merge_patch_turns_old_into_new() -> None:
    old = {"a": 1, "b": {"c": [1, 2], "d": "x"}, "gone": True}
    new = {"a": 2, "b": {"c": [1], "e": {"f": 1}}, "added": None or 0}
    assert apply_merge_patch(old, translate.merge_patch(old, new)) == new
    assert translate.merge_patch(new, copy.deepcopy(new)) == {}


def test_status_patch_is_empty_when_equal() -> None:
    status = {"allocatable": {"cpu": "4"}}
    assert translate.status_patch(status, copy.deepcopy(status)) == {}
    assert translate.status_patch(status, {"allocatable": {"cpu": "8"}}) == {"status": {"allocatable": {"cpu": "8"}}}
    assert NODE.mirror_status and not POD.mirror_status


def test_kinds_parse_in_apply_order_with_any_spelling() -> None:
    assert [k.name for k in parse_kinds("pods,nodes,ns")] == ["Namespace", "Node", "Pod"]
    assert [k.name for k in parse_kinds("Pod, pvc,PersistentVolume")] == [
        "PersistentVolumeClaim",
        "PersistentVolume",
        "Pod",
    ]
    assert len(parse_kinds(None)) == 19  # with the four optional DRA kinds, v1.36's and v1.37's Workload and PodGroup

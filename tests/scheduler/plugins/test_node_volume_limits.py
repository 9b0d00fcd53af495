"""NodeVolumeLimits: CSINode allocatable counts per driver."""

from __future__ import annotations

from typing import Any

from kss_sim.scheduler.framework import Code, CycleState, Handle, Status
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.node_volume_limits import NodeVolumeLimits
from tests.scheduler.factories import (
    add_storage,
    claim_volume,
    make_csi_node,
    make_handle,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    make_storage_class,
    node_info,
)

EBS = "ebs.csi.aws.com"
EXCEEDED = "node(s) exceed max volume count"


def _bound(name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    pvc = make_pvc(name=name, storage_class="ebs", volume_name=f"pv-{name}")
    pv = make_pv(name=f"pv-{name}", storage_class="ebs", claim=("default", name), csi=(EBS, f"vol-{name}"))
    return pvc, pv


def _handle(existing: list[dict[str, Any]], limit: int | None, *, annotations: dict[str, str] | None = None) -> Handle:
    handle = make_handle(nodes=[make_node(name="n1")], pods=existing)
    claims = [_bound(n) for n in ("a", "b", "c")]
    return add_storage(
        handle,
        pvcs=[c for c, _ in claims] + [make_pvc(name="w", storage_class="ebs")],
        pvs=[v for _, v in claims],
        storage_classes=[make_storage_class(name="ebs")],
        csi_nodes=[make_csi_node(name="n1", drivers={EBS: limit}, annotations=annotations)],
    )


def _pod(name: str, volumes: list[dict[str, Any]], node: str | None = None) -> dict[str, Any]:
    return make_pod(name=name, node_name=node, spec={"volumes": volumes})


def _check(handle: Handle, pod: dict[str, Any]) -> tuple[Status, Status | None]:
    pl = NodeVolumeLimits(handle, {})
    pi = PodInfo(pod)
    state = CycleState()
    _, pre = pl.pre_filter(state, pi, handle.snapshot.node_info_list)
    return pre, (pl.filter(state, pi, node_info(handle, "n1")) if pre.is_success() else None)


def test_pod_without_claims_or_migratable_volumes_is_skipped() -> None:
    pre, _ = _check(_handle([], 1), _pod("p", [{"name": "tmp", "emptyDir": {}}]))
    assert pre.code == Code.SKIP
    pre, _ = _check(_handle([], 1), _pod("p", [{"name": "e", "awsElasticBlockStore": {"volumeID": "vol-9"}}]))
    assert pre.is_success()


def test_exceeding_the_driver_count_is_unschedulable() -> None:
    handle = _handle([_pod("old", [claim_volume("a")], node="n1")], 1)
    _, st = _check(handle, _pod("p", [claim_volume("b")]))
    assert st is not None
    assert st.code == Code.UNSCHEDULABLE
    assert st.message() == EXCEEDED


def test_volume_already_attached_for_another_pod_is_not_counted_twice() -> None:
    handle = _handle([_pod("old", [claim_volume("a")], node="n1")], 2)
    _, st = _check(handle, _pod("p", [claim_volume("a"), claim_volume("b")]))
    assert st is not None and st.is_success()
    _, st = _check(handle, _pod("p", [claim_volume("b"), claim_volume("c")]))
    assert st is not None and st.message() == EXCEEDED


def test_driver_without_allocatable_count_has_no_limit() -> None:
    handle = _handle([_pod("old", [claim_volume("a"), claim_volume("b")], node="n1")], None)
    _, st = _check(handle, _pod("p", [claim_volume("c")]))
    assert st is not None and st.is_success()


def test_unbound_claim_counts_against_its_class_provisioner() -> None:
    handle = _handle([_pod("old", [claim_volume("a")], node="n1")], 1)
    _, st = _check(handle, _pod("p", [claim_volume("w")]))
    assert st is not None and st.message() == EXCEEDED


def test_missing_claim_is_unresolvable_with_lookup_message() -> None:
    _, st = _check(_handle([], 1), _pod("p", [claim_volume("ghost")]))
    assert st is not None
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message() == 'looking up PVC default/ghost: persistentvolumeclaim "ghost" not found'


def test_inline_ebs_counts_only_when_migrated_on_the_node() -> None:
    inline = {"name": "e", "awsElasticBlockStore": {"volumeID": "aws://us-east-1a/vol-0abc"}}
    old = [_pod("old", [claim_volume("a")], node="n1")]
    _, st = _check(_handle(old, 1), _pod("p", [inline]))
    assert st is not None and st.is_success()
    migrated = {"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"}
    _, st = _check(_handle(old, 1, annotations=migrated), _pod("p", [inline]))
    assert st is not None and st.message() == EXCEEDED

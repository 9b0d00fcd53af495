"""VolumeZone: bound PVs' zone/region labels against the node's."""

from __future__ import annotations

from kss_sim.scheduler.framework import Code, CycleState, Handle, Status
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.volume_zone import VolumeZone, label_zones_to_set
from tests.scheduler.factories import (
    add_storage,
    claim_volume,
    make_handle,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    make_storage_class,
)

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"
BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"


def _handle(pvs: list[dict[str, object]], pvcs: list[dict[str, object]]) -> Handle:
    nodes = [
        make_node(name="a1", labels={ZONE: "a", REGION: "r1"}),
        make_node(name="b1", labels={ZONE: "b", REGION: "r1"}),
        make_node(name="beta-a", labels={BETA_ZONE: "a"}),
        make_node(name="plain"),
    ]
    scs = [
        make_storage_class(name="wffc"),
        make_storage_class(name="imm", binding_mode="Immediate"),
    ]
    return add_storage(make_handle(nodes=nodes), pvcs=pvcs, pvs=pvs, storage_classes=scs)


def _pod(*claims: str) -> PodInfo:
    return PodInfo(make_pod(name="p", spec={"volumes": [claim_volume(c) for c in claims]}))


def _run(handle: Handle, pod: PodInfo) -> tuple[Status, dict[str, Status]]:
    pl = VolumeZone(handle, {})
    state = CycleState()
    _, pre = pl.pre_filter(state, pod, handle.snapshot.node_info_list)
    verdicts = {ni.name: pl.filter(state, pod, ni) for ni in handle.snapshot.node_info_list} if pre.is_success() else {}
    return pre, verdicts


def test_zone_labelled_pv_only_fits_nodes_in_its_zone() -> None:
    handle = _handle(
        [make_pv(name="pv", labels={ZONE: "a", REGION: "r1"}, claim=("default", "c"))],
        [make_pvc(name="c", storage_class="imm", volume_name="pv")],
    )
    pre, verdicts = _run(handle, _pod("c"))
    assert pre.is_success()
    assert verdicts["a1"].is_success()
    assert verdicts["b1"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert verdicts["b1"].message() == "node(s) had no available volume zone"
    # A node without any topology label accepts every volume (single-zone clusters).
    assert verdicts["plain"].is_success()


def test_beta_pv_label_matches_ga_node_label_but_not_the_reverse() -> None:
    handle = _handle(
        [
            make_pv(name="beta", labels={BETA_ZONE: "a"}, claim=("default", "c1")),
            make_pv(name="ga", labels={ZONE: "a"}, claim=("default", "c2")),
        ],
        [
            make_pvc(name="c1", storage_class="imm", volume_name="beta"),
            make_pvc(name="c2", storage_class="imm", volume_name="ga"),
        ],
    )
    _, beta = _run(handle, _pod("c1"))
    assert beta["a1"].is_success()
    assert beta["beta-a"].is_success()
    _, ga = _run(handle, _pod("c2"))
    assert ga["a1"].is_success()
    assert ga["beta-a"].message() == "node(s) had no available volume zone"


def test_multi_zone_label_value_lists_zones_with_double_underscore() -> None:
    assert label_zones_to_set("a__b") == frozenset({"a", "b"})
    assert label_zones_to_set("a____b") is None
    handle = _handle(
        [make_pv(name="pv", labels={ZONE: "a__b"}, claim=("default", "c"))],
        [make_pvc(name="c", storage_class="imm", volume_name="pv")],
    )
    _, verdicts = _run(handle, _pod("c"))
    assert verdicts["a1"].is_success()
    assert verdicts["b1"].is_success()


def test_pv_without_topology_labels_skips_the_filter() -> None:
    handle = _handle([make_pv(name="pv", claim=("default", "c"))], [make_pvc(name="c", volume_name="pv")])
    pre, _ = _run(handle, _pod("c"))
    assert pre.code == Code.SKIP


def test_unbound_wffc_claim_is_skipped_and_unbound_immediate_claim_has_no_pv_name() -> None:
    handle = _handle([], [make_pvc(name="w", storage_class="wffc"), make_pvc(name="i", storage_class="imm")])
    pre, _ = _run(handle, _pod("w"))
    assert pre.code == Code.SKIP
    pre, _ = _run(handle, _pod("i"))
    assert pre.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert pre.message() == "PersistentVolume had no name"


def test_lookup_failures_use_lister_not_found_messages() -> None:
    handle = _handle(
        [],
        [
            make_pvc(name="no-pv", storage_class="imm", volume_name="ghost"),
            make_pvc(name="no-class"),
            make_pvc(name="bad-class", storage_class="missing"),
        ],
    )
    assert _run(handle, _pod("nope"))[0].message() == 'persistentvolumeclaim "nope" not found'
    assert _run(handle, _pod("no-pv"))[0].message() == 'persistentvolume "ghost" not found'
    assert _run(handle, _pod("no-class"))[0].message() == "PersistentVolumeClaim had no pv name and storageClass name"
    assert _run(handle, _pod("bad-class"))[0].message() == 'storageclass.storage.k8s.io "missing" not found'

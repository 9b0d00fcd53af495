"""VolumeRestrictions: ReadWriteOncePod claims in use and conflicting in-tree disks."""

from __future__ import annotations

from typing import Any

from kss_sim.kube.versions import kube_version
from kss_sim.scheduler.framework import Code, CycleState, Handle
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.volume_restrictions import PRE_FILTER_STATE_KEY, VolumeRestrictions
from tests.scheduler.factories import add_storage, claim_volume, make_handle, make_node, make_pod, make_pvc, node_info

RWOP_MSG = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode already in-use by another pod"
)


def _handle(pods: list[dict[str, Any]]) -> Handle:
    handle = make_handle(nodes=[make_node(name="n1"), make_node(name="n2")], pods=pods)
    return add_storage(
        handle,
        pvcs=[
            make_pvc(name="solo", access_modes=["ReadWriteOncePod"], volume_name="pv1"),
            make_pvc(name="shared", access_modes=["ReadWriteOnce"], volume_name="pv2"),
        ],
    )


def _pod(name: str, volumes: list[dict[str, Any]], node: str | None = None) -> dict[str, Any]:
    return make_pod(name=name, node_name=node, spec={"volumes": volumes})


def test_rwop_claim_in_use_fails_every_node_as_unschedulable() -> None:
    handle = _handle([_pod("owner", [claim_volume("solo")], node="n1")])
    pl = VolumeRestrictions(handle, {})
    state = CycleState()
    pod = PodInfo(_pod("p", [claim_volume("solo")]))
    _, pre = pl.pre_filter(state, pod, handle.snapshot.node_info_list)
    assert pre.is_success()
    for name in ("n1", "n2"):
        st = pl.filter(state, pod, node_info(handle, name))
        assert st.code == Code.UNSCHEDULABLE  # preemption may help
        assert st.message() == RWOP_MSG


def test_v1_33_words_the_rwop_conflict_as_it_did() -> None:
    handle = _handle([_pod("owner", [claim_volume("solo")], node="n1")])
    handle.kube_version = kube_version("1.33")
    pl = VolumeRestrictions(handle, {})
    state = CycleState()
    pod = PodInfo(_pod("p", [claim_volume("solo")]))
    pl.pre_filter(state, pod, handle.snapshot.node_info_list)
    st = pl.filter(state, pod, node_info(handle, "n2"))
    assert st.code == Code.UNSCHEDULABLE
    assert (
        st.message() == "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
    )


def test_rwop_claim_not_in_use_and_no_disks_is_skipped() -> None:
    handle = _handle([_pod("other", [claim_volume("shared")], node="n1")])
    pl = VolumeRestrictions(handle, {})
    _, pre = pl.pre_filter(CycleState(), PodInfo(_pod("p", [claim_volume("solo"), claim_volume("shared")])), [])
    assert pre.code == Code.SKIP


def test_remove_pod_extension_clears_the_rwop_conflict() -> None:
    owner = _pod("owner", [claim_volume("solo")], node="n1")
    handle = _handle([owner])
    pl = VolumeRestrictions(handle, {})
    state = CycleState()
    pod = PodInfo(_pod("p", [claim_volume("solo")]))
    pl.pre_filter(state, pod, handle.snapshot.node_info_list)
    ext = pl.pre_filter_extensions()
    assert ext is not None
    what_if = state.clone()
    owner_info = node_info(handle, "n1").pods[0]
    assert ext.remove_pod(what_if, pod, owner_info, node_info(handle, "n1")).is_success()
    assert pl.filter(what_if, pod, node_info(handle, "n1")).is_success()
    # The original state is untouched by the what-if clone.
    assert state.read(PRE_FILTER_STATE_KEY).conflicting_pvc_ref_count == 1
    assert ext.add_pod(what_if, pod, owner_info, node_info(handle, "n1")).is_success()
    assert pl.filter(what_if, pod, node_info(handle, "n1")).message() == RWOP_MSG


def test_missing_claim_is_unresolvable() -> None:
    pl = VolumeRestrictions(_handle([]), {})
    _, pre = pl.pre_filter(CycleState(), PodInfo(_pod("p", [claim_volume("ghost")])), [])
    assert pre.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert pre.message() == 'persistentvolumeclaim "ghost" not found'


def test_gce_pd_conflicts_unless_both_mounts_are_read_only() -> None:
    def gce(read_only: bool) -> dict[str, Any]:
        return {"name": "d", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": read_only}}

    handle = _handle([_pod("ro", [gce(True)], node="n1"), _pod("rw", [gce(False)], node="n2")])
    pl = VolumeRestrictions(handle, {})
    state = CycleState()
    pod = PodInfo(_pod("p", [gce(True)]))
    _, pre = pl.pre_filter(state, pod, handle.snapshot.node_info_list)
    assert pre.is_success()
    assert pl.filter(state, pod, node_info(handle, "n1")).is_success()
    st = pl.filter(state, pod, node_info(handle, "n2"))
    assert st.code == Code.UNSCHEDULABLE
    assert st.message() == "node(s) had no available disk"


def test_ebs_and_rbd_conflicts() -> None:
    ebs = {"name": "e", "awsElasticBlockStore": {"volumeID": "vol-1", "readOnly": True}}
    rbd_a = {"name": "r", "rbd": {"monitors": ["m1", "m2"], "pool": "p", "image": "img"}}
    rbd_b = {"name": "r", "rbd": {"monitors": ["m3", "m2"], "pool": "p", "image": "img"}}
    handle = _handle([_pod("e", [ebs], node="n1"), _pod("r", [rbd_a], node="n2")])
    pl = VolumeRestrictions(handle, {})
    for vol, node in ((ebs, "n1"), (rbd_b, "n2")):
        state = CycleState()
        pod = PodInfo(_pod("p", [vol]))
        pl.pre_filter(state, pod, handle.snapshot.node_info_list)
        # EBS conflicts even when both are read-only; RBD shares monitor m2.
        assert pl.filter(state, pod, node_info(handle, node)).message() == "node(s) had no available disk"

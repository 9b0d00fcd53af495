"""VolumeBinding: claim classification, bound-PV affinity, static binding, provisioning and the assume cache."""

from __future__ import annotations

from typing import Any

from kss_sim.scheduler.framework import Code, CycleState, Handle, Status
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.volume_binding import STATE_KEY, VolumeBinding, VolumeBindingState
from tests.scheduler.factories import (
    add_storage,
    claim_volume,
    make_handle,
    make_node,
    make_pod,
    make_pv,
    make_pvc,
    make_storage_class,
    node_info,
)

ZONE = "topology.kubernetes.io/zone"


def _handle(**storage: Any) -> Handle:
    nodes = [
        make_node(name="n1", labels={ZONE: "a"}),
        make_node(name="n2", labels={ZONE: "b"}),
    ]
    handle = make_handle(nodes=nodes)
    storage.setdefault(
        "storage_classes",
        [
            make_storage_class(name="local", provisioner="kubernetes.io/no-provisioner"),
            make_storage_class(name="ebs"),
            make_storage_class(name="fast", binding_mode="Immediate"),
        ],
    )
    return add_storage(handle, **storage)


def _pod(*claims: str, name: str = "p") -> PodInfo:
    return PodInfo(make_pod(name=name, spec={"volumes": [claim_volume(c) for c in claims]}))


def _plugin(handle: Handle) -> VolumeBinding:
    return VolumeBinding(handle, VolumeBinding.defaulted_args({}))


def _filter_all(pl: VolumeBinding, handle: Handle, pod: PodInfo) -> tuple[CycleState, Status, dict[str, Status]]:
    state = CycleState()
    _, pre = pl.pre_filter(state, pod, handle.snapshot.node_info_list)
    verdicts: dict[str, Status] = {}
    if pre.is_success():
        for ni in handle.snapshot.node_info_list:
            verdicts[ni.name] = pl.filter(state, pod, ni)
    return state, pre, verdicts


def _zone_affinity(zone: str) -> list[dict[str, Any]]:
    return [{"key": ZONE, "operator": "In", "values": [zone]}]


def test_pod_without_claims_is_skipped_and_reserve_counts_it_bound() -> None:
    handle = _handle()
    pl = _plugin(handle)
    pod = PodInfo(make_pod(name="plain", spec={"volumes": [{"name": "tmp", "emptyDir": {}}]}))
    state = CycleState()
    _, st = pl.pre_filter(state, pod, handle.snapshot.node_info_list)
    assert st.code == Code.SKIP
    assert pl.reserve(state, pod, "n1").is_success()
    assert state.read(STATE_KEY).all_bound is True


def test_missing_claim_is_unresolvable_with_lister_message() -> None:
    pl = _plugin(_handle())
    _, st = pl.pre_filter(CycleState(), _pod("does-not-exist"), [])
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message() == 'persistentvolumeclaim "does-not-exist" not found'


def test_lost_claim_names_its_missing_volume() -> None:
    pvc = make_pvc(name="c", storage_class="ebs", volume_name="gone")
    pvc["status"]["phase"] = "Lost"
    pl = _plugin(_handle(pvcs=[pvc]))
    _, st = pl.pre_filter(CycleState(), _pod("c"), [])
    assert st.message() == 'persistentvolumeclaim "c" bound to non-existent persistentvolume "gone"'


def test_unbound_immediate_claim_fails_prefilter() -> None:
    pl = _plugin(_handle(pvcs=[make_pvc(name="imm", storage_class="fast")]))
    _, st = pl.pre_filter(CycleState(), _pod("imm"), [])
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message() == "pod has unbound immediate PersistentVolumeClaims"


def test_claim_with_volume_name_but_no_bind_completed_counts_as_unbound_immediate() -> None:
    # isPVCFullyBound needs the bind-completed annotation; a prebound claim is "immediate" even with WFFC.
    pvc = make_pvc(name="pre", storage_class="local", volume_name="pv1", bound=False)
    pl = _plugin(_handle(pvcs=[pvc], pvs=[make_pv(name="pv1", storage_class="local")]))
    _, st = pl.pre_filter(CycleState(), _pod("pre"), [])
    assert st.message() == "pod has unbound immediate PersistentVolumeClaims"


def test_bound_pv_node_affinity_conflict_is_unresolvable() -> None:
    handle = _handle(
        pvcs=[make_pvc(name="c", storage_class="local", volume_name="pv-a")],
        pvs=[make_pv(name="pv-a", storage_class="local", node_affinity=_zone_affinity("a"), claim=("default", "c"))],
    )
    _, pre, verdicts = _filter_all(_plugin(handle), handle, _pod("c"))
    assert pre.is_success()
    assert verdicts["n1"].is_success()
    assert verdicts["n2"].code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert verdicts["n2"].message() == "node(s) didn't match PersistentVolume's node affinity"


def test_bound_claim_to_missing_pv_reports_pv_not_exist() -> None:
    handle = _handle(pvcs=[make_pvc(name="c", storage_class="local", volume_name="nope")])
    _, _, verdicts = _filter_all(_plugin(handle), handle, _pod("c"))
    assert verdicts["n1"].message() == "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


def test_wffc_claim_binds_smallest_fitting_pv_on_each_node() -> None:
    pvs = [
        make_pv(name="big", storage_class="local", capacity="10Gi"),
        make_pv(name="small", storage_class="local", capacity="5Gi"),
        make_pv(name="tiny", storage_class="local", capacity="2Gi"),
        make_pv(name="zoned", storage_class="local", capacity="4Gi", node_affinity=_zone_affinity("b")),
    ]
    handle = _handle(pvcs=[make_pvc(name="c", storage_class="local", request="3Gi")], pvs=pvs)
    state, _, verdicts = _filter_all(_plugin(handle), handle, _pod("c"))
    assert all(v.is_success() for v in verdicts.values())
    s: VolumeBindingState = state.read(STATE_KEY)
    # tiny is too small; zoned (4Gi) only qualifies on n2, where it beats small (5Gi).
    assert [b.pv["metadata"]["name"] for b in s.pod_volumes_by_node["n1"].static_bindings] == ["small"]
    assert [b.pv["metadata"]["name"] for b in s.pod_volumes_by_node["n2"].static_bindings] == ["zoned"]
    assert s.has_static_bindings


def test_static_matching_checks_access_modes_selector_and_class() -> None:
    pvs = [
        make_pv(name="rox", storage_class="local", access_modes=["ReadOnlyMany"]),
        make_pv(name="other-class", storage_class="ebs"),
        make_pv(name="unlabelled", storage_class="local"),
        make_pv(name="labelled", storage_class="local", capacity="2Gi", labels={"tier": "gold"}),
    ]
    pvc = make_pvc(name="c", storage_class="local", selector={"matchLabels": {"tier": "gold"}})
    handle = _handle(pvcs=[pvc], pvs=pvs)
    state, _, _ = _filter_all(_plugin(handle), handle, _pod("c"))
    bindings = state.read(STATE_KEY).pod_volumes_by_node["n1"].static_bindings
    assert [b.pv["metadata"]["name"] for b in bindings] == ["labelled"]


def test_wffc_without_matching_pv_and_no_provisioner_fails_bind_conflict() -> None:
    handle = _handle(
        pvcs=[make_pvc(name="c", storage_class="local", request="20Gi")],
        pvs=[make_pv(name="pv", storage_class="local", capacity="10Gi")],
    )
    _, _, verdicts = _filter_all(_plugin(handle), handle, _pod("c"))
    assert {v.message() for v in verdicts.values()} == {"node(s) didn't find available persistent volumes to bind"}
    assert all(v.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE for v in verdicts.values())


def test_dynamic_provisioning_respects_allowed_topologies() -> None:
    topo = [{"matchLabelExpressions": [{"key": ZONE, "values": ["b"]}]}]
    handle = _handle(
        pvcs=[make_pvc(name="c", storage_class="zonal")],
        storage_classes=[make_storage_class(name="zonal", allowed_topologies=topo)],
    )
    state, _, verdicts = _filter_all(_plugin(handle), handle, _pod("c"))
    assert verdicts["n1"].message() == "node(s) didn't find available persistent volumes to bind"
    assert verdicts["n2"].is_success()
    provisions = state.read(STATE_KEY).pod_volumes_by_node["n2"].dynamic_provisions
    assert [p.pvc["metadata"]["name"] for p in provisions] == ["c"]


def test_reserve_assumes_pv_so_the_next_claim_cannot_take_it() -> None:
    handle = _handle(
        pvcs=[make_pvc(name="c1", storage_class="local"), make_pvc(name="c2", storage_class="local")],
        pvs=[make_pv(name="only", storage_class="local")],
    )
    pl = _plugin(handle)
    state, _, _ = _filter_all(pl, handle, _pod("c1", name="first"))
    assert pl.reserve(state, _pod("c1", name="first"), "n1").is_success()
    assumed = pl.pv_cache.get("only")
    assert assumed is not None
    assert assumed["spec"]["claimRef"]["name"] == "c1"
    assert assumed["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    # The lister still holds the original object (PreBind is not run).
    assert "claimRef" not in handle.cluster.pvs["only"]["spec"]

    _, _, verdicts = _filter_all(pl, handle, _pod("c2", name="second"))
    assert verdicts["n1"].message() == "node(s) didn't find available persistent volumes to bind"
    # The same claim still finds its assumed PV (pre-bound to it).
    _, _, again = _filter_all(pl, handle, _pod("c1", name="third"))
    assert again["n1"].is_success()


def test_reserve_marks_selected_node_and_other_nodes_fail_fast() -> None:
    handle = _handle(pvcs=[make_pvc(name="c", storage_class="ebs")])
    pl = _plugin(handle)
    state, _, _ = _filter_all(pl, handle, _pod("c", name="first"))
    assert pl.reserve(state, _pod("c", name="first"), "n2").is_success()
    assumed = pl.pvc_cache.get("default/c")
    assert assumed is not None
    assert assumed["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == "n2"
    _, _, verdicts = _filter_all(pl, handle, _pod("c", name="second"))
    assert verdicts["n1"].message() == "node(s) didn't find available persistent volumes to bind"
    assert verdicts["n2"].is_success()


def test_unreserve_restores_the_assumed_pv() -> None:
    handle = _handle(pvcs=[make_pvc(name="c", storage_class="local")], pvs=[make_pv(name="pv", storage_class="local")])
    pl = _plugin(handle)
    pod = _pod("c")
    state, _, _ = _filter_all(pl, handle, pod)
    pl.reserve(state, pod, "n1")
    assert pl.pv_cache.assumed
    pl.unreserve(state, pod, "n1")
    assert pl.pv_cache.assumed == {}
    assert pl.pv_cache.get("pv") is handle.cluster.pvs["pv"]


def test_assumed_object_expires_when_the_informer_has_a_newer_version() -> None:
    handle = _handle(pvcs=[make_pvc(name="c", storage_class="local")], pvs=[make_pv(name="pv", storage_class="local")])
    pl = _plugin(handle)
    pod = _pod("c")
    state, _, _ = _filter_all(pl, handle, pod)
    pl.reserve(state, pod, "n1")
    handle.cluster.pvs["pv"]["metadata"]["resourceVersion"] = "7"
    assert pl.pv_cache.get("pv") is handle.cluster.pvs["pv"]


def test_prescore_skips_without_storage_capacity_scoring() -> None:
    handle = _handle(pvcs=[make_pvc(name="c", storage_class="local")], pvs=[make_pv(name="pv", storage_class="local")])
    pl = _plugin(handle)
    state, _, _ = _filter_all(pl, handle, _pod("c"))
    assert state.read(STATE_KEY).has_static_bindings
    assert pl.pre_score(state, _pod("c"), handle.snapshot.node_info_list).code == Code.SKIP


def test_pre_bind_writes_the_assumed_binding_to_the_cluster() -> None:
    handle = _handle(pvcs=[make_pvc(name="c", storage_class="local")], pvs=[make_pv(name="pv", storage_class="local")])
    pl = _plugin(handle)
    pod = _pod("c")
    state, _, _ = _filter_all(pl, handle, pod)
    pl.reserve(state, pod, "n1")
    assert pl.pre_bind_pre_flight(state, pod, "n1").is_success()
    assert pl.pre_bind(state, pod, "n1").is_success()
    assert handle.cluster.pvs["pv"]["spec"]["claimRef"]["name"] == "c"


def test_pre_bind_pre_flight_skips_when_everything_is_bound() -> None:
    handle = _handle(
        pvcs=[make_pvc(name="c", storage_class="local", volume_name="pv")],
        pvs=[make_pv(name="pv", storage_class="local", claim=("default", "c"))],
    )
    pl = _plugin(handle)
    pod = _pod("c")
    state, _, _ = _filter_all(pl, handle, pod)
    pl.reserve(state, pod, "n1")
    assert pl.pre_bind_pre_flight(state, pod, "n1").code == Code.SKIP


def test_args_default_bind_timeout_and_reject_negative_or_shape() -> None:
    assert VolumeBinding.defaulted_args({}) == {"bindTimeoutSeconds": 600}
    assert VolumeBinding.validate_args({"bindTimeoutSeconds": 600}) == []
    assert VolumeBinding.validate_args({"bindTimeoutSeconds": -1}) == [
        ("bindTimeoutSeconds", "Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value")
    ]
    problems = VolumeBinding.validate_args({"bindTimeoutSeconds": 1, "shape": [{"utilization": 0, "score": 10}]})
    assert [p for p, _ in problems] == ["shape"]
    assert "turn on the feature gate StorageCapacityScoring" in problems[0][1]


def test_filter_uses_node_labels_only_for_pv_affinity() -> None:
    # CheckNodeAffinity builds a node from labels alone: matchFields on metadata.name never constrain.
    pv = make_pv(name="pv", storage_class="local", claim=("default", "c"))
    pv["spec"]["nodeAffinity"] = {
        "required": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["elsewhere"]}]}
            ]
        }
    }
    handle = _handle(pvcs=[make_pvc(name="c", storage_class="local", volume_name="pv")], pvs=[pv])
    _, _, verdicts = _filter_all(_plugin(handle), handle, _pod("c"))
    assert verdicts["n1"].is_success()
    assert node_info(handle, "n1").name == "n1"

"""DynamicResources for pods without claims (skip, zero score, PostFilter messages) and its args."""

from __future__ import annotations

from app.scheduler.framework import Code, CycleState, NodeScore, NodeToStatus
from app.scheduler.plugins.dynamic_resources import DynamicResources
from tests.scheduler.factories import make_handle, make_node, make_pod, node_info, pod_info


def _plugin() -> DynamicResources:
    handle = make_handle(nodes=[make_node(name="a"), make_node(name="b")])
    return DynamicResources(handle, DynamicResources.defaulted_args({}))


def test_pod_without_claims_skips_prefilter_passes_filter_and_scores_zero() -> None:
    plugin = _plugin()
    state = CycleState()
    pod = pod_info(make_pod())
    nodes = plugin.handle.snapshot.node_info_list
    result, st = plugin.pre_filter(state, pod, nodes)
    assert result is None and st.code == Code.SKIP
    assert plugin.filter(state, pod, node_info(plugin.handle, "a")).code == Code.SUCCESS
    scores, st = plugin.score_nodes(state, pod, nodes)
    assert st.is_success() and scores == [0, 0]
    ns = [NodeScore("a", 0), NodeScore("b", 0)]
    assert plugin.normalize_score(state, pod, ns).is_success()
    assert [n.score for n in ns] == [0, 0]
    assert plugin.reserve(state, pod, "a").code == Code.SUCCESS
    assert plugin.pre_bind_pre_flight(state, pod, "a").code == Code.SKIP


def test_post_filter_without_claims_has_no_new_claims_to_deallocate() -> None:
    plugin = _plugin()
    state = CycleState()
    pod = pod_info(make_pod())
    plugin.pre_filter(state, pod, plugin.handle.snapshot.node_info_list)
    result, st = plugin.post_filter(state, pod, NodeToStatus())
    assert result is None
    assert (st.code, st.message()) == (Code.UNSCHEDULABLE, "no new claims to deallocate")


def test_post_filter_when_prefilter_never_ran_is_a_not_found_error() -> None:
    plugin = _plugin()
    _, st = plugin.post_filter(CycleState(), pod_info(make_pod()), NodeToStatus())
    assert (st.code, st.message()) == (Code.ERROR, "not found")


def test_pods_with_resource_claims_are_rejected_as_unsupported() -> None:
    plugin = _plugin()
    state = CycleState()
    pod = pod_info(make_pod(spec={"resourceClaims": [{"name": "gpu", "resourceClaimName": "my-gpu"}]}))
    _, st = plugin.pre_filter(state, pod, plugin.handle.snapshot.node_info_list)
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.message() == "resource claims are not supported by this simulator"
    # The empty state is written first, as upstream does, so PostFilter still answers normally.
    assert plugin.post_filter(state, pod, NodeToStatus())[1].message() == "no new claims to deallocate"


def test_args_default_filter_timeout_and_forbid_binding_timeout() -> None:
    assert DynamicResources.defaulted_args({}) == {"filterTimeout": "10s"}
    assert DynamicResources.validate_args({"filterTimeout": "1m30s"}) == []
    assert DynamicResources.validate_args({"filterTimeout": "0"}) == []
    assert DynamicResources.validate_args({"filterTimeout": "-1s"}) == [
        ("filterTimeout", 'Invalid value: "-1s": must be zero or positive')
    ]
    assert DynamicResources.validate_args({"filterTimeout": "10s", "bindingTimeout": "5m"}) == [
        (
            "bindingTimeout",
            "Forbidden: DRADeviceBindingConditions or DRAResourceClaimDeviceStatus feature gate is disabled",
        )
    ]
    assert [p for p, _ in DynamicResources.validate_args({"filterTimeout": "ten"})] == ["filterTimeout"]

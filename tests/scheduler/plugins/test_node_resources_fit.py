"""NodeResourcesFit: filter reasons and codes, the three scoring strategies, args defaults and validation."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.scheduler.framework import Code, CycleState
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError, parse_config
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.node_resources_fit import (
    NodeResourcesFit,
    broken_linear_function,
    go_round,
)
from tests.scheduler.factories import make_handle, make_node, make_pod, node_info

GPU = "example.com/gpu"
MI = 1024 * 1024


def _plugin(handle: Any = None, **args: Any) -> NodeResourcesFit:
    full = NodeResourcesFit.defaulted_args(args)
    assert NodeResourcesFit.validate_args(full) == []
    return NodeResourcesFit(handle, full)


def _containers(*requests: dict[str, str] | None) -> dict[str, Any]:
    """A spec fragment with one container per entry (``None``: no requests at all)."""
    out = []
    for i, req in enumerate(requests):
        c: dict[str, Any] = {"name": f"c{i}", "image": "pause"}
        if req is not None:
            c["resources"] = {"requests": dict(req)}
        out.append(c)
    return {"containers": out}


def _filter(plugin: NodeResourcesFit, pod: dict[str, Any], handle: Any, node: str) -> tuple[Code, str]:
    state = CycleState()
    pi = PodInfo(pod)
    _, st = plugin.pre_filter(state, pi, handle.snapshot.node_info_list)
    assert st.is_success()
    fst = plugin.filter(state, pi, node_info(handle, node))
    return fst.code, fst.message()


def _score(plugin: NodeResourcesFit, pod: dict[str, Any], handle: Any, node: str) -> int:
    state = CycleState()
    pi = PodInfo(pod)
    assert plugin.pre_score(state, pi, handle.snapshot.node_info_list).is_success()
    score, st = plugin.score(state, pi, node_info(handle, node))
    assert st.is_success()
    return score


# --- Filter ---------------------------------------------------------------------------------------


def test_filter_lists_every_shortage_in_upstream_order() -> None:
    node = make_node(name="n", allocatable={"cpu": "2", "memory": "2Gi", "pods": "1", GPU: "1"})
    bound = make_pod(name="b", node_name="n", requests={"cpu": "1500m", "memory": "1Gi", GPU: "1"})
    handle = make_handle(nodes=[node], pods=[bound])
    pod = make_pod(name="p", requests={GPU: "1", "memory": "1536Mi", "cpu": "1"})
    code, msg = _filter(_plugin(), pod, handle, "n")
    assert msg == "Too many pods, Insufficient cpu, Insufficient memory, Insufficient example.com/gpu"
    assert code == Code.UNSCHEDULABLE


def test_request_above_whole_allocatable_is_unschedulable_and_unresolvable() -> None:
    handle = make_handle(nodes=[make_node(name="n", allocatable={"cpu": "2"})])
    code, msg = _filter(_plugin(), make_pod(name="p", requests={"cpu": "2001m"}), handle, "n")
    assert (code, msg) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Insufficient cpu")


def test_extended_resource_absent_from_node_is_unresolvable() -> None:
    handle = make_handle(nodes=[make_node(name="n")])
    code, msg = _filter(_plugin(), make_pod(name="p", requests={GPU: "1"}), handle, "n")
    assert (code, msg) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Insufficient example.com/gpu")


def test_pod_without_requests_only_checks_pod_count() -> None:
    node = make_node(name="n", allocatable={"cpu": "0", "memory": "0", "pods": "1"})
    handle = make_handle(nodes=[node], pods=[make_pod(name="b", node_name="n")])
    assert _filter(_plugin(), make_pod(name="p"), handle, "n") == (Code.UNSCHEDULABLE, "Too many pods")


def test_exact_fit_passes() -> None:
    node = make_node(name="n", allocatable={"cpu": "2", "memory": "1Gi"})
    handle = make_handle(nodes=[node], pods=[make_pod(name="b", node_name="n", requests={"cpu": "1"})])
    assert _filter(_plugin(), make_pod(name="p", requests={"cpu": "1", "memory": "1Gi"}), handle, "n") == (
        Code.SUCCESS,
        "",
    )


def test_ignored_resources_and_groups_skip_extended_resources_only() -> None:
    handle = make_handle(nodes=[make_node(name="n")])
    pod = make_pod(name="p", requests={GPU: "1", "other.io/fpga": "1"})
    assert _filter(_plugin(ignoredResources=[GPU]), pod, handle, "n")[1] == "Insufficient other.io/fpga"
    assert _filter(_plugin(ignoredResourceGroups=["example.com"]), pod, handle, "n")[1] == "Insufficient other.io/fpga"
    # hugepages are scalar but not extended: ignoring can never apply to them.
    huge = make_pod(name="h", requests={"hugepages-2Mi": "2Mi"})
    assert _filter(_plugin(ignoredResources=["hugepages-2Mi"]), huge, handle, "n")[1] == "Insufficient hugepages-2Mi"


def test_filter_counts_sidecars_init_containers_and_overhead() -> None:
    # containers 500m; sidecar 300m runs alongside; init 1 runs beside the sidecar: max(800m, 1300m) + 200m overhead.
    spec = _containers({"cpu": "500m"})
    spec["initContainers"] = [
        {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "300m"}}},
        {"name": "init", "resources": {"requests": {"cpu": "1"}}},
    ]
    spec["overhead"] = {"cpu": "200m"}
    handle = make_handle(nodes=[make_node(name="small", allocatable={"cpu": "1499m"})])
    code, msg = _filter(_plugin(), make_pod(name="p", spec=spec), handle, "small")
    assert (code, msg) == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Insufficient cpu")
    handle = make_handle(nodes=[make_node(name="fits", allocatable={"cpu": "1500m"})])
    assert _filter(_plugin(), make_pod(name="p", spec=spec), handle, "fits")[0] == Code.SUCCESS


def test_filter_without_prefilter_state_is_an_error() -> None:
    handle = make_handle(nodes=[make_node(name="n")])
    st = _plugin().filter(CycleState(), PodInfo(make_pod(name="p")), node_info(handle, "n"))
    assert st.code == Code.ERROR
    assert st.message() == 'error reading "PreFilterNodeResourcesFit" from cycleState: not found'


def test_prefilter_never_skips_and_has_no_extensions() -> None:
    plugin = _plugin()
    _, st = plugin.pre_filter(CycleState(), PodInfo(make_pod(name="p")), [])
    assert st.code == Code.SUCCESS
    assert plugin.pre_filter_extensions() is None


# --- Score ----------------------------------------------------------------------------------------


def test_least_allocated_counts_100m_and_200mi_for_missing_requests() -> None:
    handle = make_handle(nodes=[make_node(name="n")])  # 4 CPU, 8 GiB
    # cpu (4000-100)*100/4000 = 97; memory (8192-200)*100/8192 = 97 (Mi)
    assert _score(_plugin(), make_pod(name="p"), handle, "n") == 97
    # two containers without requests: 200m -> 95, 400Mi -> 95
    assert _score(_plugin(), make_pod(name="p", spec=_containers(None, None)), handle, "n") == 95


def test_explicit_zero_request_stays_zero_in_scoring() -> None:
    handle = make_handle(nodes=[make_node(name="n")])
    pod = make_pod(name="p", requests={"cpu": "0", "memory": "0"})
    assert _score(_plugin(), pod, handle, "n") == 100


def test_least_allocated_weights_and_node_usage() -> None:
    node = make_node(name="n", allocatable={"cpu": "10", "memory": "10Gi"})
    bound = make_pod(name="b", node_name="n", requests={"cpu": "3", "memory": "1Gi"})
    handle = make_handle(nodes=[node], pods=[bound])
    pod = make_pod(name="p", requests={"cpu": "1", "memory": "1Gi"})
    # cpu (10000-4000)*100/10000 = 60, memory 80; weights 3 and 1: (180 + 80) / 4 = 65
    plugin = _plugin(
        scoringStrategy={"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 3}, {"name": "memory"}]}
    )
    assert _score(plugin, pod, handle, "n") == 65


def test_overcommitted_node_scores_zero_least_and_full_most() -> None:
    node = make_node(name="n", allocatable={"cpu": "1", "memory": "1Gi"})
    handle = make_handle(nodes=[node], pods=[make_pod(name="b", node_name="n", requests={"cpu": "1", "memory": "1Gi"})])
    pod = make_pod(name="p", requests={"cpu": "500m", "memory": "512Mi"})
    assert _score(_plugin(), pod, handle, "n") == 0
    assert _score(_plugin(scoringStrategy={"type": "MostAllocated"}), pod, handle, "n") == 100


def test_most_allocated_score() -> None:
    node = make_node(name="n", allocatable={"cpu": "3", "memory": "3Gi"})
    handle = make_handle(nodes=[node])
    pod = make_pod(name="p", requests={"cpu": "1", "memory": "2Gi"})
    # cpu 1000*100/3000 = 33, memory 66: (33 + 66) / 2 = 49
    assert _score(_plugin(scoringStrategy={"type": "MostAllocated"}), pod, handle, "n") == 49


def test_extended_resource_the_pod_does_not_request_is_left_out_of_the_mean() -> None:
    node = make_node(name="n", allocatable={"cpu": "4", "memory": "8Gi", GPU: "4"})
    handle = make_handle(nodes=[node])
    strategy = {
        "type": "MostAllocated",
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}, {"name": GPU, "weight": 5}],
    }
    no_gpu = make_pod(name="p", requests={"cpu": "2", "memory": "4Gi"})
    assert _score(_plugin(scoringStrategy=strategy), no_gpu, handle, "n") == 50
    with_gpu = make_pod(name="g", requests={"cpu": "2", "memory": "4Gi", GPU: "1"})
    # (50 + 50 + 25*5) / 7 = 32
    assert _score(_plugin(scoringStrategy=strategy), with_gpu, handle, "n") == 32


def test_requested_to_capacity_ratio_interpolates_the_shape() -> None:
    handle = make_handle(nodes=[make_node(name="n", allocatable={"cpu": "4", "memory": "8Gi"})])
    strategy = {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "cpu", "weight": 1}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
    }
    pod = make_pod(name="p", requests={"cpu": "1"})  # 25% utilization -> 25
    assert _score(_plugin(scoringStrategy=strategy), pod, handle, "n") == 25


def test_broken_linear_function_truncates_toward_zero_on_falling_segments() -> None:
    f = broken_linear_function([(0, 100), (30, 0)])
    # 100 + (-100 * 10) / 30 = 100 - 33 (Go truncation; flooring would give 66)
    assert f(10) == 67
    assert f(0) == 100
    assert f(50) == 0


def test_requested_to_capacity_ratio_rounds_half_away_from_zero() -> None:
    assert go_round(50.5) == 51
    assert go_round(2.5) == 3
    assert go_round(2.4999) == 2
    node = make_node(name="n", allocatable={"cpu": "100", "memory": "100Gi"})
    handle = make_handle(nodes=[node])
    strategy = {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
    }
    pod = make_pod(name="p", requests={"cpu": "50", "memory": "51Gi"})  # 50 and 51 -> 50.5 -> 51
    assert _score(_plugin(scoringStrategy=strategy), pod, handle, "n") == 51


def test_requested_to_capacity_ratio_leaves_zero_scores_out_of_the_weights() -> None:
    handle = make_handle(nodes=[make_node(name="n", allocatable={"cpu": "4", "memory": "4Gi"})])
    strategy = {
        "type": "RequestedToCapacityRatio",
        "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 3}],
        "requestedToCapacityRatio": {"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}]},
    }
    pod = make_pod(name="p", requests={"cpu": "2", "memory": "0"})  # memory scores 0 and drops out
    assert _score(_plugin(scoringStrategy=strategy), pod, handle, "n") == 50


def test_fit_scoring_ignores_pod_level_requests() -> None:
    handle = make_handle(nodes=[make_node(name="n", allocatable={"cpu": "10", "memory": "10Gi"})])
    spec = _containers(None, {"cpu": "100m", "memory": "100Mi"})
    spec["resources"] = {"requests": {"cpu": "5", "memory": "5Gi"}}
    pod = make_pod(name="p", spec=spec)
    # upstream's Fit scorer never enables PodLevelResources: 200m -> 98, 300Mi -> 97
    assert _score(_plugin(), pod, handle, "n") == 97
    # ... while the filter does honour them
    small = make_handle(nodes=[make_node(name="s", allocatable={"cpu": "4", "memory": "10Gi"})])
    assert _filter(_plugin(), pod, small, "s") == (Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "Insufficient cpu")


def test_ephemeral_storage_scores_with_real_requests() -> None:
    node = make_node(name="n", allocatable={"cpu": "4", "memory": "8Gi", "ephemeral-storage": "10Gi"})
    handle = make_handle(nodes=[node])
    strategy = {"type": "LeastAllocated", "resources": [{"name": "ephemeral-storage", "weight": 1}]}
    assert _score(_plugin(scoringStrategy=strategy), make_pod(name="p"), handle, "n") == 100
    pod = make_pod(name="q", requests={"ephemeral-storage": "4Gi"})
    assert _score(_plugin(scoringStrategy=strategy), pod, handle, "n") == 60


# --- args -----------------------------------------------------------------------------------------


def test_defaulted_args_are_least_allocated_on_cpu_and_memory() -> None:
    assert NodeResourcesFit.defaulted_args({}) == {
        "scoringStrategy": {
            "type": "LeastAllocated",
            "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
        }
    }
    got = NodeResourcesFit.defaulted_args({"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": GPU}]}})
    assert got["scoringStrategy"]["resources"] == [{"name": GPU, "weight": 1}]
    got = NodeResourcesFit.defaulted_args({"scoringStrategy": {"type": "MostAllocated"}})
    assert got["scoringStrategy"]["resources"] == [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]


def test_validate_args_messages() -> None:
    def errors(args: dict[str, Any]) -> list[tuple[str, str]]:
        return NodeResourcesFit.validate_args(NodeResourcesFit.defaulted_args(args))

    assert errors({"scoringStrategy": {"type": "Balanced"}}) == [
        (
            "scoringStrategy.type",
            'Unsupported value: "Balanced": supported values: "LeastAllocated", "MostAllocated", '
            '"RequestedToCapacityRatio"',
        )
    ]
    assert errors({"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 101}]}}) == [
        (
            "scoringStrategy.resources[0].weight",
            "Invalid value: 101: resource weight of cpu not in valid range (0, 100]",
        )
    ]
    assert errors({"ignoredResourceGroups": ["example.com/gpu"]}) == [
        ("ignoredResourceGroups[0]", "Invalid value: \"example.com/gpu\": resource group name can't contain '/'")
    ]
    shape = [{"utilization": 50, "score": 1}, {"utilization": 40, "score": 11}]
    assert errors(
        {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": shape}}}
    ) == [
        ("scoringStrategy.shape[1].utilization", "Invalid value: 40: values must be sorted in increasing order"),
        ("scoringStrategy.shape[1].score", "Invalid value: 11: not in valid range [0, 10]"),
    ]
    assert errors(
        {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": []}}}
    ) == [("scoringStrategy.shape", "Required value: at least one point must be specified")]
    bad_name = errors({"ignoredResources": ["bad name"]})
    assert len(bad_name) == 1 and bad_name[0][0] == "ignoredResources[0]"
    assert bad_name[0][1].startswith('Invalid value: "bad name": name part must consist of alphanumeric characters')
    assert errors({"ignoredResources": [GPU], "ignoredResourceGroups": ["example.com"]}) == []


def test_configuration_loader_defaults_and_rejects_fit_args() -> None:
    cfg = parse_config(
        {"profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": {"ignoredResources": [GPU]}}]}]}
    )
    assert cfg.profiles[0].plugin_config["NodeResourcesFit"]["scoringStrategy"]["type"] == "LeastAllocated"
    bad = {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "cpu", "weight": -1}]}}
    with pytest.raises(ConfigError) as exc:
        parse_config({"profiles": [{"pluginConfig": [{"name": "NodeResourcesFit", "args": bad}]}]})
    assert exc.value.field == "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight"
    assert exc.value.detail == "Invalid value: -1: resource weight of cpu not in valid range (0, 100]"

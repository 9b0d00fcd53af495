"""resources.py: ``PodRequests`` aggregation, ``CalculateResource`` non-zero values, resource-name classes."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.resources import (
    calculate_pod_resource,
    is_extended_resource_name,
    is_scalar_resource_name,
    pod_requests,
)
from tests.scheduler.factories import make_node, make_pod

MI = 1024 * 1024


def _container(name: str, requests: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, **extra}
    if requests is not None:
        c["resources"] = {"requests": requests}
    return c


def test_sidecars_add_to_containers_and_stack_under_later_init_containers() -> None:
    spec = {
        "containers": [_container("a", {"cpu": "1", "memory": "1Gi"})],
        "initContainers": [
            _container("init1", {"cpu": "3"}),
            _container("side", {"cpu": "500m", "memory": "1Gi"}, restartPolicy="Always"),
            _container("init2", {"cpu": "2", "memory": "512Mi"}),
        ],
    }
    reqs = pod_requests(make_pod(spec=spec))
    # containers + sidecar = 1.5 cpu / 2Gi; init1 alone 3; init2 beside the sidecar 2.5 / 1.5Gi
    assert reqs["cpu"] == Fraction(3)
    assert reqs["memory"] == 2048 * MI


def test_overhead_is_added_after_the_maximum() -> None:
    spec = {"containers": [_container("a", {"cpu": "1"})], "overhead": {"cpu": "250m", "memory": "100Mi"}}
    assert pod_requests(make_pod(spec=spec)) == {"cpu": Fraction(5, 4), "memory": Fraction(100 * MI)}


def test_non_missing_defaults_apply_per_container_but_not_to_explicit_zero() -> None:
    spec = {"containers": [_container("a"), _container("b", {"cpu": "0"}), _container("c", {"memory": "1Gi"})]}
    reqs = pod_requests(make_pod(spec=spec), non_missing=True)
    assert reqs["cpu"] == Fraction(2, 10)  # a and c get 100m, b keeps its explicit 0
    assert reqs["memory"] == 400 * MI + 1024 * MI


def test_pod_level_requests_replace_cpu_memory_and_hugepages_only() -> None:
    spec = {
        "containers": [_container("a", {"cpu": "1", "memory": "1Gi", "ephemeral-storage": "1Gi"})],
        "resources": {"requests": {"cpu": "2", "hugepages-2Mi": "4Mi"}},
    }
    reqs = pod_requests(make_pod(spec=spec))
    assert reqs == {
        "cpu": Fraction(2),
        "memory": Fraction(1024 * MI),
        "ephemeral-storage": Fraction(1024 * MI),
        "hugepages-2Mi": Fraction(4 * MI),
    }
    assert pod_requests(make_pod(spec=spec), skip_pod_level=True)["cpu"] == Fraction(1)


def test_calculate_resource_defaults_only_what_pod_level_leaves_unset() -> None:
    spec = {
        "containers": [_container("a"), _container("b", {"cpu": "100m"})],
        "resources": {"requests": {"cpu": "1"}},
    }
    res, cpu0, mem0 = calculate_pod_resource(make_pod(spec=spec))
    assert res.milli_cpu == 1000 and res.memory == 0
    # cpu comes from the pod level; memory is missing everywhere: 200Mi for each container
    assert (cpu0, mem0) == (1000, 400 * MI)
    plain = {"containers": [_container("a"), _container("b", {"memory": "0"})]}
    assert calculate_pod_resource(make_pod(spec=plain))[1:] == (200, 200 * MI)


def test_bound_pods_count_their_in_place_resize() -> None:
    pod = make_pod(name="p", node_name="n", requests={"cpu": "1"})
    pod["status"] = {
        "containerStatuses": [
            {"name": "c", "resources": {"requests": {"cpu": "2"}}, "allocatedResources": {"cpu": "1500m"}}
        ]
    }
    ni = NodeInfo(make_node(name="n"))
    ni.add_pod(PodInfo(pod))
    assert ni.requested.milli_cpu == 2000  # the larger of desired, actuated and allocated
    pod["status"]["conditions"] = [{"type": "PodResizePending", "reason": "Infeasible"}]
    pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "3"
    assert calculate_pod_resource(pod)[0].milli_cpu == 2000  # an infeasible resize is not counted
    assert pod_requests(pod)["cpu"] == Fraction(3)  # the pod being scheduled reads its spec


def test_resource_name_classes() -> None:
    assert is_extended_resource_name("example.com/gpu")
    assert not is_extended_resource_name("cpu")
    assert not is_extended_resource_name("kubernetes.io/batch-cpu")
    assert not is_extended_resource_name("foo.kubernetes.io/thing")  # prefixed native, anywhere in the name
    assert not is_extended_resource_name("requests.example.com/gpu")
    assert not is_extended_resource_name("example.com/bad name")
    assert is_scalar_resource_name("hugepages-1Gi")
    assert is_scalar_resource_name("attachable-volumes-csi-x")
    assert is_scalar_resource_name("kubernetes.io/batch-cpu")
    assert not is_scalar_resource_name("memory")

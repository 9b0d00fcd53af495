"""A big cluster for the overview tests: nodes of several shapes, some cordoned, tainted or not Ready, with pods
bound so that every colour band of the overview has nodes in it."""

from __future__ import annotations

from typing import Any

GPU_MEM = "alibabacloud.com/gpu-mem"
GPU_COUNT = "alibabacloud.com/gpu-count"


def big_node(i: int) -> dict[str, Any]:
    """Node ``big-NNNNN``: 10 cores; every fourth has Alibaba-style GPU resources; some cordoned, tainted, NotReady."""
    name = f"big-{i:05d}"
    capacity = {"cpu": "10", "memory": "64Gi", "pods": "110"}
    if i % 4 == 0:
        capacity |= {GPU_MEM: "64", GPU_COUNT: "4"}
    spec: dict[str, Any] = {}
    if i % 50 == 7:
        spec["unschedulable"] = True
    if i % 40 == 3:
        spec["taints"] = [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]
    status: dict[str, Any] = {"capacity": capacity}
    if i % 100 == 11:
        status["conditions"] = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]
    labels = {"kubernetes.io/hostname": name, "zone": f"zone-{i % 5}"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "spec": spec,
        "status": status,
    }


def big_pod(i: int) -> dict[str, Any]:
    """A pod bound to node ``big-NNNNN`` asking for (i % 12) cores: 0 to 11 of 10, so bands 0-100 % and over."""
    requests = {"cpu": str(i % 12), "memory": "1Gi"}
    if i % 4 == 0:
        requests[GPU_MEM] = str(8 * (i % 9))
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"on-{i:05d}", "namespace": "default"},
        "spec": {
            "nodeName": f"big-{i:05d}",
            "containers": [{"name": "c", "image": "nginx", "resources": {"requests": requests, "limits": requests}}],
        },
    }

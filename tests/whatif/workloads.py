"""Small timed workloads and configurations for the what-if tests, with outcomes worked by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from kss_sim.kube.objects import Obj


def node(name: str, cpu: str = "4", memory: str = "8Gi") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"}},
    }


def pod(name: str, cpu: str = "1", memory: str = "2Gi") -> Obj:
    container = {
        "name": "c",
        "image": "registry.k8s.io/pause:3.9",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"containers": [container]}}  # fmt: skip


def spread_or_pack(n_nodes: int = 3, n_pods: int = 4) -> Obj:
    """Nodes of 4 CPU / 8 Gi and pods of 1 CPU / 2 Gi (a quarter of each, so BalancedAllocation never prefers one
    node), one a second, running to the end: LeastAllocated puts the first ``n_nodes`` pods on distinct nodes,
    MostAllocated all four on the first pod's node."""
    return {
        "apiVersion": "kss.sigs.k8s.io/v1alpha1",
        "kind": "TimedWorkload",
        "metadata": {"name": "spread-or-pack"},
        "spec": {
            "start": [node(f"n{i}") for i in range(1, n_nodes + 1)],
            "events": [{"at": i, "create": pod(f"p{i}")} for i in range(n_pods)],
        },
    }


def queue_behind() -> Obj:
    """Two nodes of 4 CPU; three pods of 3 CPU arriving at 0, 60 and 120 s, each running 10 minutes: the third
    waits for the first to end at 600 s (wait 480 s); a third node lets it in at once."""
    return {
        "apiVersion": "kss.sigs.k8s.io/v1alpha1",
        "kind": "TimedWorkload",
        "metadata": {"name": "queue-behind"},
        "spec": {
            "start": [node("n1"), node("n2")],
            "events": [
                {"at": 60 * i, "runFor": "10m", "create": pod(f"p{i}", cpu="3", memory="1Gi")} for i in range(3)
            ],
        },
    }


def most_allocated() -> Obj:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{
            "schedulerName": "default-scheduler",
            "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
                "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}],
            }}}],
        }],
    }  # fmt: skip


def unknown_plugin() -> Obj:
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{"schedulerName": "default-scheduler",
                      "plugins": {"filter": {"enabled": [{"name": "NoSuchPlugin"}]}}}],
    }  # fmt: skip


def write(path: Path, doc: Any) -> Path:
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path

"""Gangs in ``kss simulate``: Coscheduling PodGroups, v1.35 Workloads and v1.36 PodGroups on the run's virtual
clock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from kss_sim.kube.versions import kube_version
from kss_sim.simulation.runner import run_scenario


def _node(name: str, cpu: str = "2") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"}},
    }


def _pod(
    name: str, *, group: str | None = None, cpu: str = "1", workload: dict[str, str] | None = None
) -> dict[str, Any]:
    labels = {"scheduling.x-k8s.io/pod-group": group} if group else {}
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": {"cpu": cpu}}}],
        "schedulerName": "default-scheduler",
    }
    if workload:
        spec["workloadRef"] = workload
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "uid": f"uid-{name}", "labels": labels},
        "spec": spec,
        "status": {"phase": "Pending"},
    }


def _pod_group(name: str, min_member: int, timeout: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"minMember": min_member}
    if timeout is not None:
        spec["scheduleTimeoutSeconds"] = timeout
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": "2025-01-12T13:00:00Z"},
        "spec": spec,
    }


COSCHEDULING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
            },
        }
    ],
}


def test_a_gang_that_fits_is_bound_together_and_one_that_cannot_times_out() -> None:
    # 3 nodes x 2 CPU: gang "ok" (3 x 1 CPU) fits; gang "big" (4 x 1 CPU, minMember 4) has its 4 members but
    # only 3 CPU are left once "ok" holds its share: its last member fits nowhere.
    scenario = {
        "config": COSCHEDULING,
        "nodes": [_node(f"n{i}") for i in range(3)],
        "podGroups": [_pod_group("ok", 3), _pod_group("big", 4, timeout=30)],
        "pending": [
            *[_pod(f"ok-{i}", group="ok") for i in range(3)],
            *[_pod(f"big-{i}", group="big") for i in range(4)],
        ],
    }
    results = run_scenario(scenario, "placements")["results"]
    by_pod: dict[str, list[dict[str, Any]]] = {}
    for entry in results:
        by_pod.setdefault(entry["pod"], []).append(entry)
    # The gang that fits: reported when the third member allows the two that waited, every member bound.
    ok = [by_pod[f"default/ok-{i}"][0] for i in range(3)]
    assert all(e["boundTo"] for e in ok)
    assert [e["pod"] for e in results[:3]] == ["default/ok-2", "default/ok-0", "default/ok-1"]
    # The gang that cannot: none bound, each says why.
    big = [by_pod[f"default/big-{i}"][0] for i in range(4)]
    assert not any(e["boundTo"] for e in big)
    messages = {e["pod"]: e["fitError"] for e in big}
    assert messages["default/big-3"].startswith("0/3 nodes are available:")
    waited = [m for p, m in messages.items() if p != "default/big-3"]
    assert all(m.startswith("0/1 nodes are available: 1 ") for m in waited)
    assert any("optimistic rejection in PostFilter" in m for m in waited)


def test_gang_scheduling_behind_its_gates_in_the_cli(tmp_path: Path) -> None:
    workload = {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "train", "namespace": "default"},
        "spec": {"podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}}]},
    }
    ref = {"name": "train", "podGroup": "workers"}
    scenario = {
        "nodes": [_node("n0", cpu="1"), _node("n1", cpu="1")],
        "workloads": [workload],
        "pending": [_pod("w0", workload=ref), _pod("w1", workload=ref), _pod("w2", workload=ref)],
    }
    path = tmp_path / "gang.scenario.json"
    path.write_text(json.dumps(scenario))
    cli = [sys.executable, "-m", "kss_sim.cli", "simulate", "--detail", "placements", str(path)]
    on = subprocess.run(
        [*cli, "--feature-gates", "GenericWorkload=true,GangScheduling=true"], capture_output=True, text=True
    )
    assert on.returncode == 0, on.stderr
    doc = json.loads(on.stdout)
    assert "GangScheduling" in doc["plugins"]["permit"]
    bound = {e["pod"]: e["boundTo"] for e in doc["results"]}
    # Two of three fit (1 CPU each on two 1-CPU nodes): the quorum of 2 is met, both bound; the third is not.
    assert sorted(p for p, n in bound.items() if n) == ["default/w0", "default/w1"]
    assert bound["default/w2"] is None
    off = subprocess.run(cli, capture_output=True, text=True)
    assert off.returncode == 0, off.stderr
    assert "GangScheduling" not in json.loads(off.stdout)["plugins"].get("permit", [])
    bad = subprocess.run([*cli, "--feature-gates", "GangScheduling=true"], capture_output=True, text=True)
    assert bad.returncode == 2 and "GangScheduling requires GenericWorkload=true" in bad.stderr


def test_a_v1_36_pod_group_gang_offline() -> None:
    # scheduling.k8s.io/v1alpha2 PodGroups sit under "podGroups" beside scheduler-plugins' (apiVersion tells them
    # apart); members join by spec.schedulingGroup.
    def member(name: str, group: str) -> dict[str, Any]:
        pod = _pod(name)
        pod["spec"]["schedulingGroup"] = {"podGroupName": group}
        return pod

    def group(name: str, min_count: int) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
        }

    scenario = {
        "nodes": [_node("n0", cpu="1"), _node("n1", cpu="1")],
        "podGroups": [group("pair", 2), group("trio", 3)],
        "pending": [member("p0", "pair"), member("p1", "pair"), member("t0", "trio"), member("t1", "trio")],
    }
    gates = {"GenericWorkload": True, "GangScheduling": True}
    results = run_scenario(scenario, "placements", feature_gates=gates, kube_version=kube_version("1.36"))["results"]
    bound = {e["pod"]: e["boundTo"] for e in results}
    # The pair makes its quorum and binds; the trio has two of its three members and is held before the queue.
    assert sorted(p for p, n in bound.items() if n) == ["default/p0", "default/p1"]
    held = {e["pod"]: e.get("preEnqueue") for e in results if e["pod"].startswith("default/t")}
    reason = "GangScheduling: waiting for minCount pods from a gang to appear in scheduling queue"
    assert held == {"default/t0": reason, "default/t1": reason}


def test_a_v1_36_pod_group_is_scheduled_in_one_cycle_offline() -> None:
    # v1.36's PodGroup cycle in kss simulate: the group's pending pods are tried together (by priority, then file
    # order); one that cannot fit binds none, each member saying why; one that fits binds all, nothing left waiting.
    def member(name: str, group: str, cpu: str, priority: int = 0) -> dict[str, Any]:
        pod = _pod(name, cpu=cpu)
        pod["spec"]["schedulingGroup"] = {"podGroupName": group}
        pod["spec"]["priority"] = priority
        return pod

    def group(name: str, min_count: int) -> dict[str, Any]:
        return {
            "apiVersion": "scheduling.k8s.io/v1alpha2",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}},
        }

    scenario = {
        "nodes": [_node("n0", cpu="1"), _node("n1", cpu="1"), _node("n2", cpu="1")],
        "podGroups": [group("wide", 3), group("trio", 3)],
        "pending": [
            member("w0", "wide", "600m"),
            member("t0", "trio", "600m"),
            member("w1", "wide", "600m"),
            member("t1", "trio", "600m", priority=10),
            member("w2", "wide", "2"),
            member("t2", "trio", "600m"),
        ],
    }
    gates = {"GenericWorkload": True, "GangScheduling": True}
    results = run_scenario(scenario, "placements", feature_gates=gates, kube_version=kube_version("1.36"))["results"]
    # Each pod tried once, in its group's cycle: wide's members first (w0 leads), then trio's, t1 (priority 10) first.
    assert [e["pod"] for e in results][:3] == ["default/w0", "default/w1", "default/w2"]
    by_pod = {e["pod"]: e for e in results}
    assert len(results) == 6
    assert [by_pod[f"default/w{i}"]["boundTo"] for i in range(3)] == [None, None, None]
    waiting = (
        "pod group is unschedulable, waiting for minCount pods from a gang to be scheduled, "
        "one or more plugins asked to wait and no plugin rejected pod"
    )
    # t1 (priority 10) was tried first and took the first node by name, then t0, then t2.
    assert [by_pod[f"default/t{i}"]["boundTo"] for i in (1, 0, 2)] == ["n0", "n1", "n2"]
    messages = run_scenario(scenario, "full", feature_gates=gates, kube_version=kube_version("1.36"))["results"]
    said = {e["pod"]: e.get("message") or e.get("fitError") for e in messages}
    assert said["default/w0"] == said["default/w1"] == waiting, said
    assert str(said["default/w2"]).startswith("0/3 nodes are available: 3 Insufficient cpu."), said

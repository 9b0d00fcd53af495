"""The replay engine on small timed workloads: the virtual clock, the queue's timers, preemption, node events."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import orjson
import pytest

from kss_sim.kube.objects import Obj
from kss_sim.replay.engine import Replay
from kss_sim.replay.model import (
    DELETED,
    DRAIN,
    EVICTED,
    NODE_FAILURE,
    PENDING,
    POD_GC,
    PREEMPTED,
    RUNNING,
    SUCCEEDED,
    TAINT,
    NullObserver,
    ReplayState,
)
from kss_sim.replay.workload import TimedWorkload, parse_workload
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.record import Attempt
from tests.replay import replay_plugins  # noqa: F401  (registers the test plugins)


def node(name: str, cpu: str = "4", labels: dict[str, str] | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": {"allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"}},
    }


def pod(name: str, cpu: str = "1", memory: str | None = None, **spec: Any) -> Obj:
    labels = spec.pop("labels", None)
    requests = {"cpu": cpu, **({"memory": memory} if memory else {})}
    body: Obj = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, **({"labels": labels} if labels else {})},
        "spec": {"containers": [{"name": "c", "image": "x", "resources": {"requests": requests}}], **spec},
    }
    return body


def workload(events: list[Obj], start: list[Obj] | None = None, config: Obj | None = None) -> TimedWorkload:
    spec: Obj = {"start": start or [node("n1")], "events": events}
    if config is not None:
        spec["schedulerConfig"] = config
    doc = {"apiVersion": "kss.sigs.k8s.io/v1alpha1", "kind": "TimedWorkload", "metadata": {"name": "t"}, "spec": spec}
    return parse_workload(orjson.dumps(doc).decode())


class Attempts(NullObserver):
    """Every finished attempt with the virtual time it finished at, and the sample times."""

    def __init__(self) -> None:
        self.seen: list[tuple[float, str, str, str]] = []  # (time, pod key, result, message)
        self.samples: list[float] = []

    def on_attempt(self, state: ReplayState, attempt: Attempt, pod: PodInfo) -> None:
        self.seen.append((state.now, pod.key, attempt.result, attempt.message))

    def on_sample(self, state: ReplayState) -> None:
        self.samples.append(state.now)

    def times(self, key: str) -> list[float]:
        return [t for t, k, _, _ in self.seen if k == key]


def by_name(result: Any) -> dict[str, Any]:
    return {p.key.split("/", 1)[1]: p for p in result.pods}


def test_a_pods_end_frees_its_node_and_the_next_pod_binds_at_that_virtual_time() -> None:
    w = workload(
        [
            {"at": 0, "runFor": "100s", "create": pod("a", "3")},
            {"at": 10, "runFor": "1m", "create": pod("b", "3")},
        ]
    )
    result = Replay(w).run()
    a, b = by_name(result)["a"], by_name(result)["b"]
    assert (a.bound_at, a.finished_at, a.outcome) == (0.0, 100.0, SUCCEEDED)
    assert (b.arrival, b.first_attempt, b.bound_at, b.node) == (10.0, 10.0, 100.0, "n1")
    assert b.wait == 90.0
    assert (b.finished_at, b.outcome) == (160.0, SUCCEEDED)
    assert b.attempts == 2 and "Insufficient cpu" in b.last_message
    assert result.virtual_seconds == 160.0


def _one_gpu_cluster() -> list[Obj]:
    """Node n1 with one DRA device, its class, and a claim template asking for one device."""
    gpu_slice = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "n1-gpu"},
        "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                 "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1}, "devices": [{"name": "gpu-0"}]},
    }  # fmt: skip
    device_class = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
    }
    template = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu", "namespace": "default"},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount",
                                        "count": 1}}]}}},
    }  # fmt: skip
    return [node("n1"), device_class, gpu_slice, template]


def _gpu_pod(name: str) -> Obj:
    return pod(name, resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])


def test_a_pods_end_frees_its_device_and_the_pod_waiting_for_it_binds_at_that_virtual_time() -> None:
    # Nothing else happens after a's end: only the claim's deallocation (an update DynamicResources registers)
    # can retry b, before the run would end with b pending.
    w = workload(
        [{"at": 0, "runFor": "100s", "create": _gpu_pod("a")}, {"at": 10, "runFor": "1m", "create": _gpu_pod("b")}],
        start=_one_gpu_cluster(),
    )
    result = Replay(w).run()
    a, b = by_name(result)["a"], by_name(result)["b"]
    assert (a.bound_at, a.finished_at, a.outcome) == (0.0, 100.0, SUCCEEDED)
    assert (b.first_attempt, b.bound_at, b.node, b.outcome) == (10.0, 100.0, "n1", SUCCEEDED)
    assert b.attempts == 2 and "cannot allocate all claims" in b.last_message
    assert result.virtual_seconds == 160.0


def _error_config() -> Obj:
    return {"profiles": [{"schedulerName": "default-scheduler",
                          "plugins": {"filter": {"enabled": [{"name": "KssReplayError"}]}}}]}  # fmt: skip


def test_error_retries_follow_the_backoff_windows_of_pop_from_backoffq() -> None:
    # SchedulerPopFromBackoffQ (on in v1.35): expiry = floor(queued + 1 s * 2^(n-1), capped at 10 s), done once the
    # flush tick's window is past it: 0 -> 2 (expiry 1) -> 5 (4) -> 10 (9) -> 19 (18) -> 30 (29) -> 41 (40).
    w = workload([{"at": 0, "create": pod("e", labels={"error": "yes"})}], config=_error_config())
    seen = Attempts()
    Replay(w, until=45, observers=[seen]).run()
    assert seen.times("default/e") == [0, 2, 5, 10, 19, 30, 41]
    assert {result for _, _, result, _ in seen.seen} == {"error"}


def test_error_retries_without_the_gate_come_at_the_first_tick_after_the_backoff() -> None:
    w = workload([{"at": 0.5, "create": pod("e", labels={"error": "yes"})}], config=_error_config())
    seen = Attempts()
    Replay(w, until=40, observers=[seen], feature_gates={"SchedulerPopFromBackoffQ": False}).run()
    # 0.5 + 1 -> tick 2; 2 + 2 -> 4; 4 + 4 -> 8; 8 + 8 -> 16; 16 + 10 -> 26; 26 + 10 -> 36
    assert seen.times("default/e") == [0.5, 2, 4, 8, 16, 26, 36]


def test_an_unschedulable_pod_with_nothing_changing_is_retried_at_the_first_30s_tick_after_5_minutes() -> None:
    w = workload([{"at": 7, "create": pod("big", "8")}])
    seen = Attempts()
    result = Replay(w, until=700, observers=[seen]).run()
    # queued at 7: unschedulable for > 300 s at the 330 s tick; queued again at 330: > 300 s at 660.
    assert seen.times("default/big") == [7, 330, 660]
    record = by_name(result)["big"]
    assert record.outcome == PENDING and record.attempts == 3 and result.virtual_seconds == 700


def test_a_cluster_event_retries_an_unschedulable_pod_at_once() -> None:
    w = workload([{"at": 7, "create": pod("big", "8")}, {"at": 50, "create": node("n2", "16")}])
    seen = Attempts()
    result = Replay(w, observers=[seen]).run()
    assert seen.times("default/big") == [7, 50]
    assert by_name(result)["big"].node == "n2"


def test_a_pod_held_in_permit_times_out_at_its_virtual_deadline() -> None:
    config = {
        "profiles": [
            {
                "schedulerName": "default-scheduler",
                "plugins": {"permit": {"enabled": [{"name": "KssReplayHold"}]}},
                "pluginConfig": [{"name": "KssReplayHold", "args": {"timeout": 12}}],
            }
        ]
    }
    w = workload([{"at": 5, "create": pod("held", labels={"hold": "yes"})}, {"at": 6, "create": pod("free")}],
                 config=config)  # fmt: skip
    seen = Attempts()
    result = Replay(w, until=20, observers=[seen]).run()
    held = [(t, r, m) for t, k, r, m in seen.seen if k == "default/held"]
    assert held[0] == (
        17.0,
        "unschedulable",
        "0/1 nodes are available: 1 rejected due to timeout after waiting 12s at plugin KssReplayHold.",
    )
    assert by_name(result)["free"].bound_at == 6.0
    assert by_name(result)["held"].bound_at is None


def _priority_class(name: str, value: int) -> Obj:
    return {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name}, "value": value}


@pytest.mark.parametrize(("grace", "leaves_at"), [(None, 40.0), (5, 15.0), (0, 10.0)])
def test_a_preemption_victim_terminates_for_its_grace_period_then_the_preemptor_binds(
    grace: int | None, leaves_at: float
) -> None:
    low = pod("low", "3") if grace is None else pod("low", "3", terminationGracePeriodSeconds=grace)
    w = workload(
        [{"at": 0, "create": low}, {"at": 10, "create": pod("high", "3", priorityClassName="high")}],
        start=[node("n1"), _priority_class("high", 1000)],
    )
    result = Replay(w).run()
    low_rec, high_rec = by_name(result)["low"], by_name(result)["high"]
    assert (low_rec.preemptions, low_rec.finished_at, low_rec.outcome) == (1, leaves_at, PREEMPTED)
    assert (high_rec.priority, high_rec.bound_at, high_rec.node) == (1000, leaves_at, "n1")


def test_removing_a_node_leaves_its_pods_to_the_pod_gc_which_deletes_them_40_s_later() -> None:
    # As on a cluster: deleting a Node deletes none of its pods; kube-controller-manager's pod GC force-deletes them
    # once the node has been missing for its quarantine (40 s).
    w = workload(
        [
            {"at": 0, "create": pod("a")},
            {"at": 50, "delete": {"kind": "Node", "name": "n1"}},
            {"at": 60, "create": pod("b")},
            {"at": 70, "create": node("n2")},
        ]
    )
    result = Replay(w).run()
    a, b = by_name(result)["a"], by_name(result)["b"]
    assert (a.node, a.terminating_at, a.finished_at, a.outcome, a.reason) == ("n1", None, 90.0, DELETED, POD_GC)
    assert (b.bound_at, b.node, b.outcome) == (70.0, "n2", RUNNING)


def test_cordon_keeps_new_pods_off_until_uncordon() -> None:
    w = workload(
        [
            {"at": 0, "create": pod("before")},
            {"at": 5, "cordon": "n1"},
            {"at": 10, "create": pod("during")},
            {"at": 100, "uncordon": "n1"},
        ]
    )
    result = Replay(w).run()
    assert by_name(result)["before"].outcome == RUNNING  # cordon does not evict
    during = by_name(result)["during"]
    assert during.bound_at == 100.0 and "node(s) were unschedulable" in during.last_message


def test_a_noexecute_taint_evicts_pods_that_do_not_tolerate_it_after_their_toleration_seconds() -> None:
    toleration = {"key": "maintenance", "operator": "Exists", "effect": "NoExecute"}
    w = workload(
        [
            {"at": 0, "create": pod("plain")},
            {"at": 0, "create": pod("thirty", tolerations=[{**toleration, "tolerationSeconds": 30}])},
            {"at": 0, "create": pod("forever", tolerations=[toleration])},
            {"at": 20, "taint": {"node": "n1", "key": "maintenance", "effect": "NoExecute"}},
            {"at": 25, "create": pod("late")},
            {"at": 80, "untaint": {"node": "n1", "key": "maintenance"}},
        ]
    )
    result = Replay(w).run()
    pods = by_name(result)
    # evicted when the taint comes (or their toleration ends), gone after their 30 s grace period
    assert [
        (pods[n].evicted_at, pods[n].finished_at, pods[n].outcome, pods[n].reason) for n in ("plain", "thirty")
    ] == [
        (20.0, 50.0, EVICTED, TAINT),
        (50.0, 80.0, EVICTED, TAINT),
    ]
    assert pods["forever"].outcome == RUNNING
    assert pods["late"].bound_at == 80.0  # NoExecute also keeps new pods off until the taint goes


def test_a_toleration_window_ends_early_when_the_taint_goes() -> None:
    toleration = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    w = workload(
        [
            {"at": 0, "create": pod("p", tolerations=[toleration])},
            {"at": 10, "taint": {"node": "n1", "key": "k", "effect": "NoExecute"}},
            {"at": 20, "untaint": {"node": "n1", "key": "k"}},
        ]
    )
    assert by_name(Replay(w).run())["p"].outcome == RUNNING


def test_a_pod_bound_to_a_node_with_a_noexecute_taint_it_tolerates_for_a_while_is_evicted_when_that_ends() -> None:
    toleration = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}
    w = workload(
        [
            {"at": 0, "taint": {"node": "n1", "key": "k", "effect": "NoExecute"}},
            {"at": 10, "create": pod("p", tolerations=[toleration])},
        ]
    )
    p = by_name(Replay(w).run())["p"]
    assert (p.bound_at, p.evicted_at, p.finished_at, p.outcome) == (10.0, 40.0, 70.0, EVICTED)  # the run waits


def test_a_start_snapshots_pod_on_a_noexecute_tainted_node_it_does_not_tolerate_is_evicted_at_once() -> None:
    tainted = {**node("n1"), "spec": {"taints": [{"key": "k", "effect": "NoExecute"}]}}
    w = workload(
        [{"at": 5, "create": pod("later", nodeName="n2")}], start=[tainted, node("n2"), pod("p", nodeName="n1")]
    )
    pods = by_name(Replay(w).run())
    assert (pods["p"].evicted_at, pods["p"].finished_at, pods["p"].outcome) == (0.0, 30.0, EVICTED)
    assert pods["later"].outcome == RUNNING


def test_an_evicted_pod_holds_its_node_for_its_grace_period_as_its_kubelet_terminates_it() -> None:
    w = workload(
        [
            {"at": 0, "create": pod("slow", "3", terminationGracePeriodSeconds=60)},
            {"at": 10, "taint": {"node": "n1", "key": "k", "effect": "NoExecute"}},
            {"at": 20, "untaint": {"node": "n1", "key": "k"}},
            {"at": 20, "create": pod("next", "3")},
        ]
    )
    run = Replay(w, until=40)
    run.run()
    terminating = run.bound["default/slow"].pod
    deleted_at = (w.epoch + timedelta(seconds=70)).strftime("%Y-%m-%dT%H:%M:%SZ")  # now + 60 s, as the API sets it
    assert terminating["metadata"]["deletionTimestamp"] == deleted_at
    assert {c["type"]: c["reason"] for c in terminating["status"]["conditions"]}["DisruptionTarget"] == (
        "DeletionByTaintManager"
    )
    pods = by_name(Replay(w).run())
    assert (pods["slow"].evicted_at, pods["slow"].finished_at, pods["slow"].outcome) == (10.0, 70.0, EVICTED)
    assert pods["next"].bound_at == 70.0  # the node's 3 CPUs are free only once the evicted pod is gone


def test_a_pod_whose_run_ends_while_it_terminates_succeeds_and_leaves_the_store() -> None:
    w = workload(
        [
            {"at": 0, "runFor": 25, "create": pod("p")},
            {"at": 10, "taint": {"node": "n1", "key": "k", "effect": "NoExecute"}},
        ]
    )
    run = Replay(w)
    p = by_name(run.run())["p"]
    assert (p.evicted_at, p.finished_at, p.outcome, p.reason) == (10.0, 25.0, SUCCEEDED, TAINT)
    assert run.controllers is not None and run.controllers.store.list("Pod")[0] == []


def test_a_taint_eviction_marks_the_pod_as_disrupted_before_deleting_it() -> None:
    w = workload(
        [{"at": 0, "create": pod("p")}, {"at": 20, "taint": {"node": "n1", "key": "k", "effect": "NoExecute"}}]
    )
    run = Replay(w)
    assert run.controllers is not None
    deleting: list[Obj] = []
    run.controllers.store.add_listener(
        lambda _event, _kind, obj: deleting.append(obj) if obj["metadata"].get("deletionTimestamp") else None, ("Pod",)
    )
    assert by_name(run.run())["p"].evicted_at == 20.0
    conditions = {c["type"]: c for c in deleting[0]["status"]["conditions"]}
    assert conditions["DisruptionTarget"]["reason"] == "DeletionByTaintManager"
    events = [e for e in run.controllers.store.list("Event")[0] if e["reason"] == "TaintManagerEviction"]
    assert [e["message"] for e in events] == ["Marking for deletion Pod default/p"]


def test_a_replay_without_noexecute_taints_or_workload_objects_runs_no_controllers() -> None:
    w = workload(
        [{"at": 0, "create": pod("p")}, {"at": 5, "taint": {"node": "n1", "key": "k", "effect": "NoSchedule"}}]
    )
    assert Replay(w).controllers is None


def test_a_stopped_nodes_lease_lapses_after_the_grace_period_then_its_pods_are_evicted_unless_it_heals_first() -> None:
    w = workload(
        [
            {"at": 10, "failNode": "n2"},
            {"at": 10, "failNode": "n3"},
            {"at": 70, "create": pod("new", "3")},
            {"at": 100, "healNode": "n2"},
        ],
        start=[node("n1"), node("n2"), node("n3"), pod("stays", nodeName="n2"), pod("goes", nodeName="n3")],
    )

    def n3_after(seconds: float) -> tuple[list[tuple[str, str]], tuple[str, str] | None]:
        run = Replay(w, until=seconds)
        run.run()
        n3 = run.objects.nodes["n3"]
        ready = {c["type"]: c for c in n3.get("status", {}).get("conditions") or []}.get("Ready")
        taints = sorted((t["key"], t["effect"]) for t in n3.get("spec", {}).get("taints") or [])
        return taints, (ready["status"], ready["reason"]) if ready else None

    # the node lifecycle controller sees the lease unrenewed for --node-monitor-grace-period (50 s) first
    assert n3_after(59) == ([], None)
    assert n3_after(60) == (
        [("node.kubernetes.io/unreachable", "NoExecute"), ("node.kubernetes.io/unreachable", "NoSchedule")],
        ("Unknown", "NodeStatusUnknown"),
    )
    run = Replay(w)
    pods = by_name(run.run())
    assert pods["stays"].outcome == RUNNING  # healed within its 300 s unreachable toleration
    # evicted 300 s after the taint, and Terminating from then on: a stopped node has no kubelet to end it
    goes = pods["goes"]
    assert (goes.evicted_at, goes.finished_at, goes.outcome, goes.reason) == (360.0, None, EVICTED, NODE_FAILURE)
    assert pods["new"].node == "n1"  # the failed nodes' NoSchedule taints keep it off them
    assert "taints" not in run.objects.nodes["n2"]["spec"]
    ready = {c["type"]: c for c in run.objects.nodes["n2"]["status"]["conditions"]}["Ready"]
    assert ready["status"] == "True"


def test_a_heal_before_the_lease_lapses_leaves_the_node_ready_and_a_later_one_ends_its_evicted_pods() -> None:
    w = workload(
        [
            {"at": 0, "failNode": "n1"},
            {"at": 40, "healNode": "n1"},
            {"at": 100, "failNode": "n2"},
            {"at": 500, "healNode": "n2"},
        ],
        start=[node("n1"), node("n2"), pod("a", nodeName="n1"), pod("b", nodeName="n2")],
    )
    run = Replay(w)
    pods = by_name(run.run())
    assert pods["a"].outcome == RUNNING
    assert "taints" not in run.objects.nodes["n1"].get("spec", {})
    # b: Unknown at 150, evicted at 450, its grace over at 480 with no kubelet; the heal at 500 ends it
    assert (pods["b"].evicted_at, pods["b"].finished_at, pods["b"].outcome) == (450.0, 500.0, EVICTED)


def test_a_node_whose_kubelet_reports_not_ready_is_tainted_at_once_and_its_pods_go_after_their_toleration() -> None:
    toleration = {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    w = workload(
        [{"at": 5, "failNode": {"node": "n1", "notReady": True}}],
        start=[node("n1"), pod("p", nodeName="n1", tolerations=[{**toleration, "tolerationSeconds": 60}])],
    )
    run = Replay(w)
    p = by_name(run.run())["p"]
    assert (p.evicted_at, p.finished_at, p.outcome, p.reason) == (65.0, None, EVICTED, NODE_FAILURE)
    assert {t["key"] for t in run.objects.nodes["n1"]["spec"]["taints"]} == {"node.kubernetes.io/not-ready"}
    ready = {c["type"]: c for c in run.objects.nodes["n1"]["status"]["conditions"]}["Ready"]
    assert (ready["status"], ready["reason"]) == ("False", "KubeletNotReady")


def test_a_deployments_pods_on_a_failed_node_are_replaced_on_the_others() -> None:
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod("x", "3")["spec"]},
        },
    }
    w = workload(
        [{"at": 0, "create": deployment}, {"at": 60, "failNode": "n1"}], start=[node("n1"), node("n2"), node("n3")]
    )
    pods = sorted(Replay(w).run().pods, key=lambda p: p.arrival)
    evicted = [p for p in pods if p.node == "n1"]
    # unreachable at 110, evicted at 410 (still Terminating on the stopped node), replaced at once
    assert [(p.evicted_at, p.finished_at, p.outcome) for p in evicted] == [(410.0, None, EVICTED)]
    (survivor,) = [p for p in pods if p.arrival == 0.0 and p.node != "n1"]
    free = ({"n2", "n3"} - {survivor.node}).pop()  # 3 CPUs each: one pod a node
    assert [(p.arrival, p.node, p.outcome) for p in pods if p.arrival > 0.0] == [(410.0, free, RUNNING)]


def test_a_drain_evicts_within_the_disruption_budget_retries_every_5_s_and_leaves_daemonset_pods() -> None:
    def workload_object(kind: str, name: str, cpu: str, **spec: Any) -> Obj:
        template = {"metadata": {"labels": {"app": name}}, "spec": pod("x", cpu)["spec"]}
        body = {"selector": {"matchLabels": {"app": name}}, "template": template, **spec}
        return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name}, "spec": body}

    budget = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "web"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}},
    }
    w = workload(
        [
            {"at": 0, "create": workload_object("DaemonSet", "agent", "1")},
            {"at": 0, "create": workload_object("Deployment", "web", "3", replicas=2)},
            {"at": 0, "create": budget},
            {"at": 30, "create": node("n3")},
            {"at": 60, "drain": "n1"},
            {"at": 60, "drain": "n2"},
        ],
        start=[node("n1"), node("n2")],
    )
    run = Replay(w)
    pods = run.run().pods
    web = {(p.node, p.arrival): p for p in pods if p.owner.startswith("ReplicaSet/")}
    on_n1, on_n2 = [p for (n, _), p in web.items() if n in ("n1", "n2")]
    # evicted, then gone after their 30 s grace period
    assert {(p.node, p.evicted_at, p.finished_at, p.outcome, p.reason) for p in (on_n1, on_n2)} == {
        ("n1", 60.0, 90.0, EVICTED, DRAIN),
        ("n2", 65.0, 95.0, EVICTED, DRAIN),
    }
    # the first eviction takes the budget's one disruption; its replacement (on n3, Ready at once) frees it again
    # for kubectl's retry 5 s on
    replacements = sorted((p.arrival, p.node, p.outcome) for p in web.values() if p.arrival >= 60.0)
    assert replacements == [(60.0, "n3", RUNNING), (65.0, None, PENDING)]
    agents = sorted((p.node, p.outcome) for p in pods if p.owner.startswith("DaemonSet/"))
    assert agents == [("n1", RUNNING), ("n2", RUNNING), ("n3", RUNNING)]
    assert all(run.objects.nodes[n]["spec"].get("unschedulable") for n in ("n1", "n2"))


def test_a_horizontal_pod_autoscaler_scales_its_deployment_from_the_usage_annotation_every_15_s() -> None:
    template = pod("x", "1")
    template["metadata"] = {"labels": {"app": "web"}, "annotations": {"kss.sigs.k8s.io/cpu-usage": "900m"}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }
    target = {"type": "Utilization", "averageUtilization": 50}
    autoscaler = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 5,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": target}}],
        },
    }
    w = workload([{"at": 0, "create": deployment}, {"at": 10, "create": autoscaler}], start=[node("n1", "8")])
    run = Replay(w, until=120)
    arrivals = sorted(p.arrival for p in run.run().pods)
    # 90% of the request against 50%: 1 -> 2 at its first sync, 2 -> 4 a sync period on, then the maximum, 5
    assert arrivals == [0.0, 10.0, 25.0, 25.0, 40.0]
    assert run.controllers is not None
    status = (run.controllers.get("HorizontalPodAutoscaler", "default", "web") or {})["status"]
    assert (status["currentReplicas"], status["desiredReplicas"]) == (5, 5)


def test_a_usage_curve_drives_the_autoscaler_up_and_after_its_stabilization_window_down() -> None:
    template = pod("x", "1")
    template["metadata"] = {"labels": {"app": "web"}}
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}}, "template": template},
    }
    autoscaler = {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "minReplicas": 1,
            "maxReplicas": 5,
            "metrics": [
                {
                    "type": "Resource",
                    "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}},
                }
            ],
        },
    }
    usage = {"cpu": [[0, "200m"], ["30s", "900m"], ["100s", "50m"]]}
    w = workload(
        [{"at": 0, "create": deployment, "usage": usage}, {"at": 0, "create": autoscaler}], start=[node("n1", "8")]
    )

    def run_until(seconds: float) -> tuple[Replay, list[Any]]:
        run = Replay(w, until=seconds)
        return run, run.run().pods

    run, pods = run_until(120)
    arrivals = sorted(p.arrival for p in pods)
    # 20% until 30 s, then 90% of the request against 50%: 1 -> 2 at that sync, 4, then the maximum
    assert arrivals == [0.0, 30.0, 45.0, 45.0, 60.0]
    assert run.controllers is not None
    usages = {p["metadata"]["annotations"]["kss.sigs.k8s.io/cpu-usage"] for p in run.controllers.store.list("Pod")[0]}
    assert usages == {"50m"}  # every pod, those made after a step too, follows the curve
    run, pods = run_until(600)
    assert run.controllers is not None
    status = (run.controllers.get("HorizontalPodAutoscaler", "default", "web") or {})["status"]
    assert (status["currentReplicas"], status["desiredReplicas"]) == (1, 1)  # down once 300 s of lower recommendations
    deleted = sorted(p.finished_at or 0 for p in pods if p.outcome == DELETED)
    assert len(deleted) == 4 and deleted[0] > 100 + 300 - 15


def test_apply_config_mid_run_changes_the_scoring_from_the_next_cycle_on() -> None:
    most = {"profiles": [{"schedulerName": "default-scheduler", "pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}]}  # fmt: skip
    w = workload(
        [
            {"at": 0, "create": pod("big", "2", "8Gi")},  # requests in the nodes' proportions: balance is equal
            {"at": 1, "create": pod("small", "1", "4Gi")},
            {"at": 100, "applyConfig": most},
            {"at": 101, "create": pod("most", "1", "4Gi")},
        ],
        start=[node("n1"), node("n2")],
    )
    pods = by_name(Replay(w).run())
    assert pods["small"].node != pods["big"].node  # LeastAllocated spreads
    assert pods["most"].node == pods["big"].node  # MostAllocated packs onto the fuller node


def test_two_runs_with_the_same_seed_give_equal_records_and_other_seeds_may_differ() -> None:
    events = [{"at": i * 3, "runFor": 50 + (i % 7) * 10, "create": pod(f"p{i}", "1")} for i in range(60)]
    start = [node(f"n{i}") for i in range(8)]

    def run(seed: int) -> bytes:
        result = Replay(workload(events, start=start), seed=seed).run()
        return orjson.dumps([p.__dict__ if hasattr(p, "__dict__") else _fields(p) for p in result.pods])

    first, second = run(1), run(1)
    assert first == second
    assert len({run(s) for s in range(1, 6)}) > 1  # the tie-break is the seeded reservoir sampling


def _fields(record: Any) -> dict[str, Any]:
    return {name: getattr(record, name) for name in record.__slots__}


def test_until_stops_the_clock_and_later_arrivals_never_come() -> None:
    w = workload([{"at": 0, "runFor": 500, "create": pod("a")}, {"at": 200, "create": pod("b")}])
    seen = Attempts()
    result = Replay(w, until=150, sample_interval=60, observers=[seen]).run()
    assert result.virtual_seconds == 150.0
    assert [p.key for p in result.pods] == ["default/a"] and result.pods[0].outcome == RUNNING
    assert seen.samples == [0, 60, 120, 150]


def test_end_at_deletes_a_pending_pod_at_once_and_a_bound_one_after_its_grace_period() -> None:
    w = workload(
        [
            {"at": 0, "endAt": 30, "create": pod("bound", "3", terminationGracePeriodSeconds=20)},
            {"at": 0, "endAt": 40, "create": pod("huge", "9")},
            {"at": 35, "create": pod("next", "3")},
        ]
    )
    pods = by_name(Replay(w).run())
    bound = pods["bound"]
    assert (bound.terminating_at, bound.finished_at, bound.outcome) == (30.0, 50.0, DELETED)
    assert (pods["huge"].terminating_at, pods["huge"].finished_at, pods["huge"].outcome) == (None, 40.0, DELETED)
    assert pods["next"].bound_at == 50.0  # the deleted pod's 3 CPUs are free once its kubelet ended it


def test_a_delete_event_of_a_bound_pod_holds_its_node_for_the_default_30_s() -> None:
    w = workload(
        [
            {"at": 0, "create": pod("old", "3")},
            {"at": 10, "delete": {"kind": "Pod", "name": "old"}},
            {"at": 10, "create": pod("new", "3")},
        ]
    )
    run = Replay(w, until=20)
    run.run()
    terminating = run.bound["default/old"].pod["metadata"]
    deleted_at = (w.epoch + timedelta(seconds=40)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert (terminating["deletionTimestamp"], terminating["deletionGracePeriodSeconds"]) == (deleted_at, 30)
    pods = by_name(Replay(w).run())
    assert (pods["old"].terminating_at, pods["old"].finished_at, pods["old"].outcome) == (10.0, 40.0, DELETED)
    assert pods["new"].bound_at == 40.0


def test_a_pod_that_runs_its_time_frees_its_node_at_once_and_one_still_terminating_at_the_end_says_so() -> None:
    w = workload(
        [
            {"at": 0, "runFor": 10, "create": pod("done", "3")},
            {"at": 5, "create": pod("after", "3")},
            {"at": 20, "delete": {"kind": "Pod", "name": "after"}},
        ]
    )
    pods = by_name(Replay(w, until=30).run())
    assert (pods["done"].terminating_at, pods["done"].finished_at, pods["done"].outcome) == (None, 10.0, SUCCEEDED)
    assert pods["after"].bound_at == 10.0  # a Succeeded pod holds nothing: no grace period
    assert (pods["after"].terminating_at, pods["after"].finished_at, pods["after"].outcome) == (20.0, None, DELETED)


def test_samples_come_at_every_interval_and_once_at_the_end() -> None:
    w = workload([{"at": 0, "runFor": 250, "create": pod("a")}])
    seen = Attempts()
    Replay(w, sample_interval=100, observers=[seen]).run()
    assert seen.samples == [0, 100, 200, 250]


def test_pods_get_apiserver_defaults_priority_and_deterministic_uids() -> None:
    start = [node("n1"), {**_priority_class("default-high", 7), "globalDefault": True}]
    w = workload([{"at": 0, "create": pod("a")}], start=start)
    run = Replay(w)
    result = run.run()
    record = result.pods[0]
    assert record.priority == 7
    bound = run.bound["default/a"].pod
    assert bound["spec"]["schedulerName"] == "default-scheduler"
    assert bound["metadata"]["creationTimestamp"] == "2025-01-12T13:46:40Z"
    assert record.uid == Replay(workload([{"at": 0, "create": pod("a")}], start=start)).run().pods[0].uid


def test_a_finished_pod_in_the_start_holds_nothing() -> None:
    done = {**pod("done", "3", nodeName="n1"), "status": {"phase": "Succeeded"}}
    w = workload([{"at": 5, "create": pod("new", "3")}], start=[node("n1"), done])
    result = Replay(w).run()
    assert set(by_name(result)) == {"new"}
    assert (by_name(result)["new"].bound_at, by_name(result)["new"].node) == (5.0, "n1")

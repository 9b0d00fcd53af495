"""kube-scheduler's queueing hints (SchedulerQueueingHints): a pod a plugin rejected moves only for an event that
plugin registered and its QueueingHintFn queues, and a pod that fails is judged by the events of its flight."""

from __future__ import annotations

import copy
from typing import Any

from kss.framework import QUEUE, QUEUE_SKIP, ClusterEventWithHint, QueueingHint
from kss_sim.kube.versions import kube_version
from kss_sim.scheduler import cluster_events as ev
from kss_sim.scheduler.cluster_events import node_update_events
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.framework import Handle
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.profiles import build_framework
from kss_sim.scheduler.queue import SchedulingQueue
from tests.scheduler.factories import make_node, make_pod


class VirtualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def new_queue(version: str | None = None, gates: dict[str, bool] | None = None) -> SchedulingQueue:
    """A queue with the default profile's registrations, as the loop makes it."""
    queue = SchedulingQueue(clock=VirtualClock())
    handle = Handle(ClusterObjects())
    if version is None:
        config = parse_config(None)
    else:
        config = parse_config(None, feature_gates=gates or {}, version=kube_version(version))
        handle.kube_version = config.kube_version
        handle.feature_gates = dict(gates or {})
    queue.register_plugin_events(build_framework(config.profiles[0], handle).events_by_plugin())
    return queue


def rejected(queue: SchedulingQueue, pod: dict[str, Any], *plugins: str) -> None:
    """``pod`` popped and rejected by ``plugins`` with nothing happening meanwhile: in the unschedulable pool."""
    queue.add(PodInfo(pod))
    qpi = queue.pop(timeout=0)
    assert qpi is not None
    qpi.unschedulable_plugins = set(plugins)
    queue.add_unschedulable_if_not_present(qpi, queue.scheduling_cycle)
    assert list(queue.unschedulable) == [qpi.key]
    queue.clock.now += 30  # type: ignore[attr-defined]  # past its backoff: a move goes to activeQ


def relabelled(node: dict[str, Any], **labels: str) -> dict[str, Any]:
    out = copy.deepcopy(node)
    out["metadata"]["labels"].update(labels)
    return out


BIG = make_pod(name="big", requests={"cpu": "3"})


# --- NodeResourcesFit ---------------------------------------------------------------------------
def test_fit_rejection_is_not_moved_by_a_label_change_or_a_pod_bound_elsewhere() -> None:
    queue = new_queue()
    rejected(queue, BIG, "NodeResourcesFit")
    node = make_node(name="n1", allocatable={"cpu": "4"})
    assert queue.move_all_to_active_or_backoff(ev.NODE_UPDATE_LABEL, old=node, new=relabelled(node, zone="a")) == 0
    bound = PodInfo(make_pod(name="other", node_name="n2", requests={"cpu": "1"}))
    assert queue.move_all_to_active_or_backoff(ev.POD_ADD, new=bound) == 0
    # A pending pod deleted frees nothing; an assigned one does.
    pending = PodInfo(make_pod(name="pending", requests={"cpu": "1"}))
    assert queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=pending) == 0
    assert list(queue.unschedulable) == ["default/big"]
    assert queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=bound) == 1


def test_fit_rejection_moves_for_a_node_whose_allocatable_now_fits_it() -> None:
    queue = new_queue()
    rejected(queue, BIG, "NodeResourcesFit")
    small = make_node(name="n1", allocatable={"cpu": "2"})
    assert queue.move_all_to_active_or_backoff(ev.NODE_ADD, new=small) == 0  # too small even when empty
    grown_memory = copy.deepcopy(small)
    grown_memory["status"]["allocatable"]["memory"] = "16Gi"
    assert queue.move_all_to_active_or_backoff(ev.NODE_UPDATE_ALLOCATABLE, old=small, new=grown_memory) == 0
    big = make_node(name="n1", allocatable={"cpu": "8"})
    assert queue.move_all_to_active_or_backoff(ev.NODE_UPDATE_ALLOCATABLE, old=small, new=big) == 1


def test_fit_rejection_moves_when_a_bound_pod_scales_down_what_it_asks_for() -> None:
    queue = new_queue()
    rejected(queue, BIG, "NodeResourcesFit")
    before = PodInfo(make_pod(name="other", node_name="n1", requests={"cpu": "2", "memory": "2Gi"}))
    less_memory = PodInfo(make_pod(name="other", node_name="n1", requests={"cpu": "2", "memory": "1Gi"}))
    assert queue.move_all_to_active_or_backoff(ev.POD_UPDATE, old=before, new=less_memory) == 0  # big asks no memory
    less_cpu = PodInfo(make_pod(name="other", node_name="n1", requests={"cpu": "1", "memory": "2Gi"}))
    assert queue.move_all_to_active_or_backoff(ev.POD_UPDATE, old=before, new=less_cpu) == 1


# --- NodeAffinity, TaintToleration, NodeUnschedulable, NodeName -----------------------------------
def test_node_affinity_rejection_moves_only_for_a_node_that_now_matches() -> None:
    queue = new_queue()
    rejected(queue, make_pod(name="p", spec={"nodeSelector": {"zone": "a"}}), "NodeAffinity")
    assert queue.move_all_to_active_or_backoff(ev.NODE_ADD, new=make_node(name="n1", labels={"zone": "b"})) == 0
    matching = make_node(name="n2", labels={"zone": "a"})
    # Matching before and after (another label changed): nothing new for this pod.
    assert queue.move_all_to_active_or_backoff(ev.NODE_UPDATE_LABEL, old=matching, new=relabelled(matching, x="y")) == 0
    other = make_node(name="n3", labels={"zone": "b"})
    assert queue.move_all_to_active_or_backoff(ev.NODE_UPDATE_LABEL, old=other, new=relabelled(other, zone="a")) == 1


def test_node_affinity_ignores_a_taint_change_it_no_longer_registers() -> None:
    queue = new_queue()
    rejected(queue, make_pod(name="p", spec={"nodeSelector": {"zone": "a"}}), "NodeAffinity")
    node = make_node(name="n1", labels={"zone": "a"}, taints=[{"key": "k", "effect": "NoSchedule"}])
    untainted = make_node(name="n1", labels={"zone": "a"})
    assert queue.move_all_to_active_or_backoff(ev.NODE_UPDATE_TAINT, old=node, new=untainted) == 0


def test_taint_toleration_rejection_moves_once_the_taints_are_tolerated() -> None:
    queue = new_queue()
    rejected(queue, make_pod(name="p"), "TaintToleration")
    tainted = make_node(name="n1", taints=[{"key": "k", "effect": "NoSchedule"}])
    assert queue.move_all_to_active_or_backoff(ev.NODE_ADD, new=tainted) == 0
    soft = make_node(name="n1", taints=[{"key": "k", "effect": "PreferNoSchedule"}])
    assert queue.move_all_to_active_or_backoff(ev.NODE_UPDATE_LABEL, old=tainted, new=relabelled(tainted, a="b")) == 0
    assert queue.move_all_to_active_or_backoff(ev.NODE_UPDATE_TAINT, old=tainted, new=soft) == 1


def test_node_unschedulable_rejection_moves_when_a_node_is_uncordoned() -> None:
    queue = new_queue()
    rejected(queue, make_pod(name="p"), "NodeUnschedulable")
    cordoned = make_node(name="n1", unschedulable=True)
    assert queue.move_all_to_active_or_backoff(ev.NODE_ADD, new=cordoned) == 0
    assert node_update_events(cordoned, make_node(name="n1"), declared_features=False) == [ev.NODE_UPDATE_TAINT]
    assert queue.move_all_to_active_or_backoff(ev.NODE_UPDATE_TAINT, old=cordoned, new=make_node(name="n1")) == 1


def test_node_name_rejection_moves_for_a_node_added_not_updated() -> None:
    queue = new_queue()
    rejected(queue, make_pod(name="p", node_name="n9"), "NodeName")
    node = make_node(name="n1")
    assert queue.move_all_to_active_or_backoff(ev.NODE_UPDATE_LABEL, old=node, new=relabelled(node, a="b")) == 0
    assert queue.move_all_to_active_or_backoff(ev.NODE_ADD, new=make_node(name="n9")) == 1


# --- NodePorts --------------------------------------------------------------------------------------
def _with_port(name: str, port: int, node_name: str | None = "n1") -> dict[str, Any]:
    pod = make_pod(name=name, node_name=node_name)
    pod["spec"]["containers"][0]["ports"] = [{"containerPort": port, "hostPort": port, "protocol": "TCP"}]
    return pod


def test_node_ports_rejection_moves_only_when_a_conflicting_port_is_freed() -> None:
    queue = new_queue()
    rejected(queue, _with_port("p", 8080, node_name=None), "NodePorts")
    assert queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=PodInfo(_with_port("a", 9090))) == 0
    assert queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=PodInfo(_with_port("b", 8080, None))) == 0
    assert queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=PodInfo(_with_port("c", 8080))) == 1


# --- PodTopologySpread, InterPodAffinity ------------------------------------------------------------
SPREAD = {
    "topologySpreadConstraints": [
        {
            "maxSkew": 1,
            "topologyKey": "zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "web"}},
        }
    ]
}


def test_spread_rejection_moves_for_matching_pods_and_nodes_with_the_topology_key() -> None:
    queue = new_queue()
    rejected(queue, make_pod(name="p", labels={"app": "web"}, spec=SPREAD), "PodTopologySpread")
    other_app = PodInfo(make_pod(name="o", labels={"app": "db"}, node_name="n1"))
    other_ns = PodInfo(make_pod(name="w", namespace="x", labels={"app": "web"}, node_name="n1"))
    assert queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=other_app) == 0
    assert queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=other_ns) == 0
    assert queue.move_all_to_active_or_backoff(ev.NODE_ADD, new=make_node(name="n2")) == 0  # no zone label
    assert queue.move_all_to_active_or_backoff(ev.NODE_ADD, new=make_node(name="n2", labels={"zone": "b"})) == 1


def test_spread_rejection_moves_for_a_relabelled_pod_that_changes_what_it_matches() -> None:
    queue = new_queue()
    rejected(queue, make_pod(name="p", labels={"app": "web"}, spec=SPREAD), "PodTopologySpread")
    before = PodInfo(make_pod(name="w", labels={"app": "web"}, node_name="n1"))
    same_match = PodInfo(make_pod(name="w", labels={"app": "web", "v": "2"}, node_name="n1"))
    assert queue.move_all_to_active_or_backoff(ev.POD_UPDATE, old=before, new=same_match) == 0
    unmatched = PodInfo(make_pod(name="w", labels={"app": "db"}, node_name="n1"))
    assert queue.move_all_to_active_or_backoff(ev.POD_UPDATE, old=before, new=unmatched) == 1


AFFINITY = {
    "podAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "db"}}}
        ]
    }
}


def test_inter_pod_affinity_rejection_moves_for_a_pod_it_wants_or_a_node_gaining_the_key() -> None:
    queue = new_queue()
    rejected(queue, make_pod(name="p", affinity=AFFINITY), "InterPodAffinity")
    assert queue.move_all_to_active_or_backoff(ev.POD_ADD, new=PodInfo(make_pod(name="w", node_name="n1"))) == 0
    assert queue.move_all_to_active_or_backoff(ev.NODE_ADD, new=make_node(name="n2")) == 0
    node = make_node(name="n3")
    assert queue.move_all_to_active_or_backoff(ev.NODE_UPDATE_LABEL, old=node, new=relabelled(node, zone="a")) == 1
    rejected(queue, make_pod(name="p2", affinity=AFFINITY), "InterPodAffinity")
    db = PodInfo(make_pod(name="db", labels={"app": "db"}, node_name="n1"))
    assert queue.move_all_to_active_or_backoff(ev.POD_ADD, new=db) == 1


def test_inter_pod_affinity_rejection_moves_when_an_anti_affinity_holder_leaves() -> None:
    queue = new_queue()
    rejected(queue, make_pod(name="p", labels={"app": "web"}), "InterPodAffinity")
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "zone", "labelSelector": {"matchLabels": {"app": "web"}}}
            ]
        }
    }
    plain = PodInfo(make_pod(name="o", node_name="n1"))
    assert queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=plain) == 0
    holder = PodInfo(make_pod(name="h", node_name="n1", affinity=anti))
    assert queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=holder) == 1


# --- node updates, in-flight events, out-of-tree plugins -------------------------------------------
def test_a_node_update_is_one_event_per_scheduling_property_it_changed() -> None:
    node = make_node(name="n1")
    assert node_update_events(node, copy.deepcopy(node), declared_features=True) == []  # a heartbeat
    changed = relabelled(node, zone="a")
    changed["spec"]["taints"] = [{"key": "k", "effect": "NoSchedule"}]
    changed["status"]["allocatable"]["cpu"] = "8"
    changed["status"]["conditions"] = [{"type": "Ready", "status": "True"}]
    assert node_update_events(node, changed, declared_features=False) == [
        ev.NODE_UPDATE_ALLOCATABLE,
        ev.NODE_UPDATE_LABEL,
        ev.NODE_UPDATE_TAINT,
        ev.NODE_UPDATE_CONDITION,
    ]


def test_a_pod_failing_in_flight_is_judged_by_the_hints_of_the_events_it_missed() -> None:
    """A label-only node update and a pod bound elsewhere while a NodeResourcesFit rejection was in flight: to the
    unschedulable pool; an assigned pod deleted meanwhile: backoffQ."""
    queue = new_queue()
    node = make_node(name="n1")
    for deleted, where in ((None, "unschedulable"), (PodInfo(make_pod(name="gone", node_name="n1")), "backoff")):
        queue.add(PodInfo(BIG))
        qpi = queue.pop(timeout=0)
        assert qpi is not None
        queue.move_all_to_active_or_backoff(ev.NODE_UPDATE_LABEL, old=node, new=relabelled(node, a="b"))
        queue.move_all_to_active_or_backoff(ev.POD_ADD, new=PodInfo(make_pod(name="o", node_name="n2")))
        if deleted is not None:
            queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=deleted)
        qpi.unschedulable_plugins = {"NodeResourcesFit"}
        queue.add_unschedulable_if_not_present(qpi, queue.scheduling_cycle)
        counts = queue.pending_counts()
        assert counts[where] == 1 and sum(counts.values()) == 1, counts
        queue.delete(qpi.key)


def test_only_the_events_since_a_pod_was_popped_count_for_it() -> None:
    """An event seen while another pod was in flight, before this one was popped, does not send it to backoffQ;
    one that came during both pods' flights counts for each; with nothing in flight the events are dropped."""
    queue = new_queue()
    queue.add(PodInfo(make_pod(name="a", priority=10)))
    queue.add(PodInfo(make_pod(name="b")))
    a = queue.pop(timeout=0)
    assert a is not None and a.key == "default/a"
    queue.move_all_to_active_or_backoff(ev.NODE_ADD, new=make_node(name="n1"))  # only a in flight
    b = queue.pop(timeout=0)
    assert b is not None and b.key == "default/b"
    queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=PodInfo(make_pod(name="x", node_name="n1")))  # both
    b.unschedulable_plugins = {"TaintToleration"}  # registers node events, not pod deletions
    queue.add_unschedulable_if_not_present(b, queue.scheduling_cycle)
    assert list(queue.unschedulable) == ["default/b"]
    a.unschedulable_plugins = {"TaintToleration"}
    queue.add_unschedulable_if_not_present(a, queue.scheduling_cycle)
    assert queue.pending_counts()["backoff"] == 1 and "default/a" not in queue.unschedulable
    queue.clock.now += 30  # type: ignore[attr-defined]
    queue.flush_backoff_completed()
    again = queue.pop(timeout=0)
    assert again is not None and again.key == "default/a"
    again.unschedulable_plugins = {"TaintToleration"}
    queue.add_unschedulable_if_not_present(again, queue.scheduling_cycle)
    assert sorted(queue.unschedulable) == ["default/a", "default/b"]


def test_a_plugin_without_hints_is_queued_by_every_event_it_registered() -> None:
    queue = new_queue()
    queue.register_plugin_events({"Custom": ["Node/Update"]})
    rejected(queue, make_pod(name="p"), "Custom")
    node = make_node(name="n1")
    assert queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=PodInfo(make_pod(name="o", node_name="n1"))) == 0
    assert queue.move_all_to_active_or_backoff(ev.NODE_UPDATE_ANNOTATION, old=node, new=node) == 1


def test_a_gang_member_moves_for_a_pod_of_its_own_group_only() -> None:
    queue = new_queue("1.36", {"GangScheduling": True, "GenericWorkload": True})
    rejected(queue, make_pod(name="p", spec={"schedulingGroup": {"podGroupName": "g1"}}), "GangScheduling")
    other = PodInfo(make_pod(name="o", spec={"schedulingGroup": {"podGroupName": "g2"}}))
    assert queue.move_all_to_active_or_backoff(ev.UNSCHEDULED_POD_ADD, new=other) == 0
    sibling = PodInfo(make_pod(name="s", spec={"schedulingGroup": {"podGroupName": "g1"}}))
    assert queue.move_all_to_active_or_backoff(ev.UNSCHEDULED_POD_ADD, new=sibling) == 1


def test_a_profile_is_judged_by_its_own_plugins_and_a_new_configuration_replaces_them() -> None:
    queue = new_queue()
    queue.register_plugin_events({"Custom": ["Node/Add"]}, "second")
    rejected(queue, make_pod(name="p", scheduler_name="second"), "Custom")
    deleted = PodInfo(make_pod(name="o", node_name="n1"))
    assert queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=deleted) == 0
    queue.register_plugin_events({}, "second")  # the new configuration's profile has no Custom: every event
    assert queue.move_all_to_active_or_backoff(ev.POD_DELETE, old=deleted) == 1


def test_an_out_of_tree_hint_judges_its_events_and_one_that_raises_queues() -> None:
    def gpu_nodes_only(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        return QUEUE if "gpu" in new["metadata"]["labels"] else QUEUE_SKIP

    def broken(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        raise KeyError("oops")

    queue = new_queue()
    queue.register_plugin_events({"Gpu": [ClusterEventWithHint("Node/Add", gpu_nodes_only)]})
    queue.register_plugin_events({"Broken": [ClusterEventWithHint("Node/Add", broken)]})
    rejected(queue, make_pod(name="p"), "Gpu")
    assert queue.move_all_to_active_or_backoff(ev.NODE_ADD, new=make_node(name="n1")) == 0
    assert queue.move_all_to_active_or_backoff(ev.NODE_ADD, new=make_node(name="n2", labels={"gpu": "a100"})) == 1
    rejected(queue, make_pod(name="b"), "Broken")
    assert queue.move_all_to_active_or_backoff(ev.NODE_ADD, new=make_node(name="n3")) == 1

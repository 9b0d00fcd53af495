"""The shortcuts a full cluster takes (docs/performance.md, replay of multigpu50) give what the long way gives.

- DefaultPreemption's dry run answers nodes without a lower-priority pod without copying them: the same nominated
  node, victims and message as the dry run on copies of every node (a subclass that chooses victims its own way
  gets no shortcut);
- a pod that fits nowhere: the batch path shares one status per ``filter_keys`` key; the fit error equals the
  per-node loop's;
- the scheduler cache adds the nodes of a large cluster in linear time: node-tree order (one zone or several) and
  image summaries as before.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.framework import CycleState, Handle, Status
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.plugins.default_preemption import MSG_NO_VICTIMS, DefaultPreemption
from kss_sim.scheduler.profiles import build_framework
from kss_sim.scheduler.runtime import Framework
from kss_sim.scheduler.snapshot import Snapshot, node_tree_order
from tests.scheduler.factories import make_node, make_pod
from tests.scheduler.plugins.test_default_preemption import filter_statuses, pod, setup


class NoShortcut(DefaultPreemption):
    """DefaultPreemption with the dry run on copies of every node (the reference)."""

    nodes_without_victims = None  # type: ignore[assignment]
    victims_without_copies = None  # type: ignore[assignment]


class OwnVictims(DefaultPreemption):
    """A subclass that chooses its victims itself: the shortcut must stand aside."""

    def select_victims_on_node(
        self, state: CycleState, pod: PodInfo, node_info: NodeInfo, pdbs: Any
    ) -> tuple[list[PodInfo], int, Status]:
        return super().select_victims_on_node(state, pod, node_info, pdbs)


def _cluster(seed: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Nodes full of pods, most of priority 0, a few of lower priority on some nodes."""
    rng = random.Random(seed)
    nodes = [make_node(name=f"n{i:02d}", allocatable={"cpu": "4"}) for i in range(40)]
    pods = []
    for i in range(40):
        for j in range(4):
            low = rng.random() < 0.05
            pods.append(
                pod(f"p{i}-{j}", priority=-5 if low else 0, cpu="1", node=f"n{i:02d}", start="2024-06-01T00:00:00Z")
            )
    return nodes, pods


def _preempt(fwk: Framework, preemptor: PodInfo) -> tuple[str, list[str], str, Any]:
    plugin = fwk.post_filter[0]
    result, st = plugin.post_filter(CycleState(), preemptor, filter_statuses(fwk, preemptor))
    return (result.nominated_node_name if result else "", list(result.victims) if result else [], st.message(), st.code)


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
@pytest.mark.parametrize("priority", [-10, 0, 10])
def test_dry_run_shortcut_gives_the_nomination_victims_and_message_of_the_full_dry_run(
    seed: int, priority: int
) -> None:
    nodes, pods = _cluster(seed)
    preemptor = PodInfo(pod("incoming", priority=priority, cpu="2"))
    outcomes = []
    for cls in (DefaultPreemption, NoShortcut, OwnVictims):
        handle, _, fwk = setup(nodes, pods)
        fwk.post_filter[0] = cls(handle, DefaultPreemption.defaulted_args({}))
        outcomes.append(_preempt(fwk, preemptor))
    assert outcomes[0] == outcomes[1] == outcomes[2]
    if priority <= -5:  # nothing to preempt anywhere: every node answered by the shortcut
        assert outcomes[0][2] == f"preemption: 0/40 nodes are available: 40 {MSG_NO_VICTIMS}."


@pytest.mark.parametrize("absolute", [10, 40, 150], ids=["first-stretch", "second-stretch", "whole-walk"])
def test_the_shortcut_asked_by_stretches_stops_where_the_full_dry_run_stops(absolute: int) -> None:
    """The shortcut is asked a stretch of the walk at a time (``max(num_candidates, 64)`` nodes): the candidates,
    and every node's status in the order the walk set them, equal the dry run on copies of every node, whether the
    walk stops in the first stretch, in a later one, or runs to the end (100 of 300 nodes hold victims)."""
    nodes = [make_node(name=f"n{i:03d}", allocatable={"cpu": "4"}) for i in range(300)]
    pods = [
        pod(f"p{i}-{j}", priority=0 if i % 3 == 0 else 10, cpu="1", node=f"n{i:03d}", start="2024-06-01T00:00:00Z")
        for i in range(300)
        for j in range(4)
    ]
    preemptor = PodInfo(pod("incoming", priority=5, cpu="2"))
    args = DefaultPreemption.defaulted_args({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": absolute})
    outcomes = []
    for cls in (DefaultPreemption, NoShortcut):
        handle, _, fwk = setup(nodes, pods)
        plugin = cls(handle, args)
        candidates, statuses, errs = plugin.evaluator.find_candidates(
            CycleState(), preemptor, filter_statuses(fwk, preemptor)
        )
        outcomes.append(
            (
                [(c.name, [v.uid for v in c.victims]) for c in candidates],
                [(name, st.code, st.message()) for name, st in statuses.statuses.items()],
                errs,
            )
        )
    assert outcomes[0] == outcomes[1]
    assert len(outcomes[0][0]) == min(absolute, 100)
    # The nodes without victims have a status: those before the last candidate, or all 200 when the walk ends.
    assert len(outcomes[0][1]) == (200 if absolute > 100 else 2 * (absolute - 1))


def test_nodes_without_victims_follows_pod_changes_on_a_node() -> None:
    handle, plugin, _ = setup([make_node(name="n1")], [pod("a", priority=0, cpu="1", node="n1")])
    ni = handle.snapshot.node_info_list[0]
    incoming = PodInfo(pod("incoming", priority=0, cpu="1"))
    got = plugin.nodes_without_victims(incoming, [ni])
    assert got is not None and got[0] == [True]
    ni.add_pod(PodInfo(pod("low", priority=-1, cpu="1", node="n1")))
    got = plugin.nodes_without_victims(incoming, [ni])
    assert got is not None and got[0] == [False]
    assert OwnVictims(handle, DefaultPreemption.defaulted_args({})).nodes_without_victims(incoming, [ni]) is None


def _scheduler(nodes: list[dict[str, Any]], pods: list[dict[str, Any]]) -> Scheduler:
    config = parse_config(None, {})
    handle = Handle(ClusterObjects())
    fwk = build_framework(config.profiles[0], handle)
    return Scheduler({"default-scheduler": fwk}, Snapshot.build(nodes, pods), seed=0)


def test_fit_error_of_a_pod_that_fits_nowhere_is_the_per_node_loops() -> None:
    # Nodes short of different resources in different combinations: several keys, one status object per key.
    nodes, pods = [], []
    for i in range(30):
        nodes.append(
            make_node(name=f"n{i:02d}", allocatable={"cpu": "4", "memory": "8Gi", "nvidia.com/gpu": str(i % 3)})
        )
        pods.append(
            make_pod(name=f"b{i}", node_name=f"n{i:02d}", requests={"cpu": str(1 + i % 4), "memory": f"{i % 5}Gi"})
        )
    incoming = make_pod(name="big", requests={"cpu": "3500m", "memory": "5Gi", "nvidia.com/gpu": "2"})
    attempts = []
    for batch in (True, False):
        sched = _scheduler(nodes, pods)
        att = sched.schedule_one(
            PodInfo(incoming), 1, ScheduleOptions(record=False, batch=batch, run_binding_cycle=False)
        )
        attempts.append(att)
    batch_att, loop_att = attempts
    assert batch_att.result == loop_att.result == "unschedulable"
    assert batch_att.message == loop_att.message
    assert "Insufficient nvidia.com/gpu" in batch_att.message and "Insufficient cpu" in batch_att.message
    assert batch_att.filter_fail == loop_att.filter_fail
    assert list(batch_att.filter_fail) == list(loop_att.filter_fail)


def _zone_node(name: str, zone: str | None, images: list[str] | None = None) -> dict[str, Any]:
    node = make_node(name=name, labels={"topology.kubernetes.io/zone": zone} if zone else None)
    if images:
        node["status"]["images"] = [{"names": images, "sizeBytes": 1000}]
    return node


@pytest.mark.parametrize("zones", [[None], ["a"], ["a", "b", "c"]])
def test_cache_node_order_and_images_as_built_from_scratch(zones: list[str | None]) -> None:
    cache = SchedulerCache()
    nodes = [_zone_node(f"n{i}", zones[i % len(zones)], ["img:1"] if i in (3, 7) else None) for i in range(12)]
    for node in nodes:
        cache.add_node(node)
    cache.remove_node("n3")
    cache.update_node(_zone_node("n5", zones[-1]))
    cache.remove_node("n7")  # the last node with an image: every summary goes
    current = [n for n in nodes if n["metadata"]["name"] not in ("n3", "n7")]
    current = [_zone_node("n5", zones[-1]) if n["metadata"]["name"] == "n5" else n for n in current]
    expected = Snapshot.build(current, [])
    order = [ni.name for ni in cache.snapshot.node_info_list]
    assert order == [ni.name for ni in expected.node_info_list]
    assert all(not ni.image_states for ni in cache.snapshot.node_info_list)
    cache.add_node(_zone_node("n20", zones[0], ["img:2"]))
    assert cache.snapshot.image_states_stale  # recomputed by the next cycle, as below
    cache.snapshot.refresh_image_states()
    states = {ni.name: dict(ni.image_states) for ni in cache.snapshot.node_info_list}
    assert states["n20"]["img:2"].num_nodes == 1
    assert [ni.name for ni in cache.snapshot.node_info_list] == node_tree_order([*current, _zone_node("n20", zones[0])])


def test_statuses_of_a_failed_attempt_are_shared_per_key() -> None:
    nodes = [make_node(name=f"n{i}", allocatable={"cpu": "1"}) for i in range(20)]
    sched = _scheduler(nodes, [])
    att = sched.schedule_one(PodInfo(make_pod(name="p", requests={"cpu": "2"})), 1, ScheduleOptions(record=False))
    assert att.message.startswith("0/20 nodes are available: 20 Insufficient cpu.")
    assert set(att.filter_fail.values()) == {"NodeResourcesFit: Insufficient cpu"}


def test_cache_places_each_arriving_node_without_rebuilding_the_node_tree(monkeypatch: pytest.MonkeyPatch) -> None:
    # Zones come and go, nodes arrive, move zone, are updated in place and leave: after every step the list equals
    # the node tree built from scratch, and arrivals and in-zone updates never rebuild it (5,000 nodes in three
    # zones took the scheduler ~1 minute when every arrival did).
    rebuilt = [0]
    import kss_sim.scheduler.cache as cache_module

    def counting(nodes: Any) -> list[str]:
        rebuilt[0] += 1
        return node_tree_order(nodes)

    monkeypatch.setattr(cache_module, "node_tree_order", counting)
    rng = random.Random(7)
    cache = SchedulerCache()
    zones = ["a", "b", "c", None]
    live: dict[str, str | None] = {}
    for step in range(600):
        roll = rng.random()
        if roll < 0.6 or len(live) < 3:
            name = f"n{step}"
            live[name] = rng.choice(zones)
            before = rebuilt[0]
            cache.add_node(_zone_node(name, live[name]))
            assert rebuilt[0] == before
        elif roll < 0.75:
            name = rng.choice(sorted(live))
            before = rebuilt[0]
            cache.update_node(_zone_node(name, live[name]))  # same zone: stays where it is
            assert rebuilt[0] == before
        elif roll < 0.85:
            name = rng.choice(sorted(live))
            live[name] = rng.choice([z for z in zones if z != live[name]])
            cache.update_node(_zone_node(name, live[name]))
        else:
            name = rng.choice(sorted(live))
            del live[name]
            cache.remove_node(name)
        expected = node_tree_order(cache._nodes.values())
        assert [ni.name for ni in cache.snapshot.node_info_list] == expected, step
    assert len(live) > 100


def test_nodes_with_images_arrive_without_recomputing_the_summaries_and_the_cycle_sees_them(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each summary counts the nodes listing the image: recomputed per arriving node, adding 5,000 nodes that list
    # images was quadratic. Arrivals only mark them stale; the next cycle recomputes them once and scores
    # ImageLocality as a snapshot built from scratch does.
    refreshed = [0]
    original = Snapshot.refresh_image_states

    def counting(self: Snapshot) -> None:
        refreshed[0] += 1
        original(self)

    monkeypatch.setattr(Snapshot, "refresh_image_states", counting)
    rng = random.Random(3)
    images = [f"registry.example/app-{i}:1" for i in range(6)]
    nodes = []
    for i in range(60):
        node = _zone_node(f"n{i:02d}", rng.choice(["a", "b"]))
        held = rng.sample(images, rng.randint(0, 4))
        node["status"]["images"] = [{"names": [name], "sizeBytes": 300 * 1024 * 1024} for name in held]
        nodes.append(node)
    cache = SchedulerCache()
    for node in nodes:
        cache.add_node(node)
    cache.remove_node("n07")
    assert refreshed[0] == 0 and cache.snapshot.image_states_stale
    current = [n for n in nodes if n["metadata"]["name"] != "n07"]
    incoming = make_pod(
        name="web", spec={"containers": [{"name": "c", "image": images[0]}, {"name": "d", "image": images[1]}]}
    )

    def scores(snapshot: Snapshot) -> dict[str, int]:
        config = parse_config(None, {})
        fwk = build_framework(config.profiles[0], Handle(ClusterObjects()))
        sched = Scheduler({"default-scheduler": fwk}, snapshot, seed=0)
        att = sched.schedule_one(PodInfo(incoming), 1, ScheduleOptions(record=True, run_binding_cycle=False))
        assert att.result == "scheduled" and att.score is not None
        return {node: by_plugin["ImageLocality"] for node, by_plugin in att.score.items()}

    got = scores(cache.snapshot)
    assert refreshed[0] == 1 and not cache.snapshot.image_states_stale
    expected = scores(Snapshot.build(current, []))
    assert got == expected and len(set(got.values())) > 1  # the images make a difference between nodes


@pytest.mark.parametrize("wanted", [{"n-0007"}, {"n-0300", "n-0002", "gone"}, {f"n-{i:04d}" for i in range(0, 400, 3)}])
def test_nodes_a_prefilter_result_allows_come_in_node_list_order(wanted: set[str]) -> None:
    """Few names are looked up by name, many by a scan of the list: either way the order is the node list's (the
    order the filters walk) and names of no node are dropped, as a scan of the whole list gives them."""
    zones = [f"zone-{i // 134}" for i in range(400)]  # node-tree order takes one node of each zone in turn
    nodes = [make_node(name=f"n-{i:04d}", labels={"topology.kubernetes.io/zone": z}) for i, z in enumerate(zones)]
    snapshot = Snapshot.build(nodes, [])
    by_scan = [ni for ni in snapshot.node_info_list if ni.name in wanted]
    assert [ni.name for ni in snapshot.in_list_order(wanted)] == [ni.name for ni in by_scan]
    assert [ni.name for ni in snapshot.node_info_list[:2]] == ["n-0000", "n-0134"]  # not name order
    # A new node list (a node added) is indexed again.
    snapshot.node_info_list = list(reversed(snapshot.node_info_list))
    assert [ni.name for ni in snapshot.in_list_order(wanted)] == [
        ni.name for ni in snapshot.node_info_list if ni.name in wanted
    ]

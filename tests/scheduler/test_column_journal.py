"""The pod journal of the node columns (``NodeColumns.journal``), which the per-shape caches of PodTopologySpread,
InterPodAffinity and the resource columns replay: a new version of a pod that no aggregate tells apart (the binding
of an assumed pod, the kubelet's status write) leaves one entry naming the newest version instead of five entries
holding every superseded one; any difference an aggregate reads is journaled as a removal and an addition; and when
the journal drops its oldest entries (its cap), the caches count afresh. Every cached answer must equal a fresh
computation over the cluster as it is."""

from __future__ import annotations

import copy
import random
from typing import Any

import pytest

from kss_sim.scheduler import columns as columns_module
from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.columns import NodeBatch, same_to_aggregates
from kss_sim.scheduler.framework import CycleState, Handle
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from kss_sim.scheduler.plugins.node_resources_fit import NodeResourcesFit
from kss_sim.scheduler.plugins.pod_topology_spread import PodTopologySpread
from tests.scheduler.factories import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
# What the incoming pod of the random tests spreads over and keeps away from: the "web" pods, by zone.
WEB_SPREAD = {
    "maxSkew": 1,
    "topologyKey": ZONE,
    "whenUnsatisfiable": "ScheduleAnyway",
    "labelSelector": {"matchLabels": {"app": "web"}},
}
WEB_ZONE_TERM = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE}


def _cache(nodes: int = 6) -> SchedulerCache:
    cache = SchedulerCache()
    for i in range(nodes):
        cache.add_node(make_node(name=f"n{i}", labels={ZONE: "abc"[i % 3]}, allocatable={"cpu": "4", "pods": "20"}))
    cache.snapshot.columns()
    return cache


def _pod(name: str, node: str, *, app: str = "web", cpu: str = "500m", **meta: Any) -> PodInfo:
    raw = make_pod(name=name, labels={"app": app}, node_name=node, requests={"cpu": cpu})
    raw["metadata"]["uid"] = f"uid-{name}"
    raw["metadata"].update(meta)
    return PodInfo(raw)


def _running(pi: PodInfo) -> PodInfo:
    """The pod as the kubelet's status write leaves it: same spec object, a new status."""
    raw = {**pi.pod, "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}}
    return PodInfo(raw)


def test_a_binding_and_a_status_write_leave_one_entry_naming_the_newest_version() -> None:
    cache = _cache()
    cols = cache.snapshot.columns()
    assumed = _pod("p", "n1")
    cache.add_pod(assumed)
    bound = PodInfo(copy.deepcopy(assumed.pod))  # the binding comes back: an equal object, not the same one
    cache.add_pod(bound)
    running = _running(bound)
    cache.add_pod(running)
    assert [(pi, ni.name, sign) for pi, ni, sign in cols.journal] == [(running, "n1", 1)]
    assert cache.snapshot.node_info_map["n1"].pods == [running]


@pytest.mark.parametrize(
    "change",
    [
        lambda raw: raw["metadata"]["labels"].update(app="api"),
        lambda raw: raw["metadata"].update(deletionTimestamp="2026-01-01T00:00:00Z"),
        lambda raw: raw["spec"]["containers"][0]["resources"]["requests"].update(cpu="1"),
        lambda raw: raw["spec"].update(
            affinity={
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
                    ]
                }
            }
        ),
    ],
    ids=["labels", "terminating", "requests", "affinity"],
)
def test_a_version_an_aggregate_tells_apart_is_journaled_as_removal_and_addition(change: Any) -> None:
    cache = _cache()
    cols = cache.snapshot.columns()
    first = _pod("p", "n1")
    cache.add_pod(first)
    raw = copy.deepcopy(first.pod)
    change(raw)
    second = PodInfo(raw)
    assert not same_to_aggregates(first, second)
    cache.add_pod(second)
    assert [(pi, sign) for pi, _, sign in cols.journal] == [(first, 1), (first, -1), (second, 1)]


def _handle(cache: SchedulerCache) -> Handle:
    handle = Handle(ClusterObjects())
    handle.snapshot = cache.snapshot
    return handle


def _spread_counts(plugin: PodTopologySpread, handle: Handle, pod: PodInfo) -> tuple[Any, Any]:
    """PreScore's per-domain counts through the shape cache, and counted afresh."""
    nodes = handle.snapshot.node_info_list
    state = CycleState()
    assert plugin.pre_score(state, pod, nodes).is_success()
    cached = state.read("PreScore" + "PodTopologySpread").topology_value_to_pod_counts
    fresh = PodTopologySpread(handle, PodTopologySpread.defaulted_args({}))
    reference = state.read("PreScore" + "PodTopologySpread").__class__()
    fresh._init_pre_score_state(reference, pod, nodes, True)
    fresh._count_candidate_domains(reference, pod, nodes, True)
    return copy.deepcopy(cached), reference.topology_value_to_pod_counts


def _affinity_state(plugin: InterPodAffinity, handle: Handle, pod: PodInfo) -> tuple[Any, Any]:
    """PreFilter's counts through the shape cache, and computed afresh."""
    nodes = handle.snapshot.node_info_list

    def counts(p: InterPodAffinity) -> Any:
        state = CycleState()
        p.pre_filter(state, pod, nodes)
        s = state.read("PreFilter" + "InterPodAffinity")
        return (
            dict(s.existing_anti_affinity_counts),
            dict(s.affinity_counts),
            dict(s.anti_affinity_counts),
        )

    return counts(plugin), counts(InterPodAffinity(handle, InterPodAffinity.defaulted_args({})))


def _fit_verdicts(plugin: NodeResourcesFit, handle: Handle, pod: PodInfo) -> tuple[list[bool], list[bool]]:
    state = CycleState()
    plugin.pre_filter(state, pod, handle.snapshot.node_info_list)
    cols = handle.snapshot.columns()
    mask = plugin.filter_nodes(state, pod, NodeBatch.all(cols))
    assert mask is not None
    return mask.tolist(), [plugin.filter(state, pod, ni).is_success() for ni in cols.infos]


@pytest.mark.parametrize("cap", [None, 16], ids=["uncapped", "cap-16"])
def test_cached_aggregates_equal_fresh_ones_through_random_versions_and_removals(
    cap: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if cap is not None:  # a small cap: caches outrun by the journal must count afresh, never answer wrong
        monkeypatch.setattr(columns_module, "_JOURNAL_MAX", cap)
    rng = random.Random(7)
    cache = _cache()
    handle = _handle(cache)
    spread = PodTopologySpread(handle, PodTopologySpread.defaulted_args({}))
    affinity = InterPodAffinity(handle, InterPodAffinity.defaulted_args({}))
    fit = NodeResourcesFit(handle, NodeResourcesFit.defaulted_args({}))
    constraint, term = WEB_SPREAD, WEB_ZONE_TERM
    incoming = make_pod(
        name="in",
        labels={"app": "web"},
        requests={"cpu": "2"},
        spec={"topologySpreadConstraints": [constraint]},
        affinity={
            "podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]},
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{**term, "topologyKey": "kubernetes.io/hostname"}]
            },
        },
    )
    live: dict[str, PodInfo] = {}
    for step in range(400):
        op = rng.random()
        name = f"p{rng.randrange(40)}"
        current = live.get(name)
        if current is None:
            pi = _pod(name, f"n{rng.randrange(6)}", app=rng.choice(["web", "api"]), cpu=rng.choice(["500m", "1"]))
            cache.add_pod(pi)
            live[name] = pi
        elif op < 0.45:  # a version no aggregate tells apart (binding, status write)
            live[name] = _running(current) if rng.random() < 0.5 else PodInfo(copy.deepcopy(current.pod))
            cache.add_pod(live[name])
        elif op < 0.7:  # a version that differs: labels, requests or terminating
            raw = copy.deepcopy(current.pod)
            which = rng.randrange(3)
            if which == 0:
                raw["metadata"]["labels"]["app"] = rng.choice(["web", "api"])
            elif which == 1:
                raw["spec"]["containers"][0]["resources"]["requests"]["cpu"] = rng.choice(["250m", "1500m"])
            else:
                raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
            live[name] = PodInfo(raw)
            cache.add_pod(live[name])
        else:
            cache.remove_pod(current.uid)
            del live[name]
        if step % 9 == 0:
            pod = PodInfo(copy.deepcopy(incoming))
            cached, fresh = _spread_counts(spread, handle, pod)
            assert cached == fresh, step
            cached, fresh = _affinity_state(affinity, handle, pod)
            assert cached == fresh, step
            got, want = _fit_verdicts(fit, handle, pod)
            assert got == want, step
    cols = handle.snapshot.columns()
    superseded = {id(pi) for pi, _, sign in cols.journal if sign > 0} - {id(pi) for pi in live.values()}
    removed_or_changed = {id(pi) for pi, _, sign in cols.journal if sign < 0}
    assert superseded <= removed_or_changed  # an addition names a live version unless that version went since


def test_churned_pods_do_not_stay_in_the_journal() -> None:
    """Pods added and removed over and over (a long-running server's churn) leave a journal bounded by the pods
    the nodes hold, not by how many ever passed: each entry keeps its pod alive."""
    cache = _cache(nodes=3)
    cols = cache.snapshot.columns()
    for i in range(3):
        cache.add_pod(_pod(f"stay{i}", f"n{i}"))
    for i in range(5 * columns_module._JOURNAL_FLOOR):
        churned = _pod(f"c{i}", f"n{i % 3}")
        cache.add_pod(churned)
        cache.remove_pod(churned.uid)
    assert len(cols.journal) < 2 * columns_module._JOURNAL_FLOOR
    assert cols.journal_base > 0
    assert [pi.name for pi in cache.snapshot.node_info_map["n0"].pods] == ["stay0"]

"""The pod journal's take-back (a pod's removal undone by its next version on the same node) must never undo an
entry a cache has already replayed: a pod forgotten (a Permit rejection), counted as gone by a scheduling cycle,
then assumed again on the same node is on that node for every cache, as for a fresh computation. Without that the
resource columns' cache kept the node's room of the moment the pod was gone, and a gang's second member was placed
on the node its sibling held (1,600m on a 1-CPU node in ``kss serve``)."""

from __future__ import annotations

import copy

from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.columns import NodeBatch
from kss_sim.scheduler.framework import CycleState, Handle
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.node_resources_fit import NodeResourcesFit
from kss_sim.scheduler.plugins.pod_topology_spread import PodTopologySpread
from tests.scheduler.factories import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"


def _member(name: str) -> PodInfo:
    raw = make_pod(name=name, labels={"app": "gang"}, node_name="n0", requests={"cpu": "800m"})
    raw["metadata"]["uid"] = f"uid-{name}"
    return PodInfo(raw)


def _fits(fit: NodeResourcesFit, handle: Handle, pod: PodInfo) -> tuple[list[bool], list[bool]]:
    """Fit's verdict per node through the columns' cache, and node by node."""
    state = CycleState()
    fit.pre_filter(state, pod, handle.snapshot.node_info_list)
    cols = handle.snapshot.columns()
    mask = fit.filter_nodes(state, pod, NodeBatch.all(cols))
    assert mask is not None
    return mask.tolist(), [fit.filter(state, pod, ni).is_success() for ni in cols.infos]


def _spread(spread: PodTopologySpread, handle: Handle, pod: PodInfo) -> tuple[object, object]:
    """PreScore's per-domain counts through the shape cache, and counted afresh."""
    nodes = handle.snapshot.node_info_list
    state = CycleState()
    assert spread.pre_score(state, pod, nodes).is_success()
    cached = copy.deepcopy(state.read("PreScorePodTopologySpread").topology_value_to_pod_counts)
    fresh = PodTopologySpread(handle, PodTopologySpread.defaulted_args({}))
    reference = state.read("PreScorePodTopologySpread").__class__()
    fresh._init_pre_score_state(reference, pod, nodes, True)
    fresh._count_candidate_domains(reference, pod, nodes, True)
    return cached, reference.topology_value_to_pod_counts


def test_a_pod_forgotten_then_assumed_again_on_its_node_after_a_cycle_read_the_journal_is_counted() -> None:
    cache = SchedulerCache()
    for name, zone in (("n0", "a"), ("n1", "b")):
        cache.add_node(make_node(name=name, labels={ZONE: zone}, allocatable={"cpu": "1", "pods": "20"}))
    handle = Handle(ClusterObjects())
    handle.snapshot = cache.snapshot
    fit = NodeResourcesFit(handle, NodeResourcesFit.defaulted_args({}))
    spread = PodTopologySpread(handle, PodTopologySpread.defaulted_args({}))
    constraint = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "gang"}},
    }
    spec = {"topologySpreadConstraints": [constraint]}
    incoming = PodInfo(make_pod(name="in", labels={"app": "gang"}, requests={"cpu": "800m"}, spec=spec))

    def check(expected_fits: list[bool]) -> None:
        cached, fresh = _fits(fit, handle, incoming)
        assert cached == fresh == expected_fits
        cached_counts, fresh_counts = _spread(spread, handle, incoming)
        assert cached_counts == fresh_counts

    check([True, True])
    held = _member("g-1")
    cache.add_pod(held)  # assumed in Permit
    check([False, True])
    cache.remove_pod(held.uid)  # rejected while waiting: forgotten; the next cycle reads the journal
    check([True, True])
    cache.add_pod(PodInfo(copy.deepcopy(held.pod)))  # tried again, assumed on the same node
    check([False, True])
    cache.add_pod(PodInfo(copy.deepcopy(held.pod)))  # its binding comes back
    check([False, True])

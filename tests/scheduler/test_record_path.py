"""Recording through the batch path (matrices) keeps exactly what the per-node loop records, and the incremental
per-pod-shape aggregates of InterPodAffinity / PodTopologySpread equal a count from scratch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kss_sim.results.annotations import POSTFILTER_RESULT, attempt_annotations
from kss_sim.results.codec import _encode_v1, decode_matrices, encode_matrices
from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler, num_feasible_nodes_to_find
from kss_sim.scheduler.framework import CycleState, Handle
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.loop import unschedulable_plugins
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.inter_pod_affinity import InterPodAffinity, _PreScoreCounter, pod_terms
from kss_sim.scheduler.plugins.pod_topology_spread import PRE_FILTER_STATE_KEY, PodTopologySpread
from kss_sim.scheduler.profiles import build_framework
from kss_sim.scheduler.record import Attempt
from kss_sim.simulation.runner import ScenarioRun
from tests.scheduler.factories import make_node, make_pod

GOLDEN = Path(__file__).resolve().parents[2].parent / "shared" / "golden"
SCENARIOS = sorted(p for p in GOLDEN.glob("*/*.scenario.json") if p.parent.name not in {"large", "sampling"})
FIELDS = (
    "result", "bound_to", "bound_by", "message", "nominated_node", "victims", "prefilter", "prefilter_status",
    "filter", "unresolvable", "filter_fail", "feasible", "feasible_count", "evaluated_nodes", "prescore", "score",
    "normalized_score", "final_score", "total", "selected", "postfilter",
)  # fmt: skip


def _record(att: Attempt) -> dict[str, Any]:
    out = {f: getattr(att, f) for f in FIELDS}
    out["feasible"] = sorted(out["feasible"])
    return out


def _run(scenario: dict[str, Any], batch: bool) -> list[Attempt]:
    run = ScenarioRun(scenario, record=True)
    opts = run.options()
    opts.batch = batch
    run.options = lambda: opts  # type: ignore[method-assign]
    return [att for att, _ in run.run() if att.pre_enqueue is None]


@pytest.mark.skipif(not SCENARIOS, reason="golden corpus ../shared/golden not present")
@pytest.mark.parametrize("path", SCENARIOS[::7], ids=lambda p: f"{p.parent.name}/{p.name.split('.')[0]}")
def test_batch_record_equals_the_per_node_record(path: Path) -> None:
    scenario = json.loads(path.read_text())
    batch, per_node = _run(scenario, True), _run(scenario, False)
    assert [_record(a) for a in batch] == [_record(a) for a in per_node]
    for att in batch:
        if att.has_record():
            assert decode_matrices(encode_matrices(att)) == decode_matrices(_encode_v1(att))


def _scheduler(nodes: int, config: str | None = None) -> tuple[Scheduler, SchedulerCache]:
    cache = SchedulerCache()
    for i in range(nodes):
        cache.add_node(make_node(name=f"n{i:03d}", labels={"topology.kubernetes.io/zone": f"z{i % 3}"}))
    cfg = parse_config(config)
    handle = Handle(ClusterObjects())
    fwks = {p.scheduler_name: build_framework(p, handle) for p in cfg.profiles}
    sched = Scheduler(fwks, cache.snapshot, percentage_of_nodes_to_score=cfg.percentage_of_nodes_to_score, cache=cache)
    return sched, cache


def test_sampled_walk_is_recorded_as_the_per_node_loop_records_it() -> None:
    records = []
    for batch in (True, False):
        sched, _ = _scheduler(300)
        atts = []
        for i in range(4):
            pod = PodInfo(make_pod(name=f"p{i}", requests={"cpu": "10m"}))
            atts.append(
                sched.schedule_one(pod, 1, ScheduleOptions(batch=batch, tie_break="name", run_binding_cycle=False))
            )
        records.append([_record(a) for a in atts])
    assert records[0] == records[1]
    # The walk stops after numFeasibleNodesToFind feasible nodes (every node fits here).
    assert len(records[0][1]["filter"]) == num_feasible_nodes_to_find(0, 300) == 144


@pytest.mark.parametrize("fits_elsewhere", [True, False], ids=["fits-elsewhere", "fits-nowhere"])
def test_nominated_pods_are_recorded_as_the_per_node_loop_records_them(fits_elsewhere: bool) -> None:
    """Nodes holding a nomination of higher priority are filtered with the nominated pod added (its 3 CPU leave
    too little for a 2-CPU pod, a verdict that differs from the node's own); the batch path records them as the
    per-node loop does, instead of handing the whole cycle to it."""
    records = []
    for batch in (True, False):
        sched, cache = _scheduler(40)
        fwk = sched.frameworks["default-scheduler"]
        nominated = range(0, 10, 3)
        for i in range(40):
            if not fits_elsewhere and i not in nominated:  # every other node too full for the pod on its own
                cache.add_pod(PodInfo(make_pod(name=f"big{i}", node_name=f"n{i:03d}", requests={"cpu": "3"})))
        for i in nominated:
            nominee = PodInfo(make_pod(name=f"preemptor{i}", priority=100, requests={"cpu": "3"}))
            fwk.handle.add_nominated_pod(nominee, f"n{i:03d}")
        atts = []
        for i in range(3):
            pod = PodInfo(make_pod(name=f"p{i}", priority=0, requests={"cpu": "2"}))
            atts.append(
                sched.schedule_one(pod, 1, ScheduleOptions(batch=batch, tie_break="name", run_binding_cycle=False))
            )
        records.append([_record(a) for a in atts])
        assert all((a.filter_matrix is not None) == batch for a in atts)  # the batch path kept the cycle
    assert records[0] == records[1]
    nominated_node = records[1][0]["filter"]["n000"]
    assert nominated_node["NodeResourcesFit"] != "passed"  # the nominated pod's CPU counted
    assert (records[1][0]["result"] == "scheduled") == fits_elsewhere


def test_a_pod_bound_to_its_nominated_node_records_the_others_as_the_per_node_loop() -> None:
    """The nominated node is tried first and, when the pod fits there, every other node is recorded for display
    (``_record_only``): on the batch path as matrix rows, with other nominations counted on their nodes."""
    records, blobs, annotations = [], [], []
    for batch in (True, False):
        sched, cache = _scheduler(30)
        fwk = sched.frameworks["default-scheduler"]
        for i in range(0, 30, 2):
            cache.add_pod(PodInfo(make_pod(name=f"big{i}", node_name=f"n{i:03d}", requests={"cpu": "3"})))
        fwk.handle.add_nominated_pod(PodInfo(make_pod(name="other", priority=100, requests={"cpu": "3"})), "n005")
        raw = make_pod(name="preemptor", priority=50, requests={"cpu": "2"})
        raw["status"] = {"nominatedNodeName": "n007"}
        att = sched.schedule_one(
            PodInfo(raw), 1, ScheduleOptions(batch=batch, tie_break="name", run_binding_cycle=False)
        )
        assert att.bound_by == "nominated-node" and att.bound_to == "n007"
        assert (att.filter_matrix is not None) == batch
        # The nominated node's row is in the matrix too and the lone node scored as matrices: the record is
        # matrices only (encoded and annotated from the arrays), and decodes as the dicts do.
        assert (att.matrices_only() is not None) == batch
        blobs.append(decode_matrices(encode_matrices(att)))
        assert blobs[-1] == decode_matrices(_encode_v1(att))
        annotations.append(attempt_annotations(att))
        records.append(_record(att))
    assert records[0] == records[1]
    assert blobs[0] == blobs[1] and annotations[0] == annotations[1]
    assert [next(iter(r["filter"])) for r in records] == ["n007", "n007"] and records[0]["score"] is not None
    assert len(records[1]["filter"]) == 30
    assert records[1]["filter"]["n005"]["NodeResourcesFit"] != "passed"  # the other nomination counted there
    assert records[1]["filter"]["n002"]["NodeResourcesFit"] != "passed"


def test_a_failed_preemptor_is_annotated_and_requeued_from_its_matrix_as_from_its_dicts() -> None:
    """A pod that fits nowhere and preempts: its annotations (the postfilter map names every recorded node) and
    the plugins it waits on come from the matrix without building the per-node dicts, and equal the per-node
    loop's."""
    seen = []
    for batch in (True, False):
        sched, cache = _scheduler(40)
        for i in range(40):
            cache.add_pod(PodInfo(make_pod(name=f"low{i}", node_name=f"n{i:03d}", requests={"cpu": "3"})))
        pod = PodInfo(make_pod(name="preemptor", priority=100, requests={"cpu": "2"}))
        att = sched.schedule_one(pod, 1, ScheduleOptions(batch=batch, tie_break="name", run_binding_cycle=False))
        assert att.result == "unschedulable" and att.nominated_node
        plugins = unschedulable_plugins(att)
        values = attempt_annotations(att)
        if batch:
            assert not {"_filter_from", "_filter_fail_from"} & set(att.__dict__)  # no dict was built
        seen.append((plugins, values, _record(att)))
    assert seen[0] == seen[1]
    assert seen[0][0] == {"NodeResourcesFit"}
    postfilter = json.loads(seen[0][1][POSTFILTER_RESULT])
    assert len(postfilter) == 40 and postfilter[seen[0][2]["nominated_node"]] == {
        "DefaultPreemption": "preemption victim"
    }


def test_incremental_aggregates_equal_a_count_from_scratch() -> None:
    sched, cache = _scheduler(12)
    fwk = sched.frameworks["default-scheduler"]
    ipa = fwk.plugins_by_name["InterPodAffinity"]
    pts = fwk.plugins_by_name["PodTopologySpread"]
    assert isinstance(ipa, InterPodAffinity) and isinstance(pts, PodTopologySpread)
    anti = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "a"}}, "topologyKey": "kubernetes.io/hostname"}
            ],
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 5,
                    "podAffinityTerm": {
                        "labelSelector": {"matchLabels": {"app": "a"}},
                        "topologyKey": "topology.kubernetes.io/zone",
                    },
                }
            ],
        }
    }
    spread = [
        {
            "maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "a"}},
        }
    ]

    def shaped(name: str) -> PodInfo:
        raw = make_pod(name=name, labels={"app": "a"}, requests={"cpu": "10m"})
        raw["spec"]["affinity"] = anti
        raw["spec"]["topologySpreadConstraints"] = spread
        return PodInfo(raw)

    placed = []
    for i in range(8):
        pod = shaped(f"a{i}")
        att = sched.schedule_one(pod, 1, ScheduleOptions(record=False, run_binding_cycle=False))
        assert att.result == "scheduled"
        placed.append(pod.uid)
        if i % 3 == 2:
            cache.remove_pod(placed.pop(0))  # removals are replayed too
    probe = shaped("probe")
    nodes = sched.snapshot.node_info_list
    cached = ipa._cached_pre_filter_state(probe, nodes)
    fresh = ipa._compute_pre_filter_state(probe, nodes, pod_terms(probe))
    assert cached is not None
    assert dict(cached.existing_anti_affinity_counts) == dict(fresh.existing_anti_affinity_counts)
    assert dict(cached.anti_affinity_counts) == dict(fresh.anti_affinity_counts)
    scorer = _PreScoreCounter(ipa, probe, pod_terms(probe), has_constraints=True)
    assert ipa._cached_pre_score_sums(probe, scorer) == scorer.full()
    state = CycleState()
    pts.pre_filter(state, probe, nodes)
    counts = pts._count(probe, pts._constraints(probe, "DoNotSchedule"), nodes)
    assert state.read(PRE_FILTER_STATE_KEY).tp_value_to_match_num == counts


def _named_nodes_pod(name: str, nodes: list[str], cpu: str = "10m") -> PodInfo:
    """A DaemonSet pod's shape: required node affinity on metadata.name, so NodeAffinity's PreFilterResult names
    ``nodes`` and leaves every other node out."""
    # One term per node: a metadata.name requirement takes one value (kube-apiserver's field selector).
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [n]}]} for n in nodes]
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    return PodInfo(make_pod(name=name, requests={"cpu": cpu}, affinity=affinity))


def _ordered(att: Attempt) -> dict[str, Any]:
    """The record with its per-node dicts as lists of items: the order the nodes were recorded in counts too."""
    out = _record(att)
    for f in ("filter", "unresolvable", "filter_fail"):
        out[f] = list(out[f].items())
    return out


@pytest.mark.parametrize(
    ("named", "cpu", "result"),
    [
        (["n007"], "10m", "scheduled"),
        (["n031", "n002", "n999"], "10m", "scheduled"),  # n999 does not exist
        (["n010", "n011"], "64", "unschedulable"),  # fits nowhere: the left-out nodes stay out of the diagnosis
        (["n999"], "10m", "unschedulable"),  # no named node exists: nothing to filter
    ],
)
def test_nodes_a_prefilter_result_leaves_out_are_recorded_as_the_per_node_loop_records_them(
    named: list[str], cpu: str, result: str
) -> None:
    records = []
    atts = []
    for batch in (True, False):
        sched, cache = _scheduler(40)
        # Some left-out nodes rejected by another plugin too (their reasons and unresolvable plugins are recorded).
        taint = {"key": "dedicated", "value": "x", "effect": "NoSchedule"}
        for i in range(0, 40, 9):
            cache.add_node(make_node(name=f"n{i:03d}", taints=[taint], labels={"topology.kubernetes.io/zone": "z0"}))
        sched.next_start_node_index = 5
        att = sched.schedule_one(
            _named_nodes_pod("ds", named, cpu),
            1,
            ScheduleOptions(batch=batch, tie_break="name", run_binding_cycle=False),
        )
        records.append(_ordered(att))
        atts.append(att)
    assert records[0] == records[1]
    assert atts[0].result == result
    assert len(records[0]["filter"]) == 40  # every node, the left-out ones first
    assert [n for n, _ in records[0]["filter"]][: 40 - len(set(named) - {"n999"})] == [
        f"n{i:03d}" for i in range(40) if f"n{i:03d}" not in named
    ]
    assert records[0]["filter_fail"]
    batch_att = atts[0]
    if named != ["n999"]:
        # Through the batch path the whole record is one matrix (the results writer's compact form).
        assert batch_att.matrices_only() is not None
    assert decode_matrices(encode_matrices(batch_att)) == decode_matrices(_encode_v1(batch_att))

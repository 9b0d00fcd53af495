"""InterPodAffinity against kube-scheduler's own verdicts in the golden corpus, in isolation.

Each scenario is replayed with the placements (and preemption victims) kube-scheduler made, so the
plugin's PreFilter / Filter / PreScore / Score / NormalizeScore are judged on exactly the cluster state
kube-scheduler saw, whatever the other plugins of the simulator do.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.framework import Code, CycleState, Handle, NodeScore
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from kss_sim.scheduler.runtime import status_text
from kss_sim.scheduler.snapshot import Snapshot
from tests.scheduler.golden_replay import follow_kube_scheduler

GOLDEN = Path(__file__).resolve().parents[3].parent / "shared" / "golden"
NAME = InterPodAffinity.name


def _scenarios() -> list[Path]:
    if not GOLDEN.is_dir():
        return []
    found: list[Path] = []
    for family in sorted(p.name for p in GOLDEN.iterdir() if p.is_dir()):
        if family in ("trace", "sampling"):
            continue  # placements only: nothing per plugin to compare
        found.extend(sorted((GOLDEN / family).glob("*.scenario.json")))
    return found


def _visible(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _args(profiles: list[dict[str, Any]], scheduler_name: str) -> dict[str, Any]:
    """The profile's InterPodAffinity args, defaulted and validated as the configuration loader does."""
    for profile in profiles:
        if profile.get("schedulerName", "default-scheduler") != scheduler_name:
            continue
        for pc in profile.get("pluginConfig") or []:
            if pc.get("name") == NAME:
                args = InterPodAffinity.defaulted_args(pc.get("args") or {})
                assert InterPodAffinity.validate_args(args) == []
                return args
    return InterPodAffinity.defaulted_args({})


def _replay(scenario_path: Path) -> list[str]:
    scenario = json.loads(scenario_path.read_text())
    expected = json.loads(scenario_path.with_name(scenario_path.name.replace(".scenario.", ".expected.")).read_text())
    detail = expected["detail"]
    profiles = (scenario.get("config") or {}).get("profiles") or [{}]
    weight = expected["weights"].get(NAME, 0)

    cluster = ClusterObjects()
    for ns in scenario.get("namespaces") or []:
        cluster.namespaces[ns["metadata"]["name"]] = ns
    handle = Handle(cluster)
    handle.snapshot = Snapshot.build(scenario["nodes"], [p for p in scenario.get("pods") or [] if _visible(p)])
    pending = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in scenario.get("pending") or []}
    plugins: dict[str, InterPodAffinity] = {}
    problems: list[str] = []

    for i, entry in enumerate(expected["results"]):
        where = f"#{i} {entry['pod']} attempt {entry['attempt']}"
        raw = copy.deepcopy(pending[entry["pod"]])
        pod = PodInfo(raw)
        want_prefilter = (entry.get("prefilter") or {}).get(NAME)
        if want_prefilter is not None:
            scheduler_name = pod.spec.get("schedulerName") or "default-scheduler"
            if scheduler_name not in plugins:
                plugins[scheduler_name] = InterPodAffinity(handle, _args(profiles, scheduler_name))
            plugin = plugins[scheduler_name]
            snapshot = handle.snapshot
            state = CycleState()
            _, st = plugin.pre_filter(state, pod, snapshot.node_info_list)
            if status_text(st) != want_prefilter:
                problems.append(f"{where}: prefilter expected {want_prefilter!r} got {status_text(st)!r}")
            restricted = entry.get("prefilterNodes")
            if entry.get("prefilterStatus") == "success":
                unresolvable = entry.get("unresolvable") or {}
                for ni in snapshot.node_info_list:
                    if restricted is not None and ni.name not in restricted:
                        continue
                    node_filter = (entry.get("filter") or {}).get(ni.name) or {}
                    want = node_filter.get(NAME, "passed" if detail == "compact" else None)
                    if want is None:
                        continue
                    if st.is_skip():
                        got = "skip"
                        code = Code.SKIP
                    else:
                        fst = plugin.filter(state, pod, ni)
                        got = "passed" if fst.is_success() else fst.message()
                        code = fst.code
                    if detail == "compact" and got == "skip":
                        got = "passed"  # compact files list failures only
                    if got != want:
                        problems.append(f"{where} node {ni.name}: filter expected {want!r} got {got!r}")
                    if (code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE) != (NAME in unresolvable.get(ni.name, [])):
                        problems.append(f"{where} node {ni.name}: unresolvable differs (got {code.label})")
            want_prescore = (entry.get("prescore") or {}).get(NAME)
            if want_prescore is not None:
                feasible = [snapshot.node_info_map[n] for n in entry.get("feasible") or []]
                pst = plugin.pre_score(state, pod, feasible)
                if status_text(pst) != want_prescore:
                    problems.append(f"{where}: prescore expected {want_prescore!r} got {status_text(pst)!r}")
                if pst.is_success():
                    scores, sst = plugin.score_nodes(state, pod, feasible)
                    assert sst.is_success(), sst
                    node_scores = [NodeScore(ni.name, s) for ni, s in zip(feasible, scores, strict=True)]
                    plugin.normalize_score(state, pod, node_scores)
                    for ni, s, ns in zip(feasible, scores, node_scores, strict=True):
                        checks = [
                            ("score", s),
                            ("normalizedscore", ns.score),
                            ("finalscore", ns.score * weight),
                        ]
                        for cat, value in checks:
                            want_value = ((entry.get(cat) or {}).get(ni.name) or {}).get(NAME)
                            if entry.get(cat) is not None and want_value != value:
                                problems.append(f"{where} node {ni.name}: {cat} expected {want_value} got {value}")
        follow_kube_scheduler(handle.snapshot, entry, raw)
    return problems


@pytest.mark.parametrize("scenario_path", _scenarios(), ids=lambda p: p.name.split(".")[0])
def test_inter_pod_affinity_agrees_with_kube_scheduler_on_golden_scenarios(scenario_path: Path) -> None:
    problems = _replay(scenario_path)
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:15])

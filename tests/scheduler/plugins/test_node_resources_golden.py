"""NodeResourcesFit and NodeResourcesBalancedAllocation against kube-scheduler's verdicts in the golden corpus.

Each scenario is replayed with the placements (and preemption victims) kube-scheduler made, so the two
plugins' PreFilter / Filter / PreScore / Score are judged on exactly the cluster state kube-scheduler saw,
whatever the simulator's other plugins do. Filter messages are compared word for word.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from kss_sim.scheduler.framework import Code, CycleState, Plugin
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
from kss_sim.scheduler.plugins.node_resources_fit import NodeResourcesFit
from kss_sim.scheduler.runtime import status_text
from kss_sim.scheduler.snapshot import Snapshot
from tests.scheduler.factories import make_handle
from tests.scheduler.golden_replay import follow_kube_scheduler

GOLDEN = Path(__file__).resolve().parents[3].parent / "shared" / "golden"
FIT = NodeResourcesFit.name
BALANCED = NodeResourcesBalancedAllocation.name
# Every full/compact family runs both plugins; KSS_GOLDEN_FAMILIES widens the default selection.
FAMILIES = os.environ.get("KSS_GOLDEN_FAMILIES", "resources,config,preemption,mixed").split(",")


def _scenarios() -> list[Path]:
    if not GOLDEN.is_dir():
        return []
    return [p for family in FAMILIES for p in sorted((GOLDEN / family).glob("*.scenario.json"))]


def _visible(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def _args(cls: type[Plugin], profiles: list[dict[str, Any]], scheduler_name: str) -> dict[str, Any]:
    """The profile's args for ``cls``, defaulted and validated as the configuration loader does."""
    for profile in profiles:
        if profile.get("schedulerName", "default-scheduler") != scheduler_name:
            continue
        for pc in profile.get("pluginConfig") or []:
            if pc.get("name") == cls.name:
                args = cls.defaulted_args(pc.get("args") or {})
                assert cls.validate_args(args) == []
                return args
    return cls.defaulted_args({})


def _replay(scenario_path: Path) -> list[str]:
    scenario = json.loads(scenario_path.read_text())
    expected = json.loads(scenario_path.with_name(scenario_path.name.replace(".scenario.", ".expected.")).read_text())
    if expected["detail"] not in ("full", "compact"):
        return []
    compact = expected["detail"] == "compact"
    profiles = (scenario.get("config") or {}).get("profiles") or [{}]

    handle = make_handle(version="1.35")  # the corpus's expected files are kube-scheduler v1.35.4's
    handle.snapshot = Snapshot.build(scenario["nodes"], [p for p in scenario.get("pods") or [] if _visible(p)])
    pending = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in scenario.get("pending") or []}
    fits: dict[str, NodeResourcesFit] = {}
    balanced: dict[str, NodeResourcesBalancedAllocation] = {}
    problems: list[str] = []

    for i, entry in enumerate(expected["results"]):
        where = f"#{i} {entry['pod']} attempt {entry['attempt']}"
        raw = copy.deepcopy(pending[entry["pod"]])
        pod = PodInfo(raw)
        scheduler_name = pod.spec.get("schedulerName") or "default-scheduler"
        if scheduler_name not in fits:
            fits[scheduler_name] = NodeResourcesFit(handle, _args(NodeResourcesFit, profiles, scheduler_name))
            balanced[scheduler_name] = NodeResourcesBalancedAllocation(
                handle, _args(NodeResourcesBalancedAllocation, profiles, scheduler_name)
            )
        fit, bal = fits[scheduler_name], balanced[scheduler_name]
        snapshot = handle.snapshot
        state = CycleState()
        nominated = [
            (PodInfo(copy.deepcopy(pending[key])), node)
            for key, node in handle_nominations(expected["results"][:i])
            if key != entry["pod"] and pending[key]["spec"].get("priority", 0) >= pod.priority
        ]

        want_prefilter = (entry.get("prefilter") or {}).get(FIT)
        if want_prefilter is not None:
            _, st = fit.pre_filter(state, pod, snapshot.node_info_list)
            if status_text(st) != want_prefilter:
                problems.append(f"{where}: prefilter expected {want_prefilter!r} got {status_text(st)!r}")
            if entry.get("prefilterStatus") == "success":
                restricted = entry.get("prefilterNodes")
                unresolvable = entry.get("unresolvable") or {}
                for ni in snapshot.node_info_list:
                    if restricted is not None and ni.name not in restricted:
                        continue
                    want = ((entry.get("filter") or {}).get(ni.name) or {}).get(FIT, "passed" if compact else None)
                    if want is None:
                        continue
                    info = ni
                    extra = [p for p, node in nominated if node == ni.name]
                    if extra:
                        info = ni.clone()
                        for p in extra:
                            info.add_pod(p)
                    fst = fit.filter(state, pod, info)
                    got = "passed" if fst.is_success() else fst.message()
                    if got != want:
                        problems.append(f"{where} node {ni.name}: filter expected {want!r} got {got!r}")
                    if (fst.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE) != (FIT in unresolvable.get(ni.name, [])):
                        problems.append(f"{where} node {ni.name}: unresolvable differs (got {fst.code.label})")

        feasible = [snapshot.node_info_map[n] for n in entry.get("feasible") or []]
        for plugin in (fit, bal):
            want_prescore = (entry.get("prescore") or {}).get(plugin.name)
            if want_prescore is None:
                continue
            pst = plugin.pre_score(state, pod, feasible)
            if status_text(pst) != want_prescore:
                problems.append(f"{where}: {plugin.name} prescore expected {want_prescore!r} got {status_text(pst)!r}")
            if not pst.is_success():
                continue
            if plugin.name not in expected["plugins"].get("score", []) or entry.get("score") is None:
                continue  # PreScore ran, Score is disabled (or nothing was scored)
            scores, sst = plugin.score_nodes(state, pod, feasible)
            assert sst.is_success(), sst
            for ni, s in zip(feasible, scores, strict=True):
                want_score = ((entry.get("score") or {}).get(ni.name) or {}).get(plugin.name)
                if want_score != s:
                    problems.append(f"{where} node {ni.name}: {plugin.name} score expected {want_score} got {s}")

        follow_kube_scheduler(handle.snapshot, entry, raw)
    return problems


def handle_nominations(done: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Pods nominated by preemption and not bound since (filters see them on their node)."""
    nominated: dict[str, str] = {}
    for entry in done:
        node = (entry.get("postfilter") or {}).get("nominatedNode")
        if node:
            # Preemption clears lower-priority nominations on the node it nominates.
            for key, other in list(nominated.items()):
                if other == node and entry.get("priority", 0) > _priority(done, key):
                    del nominated[key]
            nominated[entry["pod"]] = node
        if entry.get("boundTo"):
            nominated.pop(entry["pod"], None)
    return list(nominated.items())


def _priority(done: list[dict[str, Any]], key: str) -> int:
    for entry in done:
        if entry["pod"] == key:
            return int(entry.get("priority") or 0)
    return 0


@pytest.mark.parametrize("scenario_path", _scenarios(), ids=lambda p: p.name.split(".")[0])
def test_node_resources_plugins_agree_with_kube_scheduler_on_golden_scenarios(scenario_path: Path) -> None:
    problems = _replay(scenario_path)
    assert not problems, f"{len(problems)} mismatches:\n" + "\n".join(problems[:15])

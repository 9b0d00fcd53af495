"""The four volume plugins against kube-scheduler's verdicts in the golden ``volumes`` family.

Each scenario is replayed with kube-scheduler's own placements and preemption victims, so PreFilter and
Filter of VolumeRestrictions, NodeVolumeLimits, VolumeBinding and VolumeZone are judged on exactly the
cluster state it saw (including VolumeBinding's assumed bindings after each Reserve), whatever the
simulator's other plugins do. Messages are compared word for word.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from kss_sim.scheduler.framework import CycleState, FilterPlugin, PreFilterPlugin, ReservePlugin, Status
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.node_volume_limits import NodeVolumeLimits
from kss_sim.scheduler.plugins.volume_binding import VolumeBinding
from kss_sim.scheduler.plugins.volume_restrictions import VolumeRestrictions
from kss_sim.scheduler.plugins.volume_zone import VolumeZone
from kss_sim.scheduler.runtime import status_text
from kss_sim.scheduler.snapshot import Snapshot
from tests.scheduler.factories import add_storage, make_handle

GOLDEN = Path(__file__).resolve().parents[3].parent / "shared" / "golden"
PLUGIN_CLASSES = (VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone)


def _scenarios() -> list[Path]:
    return sorted((GOLDEN / "volumes").glob("*.scenario.json")) if GOLDEN.is_dir() else []


def _filter_text(st: Status) -> str:
    return "passed" if st.is_success() else st.message()


def _replay(path: Path) -> list[str]:
    scenario = json.loads(path.read_text())
    expected = json.loads(path.with_name(path.name.replace(".scenario.", ".expected.")).read_text())
    handle = add_storage(
        make_handle(version="1.35"),  # the corpus's expected files are kube-scheduler v1.35.4's
        pvcs=scenario.get("persistentVolumeClaims") or [],
        pvs=scenario.get("persistentVolumes") or [],
        storage_classes=scenario.get("storageClasses") or [],
        csi_nodes=scenario.get("csiNodes") or [],
        csi_drivers=scenario.get("csiDrivers") or [],
    )
    bound = [
        p for p in scenario.get("pods") or [] if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    ]
    handle.snapshot = Snapshot.build(scenario["nodes"], bound)
    plugins: list[Any] = [cls(handle, cls.defaulted_args({})) for cls in PLUGIN_CLASSES]
    pending = {f"{p['metadata']['namespace']}/{p['metadata']['name']}": p for p in scenario.get("pending") or []}
    problems: list[str] = []
    for i, entry in enumerate(expected["results"]):
        where = f"#{i} {entry['pod']}"
        pod = PodInfo(copy.deepcopy(pending[entry["pod"]]))
        state = CycleState()
        skipped: set[str] = set()
        for pl in plugins:
            assert isinstance(pl, PreFilterPlugin)
            _, st = pl.pre_filter(state, pod, handle.snapshot.node_info_list)
            if st.is_skip():
                skipped.add(pl.name)
            got, want = status_text(st), entry["prefilter"][pl.name]
            if got != want:
                problems.append(f"{where} prefilter {pl.name}: expected {want!r} got {got!r}")
        if entry["prefilterStatus"] == "success":
            for node, verdicts in entry["filter"].items():
                ni = handle.snapshot.get(node)
                assert ni is not None
                for pl in plugins:
                    assert isinstance(pl, FilterPlugin)
                    got = "skip" if pl.name in skipped else _filter_text(pl.filter(state, pod, ni))
                    if got != verdicts[pl.name]:
                        problems.append(f"{where} {node} {pl.name}: expected {verdicts[pl.name]!r} got {got!r}")
        for victim in (entry.get("postfilter") or {}).get("victims") or []:
            for ni in handle.snapshot.node_info_list:
                for p in list(ni.pods):
                    if p.key == victim:
                        handle.snapshot.remove_pod(p)
        if entry.get("boundTo"):
            placed = copy.deepcopy(pod.pod)
            placed["spec"]["nodeName"] = entry["boundTo"]
            assumed = PodInfo(placed)
            handle.snapshot.add_pod(assumed, entry["boundTo"])
            for pl in plugins:
                if isinstance(pl, ReservePlugin):
                    assert pl.reserve(state, assumed, entry["boundTo"]).is_success()
    return problems


@pytest.mark.skipif(not _scenarios(), reason="golden corpus not present")
@pytest.mark.parametrize("path", _scenarios(), ids=lambda p: p.name.split(".")[0])
def test_volume_plugins_agree_with_kube_scheduler(path: Path) -> None:
    problems = _replay(path)
    assert problems == [], "\n".join(problems[:20])

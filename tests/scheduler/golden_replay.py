"""Helpers for tests that replay golden scenarios plugin by plugin, following kube-scheduler's decisions."""

from __future__ import annotations

from typing import Any

from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.snapshot import Snapshot


def follow_kube_scheduler(snapshot: Snapshot, entry: dict[str, Any], raw_pod: dict[str, Any]) -> None:
    """Apply what kube-scheduler decided for one golden entry: its victims leave, the pod binds where it went."""
    for victim in (entry.get("postfilter") or {}).get("victims") or []:
        for ni in snapshot.node_info_list:
            for existing in list(ni.pods):
                if existing.key == victim:
                    snapshot.remove_pod(existing)
    if entry.get("boundTo"):
        raw_pod["spec"]["nodeName"] = entry["boundTo"]
        snapshot.add_pod(PodInfo(raw_pod), entry["boundTo"])

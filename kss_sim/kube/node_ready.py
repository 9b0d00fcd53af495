"""The Ready condition a node's kubelet reports, as ``kss node fail|heal`` and the UI's node page set it by hand.

Written through the node's ``status`` subresource as a strategic merge patch (conditions merge by ``type``), so the
node lifecycle controller then taints the node and the taint eviction controller moves its pods off, as on a
cluster whose kubelet reported it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

# report -> (Ready status, reason, message), as the kubelet (or the node lifecycle controller, Unknown) writes them
NODE_REPORTS = {
    "fail": ("False", "KubeletNotReady", "kss node fail: the node's kubelet reports NotReady"),
    "unreachable": ("Unknown", "NodeStatusUnknown", "Kubelet stopped posting node status."),
    "heal": ("True", "KubeletReady", "kubelet is posting ready status"),
}

# kube-controller-manager's --node-monitor-grace-period: how long a node's Lease may go unrenewed before the node
# lifecycle controller marks it Unknown. 40 s until kubernetes/kubernetes#126287 made it 50 s in v1.32.
NODE_MONITOR_GRACE_PERIOD = 50.0
NODE_MONITOR_GRACE_PERIOD_BEFORE_1_32 = 40.0


def node_monitor_grace_period(minor: int) -> float:
    """``--node-monitor-grace-period``'s default at Kubernetes ``1.minor``."""
    return NODE_MONITOR_GRACE_PERIOD if minor >= 32 else NODE_MONITOR_GRACE_PERIOD_BEFORE_1_32


def ready_condition(report: str, now: datetime | None = None) -> dict[str, Any]:
    """The Ready condition of ``report`` (a key of ``NODE_REPORTS``), its times ``now`` (the wall clock)."""
    status, reason, message = NODE_REPORTS[report]
    stamp = (now or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "type": "Ready",
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": stamp,
        "lastTransitionTime": stamp,
    }


def ready_status(node: Mapping[str, Any]) -> str | None:
    """The node's Ready condition's status (True, False, Unknown), None without one."""
    found = (node.get("status") or {}).get("conditions") or []
    ready = next((c for c in found if isinstance(c, dict) and c.get("type") == "Ready"), None)
    return str(ready.get("status") or "Unknown") if ready is not None else None


def ready_status_patch(report: str, now: datetime | None = None) -> dict[str, Any]:
    """The strategic merge patch of the node's ``status`` subresource that reports ``report``."""
    return {"status": {"conditions": [ready_condition(report, now)]}}

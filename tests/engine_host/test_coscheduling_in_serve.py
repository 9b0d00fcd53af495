"""Coscheduling end to end in a real ``kss serve``, driven with the real kubectl as a user would: enabled by a
KubeSchedulerConfiguration file, PodGroups and their pods applied from YAML.

- a gang of 8 that fits is bound all together (none bound before the eighth is reserved);
- a gang that cannot reach minMember binds none, and every member says why;
- a gang whose quorum never comes times out: every reservation released, every member back to pending; with
  SchedulerPopFromBackoffQ (on by default in v1.35) the members are retried at once while activeQ is empty and wait
  again, a pod in activeQ goes before them, and the gang is bound all together once its last member can fit.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import KubectlRunner, Server, start_server

SCHEDULER_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 3
      podGroupRejectPercentage: 50
"""


@pytest.fixture(scope="module")
def gang_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, KubectlRunner]]:
    workdir = tmp_path_factory.mktemp("kss-gangs")
    (workdir / "sched.yaml").write_text(SCHEDULER_CONFIG)
    srv = start_server(
        workdir, f"sqlite:///{workdir / 'kss.db'}", env={"KSS_SCHEDULER_CONFIG": str(workdir / "sched.yaml")}
    )
    yield srv, KubectlRunner(srv.kubeconfig)
    srv.stop()


def _nodes(n: int, cpu: str) -> str:
    return "".join(
        f"""---
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{kubernetes.io/hostname: {name}}}
status:
  allocatable: {{cpu: "{cpu}", memory: 16Gi, pods: "110"}}
  capacity: {{cpu: "{cpu}", memory: 16Gi, pods: "110"}}
"""
        for name in (f"node-{i}" for i in range(n))
    )


def _gang(ns: str, group: str, min_member: int, members: int, cpu: str, timeout: int | None = None) -> str:
    spec = f"  minMember: {min_member}\n" + (f"  scheduleTimeoutSeconds: {timeout}\n" if timeout else "")
    text = f"""---
apiVersion: scheduling.x-k8s.io/v1alpha1
kind: PodGroup
metadata:
  name: {group}
  namespace: {ns}
spec:
{spec}"""
    for i in range(members):
        text += f"""---
apiVersion: v1
kind: Pod
metadata:
  name: {group}-{i}
  namespace: {ns}
  labels: {{scheduling.x-k8s.io/pod-group: {group}}}
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.9
    resources: {{requests: {{cpu: "{cpu}"}}}}
"""
    return text


def _pods(kubectl: KubectlRunner, ns: str) -> dict[str, dict[str, Any]]:
    items = json.loads(kubectl("get", "pods", "-n", ns, "-o", "json").stdout)["items"]
    return {p["metadata"]["name"]: p for p in items}


def _wait(predicate: Any, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError("condition not reached in time")


def _latest(server: Server, ns: str, name: str) -> dict[str, Any]:
    """The pod's latest recorded attempt, in full."""
    base = f"{server.url}/simulator/v1/namespaces/{ns}/pods/{name}/results"
    deadline = time.monotonic() + 10
    while True:
        attempts = httpx.get(base).json().get("attempts") or []
        if (attempts and attempts[0]["result"] == "scheduled") or time.monotonic() > deadline:
            break
        time.sleep(0.2)  # the results are written a moment after the binding
    detail: dict[str, Any] = httpx.get(f"{base}/{attempts[0]['attempt']}").json()
    return detail


def _attempts(server: Server, ns: str, name: str) -> list[dict[str, Any]]:
    """The pod's recorded attempts, oldest first."""
    got = httpx.get(f"{server.url}/simulator/v1/namespaces/{ns}/pods/{name}/results").json()
    attempts: list[dict[str, Any]] = got.get("attempts") or []
    return sorted(attempts, key=lambda a: a["attempt"])


def _condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    return next((c for c in pod.get("status", {}).get("conditions") or [] if c["type"] == "PodScheduled"), None)


def test_gangs_with_coscheduling_through_kubectl(gang_server: tuple[Server, KubectlRunner], tmp_path: Path) -> None:
    server, kubectl = gang_server
    kubectl("apply", "-f", "-", input=_nodes(8, cpu="2"))
    kubectl("create", "namespace", "train")

    # A gang of 8 x 1 CPU on 8 nodes of 2 CPU: bound together.
    kubectl("apply", "-f", "-", input=_gang("train", "fits", 8, 8, cpu="1"))
    _wait(lambda: all(p["spec"].get("nodeName") for p in _pods(kubectl, "train").values()))
    pods = _pods(kubectl, "train")
    assert len(pods) == 8
    latest = [_latest(server, "train", name) for name in sorted(pods)]
    assert all(a["result"] == "scheduled" for a in latest)
    # Seven members waited in Permit for the last one; the one that completed the quorum did not wait.
    waited = [a.get("permitWait") for a in latest]
    assert sum(1 for w in waited if w and w["outcome"] == "allowed") == 7
    table = kubectl("get", "podgroups", "-n", "train").stdout
    assert "fits" in table and "8" in table

    # minMember 4, only 3 members exist: none is bound, each says why (PreFilter, unresolvable).
    kubectl("create", "namespace", "few")
    kubectl("apply", "-f", "-", input=_gang("few", "short", 4, 3, cpu="100m"))
    _wait(lambda: all(_condition(p) for p in _pods(kubectl, "few").values()))
    for name, pod in _pods(kubectl, "few").items():
        assert not pod["spec"].get("nodeName")
        message = _condition(pod)["message"]  # type: ignore[index]
        # Said when the pod was tried (its siblings were still being created): it waits for an event that helps.
        assert re.search(
            rf"pre-filter pod {name} cannot find enough sibling pods, current pods number: [123], minMember of group: 4",  # noqa: E501
            message,
        ), message
    events = kubectl("get", "events", "-n", "few", "--field-selector", "reason=FailedScheduling").stdout
    assert "cannot find enough sibling pods" in events

    # minMember 3: two members fit (on the two nodes freed below) and wait in Permit holding them; the third can
    # never fit (no such node), and with podGroupRejectPercentage 50 a gap of 1 in 3 does not reject the waiting
    # ones: the quorum never comes and the wait times out after permitWaitingTimeSeconds (3 s); the first to time
    # out is unreserved, which rejects its sibling.
    kubectl("delete", "pod", "-n", "train", "fits-7", "fits-6", "--grace-period=1")  # ended after 1 s, not 30 s
    kubectl("create", "namespace", "late")
    docs = _gang("late", "stuck", 3, 3, cpu="1500m").split("---\n")
    docs = [
        d.replace("spec:\n", "spec:\n  nodeSelector: {kubernetes.io/hostname: nowhere}\n")
        if "name: stuck-2" in d
        else d
        for d in docs
    ]
    # The member that cannot fit first: the last one created passes PreFilter, waits and activates the others.
    docs = [docs[0], docs[1], docs[4], docs[2], docs[3]]
    gang = "---\n".join(docs)
    kubectl("apply", "-f", "-", input=gang)
    try:
        _wait(lambda: "kss_permit_waiting_pods 2.0" in httpx.get(f"{server.url}/metrics").text, timeout=20)
    except AssertionError:
        states = {n: (p["spec"].get("nodeName"), _condition(p)) for n, p in _pods(kubectl, "late").items()}
        raise AssertionError(f"the two members did not wait together: {states}") from None

    def both_rejected() -> bool:
        pods = _pods(kubectl, "late")
        return all(
            (c := _condition(pods[n])) is not None and c["message"].startswith("0/1 nodes")
            for n in ("stuck-0", "stuck-1")
        )

    _wait(both_rejected, timeout=20)
    pods = _pods(kubectl, "late")
    messages = sorted(_condition(pods[n])["message"] for n in ("stuck-0", "stuck-1"))  # type: ignore[index]
    assert messages == [
        "0/1 nodes are available: 1 rejected due to timeout after waiting 3s at plugin Coscheduling.",
        "0/1 nodes are available: 1 rejection in Unreserve.",
    ]
    assert not any(p["spec"].get("nodeName") for p in pods.values())

    def first_rejection(name: str) -> int | None:
        """The attempt in which the member's first wait ended (the results are written a moment later)."""
        return next((a["attempt"] for a in _attempts(server, "late", name) if a["message"] in messages), None)

    _wait(lambda: all(first_rejection(n) for n in ("stuck-0", "stuck-1")))
    rejected_at = {n: first_rejection(n) or 0 for n in ("stuck-0", "stuck-1")}

    # Back in the queue, the two are popped from backoffQ at once (activeQ is empty), not after their backoff (2 s
    # and more by now): each one's next attempt was queued for less than the 1 s initial backoff, waited in Permit
    # again and timed out again (its attempt is recorded when the wait ends).
    def retry(name: str) -> dict[str, Any] | None:
        return next((a for a in _attempts(server, "late", name) if a["attempt"] > rejected_at[name]), None)

    _wait(lambda: all(retry(n) for n in ("stuck-0", "stuck-1")), timeout=20)
    for name in ("stuck-0", "stuck-1"):
        again = retry(name)
        assert again is not None and again["queuedSeconds"] < 1.0, again
        detail = httpx.get(f"{server.url}/simulator/v1/namespaces/late/pods/{name}/results/{again['attempt']}").json()
        assert detail["permitWait"]["outcome"] == "rejected" and detail["permitWait"]["plugin"] == "Coscheduling"

    # Each timeout releases the reservations: a pod in activeQ goes before the members in backoffQ and takes one of
    # the two freed nodes; the gang binds none (its members keep being tried, one fits, the other fails).
    filler = """apiVersion: v1
kind: Pod
metadata: {name: filler, namespace: late}
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.9
    resources: {requests: {cpu: "2"}}
"""
    kubectl("apply", "-f", "-", input=filler)
    _wait(lambda: bool(_pods(kubectl, "late")["filler"]["spec"].get("nodeName")))
    assert not any(p["spec"].get("nodeName") for n, p in _pods(kubectl, "late").items() if n != "filler")

    # A node where the third member fits (and room for the others): the gang is bound, all together.
    kubectl("apply", "-f", "-", input=_nodes(1, cpu="6").replace("node-0", "nowhere"))
    _wait(lambda: all(p["spec"].get("nodeName") for p in _pods(kubectl, "late").values()))
    assert _pods(kubectl, "late")["stuck-2"]["spec"]["nodeName"] == "nowhere"
    latest = [_latest(server, "late", n) for n in ("stuck-0", "stuck-1", "stuck-2")]
    assert all(a["result"] == "scheduled" for a in latest)
    # Whoever waited in Permit was let go by the quorum: none was bound before the three were reserved.
    waits = [a["permitWait"] for a in latest if a.get("permitWait")]
    assert len(waits) >= 2 and all(w["outcome"] == "allowed" for w in waits)
    _wait(lambda: "kss_permit_waiting_pods 0.0" in httpx.get(f"{server.url}/metrics").text, timeout=5)

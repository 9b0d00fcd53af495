"""The Job controller (app/controllers/job.py) and the TTL-after-finished controller over an in-memory ClusterStore
on a clock the test moves: pods made from the template and counted once through the tracking finalizer,
NonIndexed and Indexed completion, the pod-failure backoff, backoffLimit and activeDeadlineSeconds failures,
suspend and resume, work-queue Jobs, conditions and Events as v1.35 writes them, and TTL deletion."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from kubernetes import client, config

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.controllers.garbage_collector import GarbageCollector
from kss_sim.controllers.job import JobController
from kss_sim.controllers.job_parts import (
    COMPLETION_INDEX,
    CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    JOB_TRACKING_FINALIZER,
    format_indexes,
    parse_indexes,
)
from kss_sim.controllers.ttl_after_finished import TTLAfterFinishedController
from kss_sim.kube.objects import Obj
from kss_sim.main import create_app
from kss_sim.serve_cli import kubeconfig
from tests.cluster.factories import node
from tests.conftest import KUBECTL, free_port


class Clock:
    """A clock the test moves."""

    def __init__(self) -> None:
        self.now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def job(name: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "work", "image": "busybox"}]},
            },
            **spec,
        },
    }


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(clock: Clock) -> ClusterStore:
    return ClusterStore(None, clock=clock)


@pytest.fixture
def jobs(store: ClusterStore, clock: Clock) -> Iterator[JobController]:
    controller = JobController(store, clock=clock)
    controller.start()
    yield controller
    controller.stop()


def settle(*controllers: Any) -> None:
    for _ in range(3):  # one controller's writes may wake another
        for c in controllers:
            c.poke()
            assert c.wait_idle(), f"{c.name} did not settle"


def pods_of(store: ClusterStore, name: str) -> list[Obj]:
    return [p for p in store.list("Pod", "default")[0] if p["metadata"]["name"].startswith(f"{name}-")]


def active_pods(store: ClusterStore, name: str) -> list[Obj]:
    return [
        p
        for p in pods_of(store, name)
        if (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        and not p["metadata"].get("deletionTimestamp")
    ]


def finish(store: ClusterStore, pod: Obj, phase: str) -> None:
    store.patch("Pod", "default", pod["metadata"]["name"], {"status": {"phase": phase}}, "merge", subresource="status")


def status_of(store: ClusterStore, name: str) -> Obj:
    got = store.get("Job", "default", name)
    assert got is not None
    return dict(got.get("status") or {})


def conditions(store: ClusterStore, name: str) -> list[tuple[str, str, str, str]]:
    return [(c["type"], c["status"], c["reason"], c["message"]) for c in status_of(store, name).get("conditions") or []]


def events(store: ClusterStore, name: str) -> list[tuple[str, str, str]]:
    return [
        (e["type"], e["reason"], e["message"])
        for e in store.list("Event", "default")[0]
        if e["involvedObject"]["name"] == name and e["involvedObject"]["kind"] == "Job"
    ]


def test_parallel_job_runs_to_completion_counting_each_pod_once(
    store: ClusterStore, jobs: JobController, clock: Clock
) -> None:
    created = store.create("Job", job("pi", completions=5, parallelism=2))
    uid = created["metadata"]["uid"]
    settle(jobs)
    pods = active_pods(store, "pi")
    assert len(pods) == 2
    first = pods[0]
    assert first["metadata"]["generateName"] == "pi-"
    assert first["metadata"]["finalizers"] == [JOB_TRACKING_FINALIZER]
    labels = first["metadata"]["labels"]
    assert labels["app"] == "pi" and labels[CONTROLLER_UID_LABEL] == uid and labels[JOB_NAME_LABEL] == "pi"
    ref = first["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"], ref["blockOwnerDeletion"]) == (
        "Job",
        "pi",
        uid,
        True,
        True,
    )
    status = status_of(store, "pi")
    assert status["active"] == 2 and status["ready"] == 0 and status["terminating"] == 0
    assert status["startTime"] == "2026-01-01T12:00:00Z"
    assert status["uncountedTerminatedPods"] == {}
    for done in range(1, 6):
        clock.advance(1)
        finish(store, active_pods(store, "pi")[0], "Succeeded")
        settle(jobs)
        status = status_of(store, "pi")
        assert status.get("succeeded") == done
        # active = min(parallelism, completions - succeeded)
        assert status.get("active", 0) == min(2, 5 - done) == len(active_pods(store, "pi"))
    assert len(pods_of(store, "pi")) == 5  # never more pods than needed
    assert all(p["metadata"].get("finalizers") is None for p in pods_of(store, "pi"))
    status = status_of(store, "pi")
    assert status["uncountedTerminatedPods"] == {} and "failed" not in status
    assert status["completionTime"] == "2026-01-01T12:00:05Z"
    assert conditions(store, "pi") == [
        ("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
        ("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
    ]
    assert ("Normal", "Completed", "Job completed") in events(store, "pi")
    assert sum(1 for e in events(store, "pi") if e[1] == "SuccessfulCreate") == 5


def test_indexed_job_names_pods_by_index_and_tracks_completed_indexes(
    store: ClusterStore, jobs: JobController, clock: Clock
) -> None:
    store.create("Job", job("idx", completions=3, parallelism=3, completionMode="Indexed"))
    settle(jobs)
    pods = sorted(active_pods(store, "idx"), key=lambda p: p["metadata"]["annotations"][COMPLETION_INDEX])
    assert [p["metadata"]["annotations"][COMPLETION_INDEX] for p in pods] == ["0", "1", "2"]
    assert [p["metadata"]["labels"][COMPLETION_INDEX] for p in pods] == ["0", "1", "2"]
    assert [p["metadata"]["generateName"] for p in pods] == ["idx-0-", "idx-1-", "idx-2-"]
    assert [p["spec"]["hostname"] for p in pods] == ["idx-0", "idx-1", "idx-2"]
    env = pods[0]["spec"]["containers"][0]["env"]
    assert env == [
        {
            "name": "JOB_COMPLETION_INDEX",
            # The API server defaults the field selector's apiVersion (SetDefaults_ObjectFieldSelector).
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{COMPLETION_INDEX}']", "apiVersion": "v1"}},
        }
    ]
    finish(store, pods[0], "Failed")
    settle(jobs)
    status = status_of(store, "idx")
    assert status["failed"] == 1 and "completedIndexes" not in status
    # Index 0 is recreated after the 10s pod-failure backoff, not before.
    assert sorted(p["metadata"]["annotations"][COMPLETION_INDEX] for p in active_pods(store, "idx")) == ["1", "2"]
    clock.advance(9)
    settle(jobs)
    assert len(active_pods(store, "idx")) == 2
    clock.advance(2)
    settle(jobs)
    assert sorted(p["metadata"]["annotations"][COMPLETION_INDEX] for p in active_pods(store, "idx")) == ["0", "1", "2"]
    finish(store, pods[2], "Succeeded")
    settle(jobs)
    status = status_of(store, "idx")
    assert status["completedIndexes"] == "2" and status["succeeded"] == 1
    for pod in active_pods(store, "idx"):
        finish(store, pod, "Succeeded")
    settle(jobs)
    status = status_of(store, "idx")
    assert status["completedIndexes"] == "0-2" and status["succeeded"] == 3
    assert [c[0] for c in conditions(store, "idx")] == ["SuccessCriteriaMet", "Complete"]


def test_backoff_limit_fails_the_job_after_doubling_delays(
    store: ClusterStore, jobs: JobController, clock: Clock
) -> None:
    store.create("Job", job("flaky", backoffLimit=2))
    settle(jobs)
    delays = []
    for _ in range(2):
        finish(store, active_pods(store, "flaky")[0], "Failed")
        settle(jobs)
        waited = 0
        while not active_pods(store, "flaky"):
            clock.advance(1)
            waited += 1
            settle(jobs)
            assert waited < 100
        delays.append(waited)
    assert delays == [10, 20]  # 10s, then doubled
    finish(store, active_pods(store, "flaky")[0], "Failed")
    settle(jobs)
    status = status_of(store, "flaky")
    assert status["failed"] == 3 and "active" not in status and "completionTime" not in status
    assert conditions(store, "flaky") == [
        ("FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        ("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    ]
    assert ("Warning", "BackoffLimitExceeded", "Job has reached the specified backoff limit") in events(store, "flaky")
    assert not active_pods(store, "flaky")


def test_active_deadline_deletes_running_pods_and_fails_the_job(
    store: ClusterStore, jobs: JobController, clock: Clock
) -> None:
    store.create("Job", job("slow", parallelism=2, completions=4, activeDeadlineSeconds=30))
    settle(jobs)
    assert len(active_pods(store, "slow")) == 2
    clock.advance(29)
    settle(jobs)
    assert len(active_pods(store, "slow")) == 2 and not conditions(store, "slow")
    clock.advance(1)
    settle(jobs)
    assert pods_of(store, "slow") == []  # deleted, their finalizers released
    status = status_of(store, "slow")
    assert status["failed"] == 2 and status["terminating"] == 0
    assert conditions(store, "slow") == [
        ("FailureTarget", "True", "DeadlineExceeded", "Job was active longer than specified deadline"),
        ("Failed", "True", "DeadlineExceeded", "Job was active longer than specified deadline"),
    ]


def test_suspended_job_runs_nothing_until_resumed(store: ClusterStore, jobs: JobController, clock: Clock) -> None:
    store.create("Job", job("later", suspend=True, completions=2, parallelism=2))
    settle(jobs)
    assert pods_of(store, "later") == []
    assert "startTime" not in status_of(store, "later")
    assert conditions(store, "later") == [("Suspended", "True", "JobSuspended", "Job suspended")]
    clock.advance(60)
    store.patch("Job", "default", "later", {"spec": {"suspend": False}})
    settle(jobs)
    assert len(active_pods(store, "later")) == 2
    assert status_of(store, "later")["startTime"] == "2026-01-01T12:01:00Z"
    assert conditions(store, "later") == [("Suspended", "False", "JobResumed", "Job resumed")]
    store.patch("Job", "default", "later", {"spec": {"suspend": True}})
    settle(jobs)
    assert pods_of(store, "later") == []  # deleted, not counted as failures
    assert "failed" not in status_of(store, "later")


def test_work_queue_job_completes_when_one_succeeded_and_the_rest_finished(
    store: ClusterStore, jobs: JobController
) -> None:
    store.create("Job", job("queue", parallelism=2))
    settle(jobs)
    first, second = active_pods(store, "queue")
    finish(store, first, "Succeeded")
    settle(jobs)
    assert [p["metadata"]["name"] for p in active_pods(store, "queue")] == [second["metadata"]["name"]]
    assert not conditions(store, "queue")
    finish(store, second, "Succeeded")
    settle(jobs)
    assert status_of(store, "queue")["succeeded"] == 2
    assert [c[0] for c in conditions(store, "queue")] == ["SuccessCriteriaMet", "Complete"]


def test_scaling_parallelism_down_deletes_the_extra_pods(store: ClusterStore, jobs: JobController) -> None:
    store.create("Job", job("wide", parallelism=3, completions=10))
    settle(jobs)
    assert len(active_pods(store, "wide")) == 3
    store.patch("Job", "default", "wide", {"spec": {"parallelism": 1}})
    settle(jobs)
    assert len(pods_of(store, "wide")) == 1
    assert status_of(store, "wide")["active"] == 1 and "failed" not in status_of(store, "wide")


def test_deleting_a_job_in_the_background_takes_its_tracked_pods(
    store: ClusterStore, jobs: JobController, clock: Clock
) -> None:
    gc = GarbageCollector(store, clock=clock)
    gc.start()
    try:
        store.create("Job", job("gone", parallelism=2, completions=2))
        settle(jobs, gc)
        assert len(pods_of(store, "gone")) == 2
        from kss_sim.cluster.admission.deletion import DeleteOptions

        store.delete("Job", "default", "gone", options=DeleteOptions(propagation_policy="Background"))
        settle(gc, jobs)
        # The collector marked them deleted; the finalizer held them until the job controller let them go.
        assert pods_of(store, "gone") == []
    finally:
        gc.stop()


def test_ttl_after_finished_deletes_the_job_once_its_time_is_up(
    store: ClusterStore, jobs: JobController, clock: Clock
) -> None:
    ttl = TTLAfterFinishedController(store, clock=clock)
    ttl.start()
    try:
        store.create("Job", job("brief", ttlSecondsAfterFinished=100))
        settle(jobs, ttl)
        finish(store, active_pods(store, "brief")[0], "Succeeded")
        settle(jobs, ttl)
        assert [c[0] for c in conditions(store, "brief")] == ["SuccessCriteriaMet", "Complete"]
        clock.advance(99)
        settle(jobs, ttl)
        assert store.get("Job", "default", "brief") is not None
        clock.advance(1)
        settle(jobs, ttl)
        assert store.get("Job", "default", "brief") is None
    finally:
        ttl.stop()


def test_completed_indexes_format_as_the_api_writes_them() -> None:
    assert format_indexes({0, 1, 2, 4, 6, 7}) == "0-2,4,6-7"
    assert format_indexes(set()) == ""
    assert parse_indexes("0-2,4,6-7,9", 8) == {0, 1, 2, 4, 6, 7}


# ---------------------------------------------------------------------------------------------- the live app

JOB_MANIFEST = """
apiVersion: batch/v1
kind: Job
metadata:
  name: pi
spec:
  completions: 5
  parallelism: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: pi
        image: perl
        resources:
          requests:
            cpu: 100m
"""


@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")
def test_live_app_job_runs_to_complete_5_of_5_with_the_scheduler_and_kubectl(tmp_path: Path) -> None:
    # The app's own controllers are off: this test runs the Job controller and the garbage collector around the
    # app's store, as ControllerManager will once they are wired in; the scheduler is the app's own.
    app = create_app(Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", controllers=False))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    controllers = [JobController(app.state.store), GarbageCollector(app.state.store)]
    for controller in controllers:
        controller.start()
    config_path = tmp_path / "kubeconfig"
    config_path.write_text(kubeconfig(f"http://127.0.0.1:{port}"))

    def kubectl(*args: str, stdin: str | None = None) -> str:
        proc = subprocess.run(
            [KUBECTL, "--kubeconfig", str(config_path), *args],
            capture_output=True,
            text=True,
            input=stdin,
            timeout=60,
            env={**os.environ, "KUBECACHEDIR": str(tmp_path / "kubecache")},
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    try:
        api = config.new_client_from_config(str(config_path))  # type: ignore[no-untyped-call]
        core: Any = client.CoreV1Api(api)
        core.create_node(node("worker-1"))
        assert kubectl("apply", "-f", "-", stdin=JOB_MANIFEST).strip() == "job.batch/pi created"
        finished: set[str] = set()
        most_running = 0
        until = time.monotonic() + 60
        row: list[str] = []
        while time.monotonic() < until:
            pods = core.list_namespaced_pod("default", label_selector="batch.kubernetes.io/job-name=pi").items
            running = [p for p in pods if p.status.phase not in ("Succeeded", "Failed")]
            most_running = max(most_running, len(running))
            for pod in running:
                if pod.spec.node_name:  # placed by the scheduler: the "container" ends well
                    core.patch_namespaced_pod_status(pod.metadata.name, "default", {"status": {"phase": "Succeeded"}})
                    finished.add(pod.metadata.name)
            table = kubectl("get", "job", "pi").splitlines()
            row = table[1].split()
            if row[1] == "Complete":
                assert table[0].split() == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
                break
            time.sleep(0.1)
        assert row[:3] == ["pi", "Complete", "5/5"]
        assert len(finished) == 5 and most_running <= 2  # parallelism 2, never more pods than completions
        bound = core.list_namespaced_pod("default", label_selector="batch.kubernetes.io/job-name=pi").items
        assert {p.spec.node_name for p in bound} == {"worker-1"}
        described = kubectl("describe", "job", "pi")
        assert "Pods Statuses:    0 Active (0 Ready) / 5 Succeeded / 0 Failed" in described
        assert "Completed" in described
    finally:
        for controller in controllers:
            controller.stop()
        server.should_exit = True
        thread.join(timeout=30)


# ------------------------------------------------------------------------------------------ podFailurePolicy


def fail(store: ClusterStore, pod: Obj, *, exit_code: int = 1, container: str = "work", **extra: Any) -> None:
    """The pod Failed, its container terminated with ``exit_code`` (``extra``: more status fields)."""
    terminated = {"exitCode": exit_code, "reason": "Error", "finishedAt": "2026-01-01T12:00:00Z"}
    status = {
        "phase": "Failed",
        "containerStatuses": [
            {"name": container, "image": "busybox", "imageID": "", "ready": False, "restartCount": 0,
             "state": {"terminated": terminated}},
        ],
        **extra,
    }  # fmt: skip
    store.patch("Pod", "default", pod["metadata"]["name"], {"status": status}, "merge", subresource="status")


DISRUPTED = {
    "conditions": [
        {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI",
         "message": "Eviction API: evicting", "lastTransitionTime": "2026-01-01T12:00:00Z"},
    ]
}  # fmt: skip


def test_pod_failure_policy_fail_job_on_an_exit_code_fails_the_job_at_once(
    store: ClusterStore, jobs: JobController
) -> None:
    rules = [{"action": "FailJob", "onExitCodes": {"containerName": "work", "operator": "In", "values": [42]}}]
    store.create("Job", job("strict", parallelism=2, completions=4, podFailurePolicy={"rules": rules}))
    settle(jobs)
    first, second = active_pods(store, "strict")
    fail(store, first, exit_code=3)  # no rule matches: counted, the Job goes on
    settle(jobs)
    assert status_of(store, "strict")["failed"] == 1 and not conditions(store, "strict")
    fail(store, second, exit_code=42)
    settle(jobs)

    pod_key = f"default/{second['metadata']['name']}"
    message = f"Container work for pod {pod_key} failed with exit code 42 matching FailJob rule at index 0"
    assert conditions(store, "strict") == [
        ("FailureTarget", "True", "PodFailurePolicy", message),
        ("Failed", "True", "PodFailurePolicy", message),
    ]
    assert ("Warning", "PodFailurePolicy", message) in events(store, "strict")
    assert status_of(store, "strict")["failed"] == 2  # the FailJob pod counts (backoffLimit 6 not reached)
    assert not active_pods(store, "strict")


def test_pod_failure_policy_ignore_leaves_a_disrupted_pod_out_of_the_backoff_limit(
    store: ClusterStore, jobs: JobController, clock: Clock
) -> None:
    rules = [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]
    store.create("Job", job("tolerant", backoffLimit=0, podFailurePolicy={"rules": rules}))
    settle(jobs)
    (pod,) = active_pods(store, "tolerant")
    fail(store, pod, exit_code=137, **DISRUPTED)
    settle(jobs)
    status = status_of(store, "tolerant")
    assert status.get("failed", 0) == 0 and not conditions(store, "tolerant")
    assert store.get("Pod", "default", pod["metadata"]["name"]) is not None  # kept, its finalizer released
    assert JOB_TRACKING_FINALIZER not in (store.get("Pod", "default", pod["metadata"]["name"]) or {})["metadata"].get(
        "finalizers", []
    )
    clock.advance(10)  # the pod-failure backoff still counts the ignored failure, as upstream's backoff record does
    settle(jobs)
    (replacement,) = active_pods(store, "tolerant")
    fail(store, replacement, exit_code=1)  # no rule matches: over backoffLimit 0
    settle(jobs)
    assert status_of(store, "tolerant")["failed"] == 1
    assert [c[:3] for c in conditions(store, "tolerant")] == [
        ("FailureTarget", "True", "BackoffLimitExceeded"),
        ("Failed", "True", "BackoffLimitExceeded"),
    ]


def test_pod_failure_policy_rules_apply_in_order_and_count_is_the_default(
    store: ClusterStore, jobs: JobController, clock: Clock
) -> None:
    rules = [
        {"action": "Count", "onExitCodes": {"operator": "In", "values": [5]}},
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [5, 7]}},
        {"action": "FailJob", "onExitCodes": {"containerName": "other", "operator": "NotIn", "values": [0]}},
        {"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "False"}]},
    ]
    ordered = job("ordered", backoffLimit=5, podFailurePolicy={"rules": rules})
    ordered["spec"]["template"]["spec"]["containers"].append({"name": "other", "image": "busybox"})
    store.create("Job", ordered)
    settle(jobs)
    for exit_code in (5, 7, 9):  # Count (the first rule wins over Ignore), Ignore, no rule (counted)
        (pod,) = active_pods(store, "ordered")
        fail(store, pod, exit_code=exit_code, **DISRUPTED)
        settle(jobs)
        clock.advance(600)
        settle(jobs)
    status = status_of(store, "ordered")
    assert status["failed"] == 2 and not conditions(store, "ordered")
    assert len(active_pods(store, "ordered")) == 1

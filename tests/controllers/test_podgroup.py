"""The PodGroup controller (app/controllers/podgroup.py) over a real ClusterStore on a migrated SQLite file: the
cases of scheduler-plugins' podgroup_controller_test.go, the pod index (relabels, deletions, other namespaces),
writes only when the status changes, restarts, conflicts, the 48-hour Timeout Event; and once through the live
app over the API, read back with the real kubectl."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from kubernetes import client, config
from sqlalchemy import Engine

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.controllers.podgroup import (
    COMPONENT,
    POD_GROUP_LABEL,
    TIMEOUT_MESSAGE,
    GroupStatus,
    PodGroupController,
    next_status,
)
from kss_sim.kube.objects import Obj
from kss_sim.main import create_app
from kss_sim.serve_cli import kubeconfig
from tests.cluster.factories import pod
from tests.conftest import KUBECTL, free_port


def pod_group(name: str, min_member: int, *, namespace: str = "default") -> Obj:
    """A PodGroup manifest."""
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"minMember": min_member},
    }


def member(name: str, group: str, *, namespace: str = "default", owners: list[str] | None = None) -> Obj:
    """A pod labelled into ``group``, owned by ReplicaSets named ``owners``."""
    body = pod(name, namespace=namespace, labels={POD_GROUP_LABEL: group})
    if owners:
        body["metadata"]["ownerReferences"] = [
            {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": owner, "uid": f"uid-{owner}"} for owner in owners
        ]
    return body


def set_status(store: ClusterStore, kind: str, name: str, status: Obj, *, namespace: str = "default") -> Obj:
    """Merge ``status`` into the object's status subresource, as a client would."""
    return store.patch(kind, namespace, name, {"status": status}, "merge", subresource="status")


def status_of(store: ClusterStore, name: str, *, namespace: str = "default") -> Obj:
    pg = store.get("PodGroup", namespace, name)
    assert pg is not None
    return dict(pg.get("status") or {})


def phase_of(store: ClusterStore, name: str, *, namespace: str = "default") -> str:
    return str(status_of(store, name, namespace=namespace).get("phase") or "")


def timeout_events(store: ClusterStore, name: str) -> list[Obj]:
    events, _ = store.list("Event", "default")
    return [e for e in events if e["involvedObject"]["name"] == name and e["reason"] == "Timeout"]


@pytest.fixture
def run(store: ClusterStore) -> Iterator[PodGroupController]:
    """A controller over ``store``, started by the test when it is ready (``run.start()``), stopped after."""
    controller = PodGroupController(store)
    yield controller
    controller.stop()


def settle(controller: PodGroupController) -> None:
    assert controller.wait_idle(), "the controller did not settle"


# ---------------------------------------------------------------------------------------------- upstream's cases

# (name, minMember, pods, pods' phase, pods' next phase, group's phase before, expected phase, created 72h before
# scheduleStartTime): podgroup_controller_test.go's Test_Run.
UPSTREAM_CASES = [
    ("Group running", 2, 2, "Running", None, "Scheduling", "Running", False),
    ("Group running, more than min member", 2, 4, "Running", None, "Scheduling", "Running", False),
    ("Group failed", 2, 2, "Failed", None, "Scheduling", "Failed", False),
    ("Group finished", 2, 2, "Succeeded", None, "Scheduling", "Finished", False),
    ("Group status convert from pending to prescheduling", 2, 2, "Pending", None, "Pending", "Scheduling", False),
    ("Group status convert from scheduling to finished", 2, 2, "Pending", "Succeeded", "Scheduling", "Finished", False),
    ("Group status keeps pending", 3, 2, "Running", None, "Pending", "Pending", False),
    ("Group status convert from pending to finished", 2, 2, "Pending", "Succeeded", "Pending", "Finished", False),
    ("Group should not enqueue, created too long", 2, 2, "Running", None, "Pending", "Pending", True),
    ("Group min member more than Pod number", 3, 2, "Pending", None, "Pending", "Pending", False),
    ("Group status convert from running to pending", 4, 2, "Pending", None, "Running", "Pending", False),
]


@pytest.mark.parametrize(
    ("min_member", "pods", "pod_phase", "next_phase", "previous", "expected", "too_long"),
    [case[1:] for case in UPSTREAM_CASES],
    ids=[case[0] for case in UPSTREAM_CASES],
)
def test_upstream_reconcile_cases(
    store: ClusterStore,
    run: PodGroupController,
    min_member: int,
    pods: int,
    pod_phase: str,
    next_phase: str | None,
    previous: str,
    expected: str,
    too_long: bool,
) -> None:
    created = store.create("PodGroup", pod_group("pg", min_member))
    start = datetime.fromisoformat(created["metadata"]["creationTimestamp"]) + timedelta(hours=72 if too_long else 0)
    set_status(
        store,
        "PodGroup",
        "pg",
        {"phase": previous, "occupiedBy": "test", "scheduleStartTime": start.strftime("%Y-%m-%dT%H:%M:%SZ")},
    )
    for i in range(pods):
        store.create("Pod", member(f"pod{i}", "pg"))
        set_status(store, "Pod", f"pod{i}", {"phase": pod_phase})
    run.start()
    settle(run)
    if next_phase is not None:
        for i in range(pods):
            set_status(store, "Pod", f"pod{i}", {"phase": next_phase})
        settle(run)
    assert phase_of(store, "pg") == expected
    assert len(timeout_events(store, "pg")) == (1 if too_long else 0)


@pytest.mark.parametrize(
    ("owners", "expected"),
    [
        (["new-occupied"], "default/new-occupied"),
        (["new-occupied-2", "new-occupied-1"], "default/new-occupied-1,default/new-occupied-2"),
    ],
    ids=["a single ownerReference", "multi ownerReferences"],
)
def test_scheduling_fills_occupied_by_with_the_first_pods_owners(
    store: ClusterStore, run: PodGroupController, owners: list[str], expected: str
) -> None:
    store.create("PodGroup", pod_group("pg", 2))
    set_status(store, "PodGroup", "pg", {"phase": "Pending", "occupiedBy": "test"})
    store.create("Pod", member("pod1", "pg", owners=owners))
    store.create("Pod", member("pod2", "pg", owners=["someone-else"]))
    run.start()
    settle(run)
    assert status_of(store, "pg") == {"phase": "Scheduling", "occupiedBy": expected}


# ---------------------------------------------------------------------------------------------- the state machine


def test_next_status_is_one_step_of_the_reconciler() -> None:
    pg: Obj = {"metadata": {"namespace": "default"}, "spec": {"minMember": 2}}
    pods = [member("a", "pg", owners=["rs"]), member("b", "pg")]
    assert next_status(pg, pods) == GroupStatus(phase="Pending")
    pg["status"] = {"phase": "Pending"}
    assert next_status(pg, pods[:1]) == GroupStatus(phase="Pending")
    assert next_status(pg, pods) == GroupStatus(phase="Scheduling", occupied_by="default/rs")
    pg["status"] = {"phase": "Scheduling", "occupiedBy": "default/rs"}
    pods[0]["status"] = {"phase": "Running"}
    pods[1]["status"] = {"phase": "Failed"}
    assert next_status(pg, pods) == GroupStatus("Failed", "default/rs", running=1, failed=1)


def test_a_group_without_min_member_finishes_with_no_pods_as_upstream() -> None:
    # minMember is omitempty: absent is 0, and 0 succeeded pods reach it.
    pg: Obj = {"metadata": {}, "spec": {}, "status": {"phase": "Scheduling"}}
    assert next_status(pg, []).phase == "Finished"


def test_a_status_patch_names_only_the_fields_that_changed_and_removes_zeros() -> None:
    old = GroupStatus("Running", "default/rs", running=2)
    assert GroupStatus("Running", "default/rs", running=2).patch_from(old) is None
    assert GroupStatus("Pending", "default/rs", running=0, failed=1).patch_from(old) == {
        "phase": "Pending",
        "running": None,
        "failed": 1,
    }


# ---------------------------------------------------------------------------------------------- while running


def test_a_new_group_goes_pending_then_scheduling_as_its_pods_arrive(
    store: ClusterStore, run: PodGroupController
) -> None:
    run.start()
    store.create("PodGroup", pod_group("gang", 2))
    settle(run)
    assert status_of(store, "gang") == {"phase": "Pending"}
    store.create("Pod", member("w-b", "gang", owners=["job-b"]))
    settle(run)
    assert status_of(store, "gang") == {"phase": "Pending"}
    store.create("Pod", member("w-a", "gang", owners=["job-a"]))
    settle(run)
    # The first pod in the API's order (namespace, name), not the first created.
    assert status_of(store, "gang") == {"phase": "Scheduling", "occupiedBy": "default/job-a"}


def test_counts_follow_pod_phases_and_a_count_back_at_zero_is_removed(
    store: ClusterStore, run: PodGroupController
) -> None:
    run.start()
    store.create("PodGroup", pod_group("gang", 2))
    for name in ("p1", "p2"):
        store.create("Pod", member(name, "gang"))
    settle(run)
    assert phase_of(store, "gang") == "Scheduling"
    set_status(store, "Pod", "p1", {"phase": "Running"})
    settle(run)
    assert status_of(store, "gang") == {"phase": "Scheduling", "running": 1}
    set_status(store, "Pod", "p2", {"phase": "Running"})
    settle(run)
    assert status_of(store, "gang") == {"phase": "Running", "running": 2}
    store.delete("Pod", "default", "p2")
    settle(run)
    assert status_of(store, "gang") == {"phase": "Pending", "running": 1}
    # Pending again: counts are kept as they were until the group is Scheduling again (upstream's Pending case).
    store.delete("Pod", "default", "p1")
    store.create("Pod", member("p3", "gang"))
    store.create("Pod", member("p4", "gang"))
    settle(run)
    assert status_of(store, "gang") == {"phase": "Scheduling"}


def test_a_relabelled_pod_leaves_its_old_group(store: ClusterStore, run: PodGroupController) -> None:
    run.start()
    store.create("PodGroup", pod_group("a", 2))
    store.create("PodGroup", pod_group("b", 1))
    store.create("Pod", member("p1", "a"))
    store.create("Pod", member("p2", "a"))
    settle(run)
    assert (phase_of(store, "a"), phase_of(store, "b")) == ("Scheduling", "Pending")
    store.patch("Pod", "default", "p2", {"metadata": {"labels": {POD_GROUP_LABEL: "b"}}}, "merge")
    settle(run)
    assert (phase_of(store, "a"), phase_of(store, "b")) == ("Pending", "Scheduling")
    store.patch("Pod", "default", "p1", {"metadata": {"labels": {POD_GROUP_LABEL: None}}}, "merge")
    store.create("Pod", member("p3", "a"))
    settle(run)
    assert phase_of(store, "a") == "Pending"  # one pod left of two


def test_pods_are_counted_by_label_in_every_namespace_as_upstream(store: ClusterStore, run: PodGroupController) -> None:
    # Upstream lists the group's pods by label without a namespace: a pod of another namespace counts too.
    store.create("Pod", member("here", "pg", namespace="team-a"))
    store.create("Pod", member("there", "pg", namespace="team-b", owners=["rs"]))
    store.create("PodGroup", pod_group("pg", 2, namespace="team-a"))
    run.start()
    settle(run)
    assert status_of(store, "pg", namespace="team-a") == {"phase": "Scheduling"}


def test_finished_and_failed_groups_are_never_written_again(store: ClusterStore, run: PodGroupController) -> None:
    for name, phase in (("done", "Finished"), ("broken", "Failed")):
        store.create("PodGroup", pod_group(name, 1))
        set_status(store, "PodGroup", name, {"phase": phase, "succeeded": 1})
        store.create("Pod", member(f"{name}-0", name))
    before = store.resource_version
    run.start()
    settle(run)
    assert store.resource_version == before
    assert (phase_of(store, "done"), phase_of(store, "broken")) == ("Finished", "Failed")


def test_nothing_is_written_when_nothing_changed_nor_after_a_restart(engine: Engine, store: ClusterStore) -> None:
    store.create("PodGroup", pod_group("gang", 2))
    for name in ("p1", "p2"):
        store.create("Pod", member(name, "gang"))
        set_status(store, "Pod", name, {"phase": "Running"})
    first = PodGroupController(store)
    first.start()
    try:
        settle(first)
        assert status_of(store, "gang") == {"phase": "Running", "running": 2}
        written = store.resource_version
        # A pod change that does not change the group's status (the scheduler's annotations, say) writes nothing.
        store.patch("Pod", "default", "p1", {"metadata": {"annotations": {"note": "x"}}}, "merge")
        settle(first)
        assert store.resource_version == written + 1
    finally:
        first.stop()
    store.flush()

    reopened = ClusterStore.open(engine)
    at_start = reopened.resource_version
    second = PodGroupController(reopened)
    second.start()
    try:
        settle(second)
        assert reopened.resource_version == at_start
        assert status_of(reopened, "gang") == {"phase": "Running", "running": 2}
    finally:
        second.stop()


def test_started_again_it_catches_up_with_what_changed_while_stopped(
    store: ClusterStore, run: PodGroupController
) -> None:
    store.create("PodGroup", pod_group("gang", 2))
    for name in ("p1", "p2"):
        store.create("Pod", member(name, "gang"))
    run.start()
    settle(run)
    assert phase_of(store, "gang") == "Scheduling"
    run.stop()
    store.delete("Pod", "default", "p2")
    set_status(store, "Pod", "p1", {"phase": "Running"})
    assert phase_of(store, "gang") == "Scheduling"  # nobody watching
    run.start()
    settle(run)
    assert status_of(store, "gang") == {"phase": "Pending", "running": 1}


def test_a_conflict_recomputes_from_the_group_as_it_is_now(
    store: ClusterStore, run: PodGroupController, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.create("PodGroup", pod_group("gang", 3))
    set_status(store, "PodGroup", "gang", {"phase": "Scheduling"})
    for name in ("p1", "p2"):
        store.create("Pod", member(name, "gang"))
        set_status(store, "Pod", name, {"phase": "Running"})
    phases: list[str] = []
    store.add_listener(lambda _t, _k, obj: phases.append((obj.get("status") or {}).get("phase", "")), ["PodGroup"])
    real_patch = store.patch
    interfered: list[str] = []

    def patch(kind: str, namespace: str | None, name: str, body: Any, patch_type: str = "merge", **kw: Any) -> Obj:
        if kind == "PodGroup" and kw.get("subresource") == "status" and not interfered:
            # Someone lowers minMember between the controller's read and its write.
            interfered.append(name)
            real_patch("PodGroup", namespace, name, {"spec": {"minMember": 2}}, "merge")
        return real_patch(kind, namespace, name, body, patch_type, **kw)

    monkeypatch.setattr(store, "patch", patch)
    run.start()
    settle(run)
    assert interfered == ["gang"]
    # 2 pods < 3 would have written Pending; recomputed with minMember 2 the group is Running.
    assert status_of(store, "gang") == {"phase": "Running", "running": 2}
    assert "Pending" not in phases


def test_the_48_hour_timeout_is_one_warning_event_also_across_restarts(
    store: ClusterStore, run: PodGroupController
) -> None:
    created = store.create("PodGroup", pod_group("slow", 2))
    start = datetime.fromisoformat(created["metadata"]["creationTimestamp"]) + timedelta(hours=49)
    set_status(
        store, "PodGroup", "slow", {"phase": "Pending", "scheduleStartTime": start.strftime("%Y-%m-%dT%H:%M:%SZ")}
    )
    store.create("Pod", member("p1", "slow"))
    store.create("Pod", member("p2", "slow"))
    run.start()
    settle(run)
    events = timeout_events(store, "slow")
    assert [(e["type"], e["reason"], e["message"], e["source"]["component"]) for e in events] == [
        ("Warning", "Timeout", TIMEOUT_MESSAGE, COMPONENT)
    ]
    assert events[0]["involvedObject"]["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert phase_of(store, "slow") == "Pending"  # not reconciled further
    store.patch("Pod", "default", "p1", {"metadata": {"annotations": {"note": "x"}}}, "merge")
    settle(run)
    again = PodGroupController(store)
    again.start()
    try:
        settle(again)
    finally:
        again.stop()
    assert len(timeout_events(store, "slow")) == 1


def test_a_group_not_yet_48_hours_or_with_pods_running_is_reconciled(
    store: ClusterStore, run: PodGroupController
) -> None:
    created = store.create("PodGroup", pod_group("young", 1))
    start = datetime.fromisoformat(created["metadata"]["creationTimestamp"]) + timedelta(hours=47)
    set_status(
        store, "PodGroup", "young", {"phase": "Pending", "scheduleStartTime": start.strftime("%Y-%m-%dT%H:%M:%SZ")}
    )
    store.create("Pod", member("p1", "young"))
    run.start()
    settle(run)
    assert phase_of(store, "young") == "Scheduling"
    assert timeout_events(store, "young") == []
    assert status_of(store, "young")["scheduleStartTime"] == start.strftime("%Y-%m-%dT%H:%M:%SZ")  # left alone


def test_a_deleted_group_is_forgotten_and_its_pods_write_nothing(store: ClusterStore, run: PodGroupController) -> None:
    run.start()
    store.create("PodGroup", pod_group("gone", 1))
    store.create("Pod", member("p1", "gone"))
    settle(run)
    store.delete("PodGroup", "default", "gone")
    settle(run)
    before = store.resource_version
    set_status(store, "Pod", "p1", {"phase": "Running"})
    settle(run)
    assert store.resource_version == before + 1


def test_kss_controllers_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Settings().controllers is True
    monkeypatch.setenv("KSS_CONTROLLERS", "false")
    assert Settings().controllers is False


# ---------------------------------------------------------------------------------------------- the live app


@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")
def test_live_app_podgroup_phase_over_the_api_and_kubectl(tmp_path: Path) -> None:
    # The app's own controllers off: this test runs one around the app's store, as kss_sim.main will.
    app = create_app(
        Settings(database_url=f"sqlite:///{tmp_path / 'kss.db'}", scheduler_enabled=False, controllers=False)
    )
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    controller = PodGroupController(app.state.store)
    controller.start()
    try:
        config_path = tmp_path / "kubeconfig"
        config_path.write_text(kubeconfig(f"http://127.0.0.1:{port}"))
        api = config.new_client_from_config(str(config_path))  # type: ignore[no-untyped-call]
        # Plain dicts as bodies and answers, as a script would use the client.
        custom: Any = client.CustomObjectsApi(api)
        core: Any = client.CoreV1Api(api)
        custom.create_namespaced_custom_object(
            "scheduling.x-k8s.io", "v1alpha1", "default", "podgroups", pod_group("web", 2)
        )
        for name in ("web-0", "web-1"):
            core.create_namespaced_pod("default", member(name, "web", owners=["web-rs"]))

        def kubectl_get() -> list[list[str]]:
            proc = subprocess.run(
                [KUBECTL, "--kubeconfig", str(config_path), "get", "podgroups", "web"],
                capture_output=True,
                text=True,
                timeout=60,
                env={**os.environ, "KUBECACHEDIR": str(tmp_path / "kubecache")},
            )
            assert proc.returncode == 0, proc.stderr
            return [line.split() for line in proc.stdout.splitlines()]

        def eventually(expected: list[str]) -> list[list[str]]:
            """kubectl's table once its row (age aside; empty cells are blank) is ``expected``."""
            table: list[list[str]] = []
            until = time.monotonic() + 20
            while time.monotonic() < until:
                table = kubectl_get()
                if table[1][:-1] == expected:
                    break
                time.sleep(0.1)
            return table

        header, row = eventually(["web", "Scheduling", "2"])
        assert header == ["NAME", "PHASE", "MINMEMBER", "RUNNING", "SUCCEEDED", "FAILED", "AGE"]
        assert row[:-1] == ["web", "Scheduling", "2"]
        got = custom.get_namespaced_custom_object("scheduling.x-k8s.io", "v1alpha1", "default", "podgroups", "web")
        assert got["status"] == {"phase": "Scheduling", "occupiedBy": "default/web-rs"}
        for name in ("web-0", "web-1"):
            core.patch_namespaced_pod_status(name, "default", {"status": {"phase": "Running"}})
        _, row = eventually(["web", "Running", "2", "2"])
        assert row[:-1] == ["web", "Running", "2", "2"]
    finally:
        controller.stop()
        server.should_exit = True
        thread.join(timeout=30)

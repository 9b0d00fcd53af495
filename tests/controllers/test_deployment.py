"""The Deployment controller (app/controllers/deployment.py) with the ReplicaSet controller over an in-memory
ClusterStore: the new ReplicaSet and its hash, a RollingUpdate with maxSurge=1/maxUnavailable=0 step by step,
Recreate, proportional scaling mid-rollout (the documentation's 10 -> 15 example), paused, history cleanup, the
progress deadline on the clock, restarts; and once through a live app with the real kubectl (apply, scale,
rollout status)."""

from __future__ import annotations

import contextlib
import copy
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import uvicorn

from kss_sim.cluster.admission.deletion import DeleteOptions
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.controllers import deployment_util as du
from kss_sim.controllers.deployment import DeploymentController
from kss_sim.controllers.loop import ReconcileLoop
from kss_sim.controllers.replicaset import ReplicaSetController
from kss_sim.kube.objects import Obj
from kss_sim.main import create_app
from kss_sim.serve_cli import kubeconfig
from tests.conftest import KUBECTL, free_port
from tests.controllers.workloads import FakeClock, deployment, make_ready, pods_of

LABELS = {"app": "web"}


@pytest.fixture
def store(clock: FakeClock) -> ClusterStore:
    return ClusterStore(None, clock=clock)


class Controllers:
    """The Deployment and ReplicaSet controllers together, as kube-controller-manager runs them."""

    def __init__(self, store: ClusterStore, clock: FakeClock) -> None:
        self.store = store
        self.loops: list[ReconcileLoop[tuple[str, str]]] = [
            DeploymentController(store, clock=clock),
            ReplicaSetController(store, clock=clock),
        ]

    def start(self) -> None:
        for loop in self.loops:
            loop.start()

    def stop(self) -> None:
        for loop in self.loops:
            loop.stop()

    def poke(self) -> None:
        for loop in self.loops:
            loop.poke()

    def settle(self) -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            if all(loop.wait_idle(5) for loop in self.loops) and all(loop.is_idle() for loop in self.loops):
                return
        raise AssertionError("the controllers did not settle")


@pytest.fixture
def kcm(store: ClusterStore, clock: FakeClock) -> Iterator[Controllers]:
    controllers = Controllers(store, clock)
    controllers.start()
    yield controllers
    controllers.stop()


def get(store: ClusterStore, kind: str, name: str) -> Obj:
    obj = store.get(kind, "default", name)
    assert obj is not None, f"{kind} {name} is missing"
    return obj


def replica_sets(store: ClusterStore) -> list[Obj]:
    """The ReplicaSets, oldest revision first."""
    sets, _ = store.list("ReplicaSet", "default")
    return sorted(sets, key=du.revision)


def sizes(store: ClusterStore) -> list[int]:
    """Each ReplicaSet's spec.replicas, oldest revision first."""
    return [rs["spec"]["replicas"] for rs in replica_sets(store)]


def end_terminating(store: ClusterStore, kcm: Controllers) -> None:
    """End the pods being deleted as their kubelet does after their grace period (there is none here), then let
    the controllers act."""
    for p in store.list("Pod", "default")[0]:
        if p["metadata"].get("deletionTimestamp"):
            store.delete(
                "Pod", "default", p["metadata"]["name"], options=DeleteOptions(grace_period_seconds=0, graceful=True)
            )
    kcm.settle()


def ready_all(store: ClusterStore, kcm: Controllers, clock: FakeClock) -> None:
    """End the pods being deleted, make every other pod Ready (each on its own node), then let the controllers
    act."""
    end_terminating(store, kcm)
    pods, _ = store.list("Pod", "default")
    for i, p in enumerate(pods):
        if not any(c["type"] == "Ready" for c in (p.get("status") or {}).get("conditions") or []):
            make_ready(store, p, node=f"node-{i}", at=clock.now)
    kcm.settle()


def condition(d: Obj, kind: str) -> Obj:
    found = du.condition(d.get("status") or {}, kind)
    assert found is not None, f"no {kind} condition in {d.get('status')}"
    return found


def set_image(store: ClusterStore, name: str, image: str) -> None:
    patch = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": image}]}}}}
    store.patch("Deployment", "default", name, patch, "strategic")


def scaling_events(store: ClusterStore) -> list[str]:
    events, _ = store.list("Event", "default")
    ordered = sorted(events, key=lambda e: int(e["metadata"]["resourceVersion"]))
    return [e["message"] for e in ordered if e["reason"] == "ScalingReplicaSet"]


# ---------------------------------------------------------------------------------------------- pure parts


def test_the_pod_template_hash_is_stable_safe_encoded_and_moved_by_collision_count() -> None:
    template = {"metadata": {"labels": LABELS}, "spec": {"containers": [{"name": "c", "image": "a"}]}}
    first = du.compute_hash(template, None)
    assert first == du.compute_hash({"spec": template["spec"], "metadata": template["metadata"]}, None)
    assert set(first) <= set("bcdfghjklmnpqrstvwxz2456789") and 1 <= len(first) <= 10
    assert du.compute_hash(template, 1) != first
    assert du.compute_hash({**template, "spec": {"containers": [{"name": "c", "image": "b"}]}}, None) != first


@pytest.mark.parametrize(
    ("surge", "unavailable", "replicas", "expected"),
    [
        ("25%", "25%", 10, (3, 2)),  # surge rounds up, unavailable down
        ("0%", "0%", 10, (0, 1)),  # both zero: one may be unavailable
        (0, "10%", 5, (0, 1)),  # 0.5 rounds down to 0, then the fencepost
        (2, 1, 3, (2, 1)),
        ("50%", "50%", 3, (2, 1)),
    ],
)
def test_fenceposts_round_as_upstream(
    surge: int | str, unavailable: int | str, replicas: int, expected: tuple[int, int]
) -> None:
    d = deployment(
        "d", replicas, LABELS, strategy={"rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}
    )
    assert du.resolve_fenceposts(d) == expected


# ---------------------------------------------------------------------------------------------- rollouts


def test_a_new_deployment_gets_a_hashed_replica_set_and_becomes_available(
    store: ClusterStore, kcm: Controllers, clock: FakeClock
) -> None:
    d = store.create("Deployment", deployment("web", 3, LABELS))
    kcm.settle()
    (rs,) = replica_sets(store)
    pod_hash = rs["metadata"]["labels"][du.POD_TEMPLATE_HASH]
    assert rs["metadata"]["name"] == f"web-{pod_hash}"
    assert rs["spec"]["selector"]["matchLabels"] == {**LABELS, du.POD_TEMPLATE_HASH: pod_hash}
    assert rs["spec"]["template"]["metadata"]["labels"] == {**LABELS, du.POD_TEMPLATE_HASH: pod_hash}
    assert rs["metadata"]["ownerReferences"][0]["uid"] == d["metadata"]["uid"]
    assert rs["metadata"]["annotations"] == {du.REVISION: "1", du.DESIRED_REPLICAS: "3", du.MAX_REPLICAS: "4"}
    pods = pods_of(store, rs)
    assert len(pods) == 3 and all(p["metadata"]["labels"][du.POD_TEMPLATE_HASH] == pod_hash for p in pods)
    current = get(store, "Deployment", "web")
    assert current["metadata"]["annotations"][du.REVISION] == "1"
    assert condition(current, "Available")["reason"] == "MinimumReplicasUnavailable"
    assert condition(current, "Progressing")["reason"] in ("NewReplicaSetCreated", "ReplicaSetUpdated")
    ready_all(store, kcm, clock)
    current = get(store, "Deployment", "web")
    status = current["status"]
    assert {k: v for k, v in status.items() if k != "conditions"} == {
        "observedGeneration": 1,
        "replicas": 3,
        "updatedReplicas": 3,
        "readyReplicas": 3,
        "availableReplicas": 3,
        "terminatingReplicas": 0,
    }
    available, progressing = status["conditions"]
    assert (available["type"], available["status"], available["reason"], available["message"]) == (
        "Available",
        "True",
        "MinimumReplicasAvailable",
        "Deployment has minimum availability.",
    )
    assert (progressing["type"], progressing["status"], progressing["reason"], progressing["message"]) == (
        "Progressing",
        "True",
        "NewReplicaSetAvailable",
        f'ReplicaSet "web-{pod_hash}" has successfully progressed.',
    )
    assert scaling_events(store) == [f"Scaled up replica set web-{pod_hash} from 0 to 3"]


def test_rolling_update_with_max_surge_1_and_max_unavailable_0_step_by_step(
    store: ClusterStore, kcm: Controllers, clock: FakeClock
) -> None:
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    store.create("Deployment", deployment("web", 3, LABELS, strategy=strategy))
    kcm.settle()
    ready_all(store, kcm, clock)
    set_image(store, "web", "registry.k8s.io/pause:3.9")
    kcm.settle()
    old, new = replica_sets(store)
    assert new["metadata"]["annotations"][du.REVISION] == "2"
    assert new["metadata"]["labels"][du.POD_TEMPLATE_HASH] != old["metadata"]["labels"][du.POD_TEMPLATE_HASH]
    steps = [sizes(store)]
    for _ in range(3):
        d = get(store, "Deployment", "web")
        assert d["status"]["availableReplicas"] >= 3  # maxUnavailable=0 holds throughout
        assert sum(sizes(store)) <= 4  # maxSurge=1 holds throughout
        ready_all(store, kcm, clock)
        steps.append(sizes(store))
    assert steps == [[3, 1], [2, 2], [1, 3], [0, 3]]
    d = get(store, "Deployment", "web")
    assert d["metadata"]["annotations"][du.REVISION] == "2"
    assert d["status"]["updatedReplicas"] == 3 and d["status"]["replicas"] == 3
    assert condition(d, "Progressing")["reason"] == "NewReplicaSetAvailable"
    assert (
        condition(d, "Progressing")["message"] == f'ReplicaSet "{new["metadata"]["name"]}" has successfully progressed.'
    )
    assert len(pods_of(store, new)) == 3
    assert len(pods_of(store, old)) == 1 and pods_of(store, old)[0]["metadata"]["deletionTimestamp"]  # the last one
    end_terminating(store, kcm)
    assert not pods_of(store, old)
    name_old, name_new = old["metadata"]["name"], new["metadata"]["name"]
    assert scaling_events(store)[1:] == [
        f"Scaled up replica set {name_new} from 0 to 1",
        f"Scaled down replica set {name_old} from 3 to 2",
        f"Scaled up replica set {name_new} from 1 to 2",
        f"Scaled down replica set {name_old} from 2 to 1",
        f"Scaled up replica set {name_new} from 2 to 3",
        f"Scaled down replica set {name_old} from 1 to 0",
    ]
    # Rolling back to the first template reuses its ReplicaSet, which takes the next revision.
    set_image(store, "web", "registry.k8s.io/pause:3.10")
    kcm.settle()
    ready_all(store, kcm, clock)
    ready_all(store, kcm, clock)
    ready_all(store, kcm, clock)
    first = get(store, "ReplicaSet", name_old)
    assert first["spec"]["replicas"] == 3
    assert first["metadata"]["annotations"][du.REVISION] == "3"
    assert first["metadata"]["annotations"][du.REVISION_HISTORY] == "1"


def test_rollout_undo_with_a_null_creation_timestamp_reuses_the_old_replica_set(
    store: ClusterStore, kcm: Controllers, clock: FakeClock
) -> None:
    store.create("Deployment", deployment("web", 2, LABELS))
    kcm.settle()
    set_image(store, "web", "registry.k8s.io/pause:3.9")
    kcm.settle()
    first, second = replica_sets(store)
    # What kubectl rollout undo sends: the old ReplicaSet's template without the hash label, as Go marshals it.
    template = copy.deepcopy(first["spec"]["template"])
    del template["metadata"]["labels"][du.POD_TEMPLATE_HASH]
    template["metadata"]["creationTimestamp"] = None
    template["spec"]["containers"][0]["resources"] = {}
    store.patch(
        "Deployment", "default", "web", [{"op": "replace", "path": "/spec/template", "value": template}], "json"
    )
    kcm.settle()
    assert [rs["metadata"]["name"] for rs in replica_sets(store)] == [
        second["metadata"]["name"],
        first["metadata"]["name"],
    ]
    assert get(store, "ReplicaSet", first["metadata"]["name"])["metadata"]["annotations"][du.REVISION] == "3"
    assert du.compute_hash(template, None) == first["metadata"]["labels"][du.POD_TEMPLATE_HASH]


def test_recreate_scales_the_old_replica_set_to_zero_before_the_new_one_exists(
    store: ClusterStore, kcm: Controllers, clock: FakeClock
) -> None:
    store.create("Deployment", deployment("web", 2, LABELS, strategy={"type": "Recreate"}))
    kcm.settle()
    ready_all(store, kcm, clock)
    (old,) = replica_sets(store)
    assert old["metadata"]["annotations"][du.MAX_REPLICAS] == "2"  # no surge with Recreate
    set_image(store, "web", "registry.k8s.io/pause:3.9")
    kcm.settle()
    (old_now,) = replica_sets(store)  # its pods terminate: Recreate waits for them to be gone
    assert old_now["spec"]["replicas"] == 0 and old_now["status"]["terminatingReplicas"] == 2
    end_terminating(store, kcm)
    old_now, new = replica_sets(store)
    assert old_now["spec"]["replicas"] == 0 and new["spec"]["replicas"] == 2
    events = scaling_events(store)
    assert events[1:] == [
        f"Scaled down replica set {old['metadata']['name']} from 2 to 0",
        f"Scaled up replica set {new['metadata']['name']} from 0 to 2",
    ]


def test_scaling_mid_rollout_is_proportional(store: ClusterStore, kcm: Controllers, clock: FakeClock) -> None:
    # The documentation's example: 10 replicas, maxSurge 3, maxUnavailable 2, a rollout whose pods never get
    # ready, then scaled to 15: 3 more for the old ReplicaSet, 2 for the new one.
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
    store.create("Deployment", deployment("web", 10, LABELS, strategy=strategy))
    kcm.settle()
    ready_all(store, kcm, clock)
    set_image(store, "web", "registry.k8s.io/does-not-exist:1")
    kcm.settle()
    assert sizes(store) == [8, 5]
    store.patch("Deployment", "default", "web", {"spec": {"replicas": 15}}, "merge")
    kcm.settle()
    assert sizes(store) == [11, 7]
    for rs in replica_sets(store):
        assert rs["metadata"]["annotations"][du.DESIRED_REPLICAS] == "15"
        assert rs["metadata"]["annotations"][du.MAX_REPLICAS] == "18"


def test_a_paused_deployment_does_not_roll_out_until_resumed(
    store: ClusterStore, kcm: Controllers, clock: FakeClock
) -> None:
    store.create("Deployment", deployment("web", 2, LABELS))
    kcm.settle()
    ready_all(store, kcm, clock)
    store.patch("Deployment", "default", "web", {"spec": {"paused": True}}, "merge")
    set_image(store, "web", "registry.k8s.io/pause:3.9")
    kcm.settle()
    assert len(replica_sets(store)) == 1
    progressing = condition(get(store, "Deployment", "web"), "Progressing")
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "Unknown",
        "DeploymentPaused",
        "Deployment is paused",
    )
    store.patch("Deployment", "default", "web", {"spec": {"paused": False}}, "merge")
    kcm.settle()
    assert len(replica_sets(store)) == 2
    assert condition(get(store, "Deployment", "web"), "Progressing")["reason"] in (
        "DeploymentResumed",
        "NewReplicaSetCreated",
        "ReplicaSetUpdated",
    )


def test_old_replica_sets_beyond_the_revision_history_limit_are_deleted(
    store: ClusterStore, kcm: Controllers, clock: FakeClock
) -> None:
    store.create("Deployment", deployment("web", 1, LABELS, revisionHistoryLimit=1))
    kcm.settle()
    ready_all(store, kcm, clock)
    for tag in ("3.1", "3.2", "3.3"):
        set_image(store, "web", f"registry.k8s.io/pause:{tag}")
        kcm.settle()
        for _ in range(3):
            ready_all(store, kcm, clock)
    sets = replica_sets(store)
    assert [rs["metadata"]["annotations"][du.REVISION] for rs in sets] == ["3", "4"]
    assert [rs["spec"]["template"]["spec"]["containers"][0]["image"] for rs in sets] == [
        "registry.k8s.io/pause:3.2",
        "registry.k8s.io/pause:3.3",
    ]


def test_a_rollout_that_makes_no_progress_exceeds_its_deadline_on_the_clock(
    store: ClusterStore, kcm: Controllers, clock: FakeClock
) -> None:
    store.create("Deployment", deployment("web", 2, LABELS, progressDeadlineSeconds=60))
    kcm.settle()
    clock.advance(59)
    kcm.poke()
    kcm.settle()
    assert condition(get(store, "Deployment", "web"), "Progressing")["status"] == "True"
    clock.advance(3)
    kcm.poke()
    kcm.settle()
    (rs,) = replica_sets(store)
    progressing = condition(get(store, "Deployment", "web"), "Progressing")
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "False",
        "ProgressDeadlineExceeded",
        f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.',
    )


def test_a_restart_changes_nothing_that_is_already_right(store: ClusterStore, clock: FakeClock) -> None:
    first = Controllers(store, clock)
    first.start()
    store.create("Deployment", deployment("web", 3, LABELS))
    first.settle()
    ready_all(store, first, clock)
    first.stop()
    version = store.resource_version
    second = Controllers(store, clock)
    second.start()
    try:
        second.settle()
        assert store.resource_version == version
    finally:
        second.stop()


# ---------------------------------------------------------------------------------------------- the live app

MANIFEST = """
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: c
        image: registry.k8s.io/pause:3.10
"""


@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")
def test_kubectl_apply_scale_and_rollout_status_against_a_live_app(tmp_path: Path) -> None:
    # The app's controller manager is off: this test runs both controllers around the app's store, and plays
    # the kubelet by making bound pods Ready (the scheduler is off too: it binds them itself).
    app = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'kss.db'}", scheduler_enabled=False, controllers=False, kubelet=False
        )
    )
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    store: ClusterStore = app.state.store
    loops = [DeploymentController(store), ReplicaSetController(store)]
    for loop in loops:
        loop.start()
    stop_kubelet = threading.Event()

    def kubelet() -> None:
        while not stop_kubelet.is_set():
            pods, _ = store.list("Pod", "default")
            for p in pods:
                if not (p.get("status") or {}).get("conditions") or not any(
                    c["type"] == "Ready" for c in p["status"]["conditions"]
                ):
                    with contextlib.suppress(Exception):  # deleted or changed meanwhile: next round
                        make_ready(store, p, node="node-1")
            stop_kubelet.wait(0.05)

    kubelet_thread = threading.Thread(target=kubelet, daemon=True)
    kubelet_thread.start()
    config_path = tmp_path / "kubeconfig"
    config_path.write_text(kubeconfig(f"http://127.0.0.1:{port}"))
    env = {**os.environ, "KUBECACHEDIR": str(tmp_path / "kubecache")}

    def kubectl(*args: str, stdin: str | None = None) -> str:
        proc = subprocess.run(
            [KUBECTL, "--kubeconfig", str(config_path), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr
        return proc.stdout

    try:
        assert kubectl("apply", "-f", "-", stdin=MANIFEST).strip() == "deployment.apps/web created"
        out = kubectl("rollout", "status", "deployment/web", "--timeout=60s")
        assert out.strip().splitlines()[-1] == 'deployment "web" successfully rolled out'
        assert kubectl("scale", "deployment/web", "--replicas=4").strip() == "deployment.apps/web scaled"
        out = kubectl("rollout", "status", "deployment/web", "--timeout=60s")
        assert out.strip().splitlines()[-1] == 'deployment "web" successfully rolled out'
        assert len(kubectl("get", "pods", "-l", "app=web", "-o", "name").split()) == 4
        kubectl("set", "image", "deployment/web", "c=registry.k8s.io/pause:3.9")
        out = kubectl("rollout", "status", "deployment/web", "--timeout=60s")
        assert out.strip().splitlines()[-1] == 'deployment "web" successfully rolled out'
        history = kubectl("rollout", "history", "deployment/web")
        assert [line.split()[0] for line in history.strip().splitlines()[2:]] == ["1", "2"]
        rs_names = kubectl("get", "rs", "-l", "app=web", "-o", "name").split()
        assert len(rs_names) == 2
        # kubectl sends the old template as Go marshals it ("creationTimestamp": null, "resources": {}): the first
        # ReplicaSet comes back.
        assert kubectl("rollout", "undo", "deployment/web").strip() == "deployment.apps/web rolled back"
        out = kubectl("rollout", "status", "deployment/web", "--timeout=60s")
        assert out.strip().splitlines()[-1] == 'deployment "web" successfully rolled out'
        history = kubectl("rollout", "history", "deployment/web")
        assert [line.split()[0] for line in history.strip().splitlines()[2:]] == ["2", "3"]
        assert sorted(kubectl("get", "rs", "-l", "app=web", "-o", "name").split()) == sorted(rs_names)
    finally:
        stop_kubelet.set()
        kubelet_thread.join(timeout=10)
        for loop in loops:
            loop.stop()
        server.should_exit = True
        thread.join(timeout=30)

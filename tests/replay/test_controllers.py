"""The workload controllers in a replay (``kss serve``'s own, through kss_sim/replay/world.py): unit tests over a small
stand-in engine (a heap of timers, pods bound by hand or to the emptiest node), then end-to-end runs through
``Replay``."""

from __future__ import annotations

import heapq
import itertools
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from kss_sim.kube.objects import Obj
from kss_sim.replay.engine import Replay
from kss_sim.replay.model import DELETED, POD_GC, SUCCEEDED
from kss_sim.replay.workload import WorkloadError, parse_workload
from kss_sim.replay.world import LiveControllers
from kss_sim.replay.world_objects import check_workload_object

EPOCH = datetime(2025, 3, 1, 0, 0, 0, tzinfo=UTC)  # on the hour: cron times are round virtual seconds


# --- a stand-in engine ---------------------------------------------------------------------------------------
class FakeEngine:
    """world.Engine with a timer heap; pods bind at once to the node with fewest pods (``auto_bind``, at most
    ``capacity`` per node, DaemonSet pods to their node) or when a test calls ``bind``; a bound pod with runFor
    succeeds after it. ``log`` records (time, what, pod name); ``claims`` the claims the controllers made."""

    def __init__(self, nodes: list[str], *, auto_bind: bool = True, capacity: int = 100, seed: int = 0) -> None:
        self._now = 0.0
        self._timers: list[tuple[float, int, Callable[[], None]]] = []
        self._holding: set[int] = set()
        self._seq = itertools.count()
        self.claims: dict[str, Obj] = {}
        self.nodes: dict[str, Obj] = {n: node(n) for n in nodes}
        self.pods: dict[str, Obj] = {}  # name -> pod (the namespace is always default here)
        self.owner_of: dict[str, str] = {}
        self.run_for: dict[str, float | None] = {}
        self.node_of: dict[str, str] = {}
        self.auto_bind = auto_bind
        self.capacity = capacity
        self.log: list[tuple[float, str, str]] = []
        self.max_live = 0
        self.controllers = LiveControllers(self, EPOCH, seed=seed)

    # world.Engine
    @property
    def now(self) -> float:
        return self._now

    def create_pod(self, pod: Obj, *, run_for: float | None, owner: str) -> None:
        name = pod["metadata"]["name"]
        assert name not in self.pods, f"{name} created twice"
        self.pods[name] = pod
        self.owner_of[name] = owner
        self.run_for[name] = run_for
        self.log.append((self._now, "create", name))
        self.max_live = max(self.max_live, len(self.pods))
        if self.auto_bind:
            self.call_at(self._now, self._schedule)

    def delete_pod(self, namespace: str, name: str) -> None:
        self._gone(name, succeeded=False, what="delete")

    def terminate_pod(self, pod: Obj, outcome: str, reason: str = "") -> bool:
        # These tests follow the controllers' decisions: a pod deleted gracefully is gone at once here, as with a
        # grace period of 0 (tests/replay/test_engine.py has the engine's own terminating pods).
        name = pod["metadata"]["name"]
        if name not in self.node_of:
            return False
        self._gone(name, succeeded=False, what="delete")
        return True

    def call_at(self, at: float, callback: Callable[[], None], *, holds_run: bool = True) -> None:
        seq = next(self._seq)
        if holds_run:
            self._holding.add(seq)
        heapq.heappush(self._timers, (max(at, self._now), seq, callback))

    def node_objects(self) -> list[Obj]:
        return list(self.nodes.values())

    def create_object(self, obj: Obj) -> bool:
        name = obj["metadata"]["name"]
        if name in self.claims:
            return False
        self.claims[name] = obj
        self.log.append((self._now, "create-claim", name))
        return True

    def delete_object(self, kind: str, namespace: str, name: str) -> None:
        if self.claims.pop(name, None) is not None:
            self.log.append((self._now, "delete-claim", name))

    # the engine's side
    def apply(self, action: str, obj: Obj, run_for: float | None = None) -> None:
        meta = obj["metadata"]
        self.controllers.apply(action, obj["kind"], meta.get("namespace", "default"), meta["name"], obj, run_for)

    def bind(self, name: str, node_name: str) -> None:
        self.node_of[name] = node_name
        self.log.append((self._now, "bind", name))
        self.controllers.pod_bound(self.pods[name], node_name)
        run_for = self.run_for[name]
        if run_for is not None:
            self.call_at(self._now + run_for, lambda: self._gone(name, succeeded=True, what="succeed"))

    def _schedule(self) -> None:
        for name, pod in sorted(self.pods.items()):
            if name in self.node_of:
                continue
            target = _daemon_node(pod)
            free = [n for n in sorted(self.nodes) if self._load(n) < self.capacity and target in (None, n)]
            if free:
                self.bind(name, min(free, key=self._load))

    def _load(self, node_name: str) -> int:
        return sum(1 for n in self.node_of.values() if n == node_name)

    def _gone(self, name: str, *, succeeded: bool, what: str) -> None:
        pod = self.pods.pop(name, None)
        if pod is None:
            return
        self.node_of.pop(name, None)
        self.log.append((self._now, what, name))
        self.controllers.pod_finished(pod, succeeded=succeeded)
        if self.auto_bind:
            self.call_at(self._now, self._schedule)

    def remove_node(self, name: str) -> None:
        del self.nodes[name]
        for pod_name in [p for p, n in self.node_of.items() if n == name]:
            self._gone(pod_name, succeeded=False, what="delete")
        self.controllers.node_removed(name)

    def add_node(self, obj: Obj) -> None:
        self.nodes[obj["metadata"]["name"]] = obj
        self.controllers.node_added(obj)

    def run(self, until: float = float("inf")) -> None:
        """Up to ``until``; without one, as the engine: until only timers that do not hold the run are left."""
        while self._timers and self._timers[0][0] <= until and (until != float("inf") or self._holding):
            at, seq, callback = heapq.heappop(self._timers)
            self._holding.discard(seq)
            self._now = at
            callback()
        if until != float("inf"):
            self._now = max(self._now, until)

    def names(self, prefix: str = "") -> list[str]:
        return sorted(n for n in self.pods if n.startswith(prefix))

    def events(self, what: str) -> list[tuple[float, str]]:
        return [(t, n) for t, w, n in self.log if w == what]


def _daemon_node(pod: Obj) -> str | None:
    terms = (
        ((pod["spec"].get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        or {}
    ).get("nodeSelectorTerms") or []
    for term in terms:
        for field in term.get("matchFields") or []:
            return str(field["values"][0])
    return None


def node(name: str, *, labels: dict[str, str] | None = None, taints: list[Obj] | None = None) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "spec": {"taints": taints or []},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def pod_template(labels: dict[str, str], **spec: Any) -> Obj:
    return {
        "metadata": {"labels": labels},
        "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}], **spec},
    }


def workload_obj(kind: str, name: str, spec: Obj) -> Obj:
    api = "batch/v1" if kind in ("Job", "CronJob") else "apps/v1"
    return {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": "default"}, "spec": spec}


def deployment(name: str, replicas: int, *, image: str = "v1", **spec: Any) -> Obj:
    template = pod_template({"app": name})
    template["spec"]["containers"][0]["image"] = image
    return workload_obj(
        "Deployment",
        name,
        {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template, **spec},
    )


# --- ReplicaSet and Deployment -------------------------------------------------------------------------------
def test_replicaset_makes_named_owned_pods_the_same_way_every_run() -> None:
    runs = []
    for _ in range(2):
        engine = FakeEngine(["n1", "n2"])
        rs = workload_obj(
            "ReplicaSet",
            "web",
            {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": pod_template({"app": "web"})},
        )
        engine.apply("create", rs)
        engine.run()
        runs.append(engine.names())
        pod = engine.pods[engine.names()[0]]
        ref = pod["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["name"], ref["controller"]) == ("ReplicaSet", "web", True)
        status = engine.controllers.get("ReplicaSet", "default", "web")
        assert status is not None
        assert ref["uid"] == status["metadata"]["uid"]
        assert status["status"]["availableReplicas"] == 3
        assert pod["metadata"]["labels"] == {"app": "web"}
        assert set(engine.owner_of.values()) == {"ReplicaSet/default/web"}
    assert runs[0] == runs[1]
    assert len(runs[0]) == 3
    assert all(n.startswith("web-") and len(n) == len("web-") + 5 for n in runs[0])


def test_replicaset_scale_down_deletes_the_pending_pod_first() -> None:
    engine = FakeEngine(["n1"], capacity=2)
    rs = workload_obj(
        "ReplicaSet",
        "web",
        {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": pod_template({"app": "web"})},
    )
    engine.apply("create", rs)
    engine.run()
    pending = [n for n in engine.pods if n not in engine.node_of]
    assert len(pending) == 1
    rs["spec"]["replicas"] = 2
    engine.apply("update", rs)
    engine.run()
    assert engine.events("delete") == [(0.0, pending[0])]
    assert sorted(engine.node_of) == engine.names()


def test_deployment_replicaset_is_named_by_the_template_hash_and_replaces_pods_of_a_removed_node() -> None:
    engine = FakeEngine(["n1", "n2", "n3"])
    engine.apply("create", deployment("web", 3))
    engine.run()
    names = engine.names()
    rs_name = names[0].rsplit("-", 1)[0]
    pod_hash = rs_name.removeprefix("web-")
    assert all(engine.pods[n]["metadata"]["labels"] == {"app": "web", "pod-template-hash": pod_hash} for n in names)
    assert sorted(engine.node_of.values()) == ["n1", "n2", "n3"]  # spread: one per node
    rs = engine.controllers.get("ReplicaSet", "default", rs_name)
    assert rs is not None
    assert rs["metadata"]["ownerReferences"][0]["name"] == "web"
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    engine.call_at(60.0, lambda: engine.remove_node("n2"))
    engine.run()
    assert len(engine.pods) == 3
    assert sorted(set(engine.node_of.values())) == ["n1", "n3"]
    created = engine.events("create")
    assert [t for t, _ in created] == [0.0, 0.0, 0.0, 60.0]
    status = engine.controllers.get("Deployment", "default", "web")
    assert status is not None and status["status"]["availableReplicas"] == 3


def test_deployment_rolling_update_stays_within_max_surge_and_max_unavailable() -> None:
    engine = FakeEngine(["n1", "n2"], auto_bind=False)
    d = deployment("web", 4, strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}})
    engine.apply("create", d)
    engine.run()
    for name in engine.names():
        engine.bind(name, "n1")
    engine.run()
    old = set(engine.names())
    d2 = deployment("web", 4, image="v2", strategy=d["spec"]["strategy"])
    engine.apply("update", d2)
    engine.run()
    seen_live: list[int] = []
    seen_bound: list[int] = []
    for _ in range(10):  # bind whatever is pending, one step at a time, as a slow scheduler would
        pending = [n for n in engine.names() if n not in engine.node_of]
        if not pending:
            break
        assert len(pending) == 1  # maxSurge 1: one new pod at a time
        engine.bind(pending[0], "n2")
        engine.run()
        seen_live.append(len(engine.pods))
        seen_bound.append(len(engine.node_of))
    assert engine.max_live == 5
    assert min(seen_bound) >= 4  # maxUnavailable 0: never fewer than 4 running
    assert not old & set(engine.names())
    assert all(engine.pods[n]["spec"]["containers"][0]["image"] == "v2" for n in engine.names())
    sets = [o for o in engine.controllers.objects() if o["kind"] == "ReplicaSet"]
    assert sorted(o["spec"]["replicas"] for o in sets) == [0, 4]
    new = next(o for o in sets if o["spec"]["replicas"] == 4)
    assert new["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"


def test_deployment_recreate_deletes_every_old_pod_before_the_first_new_one() -> None:
    engine = FakeEngine(["n1"])
    d = deployment("web", 3, strategy={"type": "Recreate"})
    engine.apply("create", d)
    engine.run()
    engine.call_at(
        10.0, lambda: engine.apply("update", deployment("web", 3, image="v2", strategy={"type": "Recreate"}))
    )
    engine.run()
    after = [(w, n) for t, w, n in engine.log if t == 10.0 and w in ("create", "delete")]
    assert [w for w, _ in after] == ["delete"] * 3 + ["create"] * 3


def test_deployment_scale_up_mid_rollout_is_shared_in_proportion() -> None:
    engine = FakeEngine(["n1"], auto_bind=False)
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 2, "maxUnavailable": 0}}
    engine.apply("create", deployment("web", 4, strategy=strategy))
    engine.run()
    for name in engine.names():
        engine.bind(name, "n1")
    engine.run()
    engine.apply("update", deployment("web", 4, image="v2", strategy=strategy))
    engine.run()  # the new ReplicaSet surges to 2, unbound: nothing old may go
    engine.apply("update", deployment("web", 8, image="v2", strategy=strategy))
    engine.run()
    # 8 + maxSurge 2 = 10 allowed, 6 there (max-replicas annotation 6): 4 to add; each set's share is its size
    # times 10/6 rounded: old 4 -> 6.67 -> 7 (+3), new 2 -> 3.33 -> 3 (+1)
    sets = {o["metadata"]["name"]: o for o in engine.controllers.objects() if o["kind"] == "ReplicaSet"}
    by_image = {o["spec"]["template"]["spec"]["containers"][0]["image"]: o["spec"]["replicas"] for o in sets.values()}
    assert by_image == {"v1": 7, "v2": 3}


# --- StatefulSet ---------------------------------------------------------------------------------------------
def statefulset(name: str, replicas: int, **spec: Any) -> Obj:
    return workload_obj(
        "StatefulSet",
        name,
        {
            "replicas": replicas,
            "serviceName": name,
            "selector": {"matchLabels": {"app": name}},
            "template": pod_template({"app": name}),
            **spec,
        },
    )


def test_statefulset_ordered_ready_creates_each_ordinal_after_the_previous_runs() -> None:
    engine = FakeEngine(["n1"], auto_bind=False)
    engine.apply("create", statefulset("db", 3))
    engine.run()
    assert engine.names() == ["db-0"]
    pod = engine.pods["db-0"]
    assert pod["spec"]["hostname"] == "db-0" and pod["spec"]["subdomain"] == "db"
    labels = pod["metadata"]["labels"]
    assert labels["statefulset.kubernetes.io/pod-name"] == "db-0"
    assert labels["apps.kubernetes.io/pod-index"] == "0"
    assert labels["controller-revision-hash"].startswith("db-")
    engine.call_at(5.0, lambda: engine.bind("db-0", "n1"))
    engine.run()
    assert engine.names() == ["db-0", "db-1"]
    engine.call_at(7.0, lambda: engine.bind("db-1", "n1"))
    engine.run()
    engine.bind("db-2", "n1")
    assert [(t, n) for t, n in engine.events("create")] == [(0.0, "db-0"), (5.0, "db-1"), (7.0, "db-2")]
    # scale down: the highest ordinal first
    engine.apply("update", statefulset("db", 1))
    engine.run()
    assert [n for _, n in engine.events("delete")] == ["db-2", "db-1"]
    # a pod that leaves comes back under its name
    engine.call_at(20.0, lambda: engine._gone("db-0", succeeded=False, what="delete"))
    engine.run()
    assert engine.events("create")[-1] == (20.0, "db-0")


def test_statefulset_parallel_creates_all_at_once_and_rolls_updates_from_the_top() -> None:
    engine = FakeEngine(["n1"])
    engine.apply("create", statefulset("db", 3, podManagementPolicy="Parallel"))
    engine.run()
    assert engine.names() == ["db-0", "db-1", "db-2"]
    updated = statefulset("db", 3, podManagementPolicy="Parallel")
    updated["spec"]["template"]["spec"]["containers"][0]["image"] = "v2"
    engine.call_at(30.0, lambda: engine.apply("update", updated))
    engine.run()
    assert [n for _, n in engine.events("delete")] == ["db-2", "db-1", "db-0"]
    assert all(engine.pods[n]["spec"]["containers"][0]["image"] == "v2" for n in engine.names())
    status = engine.controllers.get("StatefulSet", "default", "db")
    assert status is not None and status["status"]["currentRevision"] == status["status"]["updateRevision"]


def test_statefulset_claims_reach_the_engine_before_each_pod_and_go_with_the_set_when_it_says_so() -> None:
    engine = FakeEngine(["n1"], auto_bind=False)
    claim = {"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                                    "resources": {"requests": {"storage": "1Gi"}}}}  # fmt: skip
    sts = statefulset("db", 2, volumeClaimTemplates=[claim], podManagementPolicy="Parallel",
                      persistentVolumeClaimRetentionPolicy={"whenDeleted": "Delete"})  # fmt: skip
    engine.apply("create", sts)
    engine.run()
    made = [(what, name) for _, what, name in engine.log if what in ("create", "create-claim")]
    assert made == [
        ("create-claim", "data-db-0"),
        ("create-claim", "data-db-1"),
        ("create", "db-0"),
        ("create", "db-1"),
    ]
    volumes = engine.pods["db-0"]["spec"]["volumes"]
    assert {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}} in volumes
    assert engine.claims["data-db-0"]["metadata"]["labels"] == {"app": "db"}
    engine.apply("delete", sts)
    engine.run()
    assert engine.claims == {} and engine.pods == {}


# --- DaemonSet -----------------------------------------------------------------------------------------------
def daemonset(name: str, **template_spec: Any) -> Obj:
    return workload_obj(
        "DaemonSet",
        name,
        {"selector": {"matchLabels": {"app": name}}, "template": pod_template({"app": name}, **template_spec)},
    )


def test_daemonset_puts_one_pod_per_eligible_node_and_follows_nodes() -> None:
    engine = FakeEngine(["n1", "n2"])
    engine.nodes["gpu"] = node("gpu", taints=[{"key": "gpu", "value": "true", "effect": "NoSchedule"}])
    engine.apply("create", daemonset("agent"))
    engine.run()
    assert sorted(engine.node_of.values()) == ["n1", "n2"]  # the tainted node is not eligible
    pod = engine.pods[engine.names()[0]]
    term = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["nodeSelectorTerms"][0]["matchFields"][0]["key"] == "metadata.name"
    keys = {t["key"] for t in pod["spec"]["tolerations"]}
    assert {"node.kubernetes.io/unschedulable", "node.kubernetes.io/not-ready"} <= keys
    assert "controller-revision-hash" in pod["metadata"]["labels"]
    engine.call_at(100.0, lambda: engine.add_node(node("n3")))
    engine.run()
    assert sorted(engine.node_of.values()) == ["n1", "n2", "n3"]
    engine.call_at(200.0, lambda: engine.remove_node("n1"))
    engine.run()
    assert sorted(engine.node_of.values()) == ["n2", "n3"]
    assert [t for t, _ in engine.events("create")] == [0.0, 0.0, 100.0]

    def taint_n2() -> None:
        engine.nodes["n2"] = node("n2", taints=[{"key": "drain", "effect": "NoExecute"}])
        engine.controllers.node_added(engine.nodes["n2"])

    engine.call_at(300.0, taint_n2)
    engine.run()
    assert sorted(engine.node_of.values()) == ["n3"]


def test_daemonset_rolling_update_replaces_one_node_at_a_time() -> None:
    engine = FakeEngine(["n1", "n2", "n3"], auto_bind=False)
    engine.apply("create", daemonset("agent"))
    engine.run()
    for name in engine.names():
        engine.bind(name, _daemon_node(engine.pods[name]) or "")
    engine.run()
    old = set(engine.names())
    updated = daemonset("agent")
    updated["spec"]["template"]["spec"]["containers"][0]["image"] = "v2"
    engine.apply("update", updated)
    engine.run()
    order: list[str | None] = []
    for _ in range(3):  # maxUnavailable 1: the next old pod goes only once the new one runs
        assert len(old & set(engine.names())) == 2 - len(order)
        new = [n for n in engine.names() if n not in old and n not in engine.node_of]
        assert len(new) == 1
        order.append(_daemon_node(engine.pods[new[0]]))
        engine.bind(new[0], order[-1] or "")
        engine.run()
    assert order == ["n1", "n2", "n3"]
    assert not old & set(engine.names())


def test_daemonset_node_selector_limits_nodes() -> None:
    engine = FakeEngine([])
    engine.add_node(node("a", labels={"role": "edge"}))
    engine.add_node(node("b"))
    engine.apply("create", daemonset("edge", nodeSelector={"role": "edge"}))
    engine.run()
    assert list(engine.node_of.values()) == ["a"]


# --- Job -----------------------------------------------------------------------------------------------------
def job(name: str, **spec: Any) -> Obj:
    return workload_obj("Job", name, {"template": pod_template({}, restartPolicy="Never"), **spec})


def test_job_runs_completions_in_waves_of_parallelism() -> None:
    engine = FakeEngine(["n1"])
    engine.apply("create", job("batch", completions=4, parallelism=2), run_for=600.0)
    engine.run()
    assert [t for t, _ in engine.events("create")] == [0.0, 0.0, 600.0, 600.0]
    status = engine.controllers.get("Job", "default", "batch")
    assert status is not None
    assert status["status"]["succeeded"] == 4
    assert [c["type"] for c in status["status"]["conditions"]] == ["SuccessCriteriaMet", "Complete"]
    assert status["status"]["completionTime"] == "2025-03-01T00:20:00Z"
    name = engine.events("create")[0][1]
    assert name.startswith("batch-") and len(name) == len("batch-") + 5
    assert engine.owner_of[name] == "Job/default/batch"


def test_indexed_job_pods_carry_their_index() -> None:
    engine = FakeEngine(["n1"], auto_bind=False)
    engine.apply("create", job("idx", completions=3, parallelism=3, completionMode="Indexed"), run_for=60.0)
    engine.run()
    pods = [engine.pods[n] for n in engine.names()]
    indexes = sorted(p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] for p in pods)
    assert indexes == ["0", "1", "2"]
    for p in pods:
        index = p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"]
        assert p["spec"]["hostname"] == f"idx-{index}"
        assert p["metadata"]["name"].startswith(f"idx-{index}-")
        assert p["metadata"]["labels"]["batch.kubernetes.io/job-name"] == "idx"
        assert p["metadata"]["labels"]["job-name"] == "idx"
    # index 1 fails: it alone is made again, after the 10 s pod-failure backoff
    one = next(n for n in engine.names() if n.startswith("idx-1-"))
    engine._gone(one, succeeded=False, what="delete")
    engine.run(until=60.0)  # the backoff does not hold a run: it fires while the run goes on
    assert [t for t, _ in engine.events("create")] == [0.0, 0.0, 0.0, 10.0]
    assert engine.events("create")[-1][1].startswith("idx-1-")


def test_job_backoff_doubles_and_the_limit_fails_the_job() -> None:
    engine = FakeEngine(["n1"], auto_bind=False)
    engine.apply("create", job("flaky", backoffLimit=2))
    engine.run()
    for until in (10.0, 30.0, 100.0):  # each pod fails as soon as it is made
        engine._gone(engine.names()[0], succeeded=False, what="delete")
        engine.run(until=until)  # the backoff does not hold a run: it fires while the run goes on
    assert [t for t, _ in engine.events("create")] == [0.0, 10.0, 30.0]
    status = engine.controllers.get("Job", "default", "flaky")
    assert status is not None
    assert status["status"]["failed"] == 3
    assert status["status"]["conditions"][0]["reason"] == "BackoffLimitExceeded"
    assert engine.names() == []


def test_job_active_deadline_deletes_its_pods_at_the_deadline() -> None:
    engine = FakeEngine(["n1"])
    engine.apply("create", job("slow", parallelism=2, completions=2, activeDeadlineSeconds=90), run_for=3600.0)
    engine.run()
    assert engine.events("delete") and {t for t, _ in engine.events("delete")} == {90.0}
    status = engine.controllers.get("Job", "default", "slow")
    assert status is not None and status["status"]["conditions"][0]["reason"] == "DeadlineExceeded"


# --- CronJob -------------------------------------------------------------------------------------------------
def cronjob(name: str, schedule: str, **spec: Any) -> Obj:
    return workload_obj(
        "CronJob",
        name,
        {"schedule": schedule, "jobTemplate": {"spec": {"template": pod_template({}, restartPolicy="Never")}}, **spec},
    )


def test_cronjob_makes_its_jobs_at_the_schedule_times() -> None:
    # Each 100 ms after its time: the controller looks again then (upstream's nextScheduleTimeDuration).
    engine = FakeEngine(["n1"])
    engine.apply("create", cronjob("tick", "*/10 * * * *"), run_for=60.0)
    engine.run(until=3000.1)
    times = [t for t, _ in engine.events("create")]
    assert times == [600.1, 1200.1, 1800.1, 2400.1, 3000.1]
    minutes = int(EPOCH.timestamp()) // 60
    owners = sorted(set(engine.owner_of.values()))
    assert owners == [f"Job/default/tick-{minutes + m}" for m in (10, 20, 30, 40, 50)]
    status = engine.controllers.get("CronJob", "default", "tick")
    assert status is not None and status["status"]["lastScheduleTime"] == "2025-03-01T00:50:00Z"
    jobs = [o for o in engine.controllers.objects() if o["kind"] == "Job"]
    assert len(jobs) == 3 + 1  # three finished kept (successfulJobsHistoryLimit), the one running
    annotation = jobs[-1]["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
    assert annotation == "2025-03-01T00:50:00Z"


def test_cronjob_forbid_starts_a_missed_time_when_the_running_job_ends() -> None:
    engine = FakeEngine(["n1"])
    engine.apply("create", cronjob("long", "*/10 * * * *", concurrencyPolicy="Forbid"), run_for=900.0)
    engine.run(until=2400.2)
    # 600: starts (runs to 1500); 1200: forbidden; 1500: the 1200 run starts late (runs to 2400); 1800 forbidden
    assert [t for t, _ in engine.events("create")] == [600.1, 1500.1, 2400.1]


def test_cronjob_replace_deletes_the_running_job() -> None:
    engine = FakeEngine(["n1"])
    engine.apply("create", cronjob("swap", "*/10 * * * *", concurrencyPolicy="Replace"), run_for=900.0)
    engine.run(until=1200.1)
    assert [t for t, _ in engine.events("create")] == [600.1, 1200.1]
    assert [t for t, _ in engine.events("delete")] == [1200.1]


# --- bad input ---------------------------------------------------------------------------------------------
def test_bad_workload_objects_are_named_with_their_problem() -> None:
    assert check_workload_object(deployment("ok", 1)) == []
    no_template = workload_obj("Deployment", "x", {"replicas": 1})  # the API's own messages
    assert check_workload_object(no_template) == [
        "spec.selector: Required value",
        "spec.template.spec.containers: Required value",
    ]
    bad = cronjob("c", "every tuesday")
    problems = check_workload_object(bad)
    assert len(problems) == 1 and problems[0].startswith('spec.schedule: Invalid value: "every tuesday"')
    engine = FakeEngine(["n1"])
    with pytest.raises(WorkloadError) as info:
        engine.apply("create", bad)
    assert info.value.problems[0].startswith('CronJob default/c: CronJob.batch "c" is invalid: spec.schedule')
    assert engine.controllers.objects() == []


# --- end to end through Replay -----------------------------------------------------------------------------------
def _node_doc(name: str) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
    }


def _replay(events: list[Obj], *, start: list[Obj] | None = None, until: float | None = None) -> Replay:
    doc = {
        "apiVersion": "kss.sigs.k8s.io/v1alpha1",
        "kind": "TimedWorkload",
        "metadata": {"name": "t"},
        "spec": {"epoch": "2025-03-01T00:00:00Z", "start": start or [], "events": events},
    }
    return Replay(parse_workload(json.dumps(doc)), until=until)


def test_replay_refuses_a_bad_workload_object_before_running() -> None:
    with pytest.raises(WorkloadError) as info:
        _replay([{"at": 0, "create": node("n1")}, {"at": "5m", "create": cronjob("c", "@sometimes")}])
    assert info.value.problems == [  # the API's own validation, as kube-apiserver words it
        'spec.events[1].create: spec.schedule: Invalid value: "@sometimes": unrecognized descriptor: @sometimes'
    ]


def test_replay_deployment_spreads_and_is_recreated_after_a_node_removal() -> None:
    spread = [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]  # fmt: skip
    d = deployment("web", 3)
    d["spec"]["template"]["spec"]["topologySpreadConstraints"] = spread
    run = _replay(
        [{"at": 0, "create": d}, {"at": "10m", "delete": {"kind": "Node", "name": "n2"}}],
        start=[_node_doc("n1"), _node_doc("n2"), _node_doc("n3")],
    )
    result = run.run()
    first = [r for r in result.pods if r.arrival == 0.0]
    assert sorted(r.node or "" for r in first) == ["n1", "n2", "n3"]
    assert all(r.owner.startswith("ReplicaSet/default/web-") for r in result.pods)
    # The node's pod runs on, counted by its ReplicaSet, until the pod GC deletes it 40 s later; then it is replaced.
    replaced = [r for r in result.pods if r.arrival > 0.0]
    assert len(replaced) == 1 and replaced[0].arrival == replaced[0].bound_at == 640.0
    assert replaced[0].node in ("n1", "n3")
    gone = [r for r in result.pods if r.outcome == DELETED]
    assert len(gone) == 1 and gone[0].node == "n2" and gone[0].finished_at == 640.0


def test_replay_pod_gc_marks_the_pod_failed_and_disrupted_before_it_deletes_it() -> None:
    # As kss serve's pod GC (and kube-controller-manager's gcOrphaned): the pod of a removed node is marked Failed
    # with the DisruptionTarget condition (DeletionByPodGC) before its forced delete, what its controller (a Job's
    # podFailurePolicy) reads; the record says why it was deleted.
    run = _replay(
        [{"at": 0, "create": deployment("web", 1)}, {"at": "1m", "delete": {"kind": "Node", "name": "n1"}}],
        start=[_node_doc("n1")],
        until=200,
    )
    assert run.controllers is not None
    deleted: list[Obj] = []
    run.controllers.store.add_listener(lambda kind, _, obj: deleted.append(obj) if kind == "DELETED" else None, ["Pod"])
    result = run.run()
    first = min(result.pods, key=lambda r: r.arrival)
    assert (first.node, first.finished_at, first.outcome, first.reason) == ("n1", 100.0, DELETED, POD_GC)
    assert len(deleted) == 1
    status = deleted[0]["status"]
    assert status["phase"] == "Failed"
    assert [c for c in status["conditions"] if c["type"] == "DisruptionTarget"] == [
        {
            "type": "DisruptionTarget",
            "status": "True",
            "reason": "DeletionByPodGC",
            "message": "PodGC: node no longer exists",
            "lastTransitionTime": "2025-03-01T00:01:40Z",
        }
    ]


def test_replay_job_of_four_completions_two_at_a_time_finishes_at_twenty_minutes() -> None:
    run = _replay(
        [{"at": 0, "create": job("batch", completions=4, parallelism=2), "runFor": "10m"}],
        start=[_node_doc("n1")],
    )
    result = run.run()
    assert sorted(r.arrival for r in result.pods) == [0.0, 0.0, 600.0, 600.0]
    assert all(r.outcome == SUCCEEDED for r in result.pods)
    assert max(r.finished_at or 0 for r in result.pods) == 1200.0
    assert run.controllers is not None
    status = run.controllers.get("Job", "default", "batch")
    assert status["status"]["completionTime"] == "2025-03-01T00:20:00Z"


def test_replay_daemonset_covers_a_node_added_later() -> None:
    run = _replay(
        [{"at": 0, "create": daemonset("agent")}, {"at": "1h", "create": _node_doc("late")}],
        start=[_node_doc("n1"), _node_doc("n2")],
    )
    result = run.run()
    placed = sorted((r.arrival, r.node or "") for r in result.pods)
    assert placed == [(0.0, "n1"), (0.0, "n2"), (3600.0, "late")]
    assert all(r.bound_at == r.arrival for r in result.pods)


def test_replay_cronjob_every_ten_minutes_makes_its_jobs_on_time() -> None:
    # The controller looks again 100 ms after each schedule time (upstream's nextScheduleTimeDuration), so a Job
    # is made then.
    run = _replay([{"at": 0, "create": cronjob("tick", "*/10 * * * *"), "runFor": "1m"}], until=3600.1)
    run.workload.start.append(_node_doc("n1"))
    result = run.run()
    assert [r.arrival for r in result.pods] == [600.0 * k + 0.1 for k in range(1, 7)]
    assert all(r.bound_at == r.arrival for r in result.pods)
    assert [r.finished_at for r in result.pods[:-1]] == [600.0 * k + 60.1 for k in range(1, 6)]
    assert result.pods[-1].outcome == "running"  # made at 3600.1, the run ends there
    minutes = int(EPOCH.timestamp()) // 60
    assert [r.owner for r in result.pods] == [f"Job/default/tick-{minutes + 10 * k}" for k in range(1, 7)]


def test_replay_without_until_ends_when_only_a_cronjobs_schedule_is_left() -> None:
    # A CronJob would make Jobs forever: its schedule does not hold the run, the workload's last event and the
    # pods it started do (the Job made at 600.1 s runs until 660.1 s, the event at 700 s is the last).
    run = _replay(
        [
            {"at": 0, "create": cronjob("tick", "*/10 * * * *"), "runFor": "1m"},
            {"at": 700, "cordon": "n1"},
        ]
    )
    run.workload.start.append(_node_doc("n1"))
    result = run.run()
    assert [r.arrival for r in result.pods] == [600.1]
    assert result.pods[0].finished_at == 660.1
    assert result.virtual_seconds == 700.0


def test_replay_with_workload_objects_is_the_same_for_the_same_seed_and_names_differ_for_another() -> None:
    def records(seed: int) -> list[tuple[str, str, str, float, float | None, float | None, str]]:
        events = [
            {"at": 0, "create": deployment("web", 3)},
            {"at": 0, "create": job("batch", completions=4, parallelism=2), "runFor": "10m"},
            {"at": "15m", "delete": {"kind": "Node", "name": "n2"}},
        ]
        doc = {
            "apiVersion": "kss.sigs.k8s.io/v1alpha1",
            "kind": "TimedWorkload",
            "metadata": {"name": "t"},
            "spec": {"epoch": "2025-03-01T00:00:00Z", "start": [_node_doc("n1"), _node_doc("n2")], "events": events},
        }
        result = Replay(parse_workload(json.dumps(doc)), seed=seed).run()
        return [(r.key, r.uid, r.owner, r.arrival, r.bound_at, r.finished_at, r.node) for r in result.pods]

    first = records(7)
    assert len(first) > 3 + 4  # and the pods of n2 made again at 15 min
    assert records(7) == first
    other = records(8)
    assert [r[0] for r in other] != [r[0] for r in first]  # generated names drawn from another seed
    assert len(other) == len(first)


def test_replay_job_update_keeps_what_the_api_generated_and_takes_the_new_parallelism() -> None:
    # The update is written as the create was, without the selector and labels the API generated at the create
    # (immutable, so they are kept, as kubectl apply keeps them).
    events = [
        {"at": 0, "create": job("batch", completions=4, parallelism=1)},
        {"at": "10m", "update": job("batch", completions=4, parallelism=2)},
    ]
    run = _replay(events, start=[_node_doc("n1")])
    result = run.run()
    assert [r.arrival for r in result.pods] == [0.0, 600.0]
    assert run.controllers is not None
    assert run.controllers.get("Job", "default", "batch")["spec"]["parallelism"] == 2

"""Replay runs in the results database: the migration, ``RunRecorder`` and live queries kept to the live cluster."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import Engine, inspect, text

from kss_sim.db import alembic_config, make_engine, make_session_factory, session_scope, upgrade_database
from kss_sim.replay.model import PodRecord
from kss_sim.replay.recording import RunRecorder
from kss_sim.results.attempts import ResultsService
from kss_sim.results.rows import AttemptRetention
from kss_sim.results.runs import RunsService
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo
from kss_sim.scheduler.record import Attempt
from kss_sim.simulation.runner import ScenarioRun
from kss_sim.web.ports import AttemptQuery, Results, Runs
from tests.results.test_record_db import scenario


class ScenarioState:
    """What a recorder reads of a run (``ReplayState``), for attempts made by the offline runner: every pod
    arrived at 0, the clock at ``now``."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        self.now = 0.0
        uids = [(p["metadata"]["uid"], p["metadata"]["name"]) for p in pods]
        self._pods = {uid: PodRecord(key=f"default/{name}", uid=uid, arrival=0.0) for uid, name in uids}

    @property
    def nodes(self) -> list[NodeInfo]:
        return []

    @property
    def cluster(self) -> ClusterObjects:
        return ClusterObjects()

    @property
    def pods(self) -> Mapping[str, PodRecord]:
        return self._pods

    def queue_counts(self) -> dict[str, int]:
        return {}

    def pending_pods(self) -> int:
        return 0

    def running_pods(self) -> int:
        return 0


def offline_attempts() -> tuple[dict[str, Any], list[tuple[Attempt, PodInfo]]]:
    """The reference scenario (fits, ties, fits nowhere, preempts) scheduled with every verdict recorded."""
    sc = scenario()
    by_key = {f"default/{p['metadata']['name']}": PodInfo(p) for p in sc["pending"]}
    attempts = [(att, by_key[att.pod]) for att, _ in ScenarioRun(copy.deepcopy(sc), record=True).run()]
    return sc, attempts


def record_run(db: Path, *, name: str = "run-a", group: str | None = None) -> tuple[int, list[Attempt]]:
    sc, attempts = offline_attempts()
    state = ScenarioState(sc["pending"])
    with RunRecorder(db, name=name, workload="record-db", seed=7, config={"kind": "X"}, compare_group=group) as rec:
        rec.on_start(state)
        for i, (att, pod) in enumerate(attempts):
            state.now = float(i)
            rec.on_attempt(state, att, pod)
        rec.finish(
            {"pods": len(sc["pending"]), "scheduled": 3, "waitSeconds": {"p95": 1.5}},
            [{"t": 0.0, "cpu_requested": 1.0}, {"t": 3600.0, "cpu_requested": 2.5}],
            [{"pod": "default/web-0", "outcome": "running", "node": "node-03"}],
        )
        assert rec.run_id is not None
        return rec.run_id, [att for att, _ in attempts]


def services(db: Path) -> Iterator[tuple[ResultsService, RunsService]]:
    engine = make_engine(f"sqlite:///{db}")
    factory = make_session_factory(engine)
    yield ResultsService(lambda: session_scope(factory)), RunsService(lambda: session_scope(factory))
    engine.dispose()


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[Path, ResultsService, RunsService]]:
    db = tmp_path / "results.db"
    upgrade_database(make_engine(f"sqlite:///{db}"))
    for results, runs in services(db):
        ports: tuple[Results, Runs] = (results, runs)  # what the web pages read them as (mypy checks the shapes)
        assert ports
        yield db, results, runs


def test_migration_adds_runs_and_keeps_existing_attempts_live(backend_url: str) -> None:
    engine = make_engine(backend_url)
    cfg = alembic_config(backend_url)
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "0003")
    factory = make_session_factory(engine)
    results = ResultsService(lambda: session_scope(factory))
    _, attempts = offline_attempts()
    for att, pod in attempts[:3]:
        with session_scope(factory) as session:  # written by the 0003 schema's columns only
            session.execute(
                text(
                    "INSERT INTO scheduling_attempts (namespace, pod_name, pod_uid, attempt, cycle, profile,"
                    " started_at, duration_seconds, queued_seconds, result, message, node_count, feasible_count,"
                    " details)"
                    " VALUES (:ns, :name, 'u', :n, 0, 'p', 0, 0, 0, :result, '', 0, 0, '{}')"
                ),
                {"ns": pod.namespace, "name": pod.name, "n": att.attempt, "result": att.result},
            )
    upgrade_database(engine)
    columns = {c["name"]: c for c in inspect(engine).get_columns("scheduling_attempts")}
    assert columns["run_id"]["nullable"]
    assert "replay_runs" in inspect(engine).get_table_names()
    assert {i["name"] for i in inspect(engine).get_indexes("scheduling_attempts")} == {
        "ix_scheduling_attempts_pod",
        "ix_scheduling_attempts_run",
    }
    assert results.count() == 3  # the attempts from before are the live cluster's
    runs = RunsService(lambda: session_scope(factory))
    run_id = runs.create_run(name="r", workload="w", seed=1, config={})
    results.submit(attempts[0][0], namespace="default", pod_name="web-0", pod_uid="u", run_id=run_id)
    results.stop()
    assert results.count(run_id=run_id) == 1 and results.count() == 3
    # Down again: the run attempts go with the table; the live ones stay.
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0003")
    assert "replay_runs" not in inspect(engine).get_table_names()
    assert "run_id" not in {c["name"] for c in inspect(engine).get_columns("scheduling_attempts")}
    with engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM scheduling_attempts")).scalar() == 3
    engine.dispose()


def test_recorder_writes_the_run_and_every_attempt(stores: tuple[Path, ResultsService, RunsService]) -> None:
    db, results, runs = stores
    run_id, attempts = record_run(db)
    run = runs.get_run(run_id)
    assert run is not None
    assert (run["name"], run["workload"], run["seed"], run["status"], run["message"]) == (
        "run-a",
        "record-db",
        7,
        "done",
        "",
    )
    assert run["config"] == {"kind": "X"}
    assert run["summary"]["waitSeconds"]["p95"] == 1.5
    assert [r["cpu_requested"] for r in run["timeseries"]] == [1.0, 2.5]
    assert run["pods"] == [{"pod": "default/web-0", "outcome": "running", "node": "node-03"}]
    assert results.count(run_id=run_id) == len(attempts) > 20
    for att in attempts:
        namespace, name = att.pod.split("/")
        got = runs.get_attempt(run_id, namespace, name, att.attempt, AttemptQuery(page_size=1000))
        assert got is not None
        assert (got["result"], got["boundTo"], got["message"]) == (att.result, att.bound_to, att.message)
        rows = {r["node"]: r for r in got["matrix"]["rows"]}
        assert {n: r["filter"] for n, r in rows.items() if r["filter"]} == att.filter
    # The preemptor tried twice; each attempt's queued time is its virtual wait so far.
    vip = runs.list_attempts(run_id, "default", "vip")
    assert [a["attempt"] for a in vip] == [2, 1] and vip[0]["queuedSeconds"] > vip[1]["queuedSeconds"]
    assert runs.attempt_counts(run_id)[("default", "vip")] == 2


def test_live_queries_do_not_see_run_attempts(stores: tuple[Path, ResultsService, RunsService]) -> None:
    db, results, _ = stores
    _, attempts = offline_attempts()
    live = attempts[0][0]  # the live cluster has a pod of the same name as one of the run's
    results.submit(live, namespace="default", pod_name="web-0", pod_uid="live-uid")
    results.flush()
    run_id, _ = record_run(db)
    assert [a["attempt"] for a in results.list_attempts("default", "web-0")] == [live.attempt]
    assert results.list_attempts("default", "vip") == []
    assert results.get_attempt("default", "vip", 1) is None
    assert results.attempt_counts() == {("default", "web-0"): 1}
    assert results.count() == 1
    # Forgetting the live cluster's results (reset, clear) leaves the run's.
    n = results.count(run_id=run_id)
    assert results.clear_pod("default", "web-0") == 1
    results.clear_all()
    assert results.count() == 0 and results.count(run_id=run_id) == n
    results.stop()


def test_trimming_live_attempts_leaves_a_run_with_the_same_pod_alone(tmp_path: Path) -> None:
    db = tmp_path / "results.db"
    engine = make_engine(f"sqlite:///{db}")
    upgrade_database(engine)
    factory = make_session_factory(engine)
    results = ResultsService(lambda: session_scope(factory), retention=AttemptRetention(1))
    runs = RunsService(lambda: session_scope(factory))
    run_id = runs.create_run(name="r", workload="w", seed=0, config=None)
    _, attempts = offline_attempts()
    first = next(att for att, pod in attempts if pod.name == "vip")
    for number in (1, 2, 3):
        att = copy.copy(first)
        att.attempt = number
        results.submit(att, namespace="default", pod_name="vip", pod_uid="u", run_id=run_id)
        results.submit(att, namespace="default", pod_name="vip", pod_uid="u")
    results.stop()
    assert [a["attempt"] for a in results.list_attempts("default", "vip")] == [3]
    assert [a["attempt"] for a in runs.list_attempts(run_id, "default", "vip")] == [3, 2, 1]
    engine.dispose()


def test_a_replay_that_raises_leaves_its_run_failed(stores: tuple[Path, ResultsService, RunsService]) -> None:
    db, _, runs = stores
    sc, attempts = offline_attempts()
    state = ScenarioState(sc["pending"])
    with pytest.raises(RuntimeError), RunRecorder(db, name="boom", workload="w") as rec:
        rec.on_start(state)
        rec.on_attempt(state, *attempts[0])
        raise RuntimeError("engine exploded")
    with RunRecorder(db, name="cut short", workload="w") as rec2:
        rec2.on_start(state)  # ends without finish()
    listed = {r["name"]: r for r in runs.list_runs()}
    assert listed["boom"]["status"] == "failed" and listed["boom"]["message"] == "RuntimeError: engine exploded"
    assert listed["cut short"]["status"] == "failed"
    assert "before its results were stored" in listed["cut short"]["message"]
    assert listed["boom"]["summary"] is None


def test_runs_list_newest_first_compare_groups_and_delete(stores: tuple[Path, ResultsService, RunsService]) -> None:
    db, results, runs = stores
    a, _ = record_run(db, name="a", group="cmp-1")
    b, _ = record_run(db, name="b", group="cmp-1")
    c, _ = record_run(db, name="c")
    assert [r["id"] for r in runs.list_runs()] == [c, b, a]
    assert [r["name"] for r in runs.list_runs(ids=[a, c])] == ["c", "a"]
    assert [r["name"] for r in runs.compare_group("cmp-1")] == ["a", "b"]
    assert runs.list_runs()[0]["summary"]["scheduled"] == 3
    assert runs.delete_run(b)
    assert runs.get_run(b) is None and results.count(run_id=b) == 0 and results.count(run_id=a) > 0
    assert not runs.delete_run(b)


def test_record_db_file_is_created_and_migrated(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    with RunRecorder(db, name="x", workload="w") as rec:
        rec.start()
        rec.finish({}, [], [])
    engine: Engine = make_engine(f"sqlite:///{db}")
    assert {"replay_runs", "scheduling_attempts"} <= set(inspect(engine).get_table_names())
    engine.dispose()

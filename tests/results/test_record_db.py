"""``kss simulate --record-db``: every attempt of a run, written by the writer process, reads back complete."""

from __future__ import annotations

import argparse
import copy
import gc
import json
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from sqlalchemy import Engine

from kss_sim.db import make_engine, make_session_factory, session_scope, upgrade_database
from kss_sim.results import process_writer
from kss_sim.results.attempts import ResultsService
from kss_sim.results.rows import BEST_TOTAL, attempt_row, matrix_rejections, rejection_histogram, resolve_selected
from kss_sim.scheduler.record import Attempt, FilterMatrix
from kss_sim.simulation import cli
from kss_sim.simulation.runner import ScenarioRun, run_scenario
from kss_sim.web.ports import AttemptQuery
from tests.scheduler.factories import make_node, make_pod

TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


def scenario() -> dict[str, Any]:
    """Nodes that reject pods for different reasons, pods that fit, tie, fit nowhere and preempt."""
    nodes = [make_node(name=f"node-{i:02d}", allocatable={"cpu": str(1 + i % 4)}) for i in range(12)]
    nodes += [make_node(name="tainted", taints=[TAINT]), make_node(name="cordoned", unschedulable=True)]
    nodes.append(make_node(name="zone-a", labels={"zone": "a"}, allocatable={"cpu": "8"}))
    pending = [make_pod(name=f"web-{i}", requests={"cpu": "900m"}) for i in range(20)]
    pending.append(make_pod(name="huge", requests={"cpu": "64"}))
    pending.append(make_pod(name="picky", requests={"cpu": "1"}, spec={"nodeSelector": {"zone": "a"}}))
    pending.append(make_pod(name="vip", requests={"cpu": "3500m"}, priority=1000))
    return {"meta": {"name": "record-db", "family": "trace"}, "nodes": nodes, "pending": pending}


def reference_attempts(sc: dict[str, Any]) -> list[Attempt]:
    return [att for att, _ in ScenarioRun(copy.deepcopy(sc), record=True).run() if att.pre_enqueue is None]


def test_record_db_holds_every_verdict_and_score(tmp_path: Path) -> None:
    sc = scenario()
    path = tmp_path / "s.scenario.json"
    path.write_text(json.dumps(sc))
    db = tmp_path / "results.db"
    parser = argparse.ArgumentParser()
    cli.add_arguments(parser)  # as `kss simulate` parses its command line
    args = parser.parse_args(
        [str(path), "--detail", "placements", "--out-dir", str(tmp_path / "out"), "--record-db", str(db)]
    )
    assert cli.run(args) == 0

    factory = make_session_factory(make_engine(f"sqlite:///{db}"))
    svc = ResultsService(lambda: session_scope(factory))
    attempts = reference_attempts(sc)
    assert svc.count() == len(attempts) > len(sc["pending"])  # the preemptor's second attempt too
    assert any(att.result != "scheduled" for att in attempts)
    for att in attempts:
        namespace, name = att.pod.split("/")
        got = svc.get_attempt(namespace, name, att.attempt, AttemptQuery(page_size=1000))
        assert got is not None
        assert (got["result"], got["boundTo"], got["message"]) == (att.result, att.bound_to, att.message)
        # Details the writer rebuilds (the best nodes, from the scores) or sends once per batch (shared maps).
        assert got["tiedNodes"] == att.selected and got["tiedCount"] == len(att.selected or ())
        assert got["selected"] == ([att.suggested_host] if att.suggested_host else None)
        assert got["tieBreak"] == ("name" if len(att.selected or ()) > 1 else None)  # kss simulate breaks ties by name
        assert (got["prefilter"], got["prescore"], got["reserve"]) == (att.prefilter, att.prescore, att.reserve)
        assert got["filterPlugins"] == att.filter_plugins
        rows = {r["node"]: r for r in got["matrix"]["rows"]}
        assert [n for n, r in rows.items() if r["selected"]] == [n for n in [att.suggested_host] if n in rows]
        assert {n for n, r in rows.items() if r["tied"]} == (set(att.selected or ()) if got["tiedCount"] > 1 else set())
        assert {n: r["filter"] for n, r in rows.items() if r["filter"]} == att.filter
        assert {n: r["stoppedAt"] for n, r in rows.items() if r["stoppedAt"]} == {
            n: text.split(":")[0] for n, text in att.filter_fail.items()
        }
        assert {n: r["unresolvable"] for n, r in rows.items() if r["unresolvable"]} == att.unresolvable
        for key, want in (
            ("score", att.score),
            ("normalizedScore", att.normalized_score),
            ("finalScore", att.final_score),
            ("total", att.total),
        ):
            assert {n: r[key] for n, r in rows.items() if r[key] is not None} == (want or {}), key
        listing = {a["attempt"]: a for a in svc.list_attempts(namespace, name)}
        assert listing[att.attempt]["rejections"] == rejection_histogram(att)


def record_through_the_writer_process(tmp_path: Path) -> tuple[Engine, ResultsService, list[Attempt]]:
    """The reference scenario's attempts recorded by a writer process into a fresh results database."""
    db = tmp_path / "results.db"
    engine = make_engine(f"sqlite:///{db}")
    upgrade_database(engine)
    factory = make_session_factory(engine)
    svc = ResultsService(lambda: session_scope(factory), writer_url=f"sqlite:///{db}")
    attempts = reference_attempts(scenario())
    for att in attempts:
        namespace, name = att.pod.split("/")
        svc.submit(att, namespace=namespace, pod_name=name, pod_uid="uid")
    svc.stop()
    return engine, svc, attempts


def test_best_nodes_taken_from_the_scores_are_stored_as_a_marker_by_both_writers(tmp_path: Path) -> None:
    engine, _, attempts = record_through_the_writer_process(tmp_path)
    with engine.connect() as conn:
        stored = dict(
            ((ns, pod, attempt), json.loads(details))
            for ns, pod, attempt, details in conn.exec_driver_sql(
                "SELECT namespace, pod_name, attempt, details FROM scheduling_attempts"
            )
        )
    marked = 0
    for att in attempts:
        namespace, name = att.pod.split("/")
        details = stored[(namespace, name, att.attempt)]
        # The thread writer (``kss serve``) stores the same details as the process writer.
        thread_row = attempt_row(att, namespace=namespace, pod_name=name, pod_uid="uid", queued_seconds=0.0)
        assert json.loads(thread_row["details"]) == details
        if details["selected"] == BEST_TOTAL:
            marked += 1
            assert att.total and att.selected == sorted(n for n, t in att.total.items() if t == max(att.total.values()))
        else:
            assert details["selected"] == att.selected
    ties = [att for att in attempts if att.selected and len(att.selected) > 1]
    assert ties and marked >= len(ties), "every tie of several nodes is stored as the marker, not as names"
    assert resolve_selected(BEST_TOTAL, {"a": 3, "b": 5, "c": 5}) == ["b", "c"]
    assert resolve_selected(["x"], {"a": 1}) == ["x"] and resolve_selected(None, {}) is None


def test_rejections_from_the_matrix_equal_the_histogram_in_order() -> None:
    for att in reference_attempts(scenario()):
        pure = att.matrices_only()
        if pure is None or pure[0] is None:
            continue
        want = rejection_histogram(att)
        assert json.dumps(matrix_rejections(pure[0])) == json.dumps(want)


def test_rejections_of_one_rejecting_plugin_merge_texts_with_two_codes() -> None:
    # One plugin rejects (the batch path's constant form); "Insufficient cpu" is there both resolvable and not.
    plugins = ["NodeUnschedulable", "NodeResourcesFit", "TaintToleration"]
    reasons = ["Insufficient cpu, Insufficient memory", "Insufficient cpu", "Insufficient cpu"]
    column = [2, 0, 3, 4, 3, 2, 4, 0]
    by_plugin = np.array([[0] * 8, column, [1] * 8], np.uint8)
    fail = np.array([1 if c >= 2 else -1 for c in column], np.int8)
    fm = FilterMatrix(
        [f"n{i}" for i in range(8)], np.arange(8), plugins, by_plugin.T, reasons, [False, False, True], fail, 0,
        [0, -1, 1],
    )  # fmt: skip
    want = {"NodeResourcesFit": {"Insufficient cpu, Insufficient memory": 2, "Insufficient cpu": 4}}
    assert json.dumps(matrix_rejections(fm)) == json.dumps(want)
    fm.constant = None  # the general path agrees
    assert json.dumps(matrix_rejections(fm)) == json.dumps(want)


def test_a_run_frees_each_attempt_once_its_entry_is_built() -> None:
    refs: list[weakref.ref[Attempt]] = []
    result = run_scenario(
        scenario(), "placements", record_all=True, on_attempt=lambda att, _: refs.append(weakref.ref(att))
    )
    gc.collect()
    assert len(refs) == len(result["results"])
    assert all(r() is None for r in refs)


def test_a_writer_that_cannot_write_reports_it(tmp_path: Path) -> None:
    db = tmp_path / "missing" / "results.db"  # no such directory: the writer process cannot open it
    svc = ResultsService(lambda: pytest.fail("not read"), writer_url=f"sqlite:///{db}")
    for att in reference_attempts(scenario())[:3]:
        namespace, name = att.pod.split("/")
        svc.submit(att, namespace=namespace, pod_name=name, pod_uid="uid")
    svc.stop()
    assert svc.errors


def test_batches_of_more_buffers_than_one_writev_takes_arrive_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Past the system's limit of buffers per writev, a batch goes as one joined buffer: same rows.
    monkeypatch.setattr(process_writer, "_IOV_MAX", 2)
    _, svc, attempts = record_through_the_writer_process(tmp_path)
    assert not svc.errors
    assert svc.count() == len(attempts)
    for att in attempts:
        namespace, name = att.pod.split("/")
        got = svc.get_attempt(namespace, name, att.attempt, AttemptQuery(page_size=1000))
        assert got is not None and got["tiedNodes"] == att.selected
        assert got["selected"] == ([att.suggested_host] if att.suggested_host else None)
        rows = {r["node"]: r for r in got["matrix"]["rows"]}
        assert {n: r["filter"] for n, r in rows.items() if r["filter"]} == att.filter

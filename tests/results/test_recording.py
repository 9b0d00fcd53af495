"""Recorded attempts agree with what the engine computed, and read back paged, sorted and filtered."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator

import numpy as np
import numpy.typing as npt
import pytest
from sqlalchemy import Engine

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.db import make_engine, make_session_factory, session_scope, upgrade_database
from kss_sim.kube.versions import kube_version
from kss_sim.results import annotations as ann
from kss_sim.results import attempts as attempts_module
from kss_sim.results.attempts import ResultsService
from kss_sim.results.codec import _rotation_start, decode_matrices, encode_matrices
from kss_sim.results.repository import ResultsRepository
from kss_sim.results.rows import AttemptRetention, attempt_row
from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.framework import Handle
from kss_sim.scheduler.kube_scheduler_configuration import parse_config
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.profiles import build_framework
from kss_sim.scheduler.record import Attempt
from kss_sim.web.ports import AttemptQuery
from tests.scheduler.factories import make_node, make_pod

TAINT = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}


@pytest.fixture
def results_engine(backend_url: str) -> Iterator[Engine]:
    """A migrated database on SQLite and, when configured, on PostgreSQL."""
    engine = make_engine(backend_url)
    upgrade_database(engine)
    yield engine
    engine.dispose()


@pytest.fixture(params=["thread", "process", "shared"])
def service(request: pytest.FixtureRequest, results_engine: Engine, backend_url: str) -> Iterator[ResultsService]:
    """The service with each writer: the thread, the process (``kss simulate --record-db``) and the thread handing
    its rows to the cluster store's committer (``kss serve``)."""
    factory = make_session_factory(results_engine)
    writer_url = backend_url if request.param == "process" else None
    shared = ClusterStore.open(results_engine) if request.param == "shared" else None
    svc = ResultsService(lambda: session_scope(factory), writer_url=writer_url, shared_commit=shared)
    svc.start()
    yield svc
    svc.stop()
    assert svc.errors == []


def make_scheduler(version: str | None = None) -> tuple[Scheduler, SchedulerCache]:
    """The default profile at the Kubernetes ``version`` (None: the default one)."""
    cache = SchedulerCache()
    # node-a is tainted AND too small: it fails two plugins; node-b is too small; node-c fits later.
    cache.add_node(make_node(name="node-a", allocatable={"cpu": "1"}, taints=[TAINT]))
    cache.add_node(make_node(name="node-b", allocatable={"cpu": "1"}))
    cache.add_node(make_node(name="node-c", allocatable={"cpu": "1"}))
    cache.add_pod(PodInfo(make_pod(name="hog", node_name="node-c", requests={"cpu": "800m"})))
    handle = Handle(ClusterObjects())
    handle.kube_version = kube_version(version)
    config = parse_config(None, version=handle.kube_version)
    frameworks = {"default-scheduler": build_framework(config.profiles[0], handle)}
    return Scheduler(frameworks, cache.snapshot, seed=1, cache=cache), cache


def run_two_attempts(version: str | None = None) -> tuple[Attempt, Attempt, PodInfo]:
    scheduler, cache = make_scheduler(version)
    pod = PodInfo(make_pod(name="web", requests={"cpu": "2"}))
    opts = ScheduleOptions(record=True, run_binding_cycle=False)
    first = scheduler.schedule_one(pod, 1, opts)
    # The cluster grows: node-c gets bigger and the pod fits on the second attempt.
    cache.update_node(make_node(name="node-c", allocatable={"cpu": "8"}))
    second = scheduler.schedule_one(pod, 2, opts)
    return first, second, pod


def test_node_failing_two_plugins_records_both_verdicts() -> None:
    first, _, _ = run_two_attempts()
    assert first.result == "unschedulable"
    assert first.filter["node-a"]["TaintToleration"] == "node(s) had untolerated taint(s)"
    assert first.filter["node-a"]["NodeResourcesFit"] == "Insufficient cpu"
    # kube-scheduler's own loop stops at the first failing plugin in framework order.
    assert first.filter_fail["node-a"].startswith("TaintToleration:")


def test_recorded_matrices_equal_what_the_engine_computed(service: ResultsService) -> None:
    first, second, pod = run_two_attempts()
    for att in (first, second):
        service.submit(att, namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid)
    service.flush()

    listing = service.list_attempts("default", "web")
    assert [a["attempt"] for a in listing] == [2, 1]  # newest first
    assert [a["result"] for a in listing] == ["scheduled", "unschedulable"]
    assert listing[1]["message"] == first.message
    assert listing[1]["message"].startswith("0/3 nodes are available:")
    assert listing[1]["rejections"]["TaintToleration"] == {"node(s) had untolerated taint(s)": 1}
    assert listing[1]["rejections"]["NodeResourcesFit"] == {"Insufficient cpu": 2}

    failed = service.get_attempt("default", "web", 1, AttemptQuery(page_size=10))
    assert failed is not None
    rows = {r["node"]: r for r in failed["matrix"]["rows"]}
    assert set(rows) == {"node-a", "node-b", "node-c"}
    for node, verdicts in first.filter.items():
        assert rows[node]["filter"] == verdicts
    assert rows["node-a"]["stoppedAt"] == "TaintToleration"
    assert rows["node-a"]["unresolvable"] == first.unresolvable["node-a"]

    bound = service.get_attempt("default", "web", 2, AttemptQuery(sort="total"))
    assert bound is not None
    assert bound["boundTo"] == second.bound_to == "node-c"
    assert bound["matrix"]["rows"][0]["node"] == "node-c"
    assert bound["matrix"]["rows"][0]["selected"] is True
    row = bound["matrix"]["rows"][0]
    assert row["score"] == second.score["node-c"]  # type: ignore[index]
    assert row["finalScore"] == second.final_score["node-c"]  # type: ignore[index]
    assert row["total"] == second.total["node-c"]  # type: ignore[index]
    assert bound["weights"]["TaintToleration"] == 3


def test_matrix_rows_can_be_filtered_by_plugin_and_node(service: ResultsService) -> None:
    first, _, pod = run_two_attempts()
    service.submit(first, namespace=pod.namespace, pod_name=pod.name, pod_uid=pod.uid)
    service.flush()
    by_plugin = service.get_attempt("default", "web", 1, AttemptQuery(plugin="TaintToleration"))
    assert by_plugin is not None
    assert [r["node"] for r in by_plugin["matrix"]["rows"]] == ["node-a"]
    by_node = service.get_attempt("default", "web", 1, AttemptQuery(node="node-b"))
    assert by_node is not None
    assert [r["node"] for r in by_node["matrix"]["rows"]] == ["node-b"]
    paged = service.get_attempt("default", "web", 1, AttemptQuery(sort="name", page=2, page_size=2))
    assert paged is not None
    assert [r["node"] for r in paged["matrix"]["rows"]] == ["node-c"]
    assert paged["matrix"]["totalRows"] == 3


@pytest.mark.parametrize("writer", ["thread", "process", "shared"])
def test_retention_keeps_the_newest_attempts(results_engine: Engine, backend_url: str, writer: str) -> None:
    factory = make_session_factory(results_engine)
    writer_url = backend_url if writer == "process" else None
    shared = ClusterStore.open(results_engine) if writer == "shared" else None
    svc = ResultsService(
        lambda: session_scope(factory), retention=AttemptRetention(2), writer_url=writer_url, shared_commit=shared
    )
    first, second, pod = run_two_attempts()
    for n in range(1, 5):
        att = dataclasses.replace(first if n % 2 else second)
        att.attempt = svc.next_attempt_number("default", "web")
        svc.submit(att, namespace="default", pod_name="web", pod_uid=pod.uid)
    svc.flush()
    svc.stop()
    assert [a["attempt"] for a in svc.list_attempts("default", "web")] == [4, 3]


@pytest.mark.parametrize("writer", ["thread", "process", "shared"])
def test_retention_keeps_the_first_and_the_newest_attempts(
    results_engine: Engine, backend_url: str, writer: str
) -> None:
    factory = make_session_factory(results_engine)
    writer_url = backend_url if writer == "process" else None
    shared = ClusterStore.open(results_engine) if writer == "shared" else None
    svc = ResultsService(
        lambda: session_scope(factory),
        retention=AttemptRetention(total=5, first=2),
        writer_url=writer_url,
        shared_commit=shared,
    )
    first, second, pod = run_two_attempts()
    for n in range(1, 13):
        att = dataclasses.replace(first if n % 2 else second)
        att.attempt = svc.next_attempt_number("default", "web")
        svc.submit(att, namespace="default", pod_name="web", pod_uid=pod.uid)
        if n == 4:
            svc.flush()
            assert [a["attempt"] for a in svc.list_attempts("default", "web")] == [4, 3, 2, 1]
    svc.flush()
    svc.stop()
    assert [a["attempt"] for a in svc.list_attempts("default", "web")] == [12, 11, 10, 2, 1]


def test_newest_attempts_of_many_pods_are_each_pods_max_attempt(results_engine: Engine) -> None:
    factory = make_session_factory(results_engine)
    svc = ResultsService(lambda: session_scope(factory))
    first, _, pod = run_two_attempts()
    recorded = {("default", "web"): 3, ("default", "db"): 1, ("other", "web"): 2}
    for (namespace, name), count in recorded.items():
        for _ in range(count):
            att = dataclasses.replace(first)
            att.attempt = svc.next_attempt_number(namespace, name)
            svc.submit(att, namespace=namespace, pod_name=name, pod_uid=pod.uid)
    att = dataclasses.replace(first)
    att.attempt = 9
    svc.submit(att, namespace="other", pod_name="db", pod_uid=pod.uid, run_id=1)  # a replay run's: not the cluster's
    svc.flush()
    svc.stop()
    pods = [*recorded, ("other", "db"), ("default", "gone")]
    with session_scope(factory) as session:
        repo = ResultsRepository(session)
        newest = repo.newest_attempts(pods)
        assert newest == {**recorded, ("other", "db"): 0, ("default", "gone"): 0}
        assert newest == {p: repo.max_attempt(*p) for p in pods}


def test_retention_caps_first_below_the_total() -> None:
    """The newest attempt always stays, whatever ``first`` asks; no cap drops nothing."""
    assert AttemptRetention(total=3, first=10).dropped_through(20) == 19
    assert AttemptRetention(total=100, first=10).dropped_through(60) == -30
    assert AttemptRetention().dropped_through(10_000) == 0


def test_clearing_a_pods_results(service: ResultsService) -> None:
    first, _, pod = run_two_attempts()
    service.submit(first, namespace="default", pod_name="web", pod_uid=pod.uid)
    service.flush()
    assert service.clear_pod("default", "web") == 1
    assert service.list_attempts("default", "web") == []


def test_an_attempt_read_again_is_decoded_once_and_a_reused_id_is_decoded_afresh(
    service: ResultsService, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A pod page reads its attempt twice (filter page, score page): the second read takes the decoded matrices.
    # After a clear the same row id may come back with another attempt's bytes: those are decoded, not the old.
    import kss_sim.results.attempts as service_module

    decoded = [0]

    def counting(blob: bytes | None) -> dict[str, object]:
        decoded[0] += 1
        return decode_matrices(blob)

    monkeypatch.setattr(service_module, "decode_matrices", counting)
    first, second, pod = run_two_attempts()
    service.submit(first, namespace="default", pod_name="web", pod_uid=pod.uid)
    service.flush()
    failed = service.get_attempt("default", "web", 1, AttemptQuery(sort="failing", page_size=10))
    again = service.get_attempt("default", "web", 1, AttemptQuery(sort="total", page_size=10))
    assert decoded[0] == 1
    assert failed is not None and again is not None and failed["result"] == again["result"] == "unschedulable"
    service.clear_all()
    replacement = dataclasses.replace(second)
    replacement.attempt = 1
    service.submit(replacement, namespace="default", pod_name="web", pod_uid=pod.uid)
    service.flush()
    now = service.get_attempt("default", "web", 1, AttemptQuery(sort="total"))
    assert decoded[0] == 2
    assert now is not None and now["result"] == "scheduled"
    assert now["matrix"]["rows"][0]["node"] == "node-c" and now["matrix"]["rows"][0]["selected"] is True


def test_codec_round_trip_keeps_every_verdict_and_score() -> None:
    _, second, _ = run_two_attempts()
    decoded = decode_matrices(encode_matrices(second))
    assert decoded["filter"] == second.filter
    assert decoded["score"] == second.score
    assert decoded["finalscore"] == second.final_score
    assert decoded["total"] == second.total


def test_rotation_start_finds_the_walks_start_and_only_a_rotation() -> None:
    def idx(*values: int) -> npt.NDArray[np.int64]:
        return np.array(values, np.int64)

    assert _rotation_start(idx(3, 4, 0, 1), 5) == 3
    assert _rotation_start(idx(0, 1, 2, 3, 4), 5) == 0
    assert _rotation_start(idx(4), 5) == 4
    # The left-out nodes first, then the walk's node (a DaemonSet pod's record): its last row gives it away.
    assert _rotation_start(idx(0, 1, 3, 4, 2), 5) is None
    # The ends agree, the middle does not: the full check still runs.
    assert _rotation_start(idx(1, 3, 2, 4), 5) is None
    assert _rotation_start(idx(), 5) is None
    assert _rotation_start(idx(0, 1, 2, 3, 4, 0), 5) is None


# ``run_two_attempts()``'s second attempt as the codec of 434bd49 stored it (format 2 without ``scoredFeasible``
# and ``"="`` rows): databases written before stay readable.
BLOB_434BD49 = bytes.fromhex(
    "4b5353021900000078018b56cacb4f49d54d54d2813092608c64a558007c68087c78016d524d4b0331102d16fc1d2527851c"
    "baed45162f8a088248a9ad078b87984cb7816c66c987b596fe2affa0936c772d2865cb7cbc99bcf798efb3c160cf3e5839e1"
    "cce1d6b372cf7c102eb072cc99c468299a1e3883cfe0c4132a20c8ea8db3b53601dc3c8f4cbb746662a56d42b0045d5a2f37"
    "a0a211ef0618cfb52751a77021b40d0b34e044d0688fcd9bf55a5b1d76c774862ef8633c078fd149f0f73a50e9054dac818a"
    "c169993674b8b6f1a86b9d47dbf4565ba56dd5cfbda24d2466a816d8a0c16af7dc38108a6a0f966451e384caddce8a5acb9e"
    "0123f984f6e951526a49e985bf1c6d841a915dad2650a3902452232ff591a4490d368c64137f372cad2361e6233b54ae828b"
    "c0d31f3de1253a3871f47fcb7a56ad2f7fb8b6aef7a85b618495a06e8c41d959ff508b0a1e2937c97b7a7a0bbada907fe56a"
    "ca0b3ea1afe8082956167418604c6a8f395dc9752c58829c4429cbbf3416b06980e65619d92fea8e69421527b679db555a78"
    "35e163aa59743531facaa3c598ea7df340573b1c0e86e7831f8ba9e8a2"
)


def test_blobs_of_the_earlier_format_2_still_decode() -> None:
    _, second, _ = run_two_attempts("1.35")  # the blob was recorded at v1.35 (no NodeDeclaredFeatures)
    decoded = decode_matrices(BLOB_434BD49)
    assert decoded["filter"] == second.filter
    assert decoded["score"] == second.score
    assert decoded["normalizedscore"] == second.normalized_score
    assert decoded["total"] == second.total
    written = encode_matrices(second)
    assert written[:4] == b"KSS\x03", "written with zstd now; the zlib blob above still reads the same"
    assert decode_matrices(written) == decoded


def test_annotations_use_kube_scheduler_simulator_shapes() -> None:
    _, second, _ = run_two_attempts()
    values = ann.attempt_annotations(second)
    assert values[ann.SELECTED_NODE] == "node-c"
    filter_result = json.loads(values[ann.FILTER_RESULT])
    assert filter_result["node-c"]["NodeResourcesFit"] == "passed"
    scores = json.loads(values[ann.SCORE_RESULT])
    assert all(isinstance(v, str) and v.lstrip("-").isdigit() for v in scores["node-c"].values())
    final = json.loads(values[ann.FINALSCORE_RESULT])
    assert int(final["node-c"]["TaintToleration"]) == 300
    assert json.loads(values[ann.PREFILTER_STATUS])["NodeResourcesFit"] == "success"
    assert json.loads(values[ann.PRESCORE_RESULT])["TaintToleration"] == "success"


def test_per_node_annotations_can_be_turned_off() -> None:
    _, second, _ = run_two_attempts()
    values = ann.attempt_annotations(second, per_node=False)
    assert ann.FILTER_RESULT not in values and ann.SCORE_RESULT not in values
    assert values[ann.SELECTED_NODE] == "node-c"


def test_result_history_drops_oldest_entries_past_256_kib() -> None:
    big = {ann.FILTER_RESULT: "x" * 100_000, ann.SELECTED_NODE: "n"}
    existing: dict[str, str] = {}
    for i in range(5):
        current = dict(big, **{ann.SELECTED_NODE: f"node-{i}"})
        existing = ann.with_history(current, existing)
    history = json.loads(existing[ann.RESULT_HISTORY])
    assert len(existing[ann.RESULT_HISTORY].encode()) <= ann.HISTORY_LIMIT_BYTES
    # The 100 KB current entry leaves room for one 100 KB history entry in the pod's 256 KiB of annotations.
    assert sum(len(k) + len(v) for k, v in existing.items()) <= 256 * 1024
    assert [h[ann.SELECTED_NODE] for h in history] == ["node-4"]


def test_attempt_numbers_continue_for_a_pod_whose_count_left_memory(
    results_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counts are kept for the most recently scheduled pods only; an older pod's numbering resumes from the
    database, and a pod never seen starts at 1."""
    monkeypatch.setattr(attempts_module, "ATTEMPT_COUNTS_KEPT", 2)
    svc = ResultsService(lambda: session_scope(make_session_factory(results_engine)))
    first, _, pod = run_two_attempts()
    for name in ("a", "a", "a", "b", "c", "d"):
        att = dataclasses.replace(first)
        att.attempt = svc.next_attempt_number("default", name)
        svc.submit(att, namespace="default", pod_name=name, pod_uid=pod.uid)
    svc.flush()
    assert svc._counters is not None and list(svc._counters) == ["default/c", "default/d"]
    assert svc.next_attempt_number("default", "a") == 4  # from the database
    assert svc.next_attempt_number("default", "e") == 1
    assert svc.next_attempt_number("default", "a") == 5  # kept again
    svc.stop()


def test_rows_built_elsewhere_are_numbered_as_they_are_inserted(
    results_engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The scheduler's own process sends its rows unnumbered: numbered here in order, with the same bounded
    counters, so a pod whose count left memory continues from the database."""
    monkeypatch.setattr(attempts_module, "ATTEMPT_COUNTS_KEPT", 2)
    svc = ResultsService(lambda: session_scope(make_session_factory(results_engine)))
    first, _, pod = run_two_attempts()
    for names in (("a", "a"), ("b", "c", "a"), ("d", "e"), ("a",)):
        rows = [
            attempt_row(first, namespace="default", pod_name=name, pod_uid=pod.uid, queued_seconds=0.0)
            for name in names
        ]
        svc.number_rows(rows)
        svc.commit_rows(rows)
    assert svc._counters is not None and len(svc._counters) == 2
    assert [a["attempt"] for a in svc.list_attempts("default", "a")] == [4, 3, 2, 1]
    assert [a["attempt"] for a in svc.list_attempts("default", "e")] == [1]
    svc.stop()

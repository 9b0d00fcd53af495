"""Error mapping, the QPS limiter, paths, the progress bar and the one-shot import over fakes."""

from __future__ import annotations

import io

import pytest
import urllib3

from syncer.importer import run_import
from syncer.kinds import NODE, PDB, POD, PV, PVC
from syncer.kube import (
    AlreadyExists,
    Conflict,
    Gone,
    Inactive,
    NotFound,
    Rejected,
    TokenBucket,
    Unavailable,
    problem_from_status,
    translate_error,
)
from syncer.progress import Progress
from tests.syncer.fakes import FakeSource, FakeTarget, node, page, pod


@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (410, "Expired", Gone),
        (404, "NotFound", NotFound),
        (409, "AlreadyExists", AlreadyExists),
        (409, "Conflict", Conflict),
        (422, "Invalid", Rejected),
        (403, "Forbidden", Rejected),
        (429, "TooManyRequests", Unavailable),
        (503, "ServiceUnavailable", Unavailable),
    ],
)
def test_status_codes_map_to_what_the_syncer_does_about_them(code: int, reason: str, expected: type) -> None:
    problem = problem_from_status(code, {"reason": reason, "message": "m"})
    assert type(problem) is expected


def test_network_failures_are_unavailable_and_silence_is_inactive() -> None:
    assert isinstance(translate_error(ConnectionRefusedError()), Unavailable)
    assert isinstance(translate_error(urllib3.exceptions.ProtocolError("broken")), Unavailable)
    assert isinstance(translate_error(urllib3.exceptions.ReadTimeoutError(None, "/", "read timed out")), Inactive)
    assert translate_error(KeyError("bug")) is None, "bugs are not turned into retries"


def test_token_bucket_allows_a_burst_then_paces_to_qps() -> None:
    now = [0.0]
    sleeps: list[float] = []

    def sleep(seconds: float) -> None:
        sleeps.append(seconds)
        now[0] += seconds

    bucket = TokenBucket(10, 3, clock=lambda: now[0], sleep=sleep)
    for _ in range(5):
        bucket.acquire()
    assert sleeps == pytest.approx([0.1, 0.1])


def test_paths_follow_the_api_layout() -> None:
    assert POD.path("team") == "/api/v1/namespaces/team/pods"
    assert POD.path(None) == "/api/v1/pods"
    assert PVC.path("db", "data", "status") == "/api/v1/namespaces/db/persistentvolumeclaims/data/status"
    assert NODE.path(None, "n1") == "/api/v1/nodes/n1"
    assert PV.path("ignored", "pv1") == "/api/v1/persistentvolumes/pv1"
    assert PDB.path("ns") == "/apis/policy/v1/namespaces/ns/poddisruptionbudgets"


def test_one_shot_import_pages_through_kinds_in_order_and_keeps_running_pods_bound() -> None:
    source = FakeSource(
        lists={
            "Node": [[page(node("n1"), node("n2"), rv="5")]],
            "Pod": [
                [
                    page(pod("a", node="n1"), pod("b"), rv="6", token="1", remaining=1),
                    page(pod("c"), rv="6"),
                ]
            ],
        }
    )
    target = FakeTarget()
    out = io.StringIO()
    report = run_import(source, target, kinds=(NODE, POD), page_size=2, workers=4, progress=Progress(out, live=False))
    assert report.objects == {"Node": 2, "Pod": 3}
    assert source.list_calls == [("Node", None, None), ("Pod", None, None), ("Pod", None, "1")]
    creates = [c for c in target.calls if c[0] == "create"]
    assert [c[1] for c in creates[:2]] == ["Node", "Node"], "nodes finish before pods start"
    assert target.objects[("Pod", "default", "a")]["spec"]["nodeName"] == "n1"
    assert "nodeName" not in target.objects[("Pod", "default", "b")]["spec"]
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("Node") and "2/2" in lines[0]
    assert lines[1].startswith("Pod") and "3/3" in lines[1]

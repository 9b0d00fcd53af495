"""``kss import`` through the simulator's bulk create: a page per request, a bound pod in one write, the progress
bar counting what the simulator acknowledged, and the object-by-object path wherever the bulk create cannot help."""

from __future__ import annotations

import io
import json

from syncer.importer import run_import
from syncer.kinds import NODE, POD, PRIORITY_CLASS
from syncer.kube import KubeTarget, Page, api_client
from syncer.metrics import Metrics
from syncer.progress import Progress
from tests.syncer.fakes import FakeSource, FakeTarget, node, page, pod
from tests.syncer.test_kube_http import _Recorder, server  # noqa: F401  (the fixture)


def _running(name: str, node_name: str) -> dict[str, object]:
    obj = pod(name, node=node_name)
    obj["status"] = {"phase": "Running", "podIP": "10.1.2.3", "hostIP": "192.168.0.9"}
    return obj


def test_a_page_is_one_request_and_a_bound_pod_one_write_with_its_status() -> None:
    source = FakeSource(
        lists={
            "Node": [[page(node("n1"), node("n2"), rv="5")]],
            "Pod": [[page(_running("a", "n1"), pod("b"), rv="6", token="1", remaining=1), page(pod("c"), rv="6")]],
        }
    )
    target = FakeTarget()
    metrics = Metrics()
    out = io.StringIO()
    report = run_import(
        source, target, kinds=(NODE, POD), page_size=2, metrics=metrics, progress=Progress(out, live=False)
    )
    assert report.objects == {"Node": 2, "Pod": 3}
    requests = [c for c in target.calls if c[0] == "create_many"]
    # The pods the source has not scheduled go last, together: the running one's page goes without them.
    assert requests == [("create_many", "Node", "2"), ("create_many", "Pod", "1"), ("create_many", "Pod", "2")]
    assert [c[2] for c in target.calls if c[:2] == ("create", "Pod")] == ["a", "b", "c"]
    assert not [c for c in target.calls if c[0].startswith("patch")], "no status patch: the status went with it"
    a = target.objects[("Pod", "default", "a")]
    assert a["spec"]["nodeName"] == "n1"
    assert a["status"] == {"phase": "Running", "podIP": "10.1.2.3", "hostIP": "192.168.0.9"}
    assert a["metadata"]["annotations"]["syncer.kss.dev/source-uid"] == "src-a"
    # A pod the source has not scheduled arrives without its status (the simulator's scheduler places it).
    b = target.objects[("Pod", "default", "b")]
    assert "nodeName" not in b["spec"] and b["status"] == {"phase": "Pending"}
    assert target.objects[("Node", "", "n1")]["status"]["allocatable"]["cpu"] == "4"
    assert metrics.total("created") == 5 and metrics.total("failed") == 0
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("Node") and "2/2" in lines[0]
    assert lines[1].startswith("Pod") and "3/3" in lines[1]


def test_without_a_bulk_create_every_object_goes_alone_with_the_same_result() -> None:
    def lists() -> dict[str, list[list[Page]]]:
        return {"Node": [[page(node("n1"), rv="5")]], "Pod": [[page(_running("a", "n1"), pod("b"), rv="6")]]}

    bulk, alone = FakeTarget(), FakeTarget()
    alone.bulk = False  # another API server: 404
    run_import(FakeSource(lists=lists()), bulk, kinds=(NODE, POD))
    run_import(FakeSource(lists=lists()), alone, kinds=(NODE, POD))
    assert not [c for c in alone.calls if c[0] == "create_many"]
    assert ("patch_status", "Pod", "a") in alone.calls, "the per-object path: create, then the status"

    def content(target: FakeTarget) -> dict[tuple[str, str, str], dict[str, object]]:
        out = {}
        for key, obj in target.objects.items():
            meta = {k: v for k, v in obj["metadata"].items() if k not in ("uid", "resourceVersion")}
            out[key] = {**obj, "metadata": meta}
        return out

    assert content(bulk) == content(alone)


def test_what_exists_already_is_adopted_and_a_refusal_counted_while_the_page_goes_on() -> None:
    target = FakeTarget()
    target.create(NODE, {"metadata": {"name": "n1"}, "spec": {"unschedulable": True}})
    target.reject = {"bad"}
    builtin = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-node-critical", "uid": "src-pc"},
        "value": 2000001000,
    }
    target.objects[("PriorityClass", "", "system-node-critical")] = {**builtin, "metadata": {"name": "x", "uid": "u"}}
    source = FakeSource(
        lists={
            "PriorityClass": [[page(builtin, rv="4")]],
            "Node": [[page(node("n1"), node("n2"), rv="5")]],
            "Pod": [[page(pod("bad"), pod("good"), rv="6")]],
        }
    )
    metrics = Metrics()
    report = run_import(source, target, kinds=(PRIORITY_CLASS, NODE, POD), metrics=metrics)
    assert report.objects == {"PriorityClass": 1, "Node": 2, "Pod": 2}
    # n1 existed: adopted through the update rules (its spec patched to the source's), n2 created in the page.
    assert metrics.total("adopted") == 2 and ("patch", "Node", "n1") in target.calls
    assert target.objects[("Node", "", "n1")]["spec"] == {}
    assert ("Node", "", "n2") in target.objects and ("Pod", "default", "good") in target.objects
    assert metrics.total("failed") == 1 and ("Pod", "default", "bad") not in target.objects


def test_a_page_the_simulator_could_not_answer_is_written_object_by_object() -> None:
    target = FakeTarget()
    target.down = 1  # the page's request fails; each object alone then goes through
    source = FakeSource(lists={"Pod": [[page(_running("a", "n1"), pod("b"), rv="6")]]})
    metrics = Metrics()
    report = run_import(source, target, kinds=(POD,), metrics=metrics)
    assert report.objects == {"Pod": 2}
    assert sorted(k[2] for k in target.objects) == ["a", "b"]
    assert target.objects[("Pod", "default", "a")]["status"]["phase"] == "Running"
    assert metrics.total("created") == 2


def test_create_many_posts_a_list_to_the_bulk_create(server: type[_Recorder]) -> None:  # noqa: F811
    answer = {"created": 1, "failed": 1, "items": [{"uid": "u1"}, {"status": {"code": 409, "reason": "x"}}]}
    server.answer = (200, json.dumps(answer).encode())
    target = KubeTarget(api_client(url=server.url, token="t"))  # type: ignore[attr-defined]
    objs = [node("n1"), node("n2")]
    assert target.create_many(NODE, objs) == answer["items"]
    [(method, path, headers, body)] = server.received
    assert (method, path) == ("POST", "/simulator/v1/import?mode=create")
    assert json.loads(body) == {"apiVersion": "v1", "kind": "List", "items": objs}
    assert headers["authorization"] == "Bearer t"

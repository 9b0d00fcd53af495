"""The gangs page and the waiting pods elsewhere: gang states in words, members, rejections, the SSE ``waiting``
event and ``GET /simulator/v1/waitingpods`` (the scheduler port faked where a wait must be pinned; one test with a
real Coscheduling gang timing out)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.config import Settings
from kss_sim.main import create_app
from kss_sim.web import sse
from kss_sim.web.page_sources import WebService
from kss_sim.web.pod_index import pod_row
from kss_sim.web.ports import AttemptQuery, ResourceAmounts, WaitingPodRow
from kss_sim.web.views.gangs import POD_GROUP_LABEL, Gang, GangKey, Member, gang_state
from kss_sim.web.views.groups import fold_rejections, group_page, groups_view
from tests.web.conftest import htmx, node, pod, wait_for
from tests.web.test_sse import records

PODGROUPS = "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/default/podgroups"
GATES = {"GenericWorkload": True, "GangScheduling": True}


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[FastAPI]:
    """The application with the Workload kind served (GenericWorkload), the scheduler off."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss.db'}",
        scheduler_enabled=False,
        kube_version="1.35",  # v1.35's Workload (scheduling.k8s.io/v1alpha1, pods' spec.workloadRef)
        feature_gates=GATES,
        runtime_config="scheduling.k8s.io/v1alpha1=true",  # the Workload API is alpha: off by default
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


class FakeScheduler:
    """The real scheduler port with the pods in Permit and the plugins in effect pinned."""

    def __init__(self, real: Any, waiting: Sequence[WaitingPodRow] = (), plugins: Sequence[str] = ("Coscheduling",)):
        self.real = real
        self.waiting = list(waiting)
        self.plugins = list(plugins)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)

    def waiting_pods(self) -> list[WaitingPodRow]:
        return list(self.waiting)

    def plugins_in_effect(self) -> list[Any]:
        return [("default-scheduler", [("permit", [(p, None) for p in self.plugins])])]


def pod_group(name: str, min_member: int, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"minMember": min_member, **spec},
    }


def member_pod(name: str, group: str, **kw: Any) -> dict[str, Any]:
    return pod(name, labels={POD_GROUP_LABEL: group}, **kw)


def workload_pod(name: str, workload: str, group: str, replica: str = "") -> dict[str, Any]:
    body = pod(name)
    ref = {"name": workload, "podGroup": group}
    if replica:
        ref["podGroupReplicaKey"] = replica
    body["spec"]["workloadRef"] = ref
    return body


def waiting(key: str, node_name: str = "n1", waited: float = 8.0, left: float = 52.0) -> WaitingPodRow:
    return WaitingPodRow(key, node_name, ("Coscheduling",), waited, left)


def service_over(app: FastAPI, scheduler: FakeScheduler) -> WebService:
    return WebService(
        store=app.state.store, results=app.state.results, scheduler=scheduler, operations=None, scheduler_running=True
    )


def set_pending_reason(store: ClusterStore, name: str, message: str) -> None:
    current = store.get("Pod", "default", name)
    assert current is not None
    status = dict(current["status"])
    status["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": message,
            "lastTransitionTime": "2026-01-01T00:00:00Z",
        }
    ]
    store.update_pod_status("default", name, status)


# ---------------------------------------------------------------------------------------------- states in words


def _gang(quorum: int, states: Sequence[str], *, remaining: float = 52.0, reason: str = "", gate: str = "") -> Gang:
    members = []
    for i, state in enumerate(states):
        obj = member_pod(f"p{i}", "g", node_name="n1" if state == "bound" else "")
        if reason and state == "pending":
            obj["status"] = {"conditions": [{"type": "PodScheduled", "status": "False", "message": reason}]}
        row = pod_row(obj, lambda _: ResourceAmounts())
        permit = waiting(row.key, left=remaining) if state == "waiting" else None
        members.append(Member(row, state, permit=permit, gate=gate if state == "gated" else ""))
    gang = Gang(GangKey("default", "PodGroup", "g"), {"spec": {}}, quorum, "minMember", members)
    gang.state = gang_state(gang)
    return gang


def test_a_gang_short_of_its_quorum_waits_with_the_time_left() -> None:
    state = _gang(8, ["bound"] * 2 + ["waiting"] * 3 + ["pending"] * 3, remaining=52.2).state
    assert (state.word, state.tone) == ("waiting for quorum", "warn")
    assert state.summary == "waiting for quorum: 5 of 8 reserved, 52 s left"


def test_gang_states_say_what_holds_the_gang_back() -> None:
    assert _gang(8, ["pending"] * 3).state.summary == "too few members: 3 of 8 exist"
    assert _gang(3, ["bound"] * 3).state.summary == "bound: 3 of 3 on nodes"
    assert _gang(2, ["bound", "bound", "pending"]).state.summary == "quorum met: 2 bound, 1 pending"
    rejected = _gang(2, ["pending", "pending"], reason="0/1 nodes are available: 1 rejected due to timeout")
    assert rejected.state.summary == "rejected: 0/1 nodes are available: 1 rejected due to timeout"
    assert rejected.state.tone == "bad"
    gated = _gang(2, ["gated", "gated"], gate="SchedulingGates: waiting for scheduling gates: [hold]")
    assert gated.state.summary == "gated: SchedulingGates: waiting for scheduling gates: [hold]"
    assert _gang(2, ["pending", "pending"]).state.summary == "pending: 2 of 2 not scheduled yet"
    assert _gang(4, []).state.summary == "no members yet: quorum 4"


def test_rejections_fold_identical_messages_newest_first() -> None:
    folded = fold_rejections(
        [
            (10.0, "default/p1", 1, "timeout"),
            (30.0, "default/p2", 2, "pre-filter"),
            (20.0, "default/p3", 1, "timeout"),
            (25.0, "default/p1", 2, "timeout"),
        ]
    )
    assert [(r.message, r.pods, r.latest, r.attempt_url) for r in folded] == [
        ("pre-filter", ["default/p2"], 30.0, "/ui/pods/default/p2?attempt=2"),
        ("timeout", ["default/p1", "default/p3"], 25.0, "/ui/pods/default/p1?attempt=2"),
    ]


# ---------------------------------------------------------------------------------------------- the pages


async def test_groups_page_lists_pod_groups_and_workload_gangs_with_counts_and_states(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    store: ClusterStore = app.state.store
    store.create("Node", node("n1"))
    store.create("PodGroup", pod_group("train", 3, scheduleTimeoutSeconds=60))
    store.create("PodGroup", pod_group("short", 4))
    store.create("Pod", member_pod("train-0", "train", node_name="n1"))
    store.create("Pod", member_pod("train-1", "train"))
    store.create("Pod", member_pod("train-2", "train"))
    store.create("Pod", member_pod("short-0", "short"))
    store.create("Pod", member_pod("typo-0", "trian"))  # names a PodGroup that does not exist
    store.create(
        "Workload",
        {
            "apiVersion": "scheduling.k8s.io/v1alpha1",
            "kind": "Workload",
            "metadata": {"name": "job", "namespace": "default"},
            "spec": {
                "podGroups": [
                    {"name": "workers", "policy": {"gang": {"minCount": 2}}},
                    {"name": "driver", "policy": {"basic": {}}},
                ]
            },
        },
    )
    for name, replica in (("w-a0", "a"), ("w-a1", "a"), ("w-b0", "b")):
        store.create("Pod", workload_pod(name, "job", "workers", replica))
    store.create("Pod", workload_pod("driver-0", "job", "driver"))  # a basic pod group is no gang
    store.create("Pod", workload_pod("ps-0", "job", "ps"))  # a pod group the Workload does not have
    fake = FakeScheduler(app.state.scheduler_view, [waiting("default/train-1", "n1", 8, 52), waiting("default/x")])
    view = groups_view(service_over(app, fake), minor=36)
    by_label = {g.key.label: g for g in view.gangs.items}
    assert list(by_label) == [
        "job / ps",
        "job / workers [replica a]",
        "job / workers [replica b]",
        "short",
        "train",
        "trian",
    ]
    assert by_label["job / ps"].state.summary == "missing: Workload job has no pod group ps: 1 pod(s) name it"
    assert by_label["trian"].state.summary == "missing: no PodGroup object: 1 pod(s) name it"
    train = by_label["train"]
    assert (train.quorum, train.exists, train.bound, train.waiting, train.pending) == (3, 3, 1, 1, 1)
    assert train.state.summary == "waiting for quorum: 2 of 3 reserved, 52 s left"
    assert train.timeout_seconds == 60.0
    assert by_label["short"].state.summary == "too few members: 1 of 4 exist"
    assert by_label["trian"].state.word == "missing"
    assert by_label["job / workers [replica a]"].quorum == 2
    assert by_label["job / workers [replica b]"].state.summary == "too few members: 1 of 2 exist"
    assert [w.pod for w in view.other_waiting] == ["default/x"]  # held, but in no gang
    assert view.waiting_total == 2

    # Through the route: the whole page, and the fragment the live refresh asks for.
    app.state.scheduler_view = fake
    page = (await client.get("/ui/groups")).text
    assert "<h1>Gangs</h1>" in page and 'href="/ui/groups" aria-current="page"' in page
    assert 'hx-trigger="sse:pod, sse:podgroup, sse:podgroup.v1alpha2, sse:workload, sse:waiting"' in page
    assert 'data-seconds="52.0" data-step="down">52 s</span> left' in page
    assert '<span class="badge warn">waiting for quorum</span>' in page
    assert 'title="waiting for quorum: 2 of 3 reserved, 52 s left"' in page
    assert 'href="/ui/groups/default/Workload/job?podGroup=workers&amp;replicaKey=a"' in page
    assert "No gang yet" not in page
    fragment = await client.get("/ui/groups", headers=htmx("groups-body"))
    assert fragment.text.lstrip().startswith('<section id="groups-body"')
    assert "<html" not in fragment.text


async def test_a_gang_page_lists_members_with_where_they_are_and_why_it_did_not_fit(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    store: ClusterStore = app.state.store
    store.create("Node", node("n1"))
    store.create("PodGroup", pod_group("g", 3, minResources={"cpu": "3"}))
    store.create("Pod", member_pod("p1", "g", node_name="n1"))
    store.create("Pod", member_pod("p2", "g"))
    store.create("Pod", member_pod("p3", "g"))
    store.create("Pod", member_pod("p4", "g"))
    gated = member_pod("p5", "g")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/hold"}]
    store.create("Pod", gated)
    message = "0/1 nodes are available: 1 rejected due to timeout after waiting 10s at plugin Coscheduling."
    set_pending_reason(store, "p3", message)
    set_pending_reason(store, "p4", message)
    app.state.scheduler_view = FakeScheduler(app.state.scheduler_view, [waiting("default/p2", "n1", 8.0, 52.0)])
    page = (await client.get("/ui/groups/default/PodGroup/g")).text
    assert "waiting for quorum" in page and "2 of 3 reserved" in page
    assert 'data-pod="default/p1" data-state="bound"' in page
    assert 'data-pod="default/p2" data-state="waiting"' in page
    assert 'held in Permit on <a href="/ui/nodes/n1">n1</a> for' in page
    assert '<span class="plugin">Coscheduling</span>' in page
    assert 'data-pod="default/p3" data-state="pending"' in page and "rejected due to timeout" in page
    assert 'data-pod="default/p5" data-state="gated"' in page
    assert "SchedulingGates: waiting for scheduling gates: [example.com/hold]" in page
    assert "cpu=3" in page  # minResources
    fragment = await client.get("/ui/groups/default/PodGroup/g", headers=htmx("group-body"))
    assert fragment.text.lstrip().startswith('<section id="group-body"') and "<html" not in fragment.text
    assert (await client.get("/ui/groups/default/PodGroup/nope")).status_code == 404
    assert (await client.get("/ui/groups/default/Deployment/g")).status_code == 404


async def test_an_empty_groups_page_tells_how_to_make_a_gang(client: httpx.AsyncClient) -> None:
    page = (await client.get("/ui/groups")).text
    assert "No gang yet" in page
    assert "kind: PodGroup" in page and "scheduling.x-k8s.io/pod-group: training" in page
    assert "- name: Coscheduling" in page and 'disabled:\n      - name: "*"' in page
    assert 'href="/ui/new?kind=PodGroup"' in page
    editor = (await client.get("/ui/new", params={"kind": "PodGroup"})).text
    assert "kind: PodGroup" in editor and "minMember: 4" in editor


async def test_the_podgroup_starter_is_accepted_and_a_kind_without_one_gets_a_bare_manifest(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    from kss_sim.web.views.editor import TEMPLATES

    response = await client.post("/ui/objects", data={"yaml": TEMPLATES["PodGroup"]}, headers={"HX-Request": "true"})
    assert response.headers.get("hx-redirect") == "/ui/groups/default/PodGroup/training", response.text[:500]
    assert app.state.store.get("PodGroup", "default", "training")["spec"]["minMember"] == 4
    bare = await client.get("/ui/new", params={"kind": "Workload"})
    assert bare.status_code == 200
    assert "apiVersion: scheduling.k8s.io/v1alpha1\nkind: Workload" in bare.text


async def test_a_workload_page_shows_each_of_its_gangs(app: FastAPI) -> None:
    store: ClusterStore = app.state.store
    store.create(
        "Workload",
        {
            "apiVersion": "scheduling.k8s.io/v1alpha1",
            "kind": "Workload",
            "metadata": {"name": "job", "namespace": "default"},
            "spec": {
                "podGroups": [
                    {"name": "a", "policy": {"gang": {"minCount": 2}}},
                    {"name": "b", "policy": {"gang": {"minCount": 1}}},
                ]
            },
        },
    )
    store.create("Pod", workload_pod("a0", "job", "a"))
    fake = FakeScheduler(app.state.scheduler_view, plugins=["GangScheduling"])
    found = group_page(service_over(app, fake), "default", "Workload", "job", minor=35)
    assert found is not None
    assert [(d.gang.key.label, d.gang.state.summary) for d in found.gangs] == [
        ("job / a", "too few members: 1 of 2 exist"),
        ("job / b", "no members yet: quorum 1"),
    ]
    # GangScheduling's PreEnqueue keeps a gang short of minCount out of the queue.
    gated = found.gangs[0].members.items[0]
    assert gated.state == "gated"
    assert gated.gate == "GangScheduling: waiting for minCount pods from a gang to appear in scheduling queue"
    only_b = group_page(service_over(app, fake), "default", "Workload", "job", minor=35, pod_group="b")
    assert only_b is not None and [d.gang.key.pod_group for d in only_b.gangs] == ["b"]


# ---------------------------------------------------------------------------------------------- elsewhere


async def test_the_pods_list_pod_page_and_node_page_say_a_pod_waits_in_permit(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    store: ClusterStore = app.state.store
    store.create("Node", node("n1"))
    store.create("Pod", member_pod("p1", "g"))
    store.create("Pod", member_pod("p2", "g"))
    app.state.scheduler_view = FakeScheduler(app.state.scheduler_view, [waiting("default/p1", "n1", 8.0, 52.0)])
    listing = (await client.get("/ui/pods")).text
    assert 'data-testid="waiting-badge">Waiting (Permit)</span>' in listing
    assert "1 pending" in listing and "1 waiting in Permit" in listing
    assert 'hx-trigger="sse:pod, sse:waiting"' in listing
    waiting_only = (await client.get("/ui/pods", params={"state": "waiting"})).text
    assert 'data-pod="default/p1"' in waiting_only and 'data-pod="default/p2"' not in waiting_only
    detail = (await client.get("/ui/pods/default/p1")).text
    assert "Waiting (Permit)" in detail and 'data-testid="permit-wait"' in detail
    assert 'held in Permit on <a href="/ui/nodes/n1">n1</a>' in detail and "Coscheduling" in detail
    assert "sse:waiting[kssTouches(detail, 'default/p1')]" in detail
    assert 'data-testid="attempt-in-progress"' in detail and "Waiting for the scheduler" not in detail
    node_page = (await client.get("/ui/nodes/n1")).text
    assert 'data-testid="held-in-permit"' in node_page and 'href="/ui/pods/default/p1"' in node_page
    assert "sse:waiting[kssTouches(detail, 'n1')]" in node_page


async def test_waitingpods_json_lists_the_pods_held_in_permit(app: FastAPI, client: httpx.AsyncClient) -> None:
    assert (await client.get("/simulator/v1/waitingpods")).json() == {"items": []}
    app.state.scheduler_view = FakeScheduler(app.state.scheduler_view, [waiting("default/p1", "n1", 8.5, 51.5)])
    assert (await client.get("/simulator/v1/waitingpods")).json() == {
        "items": [
            {
                "pod": "default/p1",
                "node": "n1",
                "pendingPlugins": ["Coscheduling"],
                "waitingSeconds": 8.5,
                "remainingSeconds": 51.5,
            }
        ]
    }


def test_the_waiting_event_names_the_pods_that_started_or_stopped_waiting_and_their_nodes() -> None:
    assert sse.waiting_message({"default/a": "n1"}, {"default/a": "n1"}) is None
    message = sse.waiting_message({"default/a": "n1"}, {"default/b": "n2"})
    assert message is not None
    (record,) = records(message.decode())
    assert record["event"] == "waiting" and "id" not in record
    assert json.loads(record["data"]) == {
        "count": 1,
        "keys": ["default/a", "default/b"],
        "nodes": ["n1", "n2"],
        "truncated": False,
    }


async def test_the_stream_announces_pods_held_in_permit_though_the_store_did_not_change(app: FastAPI) -> None:
    store: ClusterStore = app.state.store
    held: list[WaitingPodRow] = [waiting("default/p1")]
    chunks: list[bytes] = []
    stream = sse.stream(store, store.resource_version, lifetime=0.35, waiting=lambda: list(held), waiting_poll=0.1)
    async for chunk in stream:
        chunks.append(chunk)
        if b"event: waiting" in chunk:
            held.clear()  # the wait ends: announced on the next look
    events = [r for r in records(b"".join(chunks).decode()) if r.get("event") == "waiting"]
    assert [json.loads(r["data"])["keys"] for r in events] == [["default/p1"], ["default/p1"]]
    assert [json.loads(r["data"])["count"] for r in events] == [1, 0]


# ---------------------------------------------------------------------------------------------- a real gang


COSCHEDULING = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {
            "schedulerName": "default-scheduler",
            "plugins": {
                "multiPoint": {"enabled": [{"name": "Coscheduling"}]},
                "queueSort": {"enabled": [{"name": "Coscheduling"}], "disabled": [{"name": "*"}]},
            },
            "pluginConfig": [{"name": "Coscheduling", "args": {"podGroupRejectPercentage": 100}}],
        }
    ],
}


async def test_a_coscheduling_gang_that_times_out_shows_the_wait_and_the_timeout(
    sched_app: FastAPI, sched_client: httpx.AsyncClient
) -> None:
    pytest.importorskip("kss.plugins.coscheduling")
    response = await sched_client.put("/simulator/v1/schedulerconfiguration", json=COSCHEDULING)
    assert response.status_code == 200, response.text
    await sched_client.post("/api/v1/nodes", json=node("n1"))
    assert (await sched_client.post(PODGROUPS, json=pod_group("quick", 2, scheduleTimeoutSeconds=1))).status_code == 201
    lonely = member_pod("quick-1", "quick")
    lonely["spec"]["nodeSelector"] = {"pool": "never"}
    await sched_client.post("/api/v1/namespaces/default/pods", json=lonely)
    await sched_client.post("/api/v1/namespaces/default/pods", json=member_pod("quick-0", "quick"))

    def waited() -> Any:
        page = group_page(web_of(sched_app), "default", "PodGroup", "quick", minor=36)
        assert page is not None
        (detail,) = page.gangs
        timeouts = [r for r in detail.rejections if "rejected due to timeout after waiting 1s" in r.message]
        return detail if timeouts else None

    detail = await asyncio.to_thread(wait_for, waited, 20.0)
    member = next(m for m in detail.members.items if m.row.name == "quick-0")
    assert member.attempt is not None
    timeout = "rejected due to timeout after waiting 1s at plugin Coscheduling"
    assert any(timeout in r.message for r in detail.rejections)
    page = (await sched_client.get("/ui/groups/default/PodGroup/quick")).text
    assert "Why the gang did not fit" in page and "at plugin Coscheduling." in page
    # The attempt that waited says how its wait ended.
    results = sched_app.state.results
    statuses_only = AttemptQuery(page_size=1, top=0)
    attempts = results.list_attempts("default", "quick-0")
    waits = [results.get_attempt("default", "quick-0", a["attempt"], statuses_only)["permitWait"] for a in attempts]
    assert any(w and w["outcome"] == "rejected" and w["plugin"] == "Coscheduling" for w in waits)


def web_of(app: FastAPI) -> WebService:
    return WebService(
        store=app.state.store,
        results=app.state.results,
        scheduler=app.state.scheduler_view,
        operations=None,
        scheduler_running=True,
    )


def test_durations_read_as_people_read_them() -> None:
    from kss_sim.web.formatting import duration_text

    assert [duration_text(s) for s in (0, 0.2, 1.6, 52.2, 119, 120, 250, 3600, 7200, 7500)] == [
        "0 s",
        "<1 s",
        "1 s",
        "52 s",
        "119 s",
        "2 min",
        "4 min 10 s",
        "1 h",
        "2 h",
        "2 h 5 min",
    ]

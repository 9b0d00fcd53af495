"""A gang's preemption on the gang pages and a victim's pod page, with kss's scheduler at v1.36 (GenericWorkload,
GangScheduling; WorkloadAwarePreemption off and on): a gang that fits only by preemption waits for its victims (their
deletes are graceful), names them, their nodes and the attempt that preempted them, and is bound once they are gone;
a gang turned back, one that cannot preempt, and the victims' own gang and pod pages saying who preempted them."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app
from kss_sim.web.views.gang_preemption import GangPreemption
from kss_sim.web.views.groups import GangDetail, group_page, groups_view
from kss_sim.web.views.pod import pod_view
from tests.conftest import asgi_client
from tests.web.conftest import node, pod, wait_for
from tests.web.test_groups import web_of

PODGROUPS = "/apis/scheduling.k8s.io/v1alpha2/namespaces/default/podgroups"
V1ALPHA2 = "PodGroup.v1alpha2"
GRACE = 60  # the victims' grace period: long enough to see the gang wait, ended by hand


async def _app(tmp_path: Path, *, workload_aware: bool) -> AsyncIterator[FastAPI]:
    gates = {"GenericWorkload": True, "GangScheduling": True, "WorkloadAwarePreemption": workload_aware}
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss.db'}",
        scheduler_enabled=True,
        kube_version="1.36",
        feature_gates=gates,
        runtime_config="scheduling.k8s.io/v1alpha2=true",
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def each_member_app(tmp_path: Path) -> AsyncIterator[FastAPI]:
    """v1.36 at its defaults: each member of a gang preempts for itself (DefaultPreemption)."""
    async for application in _app(tmp_path, workload_aware=False):
        yield application


@pytest.fixture
async def as_one_app(tmp_path: Path) -> AsyncIterator[FastAPI]:
    """v1.36 with WorkloadAwarePreemption: an unschedulable gang preempts as one."""
    async for application in _app(tmp_path, workload_aware=True):
        yield application


def pod_group(name: str, min_count: int, *, priority_class: str = "", disruption_mode: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}}}
    if priority_class:
        spec["priorityClassName"] = priority_class
    if disruption_mode:
        spec["disruptionMode"] = disruption_mode
    return {"apiVersion": "scheduling.k8s.io/v1alpha2", "kind": "PodGroup", "metadata": {"name": name}, "spec": spec}


def member(name: str, group: str, cpu: str, *, priority_class: str = "") -> dict[str, Any]:
    body = pod(name, cpu=cpu, priority_class=priority_class)
    body["spec"]["schedulingGroup"] = {"podGroupName": group}
    body["spec"]["terminationGracePeriodSeconds"] = GRACE
    return body


async def create(client: httpx.AsyncClient, path: str, body: dict[str, Any]) -> None:
    response = await client.post(path, json=body)
    assert response.status_code == 201, response.text


async def running_gang_on_two_nodes(client: httpx.AsyncClient, app: FastAPI, *, disruption_mode: str = "") -> None:
    """Two 2-CPU nodes, each full with a pod of the low-priority gang "old" (1500m each), and PriorityClass high."""
    high = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}
    await create(client, "/apis/scheduling.k8s.io/v1/priorityclasses", high)
    for name in ("n1", "n2"):
        await create(client, "/api/v1/nodes", node(name, cpu="2"))
    await create(client, PODGROUPS, pod_group("old", 2, disruption_mode=disruption_mode))
    for i in range(2):
        await create(client, "/api/v1/namespaces/default/pods", member(f"old-{i}", "old", "1500m"))
    store = app.state.store
    await asyncio.to_thread(
        wait_for,
        lambda: all((store.get("Pod", "default", f"old-{i}") or {}).get("spec", {}).get("nodeName") for i in range(2)),
        20.0,
    )


async def high_priority_gang(client: httpx.AsyncClient, members: dict[str, str], min_count: int) -> None:
    await create(client, PODGROUPS, pod_group("train", min_count, priority_class="high"))
    for name, cpu in members.items():
        await create(client, "/api/v1/namespaces/default/pods", member(name, "train", cpu, priority_class="high"))


def gang_detail(app: FastAPI, name: str) -> GangDetail:
    page = group_page(web_of(app), "default", V1ALPHA2, name, minor=36)
    assert page is not None
    (detail,) = page.gangs
    return detail


def preemption_of(app: FastAPI, name: str, status: str) -> GangPreemption | None:
    detail = gang_detail(app, name)
    return detail.preemption if detail.preemption is not None and detail.preemption.status == status else None


async def end_grace_periods(client: httpx.AsyncClient, *pods: str) -> None:
    """What a kubelet does once a grace period is over, now: the victims gone."""
    for name in pods:
        response = await client.request(
            "DELETE", f"/api/v1/namespaces/default/pods/{name}", json={"gracePeriodSeconds": 0}
        )
        assert response.status_code == 200, response.text


async def test_a_gang_that_fits_by_its_members_preemption_waits_for_the_victims_then_binds(
    each_member_app: FastAPI,
) -> None:
    app = each_member_app
    async with asgi_client(app) as client:
        await running_gang_on_two_nodes(client, app)
        await high_priority_gang(client, {"train-0": "1500m", "train-1": "1500m"}, 2)
        waiting = await asyncio.to_thread(wait_for, lambda: preemption_of(app, "train", "waiting"), 20.0)

        # Each member preempted the old pod on the node it is nominated to, in its first attempt.
        assert not waiting.as_one
        victims = {v.pod: (v.node, v.state, v.pod_group) for p in waiting.preemptions for v in p.victims}
        nominated = dict(waiting.nominated)
        assert set(nominated) == {"default/train-0", "default/train-1"}
        assert {p.pod: p.node for p in waiting.preemptions} == nominated
        assert all(p.attempt == 1 and p.attempt_url.endswith("?attempt=1") for p in waiting.preemptions)
        assert sorted(victims) == ["default/old-0", "default/old-1"]
        assert sorted(node for node, _, _ in victims.values()) == ["n1", "n2"]
        assert {state for _, state, _ in victims.values()} == {"terminating"}
        assert {group for _, _, group in victims.values()} == {"default/old"}
        assert all(0 < v.grace_left <= GRACE for p in waiting.preemptions for v in p.victims if v.grace_left)
        # The gang says so on both pages, counting down to the victims' end; not "rejected".
        detail = gang_detail(app, "train")
        assert detail.gang.state.word == "waiting for preemption"
        assert detail.gang.state.detail == "2 victims terminating" and detail.gang.state.remaining is not None
        (listed,) = [g for g in groups_view(web_of(app), minor=36).gangs.items if g.key.name == "train"]
        assert listed.state.word == "waiting for preemption"
        html = (await client.get("/ui/groups/default/PodGroup.v1alpha2/train")).text
        assert 'data-testid="gang-preemption" data-status="waiting"' in html
        assert "each member preempts for itself (DefaultPreemption)" in html
        assert "keeps its node until its grace period" in html and "nominated to" in html

        # The victims' gang and pod pages say who preempted them.
        old = gang_detail(app, "old").preemption
        assert old is not None
        by = {m.pod: m.by.text for m in old.preempted_members}
        assert set(by) == {"default/old-0", "default/old-1"}
        assert {text.removeprefix("pod group default/train for pod ") for text in by.values()} == {
            "default/train-0",
            "default/train-1",
        }
        victim = pod_view(web_of(app), "default", "old-0")
        assert victim is not None and victim.preempted is not None
        assert victim.preempted.by.group == "default/train" and victim.preempted.node in ("n1", "n2")
        assert victim.preempted.grace_left is not None and victim.preempted.grace_left > 0
        pod_html = (await client.get("/ui/pods/default/old-0")).text
        assert "by pod group" in pod_html and "Deleted gracefully" in pod_html

        # Once the victims are gone the gang binds; the page still names them and where they ran.
        await end_grace_periods(client, "old-0", "old-1")
        bound = await asyncio.to_thread(wait_for, lambda: preemption_of(app, "train", "bound"), 20.0)
        assert gang_detail(app, "train").gang.state.word == "bound"
        gone = {v.pod: (v.node, v.state, v.pod_group) for p in bound.preemptions for v in p.victims}
        assert gone == {pod: (node, "gone", "default/old") for pod, (node, _, _) in victims.items()}
        assert bound.nominated == []


async def test_a_gang_turned_back_says_its_members_preemptions_did_not_make_it_fit(each_member_app: FastAPI) -> None:
    app = each_member_app
    async with asgi_client(app) as client:
        await running_gang_on_two_nodes(client, app)
        # The third member fits nowhere even with every victim gone: the quorum of three is never met.
        await high_priority_gang(client, {"train-0": "1500m", "train-1": "1500m", "train-2": "3"}, 3)
        turned = await asyncio.to_thread(wait_for, lambda: preemption_of(app, "train", "turned back"), 20.0)
        assert turned.nominated == []
        assert "pod group is unschedulable" in turned.message
        assert {v.pod for p in turned.preemptions for v in p.victims} <= {"default/old-0", "default/old-1"}
        assert turned.preemptions
        detail = gang_detail(app, "train")
        assert detail.gang.state.word == "rejected"
        html = (await client.get("/ui/groups/default/PodGroup.v1alpha2/train")).text
        assert "the group was turned back and its members' nominations cleared" in html


async def test_a_gang_preempting_as_one_evicts_a_disruptable_gang_whole_and_names_it(as_one_app: FastAPI) -> None:
    app = as_one_app
    async with asgi_client(app) as client:
        await running_gang_on_two_nodes(client, app, disruption_mode="PodGroup")
        await high_priority_gang(client, {"train-0": "1500m", "train-1": "1500m"}, 2)
        waiting = await asyncio.to_thread(wait_for, lambda: preemption_of(app, "train", "waiting"), 20.0)
        assert waiting.as_one
        (group_try,) = waiting.preemptions
        assert group_try.by_group and group_try.node == ""
        seen = {v.pod: (v.node, v.pod_group, v.whole_group, v.state) for v in group_try.victims}
        assert sorted(seen) == ["default/old-0", "default/old-1"]
        assert sorted(n for n, _, _, _ in seen.values()) == ["n1", "n2"]
        assert {(g, whole, state) for _, g, whole, state in seen.values()} == {("default/old", True, "terminating")}
        assert gang_detail(app, "train").gang.state.word == "waiting for preemption"
        html = (await client.get("/ui/groups/default/PodGroup.v1alpha2/train")).text
        assert "the group preempts as one (WorkloadAwarePreemption)" in html
        assert "evicted whole (disruptionMode: PodGroup)" in html

        old = gang_detail(app, "old").preemption
        assert old is not None and old.disruption_mode == "PodGroup"
        assert {m.by.text for m in old.preempted_members} == {"pod group default/train, as one"}
        old_html = (await client.get("/ui/groups/default/PodGroup.v1alpha2/old")).text
        assert "Its pods others preempted" in old_html and "preempting as one" in old_html

        await end_grace_periods(client, "old-0", "old-1")
        bound = await asyncio.to_thread(wait_for, lambda: preemption_of(app, "train", "bound"), 20.0)
        (done,) = bound.preemptions
        # Gone, yet the record still says where they ran and that their gang went whole.
        assert {v.pod: (v.node, v.state, v.whole_group) for v in done.victims} == {
            pod: (node, "gone", True) for pod, (node, _, _, _) in seen.items()
        }
        # The gone victims' gang still says who preempted them (their own attempts name their gang).
        old = await asyncio.to_thread(wait_for, lambda: gang_detail(app, "old").preemption, 10.0)
        assert {(m.pod, m.victim.state) for m in old.preempted_members} == {
            ("default/old-0", "gone"),
            ("default/old-1", "gone"),
        }


async def test_a_gang_that_cannot_preempt_as_one_says_why(as_one_app: FastAPI) -> None:
    app = as_one_app
    async with asgi_client(app) as client:
        await running_gang_on_two_nodes(client, app)
        # Same priority as the running gang: nothing it may preempt.
        await create(client, PODGROUPS, pod_group("train", 2))
        for i in range(2):
            await create(client, "/api/v1/namespaces/default/pods", member(f"train-{i}", "train", "1500m"))
        stuck = await asyncio.to_thread(wait_for, lambda: preemption_of(app, "train", "could not preempt"), 20.0)
        assert stuck.as_one and stuck.preemptions == []
        assert stuck.message == "No preemption victims found for incoming preemptor"
        assert gang_detail(app, "train").gang.state.word == "rejected"

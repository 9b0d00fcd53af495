"""The pod page in words and amounts: how selectHost chose the node (a draw among tied nodes), and why a pending pod
fits nowhere — its requests beside the roomiest nodes, the taints, cordons, labels and affinity terms in its way."""

from __future__ import annotations

import dataclasses
import html as html_lib
import re
from typing import Any

import httpx
from fastapi import FastAPI

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.results.rows import AttemptRetention
from kss_sim.web.views.pending import _taint_obstacles
from tests.results.test_recording import run_two_attempts
from tests.web.conftest import node, pod, wait_for


def store_of(app: FastAPI) -> ClusterStore:
    store: ClusterStore = app.state.store
    return store


def text_of(html: str, testid: str) -> list[str]:
    """The text of every element with this data-testid, tags stripped and whitespace collapsed."""
    out = []
    for m in re.finditer(rf'<(\w+)[^>]*data-testid="{testid}"[^>]*>(.*?)</\1>', html, re.S):
        out.append(" ".join(html_lib.unescape(re.sub(r"<[^>]+>", "", m.group(2))).split()))
    return out


async def page_when_tried(app: FastAPI, client: httpx.AsyncClient, name: str) -> str:
    wait_for(lambda: app.state.results.list_attempts("default", name))
    return (await client.get(f"/ui/pods/default/{name}")).text


async def test_a_tie_is_told_as_a_draw_among_the_tied_nodes(
    sched_app: FastAPI, sched_client: httpx.AsyncClient
) -> None:
    store = store_of(sched_app)
    for name in ("openb-node-0041", "openb-node-0042", "openb-node-0043"):
        store.create("Node", node(name))
    store.create("Pod", pod("web"))
    wait_for(lambda: (store.get("Pod", "default", "web") or {}).get("spec", {}).get("nodeName"))
    detail = (await sched_client.get("/simulator/v1/namespaces/default/pods/web/results/1")).json()
    html = (await sched_client.get("/ui/pods/default/web")).text
    assert text_of(html, "attempt-selection") == [
        f"(drawn at random among 3 nodes tied at total {detail['bestTotal']})"
    ]
    assert "chosen by" not in html
    scores = html[html.index('data-testid="score-table"') : html.index('data-testid="heatmap"')]
    assert scores.count("badge sel") == 1 and scores.count("badge tie") == 2
    winner = detail["selected"][0]
    assert re.search(rf'<tr class="selected">\s*<td class="node"><a href="/ui/nodes/{winner}">', scores)


async def test_a_single_best_node_is_told_with_its_total(sched_app: FastAPI, sched_client: httpx.AsyncClient) -> None:
    store = store_of(sched_app)
    store.create("Node", node("big", cpu="16"))
    store.create("Node", node("small", cpu="2"))
    store.create("Pod", pod("web", cpu="1"))
    wait_for(lambda: (store.get("Pod", "default", "web") or {}).get("spec", {}).get("nodeName"))
    detail = (await sched_client.get("/simulator/v1/namespaces/default/pods/web/results/1")).json()
    html = (await sched_client.get("/ui/pods/default/web")).text
    assert text_of(html, "attempt-selection") == [f"(the best total, {detail['bestTotal']})"]
    assert "badge tie" not in html and 'data-testid="why-pending"' not in html


def gpu_node(name: str, *, cpu: str, memory: str, gpus: int, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    body = node(name, cpu=cpu, memory=memory, labels=labels, **spec)
    body["status"]["capacity"]["nvidia.com/gpu"] = str(gpus)
    return body


async def test_why_pending_gives_each_request_beside_the_roomiest_node_and_names_what_is_in_the_way(
    sched_app: FastAPI, sched_client: httpx.AsyncClient
) -> None:
    store = store_of(sched_app)
    store.create("Node", gpu_node("gpu-a", cpu="8", memory="32Gi", gpus=4, labels={"zone": "a", "disk": "ssd"}))
    taint = {"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}
    store.create(
        "Node", gpu_node("gpu-b", cpu="16", memory="64Gi", gpus=8, labels={"zone": "b", "disk": "hdd"}, taints=[taint])
    )
    store.create("Node", node("cordoned", cpu="4", memory="16Gi", labels={"zone": "a"}, unschedulable=True))
    store.create("Pod", pod("hog", cpu="10", memory="1Gi", node_name="gpu-b"))
    wait_for(lambda: _pods_in_scheduler_cache(sched_app) == 1)
    trainer = pod("trainer", cpu="20", memory="1Gi")
    container = trainer["spec"]["containers"][0]
    container["resources"] = {
        "requests": {"cpu": "20", "memory": "1Gi", "nvidia.com/gpu": "10"},
        "limits": {"nvidia.com/gpu": "10"},
    }
    trainer["spec"]["nodeSelector"] = {"zone": "a"}
    term = {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd", "nvme"]}]}
    trainer["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [term]
    }}}  # fmt: skip
    store.create("Pod", trainer)
    html = await page_when_tried(sched_app, sched_client, "trainer")

    assert text_of(html, "need-cpu") == [
        "cpu 20 requested; the roomiest node has 8 free (gpu-a), the largest 16 allocatable: "
        "no node of this cluster can ever hold it"
    ]
    assert text_of(html, "need-memory") == [
        "memory 1Gi requested; the roomiest node has 63Gi free (gpu-b), the largest 64Gi allocatable: "
        "3 nodes have that much free"
    ]
    assert text_of(html, "need-nvidia.com/gpu") == [
        "nvidia.com/gpu 10 requested; the roomiest node has 8 free (gpu-b), the largest 8 allocatable: "
        "no node of this cluster can ever hold it"
    ]
    assert text_of(html, "obstacle") == [
        "1 node is cordoned (unschedulable)",
        "1 node has taint dedicated=gpu:NoSchedule the pod does not tolerate",
        "1 of 3 nodes lacks label zone=a (nodeSelector)",
        "2 of 3 nodes fail node affinity disk In [ssd, nvme]",
    ]


async def test_requests_that_fit_apart_but_on_no_one_node_are_said_so(
    sched_app: FastAPI, sched_client: httpx.AsyncClient
) -> None:
    store = store_of(sched_app)
    store.create("Node", node("many-cores", cpu="32", memory="2Gi"))
    store.create("Node", node("much-memory", cpu="2", memory="128Gi"))
    store.create("Pod", pod("both", cpu="8", memory="16Gi"))
    html = await page_when_tried(sched_app, sched_client, "both")
    assert text_of(html, "need-cpu") == [
        "cpu 8 requested; the roomiest node has 32 free (many-cores), the largest 32 allocatable: "
        "1 node has that much free"
    ]
    assert text_of(html, "need-memory") == [
        "memory 16Gi requested; the roomiest node has 128Gi free (much-memory), the largest 128Gi allocatable: "
        "1 node has that much free"
    ]
    assert "each request fits on some node, but no node has all of them free at once" in html
    assert text_of(html, "obstacle") == []


async def test_a_full_pod_count_and_several_affinity_terms_are_named(
    sched_app: FastAPI, sched_client: httpx.AsyncClient
) -> None:
    store = store_of(sched_app)
    full = node("full", cpu="8", labels={"disk": "hdd"})
    full["status"]["capacity"]["pods"] = "1"
    store.create("Node", full)
    store.create("Pod", pod("first", node_name="full"))
    wait_for(lambda: _pods_in_scheduler_cache(sched_app) == 1)
    second = pod("second")
    terms = [
        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]},
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]},
    ]
    second["spec"]["affinity"] = {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
    }
    store.create("Pod", second)
    html = await page_when_tried(sched_app, sched_client, "second")
    assert text_of(html, "need-pods") == [
        "pods 1 requested; the roomiest node has 0 free (full), the largest 1 allocatable: "
        "no node has that much free now"
    ]
    assert text_of(html, "obstacle") == ["1 of 1 node matches none of the 2 node affinity terms"]


def test_a_cordoned_node_and_its_cordon_taint_count_once() -> None:
    # The node lifecycle controller taints a cordoned node (as on a cluster): one obstacle, "cordoned".
    cordoned = node("cordoned", unschedulable=True)
    cordoned["spec"]["taints"] = [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    tainted = node("tainted")
    tainted["spec"] = {"taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]}
    assert _taint_obstacles(pod("p"), [cordoned, tainted]) == [
        "1 node is cordoned (unschedulable)",
        "1 node has taint node.kubernetes.io/unschedulable:NoSchedule the pod does not tolerate",
    ]


async def test_a_pod_retried_past_the_cap_keeps_its_first_and_newest_attempts_and_says_how_many_went(
    sched_app: FastAPI, sched_client: httpx.AsyncClient
) -> None:
    store = store_of(sched_app)
    store.create("Node", node("small", cpu="1"))
    store.create("Pod", pod("huge", cpu="8"))
    html = await page_when_tried(sched_app, sched_client, "huge")
    assert 'data-testid="attempts-dropped"' not in html
    results = sched_app.state.results
    results.retention = AttemptRetention(total=4, first=1)
    unschedulable, _, _ = run_two_attempts()  # an attempt of another pod, recorded under this one's name
    uid = store.get("Pod", "default", "huge")["metadata"]["uid"]
    for _ in range(8):
        again = dataclasses.replace(unschedulable, attempt=results.next_attempt_number("default", "huge"))
        results.submit(again, namespace="default", pod_name="huge", pod_uid=uid)
    results.flush()
    newest = results.list_attempts("default", "huge")[0]["attempt"]
    html = (await sched_client.get("/ui/pods/default/huge")).text
    kept = [newest, newest - 1, newest - 2, 1]
    assert [int(n) for n in re.findall(r'<span class="t-num">#(\d+)</span>', html)] == kept
    assert text_of(html, "attempts-dropped") == [
        f"… {newest - 4} attempts not kept (#2–#{newest - 3}): a pod keeps its first and its newest ones "
        "(KSS_RESULTS_MAX_ATTEMPTS_PER_POD, KSS_RESULTS_FIRST_ATTEMPTS_KEPT)"
    ]
    assert f"(4 of {newest} kept)" in html


def _pods_in_scheduler_cache(app: FastAPI) -> int:
    """Pods on the nodes of the scheduler's cache, read through the pages' view (either scheduler host)."""
    return sum(allocation.pod_count for allocation in app.state.scheduler_view.node_allocations().values())

"""The cluster page's overview of every node, its filters and sorts, extended resource names in full, and the pods
page's state chips and pending-first order (through the ASGI app, no browser)."""

from __future__ import annotations

import html as html_lib
import re
from typing import Any

import httpx
from fastapi import FastAPI

from kss_sim.cluster.storage.store import ClusterStore
from tests.web.big_cluster import GPU_MEM, big_node, big_pod
from tests.web.conftest import htmx, node, pod


def store_of(app: FastAPI) -> ClusterStore:
    store: ClusterStore = app.state.store
    return store


def cells(page: str) -> dict[str, str]:
    """node name -> the classes of its overview cell."""
    return dict(re.findall(r'<a href="/ui/nodes/([\w.-]+)" class="([\w ]+)" title=', page))


def titles(page: str) -> dict[str, str]:
    """node name -> its overview cell's tooltip."""
    found = re.findall(r'<a href="/ui/nodes/([\w.-]+)" class="[\w ]+" title="([^"]*)"></a>', page)
    return {name: html_lib.unescape(title) for name, title in found}


def legend(page: str) -> dict[str, int]:
    """band -> the count the legend shows."""
    return {band: int(n) for band, n in re.findall(r'data-band="([\w]+)"[^>]*>.*?<b>(\d+)</b>', page, re.S)}


def listed(page: str) -> list[str]:
    """The nodes of the list below the overview, in order."""
    return re.findall(r'<tr id="node-([\w.-]+)"', page)


def gpu_node(name: str, gpu_mem: str, **spec: Any) -> dict[str, Any]:
    body = node(name, cpu="4", **spec)
    body["status"]["capacity"][GPU_MEM] = gpu_mem
    return body


def gpu_pod(name: str, node_name: str, cpu: str, gpu_mem: str) -> dict[str, Any]:
    body = pod(name, cpu=cpu, node_name=node_name)
    requests = body["spec"]["containers"][0]["resources"]["requests"]
    requests[GPU_MEM] = gpu_mem
    body["spec"]["containers"][0]["resources"]["limits"] = {GPU_MEM: gpu_mem}
    return body


async def three_nodes(app: FastAPI) -> ClusterStore:
    """cpu-only (3 of 4 cores requested), gpu (1 core, all 64 GPU memory), cordoned gpu (nothing requested)."""
    store = store_of(app)
    store.create("Node", node("cpu-only", cpu="4", labels={"pool": "general"}))
    store.create("Node", gpu_node("gpu-full", "64", taints=[{"key": "gpu", "effect": "NoSchedule"}]))
    store.create("Node", gpu_node("gpu-idle", "64", unschedulable=True))
    store.create("Pod", pod("busy", cpu="3", node_name="cpu-only"))
    store.create("Pod", gpu_pod("trainer", "gpu-full", "1", "64"))
    return store


# ---------------------------------------------------------------------------------------------- overview


async def test_overview_colours_every_node_by_the_chosen_resource_and_says_the_numbers(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await three_nodes(app)
    page = (await client.get("/ui/cluster")).text
    assert cells(page) == {"cpu-only": "h7", "gpu-full": "h2", "gpu-idle": "h0 x"}  # 3/4, 1/4, 0/4 cores; cordoned
    assert titles(page)["cpu-only"] == "cpu-only · cpu 3 / 4 (75%)"
    assert titles(page)["gpu-idle"] == "gpu-idle · cpu 0 / 4 (0%) · cordoned"
    # The extended resources any node offers can colour the overview; a node without one has none allocatable.
    assert f'<option value="{GPU_MEM}"' in page
    by_gpu = (await client.get("/ui/cluster", params={"resource": GPU_MEM}, headers=htmx("cluster-body"))).text
    assert by_gpu.lstrip().startswith('<section id="cluster-body"')
    assert cells(by_gpu) == {"cpu-only": "none", "gpu-full": "h10", "gpu-idle": "h0 x"}
    assert titles(by_gpu)["gpu-full"] == f"gpu-full · {GPU_MEM} 64 / 64 (100%)"
    assert legend(by_gpu) == {**{f"h{i}": 0 for i in range(1, 10)}, "h0": 1, "h10": 1, "none": 1}
    # An unknown resource falls back to cpu rather than failing.
    assert cells((await client.get("/ui/cluster", params={"resource": "nope"})).text)["cpu-only"] == "h7"


async def test_overview_and_list_filter_by_state_search_and_legend_band(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    store = await three_nodes(app)
    not_ready = node("sick", cpu="4")
    not_ready["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    store.create("Node", not_ready)

    async def shown(**params: str) -> tuple[list[str], list[str]]:
        page = (await client.get("/ui/cluster", params=params, headers=htmx("cluster-body"))).text
        return sorted(cells(page)), listed(page)

    assert await shown(state="cordoned") == (["gpu-idle"], ["gpu-idle"])
    assert await shown(state="tainted") == (["gpu-full"], ["gpu-full"])
    assert await shown(state="notready") == (["sick"], ["sick"])
    assert await shown(state="schedulable") == (["cpu-only"], ["cpu-only"])  # ready, not cordoned, no NoSchedule
    assert await shown(q="gpu") == (["gpu-full", "gpu-idle"], ["gpu-full", "gpu-idle"])
    assert await shown(q="pool=general") == (["cpu-only"], ["cpu-only"])
    assert await shown(resource=GPU_MEM, band="h10") == (["gpu-full"], ["gpu-full"])
    # The legend still counts every band of the nodes the other filters keep, so another band is one click away.
    page = (await client.get("/ui/cluster", params={"band": "h7"})).text
    assert legend(page)["h0"] == 2 and legend(page)["h7"] == 1
    assert 'class="legend-band current' in page and listed(page) == ["cpu-only"]
    empty = (await client.get("/ui/cluster", params={"q": "gpu", "state": "notready"})).text
    assert "No node matches “gpu” among the not ready nodes." in empty


async def test_list_sorts_by_share_of_the_chosen_resource(app: FastAPI, client: httpx.AsyncClient) -> None:
    await three_nodes(app)

    async def order(**params: str) -> list[str]:
        return listed((await client.get("/ui/cluster", params=params)).text)

    assert await order() == ["cpu-only", "gpu-full", "gpu-idle"]
    assert await order(sort="allocated") == ["cpu-only", "gpu-full", "gpu-idle"]  # 75 %, 25 %, 0 % of cpu
    assert await order(sort="allocated", resource=GPU_MEM) == ["gpu-full", "gpu-idle", "cpu-only"]  # none last
    assert await order(sort="free") == ["gpu-idle", "gpu-full", "cpu-only"]
    assert await order(sort="memory") == ["cpu-only", "gpu-full", "gpu-idle"]  # earlier links: that resource, busiest


async def test_extended_resource_names_are_shown_in_full_with_the_domain_on_its_own_line(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    await three_nodes(app)
    for path in ("/ui/cluster", "/ui/nodes/gpu-full"):
        page = (await client.get(path)).text
        assert '<span class="bar-label"><span class="bar-domain">alibabacloud.com/</span>gpu-mem</span>' in page
        assert "alibabacloud.c…" not in page


async def test_cluster_page_at_5000_nodes_shows_every_node_in_the_overview_and_25_in_the_list(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    store = store_of(app)
    with store.deferred() as pending:
        for i in range(5000):
            store.create("Node", big_node(i))
        for i in range(0, 5000, 7):
            store.create("Pod", big_pod(i))
    pending.wait()
    page = (await client.get("/ui/cluster")).text
    overview = cells(page)
    assert len(overview) == 5000 and sum(legend(page).values()) == 5000
    assert 'class="cells dense"' in page
    assert listed(page) == [f"big-{i:05d}" for i in range(25)]
    assert "1–25 of 5000" in page
    assert overview["big-00007"].split() == ["h7", "x"]  # 7 of 10 cores, cordoned
    assert overview["big-00011"] == "h0 nr"  # not Ready
    busiest = listed((await client.get("/ui/cluster", params={"sort": "allocated"}, headers=htmx("cluster-body"))).text)
    over = [f"big-{i:05d}" for i in range(0, 5000, 7) if i % 12 == 11]  # 11 cores on 10: over allocatable
    assert busiest[:3] == over[:3]  # the most allocated first, ties by name


# ---------------------------------------------------------------------------------------------- pods page


def mark_unschedulable(store: ClusterStore, name: str) -> None:
    current = store.get("Pod", "default", name)
    assert current is not None
    status = dict(current["status"])
    status["conditions"] = [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "message": "0/1 nodes are available"}
    ]
    store.update_pod_status("default", name, status)


async def test_pods_page_lists_pods_that_need_a_look_first_with_counts_per_state(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    store = store_of(app)
    store.create("Node", node("n1"))
    store.create("Pod", pod("a-bound", node_name="n1"))
    store.create("Pod", pod("b-new"))
    store.create("Pod", pod("c-stuck"))
    mark_unschedulable(store, "c-stuck")
    gated = pod("d-gated")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    store.create("Pod", gated)
    done = pod("e-done", node_name="n1")
    store.create("Pod", done)
    current = store.get("Pod", "default", "e-done")
    assert current is not None
    store.update_pod_status("default", "e-done", {**current["status"], "phase": "Succeeded"})

    page = (await client.get("/ui/pods")).text
    order = re.findall(r'data-pod="default/([\w-]+)" data-state="(\w+)"', page)
    assert order == [
        ("c-stuck", "unschedulable"),
        ("b-new", "pending"),
        ("d-gated", "gated"),
        ("a-bound", "bound"),
        ("e-done", "finished"),
    ]
    chips = dict(re.findall(r'data-state="(\w+)"\s+class="state-\w+"[^>]*>(\d+) ', page))
    assert chips == {"all": "5", "pending": "3", "unschedulable": "1", "gated": "1", "bound": "1", "finished": "1"}
    # Each chip filters; "pending" takes the unschedulable and gated pods too.
    for state, expected in (("pending", ["c-stuck", "b-new", "d-gated"]), ("unschedulable", ["c-stuck"])):
        fragment = (await client.get("/ui/pods", params={"state": state}, headers=htmx("pod-table"))).text
        assert re.findall(r'data-pod="default/([\w-]+)"', fragment) == expected
        # The chosen state rides along with the filters form's other controls.
        assert f'<input type="hidden" name="state" value="{state}" form="pod-filters">' in fragment
    by_name = (await client.get("/ui/pods", params={"sort": "name"})).text
    assert re.findall(r'data-pod="default/([\w-]+)"', by_name) == ["a-bound", "b-new", "c-stuck", "d-gated", "e-done"]
    assert 'href="/ui/pods?sort=name"' in page  # the Name header sorts by name; the default order needs no parameter

"""Scheduler extenders in ``kss serve``: configured by PUT, called over real HTTP, their results in the results API."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
from fastapi import FastAPI

from tests.cluster.factories import node, pod
from tests.extender_server import extender_server, node_names

CONFIG_URL = "/simulator/v1/schedulerconfiguration"


async def test_filter_prioritize_and_bind_extenders_take_part_in_serve(
    scheduling_app: FastAPI, sclient: httpx.AsyncClient
) -> None:
    def filter_(body: dict[str, Any]) -> tuple[int, Any]:
        names = node_names(body)
        return 200, {"nodenames": [n for n in names if n != "n1"], "failedNodes": {"n1": "n1 is reserved"}}

    def prioritize(body: dict[str, Any]) -> tuple[int, Any]:
        return 200, [{"host": n, "score": 7 if n == "n3" else 1} for n in node_names(body)]

    def bind(body: dict[str, Any]) -> tuple[int, Any]:
        return 200, {}

    with extender_server({"filter": filter_, "prioritize": prioritize, "bind": bind}) as ext:
        config = {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "extenders": [
                {
                    "urlPrefix": ext.url,
                    "filterVerb": "filter",
                    "prioritizeVerb": "prioritize",
                    "bindVerb": "bind",
                    "weight": 5,
                    "nodeCacheCapable": True,
                    "httpTimeout": "10s",
                }
            ],
        }
        r = await sclient.put(CONFIG_URL, json=config)
        assert r.status_code == 200, r.text
        assert r.json()["extenders"][0]["urlPrefix"] == ext.url
        for name in ("n1", "n2", "n3"):
            assert (await sclient.post("/api/v1/nodes", json=node(name))).status_code == 201
        assert (await sclient.post("/api/v1/namespaces/default/pods", json=pod("web", cpu="100m"))).status_code == 201
        assert await asyncio.to_thread(scheduling_app.state.scheduler.wait_idle, 20.0)
    bound = (await sclient.get("/api/v1/namespaces/default/pods/web")).json()
    assert bound["spec"].get("nodeName") == "n3"
    assert ext.verbs() == ["filter", "prioritize", "bind"]
    assert sorted(ext.calls[0][1]["NodeNames"]) == ["n1", "n2", "n3"]
    assert ext.calls[2][1] == {
        "PodName": "web",
        "PodNamespace": "default",
        "PodUID": bound["metadata"]["uid"],
        "Node": "n3",
    }
    scheduling_app.state.results.flush()
    detail = (await sclient.get("/simulator/v1/namespaces/default/pods/web/results/1")).json()
    key = f"Extender({ext.url})"
    assert key in detail["filterPlugins"] and key in detail["scorePlugins"] and detail["weights"][key] == 5
    assert detail["extenders"] == {key: {"filter": "success", "prioritize": "success", "bind": "success"}}
    assert detail["bind"] == {key: "success"}
    rows = {row["node"]: row for row in detail["matrix"]["rows"]}
    assert rows["n1"]["filter"][key] == "n1 is reserved" and rows["n1"]["stoppedAt"] == key
    assert rows["n3"]["finalScore"][key] == 7 * 5 * 10 and rows["n2"]["finalScore"][key] == 1 * 5 * 10
    assert rows["n3"]["total"] - rows["n2"]["total"] >= 300
    # kube-scheduler-simulator's extender-*-result annotations: each extender's answer, per verb, by urlPrefix.
    notes = bound["metadata"]["annotations"]
    prefix = "kube-scheduler-simulator.sigs.k8s.io/extender-"
    filtered = json.loads(notes[prefix + "filter-result"])[ext.url]
    assert sorted(filtered["NodeNames"]) == ["n2", "n3"] and filtered["FailedNodes"] == {"n1": "n1 is reserved"}
    prioritized = {e["Host"]: e["Score"] for e in json.loads(notes[prefix + "prioritize-result"])[ext.url]}
    assert prioritized == {"n2": 1, "n3": 7}
    assert json.loads(notes[prefix + "bind-result"]) == {ext.url: {"Error": ""}}
    assert json.loads(notes[prefix + "preempt-result"]) == {}


async def test_an_invalid_extender_is_refused_with_the_field(sclient: httpx.AsyncClient) -> None:
    config = {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "extenders": [{"urlPrefix": "http://127.0.0.1:1/x", "prioritizeVerb": "prioritize"}],
    }
    r = await sclient.put(CONFIG_URL, json=config)
    assert r.status_code == 422
    assert r.json()["details"]["causes"][0]["field"] == "extenders[0].weight"

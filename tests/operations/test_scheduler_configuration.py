"""GET/PUT /simulator/v1/schedulerconfiguration: applied from the next cycle on; invalid ones refused unchanged."""

from __future__ import annotations

import asyncio

import httpx
import yaml
from fastapi import FastAPI

from tests.cluster.factories import node, pod

TWO_PROFILES = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
- schedulerName: batch-scheduler
"""
BAD_PLUGIN = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    score:
      enabled:
      - name: NoSuchPlugin
"""


async def test_get_answers_json_or_yaml(client: httpx.AsyncClient) -> None:
    as_json = (await client.get("/simulator/v1/schedulerconfiguration")).json()
    assert as_json["kind"] == "KubeSchedulerConfiguration"
    r = await client.get("/simulator/v1/schedulerconfiguration", headers={"Accept": "application/yaml"})
    assert r.headers["content-type"].startswith("application/yaml")
    assert yaml.safe_load(r.text) == as_json


async def test_get_defaulted_answers_kube_schedulers_form_and_takes_it_back(client: httpx.AsyncClient) -> None:
    url = "/simulator/v1/schedulerconfiguration"
    r = await client.put(url, content=TWO_PROFILES, headers={"content-type": "application/yaml"})
    assert r.status_code == 200
    given = (await client.get(url)).json()
    assert [p for p in given["profiles"]] == [
        {"schedulerName": "default-scheduler"},
        {"schedulerName": "batch-scheduler"},
    ]
    defaulted = (await client.get(url, params={"defaulted": "true"})).json()
    assert defaulted["parallelism"] == 16 and defaulted["podMaxBackoffSeconds"] == 10
    for profile in defaulted["profiles"]:
        enabled = {p["name"]: p.get("weight") for p in profile["plugins"]["multiPoint"]["enabled"]}
        assert enabled["TaintToleration"] == 3 and "DefaultBinder" in enabled
        fit = next(c for c in profile["pluginConfig"] if c["name"] == "NodeResourcesFit")
        assert fit["args"]["kind"] == "NodeResourcesFitArgs"
        assert fit["args"]["scoringStrategy"]["type"] == "LeastAllocated"
    as_yaml = await client.get(url, params={"defaulted": "true"}, headers={"Accept": "application/yaml"})
    assert yaml.safe_load(as_yaml.text) == defaulted
    # The defaulted document is a configuration like any other: put back, it changes nothing in effect.
    r = await client.put(url, json=defaulted)
    assert r.status_code == 200, r.text
    assert (await client.get(url, params={"defaulted": "true"})).json() == defaulted
    unclear = await client.get(url, params={"defaulted": "maybe"})
    assert unclear.status_code == 400 and unclear.json()["kind"] == "Status"
    spec = (await client.get("/simulator/v1/openapi.json")).json()
    parameters = spec["paths"][url]["get"]["parameters"]
    assert [p["name"] for p in parameters] == ["defaulted"] and "write-config-to" in parameters[0]["description"]


async def test_a_valid_configuration_applies_to_the_next_cycle(
    scheduling_app: FastAPI, sclient: httpx.AsyncClient
) -> None:
    await sclient.post("/api/v1/nodes", json=node("n1"))
    r = await sclient.put(
        "/simulator/v1/schedulerconfiguration", content=TWO_PROFILES, headers={"content-type": "application/yaml"}
    )
    assert r.status_code == 200, r.text
    assert [p["schedulerName"] for p in r.json()["profiles"]] == ["default-scheduler", "batch-scheduler"]
    body = pod("batch-job", cpu="1", schedulerName="batch-scheduler")
    assert (await sclient.post("/api/v1/namespaces/default/pods", json=body)).status_code == 201
    assert await asyncio.to_thread(scheduling_app.state.scheduler.wait_idle, 20.0)
    bound = (await sclient.get("/api/v1/namespaces/default/pods/batch-job")).json()
    assert bound["spec"].get("nodeName") == "n1"
    scheduling_app.state.results.flush()
    attempts = (await sclient.get("/simulator/v1/namespaces/default/pods/batch-job/results")).json()["attempts"]
    assert attempts[0]["profile"] == "batch-scheduler"


async def test_an_invalid_configuration_is_refused_with_the_field_and_changes_nothing(
    client: httpx.AsyncClient,
) -> None:
    before = (await client.get("/simulator/v1/schedulerconfiguration")).json()
    r = await client.put(
        "/simulator/v1/schedulerconfiguration", content=BAD_PLUGIN, headers={"content-type": "application/yaml"}
    )
    assert r.status_code == 422
    status = r.json()
    assert status["kind"] == "Status" and status["reason"] == "Invalid"
    assert status["details"]["causes"][0]["field"] == "profiles[0].plugins.score.enabled[0].name"
    assert "NoSuchPlugin" in status["message"]
    assert (await client.get("/simulator/v1/schedulerconfiguration")).json() == before

    as_json = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "parallelism": 4}
    r = await client.put("/simulator/v1/schedulerconfiguration", json={**as_json, "percentageOfNodesToScore": 101})
    assert r.status_code == 422 and r.json()["details"]["causes"][0]["field"] == "percentageOfNodesToScore"
    r = await client.put(
        "/simulator/v1/schedulerconfiguration", content="- a list", headers={"content-type": "application/yaml"}
    )
    assert r.status_code == 400
    r = await client.put("/simulator/v1/schedulerconfiguration", json=as_json)
    assert r.status_code == 200 and r.json()["parallelism"] == 4

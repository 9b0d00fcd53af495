"""autoscaling/v1 HorizontalPodAutoscalers: the stored autoscaling/v2 objects, converted both ways as kube-apiserver
converts them (targetCPUUtilizationPercentage, and the ``autoscaling.alpha.kubernetes.io/*`` annotations that carry
what v1 cannot say), served in process: create, read, list, patch, Table, protobuf and watch."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from kss_sim.cluster.api import autoscaling_v1
from kss_sim.cluster.api.protobuf_codec import decode, encode

V1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
V2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
REF = {"kind": "Deployment", "name": "web", "apiVersion": "apps/v1"}


def v1_autoscaler(name: str = "web", **spec: Any) -> dict[str, Any]:
    """What kubectl autoscale --min=2 --max=5 --cpu-percent=80 sends."""
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name},
        "spec": {
            "scaleTargetRef": REF,
            "minReplicas": 2,
            "maxReplicas": 5,
            "targetCPUUtilizationPercentage": 80,
            **spec,
        },
        "status": {"currentReplicas": 0, "desiredReplicas": 0},
    }


def v2_autoscaler(name: str, metrics: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "annotations": {"team": "web"}},
        "spec": {"scaleTargetRef": REF, "minReplicas": 1, "maxReplicas": 9, "metrics": metrics, **spec},
    }


def cpu(utilization: int) -> dict[str, Any]:
    target = {"type": "Utilization", "averageUtilization": utilization}
    return {"type": "Resource", "resource": {"name": "cpu", "target": target}}


PODS_METRIC = {
    "type": "Pods",
    "pods": {"metric": {"name": "requests-per-second"}, "target": {"type": "AverageValue", "averageValue": "10"}},
}
MEMORY_METRIC = {
    "type": "Resource",
    "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "200Mi"}},
}


def test_the_cpu_target_is_v1_s_percentage_and_other_metrics_travel_in_an_annotation() -> None:
    stored = v2_autoscaler(
        "mixed",
        [PODS_METRIC, cpu(60), MEMORY_METRIC],
        behavior={
            "scaleDown": {
                "stabilizationWindowSeconds": 30,
                "policies": [{"type": "Pods", "value": 1, "periodSeconds": 60}],
            }
        },
    )
    stored["status"] = {
        "currentReplicas": 3,
        "desiredReplicas": 4,
        "currentMetrics": [
            {
                "type": "Resource",
                "resource": {"name": "cpu", "current": {"averageUtilization": 75, "averageValue": "375m"}},
            }
        ],
        "conditions": [{"type": "AbleToScale", "status": "True", "reason": "ReadyForNewScale"}],
    }
    v1 = autoscaling_v1.to_v1(stored)
    assert v1["apiVersion"] == "autoscaling/v1"
    assert v1["spec"] == {
        "scaleTargetRef": REF,
        "minReplicas": 1,
        "maxReplicas": 9,
        "targetCPUUtilizationPercentage": 60,
    }
    assert v1["status"] == {"currentReplicas": 3, "desiredReplicas": 4, "currentCPUUtilizationPercentage": 75}
    annotations = v1["metadata"]["annotations"]
    assert annotations["team"] == "web"
    assert json.loads(annotations[autoscaling_v1.METRICS_ANNOTATION]) == [
        {"type": "Pods", "pods": {"metricName": "requests-per-second", "targetAverageValue": "10"}},
        {"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "200Mi"}},
    ]
    assert json.loads(annotations[autoscaling_v1.CURRENT_METRICS_ANNOTATION]) == [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "currentAverageUtilization": 75, "currentAverageValue": "375m"},
        }
    ]
    # Go marshals the internal behavior, which has no json tags: Go's field names, nil pointers as null.
    assert json.loads(annotations[autoscaling_v1.BEHAVIOR_ANNOTATION]) == {
        "ScaleUp": None,
        "ScaleDown": {
            "StabilizationWindowSeconds": 30,
            "SelectPolicy": None,
            "Policies": [{"Type": "Pods", "Value": 1, "PeriodSeconds": 60}],
            "Tolerance": None,
        },
    }
    assert "stored" not in stored["metadata"]["annotations"] and len(stored["metadata"]["annotations"]) == 1

    back = autoscaling_v1.to_v2(v1)
    assert back["apiVersion"] == "autoscaling/v2"
    assert back["metadata"]["annotations"] == {"team": "web"}
    # Upstream puts the annotation's metrics first and the cpu target last.
    assert back["spec"]["metrics"] == [PODS_METRIC, MEMORY_METRIC, cpu(60)]
    assert back["spec"]["behavior"] == stored["spec"]["behavior"]
    assert back["status"]["currentMetrics"] == stored["status"]["currentMetrics"]
    assert back["status"]["conditions"] == stored["status"]["conditions"]


def test_a_v1_object_without_a_cpu_target_gets_80_percent_and_bad_annotations_are_ignored() -> None:
    plain = v1_autoscaler()
    del plain["spec"]["targetCPUUtilizationPercentage"]
    plain["metadata"]["annotations"] = {autoscaling_v1.METRICS_ANNOTATION: "not json"}
    converted = autoscaling_v1.to_v2(plain)
    assert converted["spec"]["metrics"] == [cpu(80)]
    assert "annotations" not in converted["metadata"]


async def test_kubectl_autoscale_s_object_is_stored_as_v2_and_read_in_both_versions(client: httpx.AsyncClient) -> None:
    made = await client.post(V1, json=v1_autoscaler())
    assert made.status_code == 201, made.text
    assert made.json()["apiVersion"] == "autoscaling/v1"
    assert made.json()["spec"]["targetCPUUtilizationPercentage"] == 80
    as_v2 = (await client.get(f"{V2}/web")).json()
    assert as_v2["spec"]["metrics"] == [cpu(80)] and as_v2["spec"]["minReplicas"] == 2
    assert "annotations" not in as_v2["metadata"]

    assert (await client.post(V2, json=v2_autoscaler("rps", [PODS_METRIC]))).status_code == 201
    as_v1 = (await client.get(f"{V1}/rps")).json()
    assert "targetCPUUtilizationPercentage" not in as_v1["spec"]
    assert json.loads(as_v1["metadata"]["annotations"][autoscaling_v1.METRICS_ANNOTATION])[0]["type"] == "Pods"
    listing = (await client.get("/apis/autoscaling/v1/horizontalpodautoscalers")).json()
    assert listing["kind"] == "HorizontalPodAutoscalerList" and listing["apiVersion"] == "autoscaling/v1"
    assert {i["apiVersion"] for i in listing["items"]} == {"autoscaling/v1"}

    # A v1 client that writes back what it read loses none of v2's fields.
    as_v1["spec"]["maxReplicas"] = 12
    replaced = await client.put(f"{V1}/rps", json=as_v1)
    assert replaced.status_code == 200, replaced.text
    after = (await client.get(f"{V2}/rps")).json()
    assert after["spec"]["metrics"] == [PODS_METRIC] and after["spec"]["maxReplicas"] == 12


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        ("application/merge-patch+json", {"spec": {"targetCPUUtilizationPercentage": 55}}),
        ("application/strategic-merge-patch+json", {"spec": {"targetCPUUtilizationPercentage": 55}}),
        (
            "application/json-patch+json",
            [{"op": "replace", "path": "/spec/targetCPUUtilizationPercentage", "value": 55}],
        ),
    ],
)
async def test_a_patch_is_applied_to_the_v1_form(client: httpx.AsyncClient, content_type: str, patch: Any) -> None:
    assert (await client.post(V2, json=v2_autoscaler("patched", [PODS_METRIC, cpu(70)]))).status_code == 201
    answer = await client.patch(f"{V1}/patched", content=json.dumps(patch), headers={"content-type": content_type})
    assert answer.status_code == 200, answer.text
    assert answer.json()["spec"]["targetCPUUtilizationPercentage"] == 55
    stored = (await client.get(f"{V2}/patched")).json()
    assert stored["spec"]["metrics"] == [PODS_METRIC, cpu(55)]


async def test_v1_validation_unknown_fields_and_discovery(client: httpx.AsyncClient) -> None:
    refused = await client.post(V1, json=v1_autoscaler("zero", targetCPUUtilizationPercentage=0))
    assert refused.status_code == 422
    assert refused.json()["message"] == (
        'HorizontalPodAutoscaler.autoscaling "zero" is invalid: spec.metrics[0].resource.target.averageUtilization: '
        "Invalid value: 0: must be greater than 0"
    )
    body = v1_autoscaler("extra")
    body["spec"]["metrics"] = [PODS_METRIC]
    warned = await client.post(V1, json=body)
    assert warned.status_code == 201
    assert warned.headers["warning"] == '299 - "unknown field \\"spec.metrics\\""'
    strict = await client.post(f"{V1}?fieldValidation=Strict", json={**body, "metadata": {"name": "strict"}})
    assert strict.status_code == 400
    assert strict.json()["message"].endswith('strict decoding error: unknown field "spec.metrics"')

    # A field v1 cannot decode is named as v1 has it (after conversion it would be v2's metrics).
    mistyped = await client.post(V1, json=v1_autoscaler("typed", targetCPUUtilizationPercentage="80"))
    assert mistyped.status_code == 400
    assert mistyped.json()["message"] == (
        'HorizontalPodAutoscaler in version "v1" cannot be handled as a HorizontalPodAutoscaler: json: cannot '
        "unmarshal string into Go struct field HorizontalPodAutoscalerSpec.spec.targetCPUUtilizationPercentage of "
        "type int32"
    )

    group = next(g for g in (await client.get("/apis")).json()["groups"] if g["name"] == "autoscaling")
    assert [v["version"] for v in group["versions"]] == ["v2", "v1"]
    assert group["preferredVersion"]["version"] == "v2"
    resources = (await client.get("/apis/autoscaling/v1")).json()["resources"]
    assert [(r["name"], r["kind"], r.get("shortNames")) for r in resources] == [
        ("horizontalpodautoscalers", "HorizontalPodAutoscaler", ["hpa"]),
        ("horizontalpodautoscalers/status", "HorizontalPodAutoscaler", None),
    ]


async def test_table_protobuf_and_watch_answers_are_in_the_v1_form(client: httpx.AsyncClient) -> None:
    listing = (await client.get(V1)).json()
    payload = encode(v1_autoscaler("framed"))
    assert payload is not None
    protobuf_first = "application/vnd.kubernetes.protobuf, application/json"  # as client-go's typed clients ask
    made = await client.post(
        V1, content=payload, headers={"content-type": "application/vnd.kubernetes.protobuf", "accept": protobuf_first}
    )
    assert made.status_code == 201, made.text
    assert decode(made.content)[:2] == ("autoscaling/v1", "HorizontalPodAutoscaler")
    answer = await client.get(f"{V1}/framed", headers={"accept": "application/vnd.kubernetes.protobuf"})
    api_version, kind, obj = decode(answer.content)
    assert (api_version, kind) == ("autoscaling/v1", "HorizontalPodAutoscaler")
    assert obj["spec"]["targetCPUUtilizationPercentage"] == 80

    table = (
        await client.get(
            f"{V1}?includeObject=Object", headers={"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
        )
    ).json()
    assert [c["name"] for c in table["columnDefinitions"]][:6] == [
        "Name", "Reference", "Targets", "MinPods", "MaxPods", "Replicas"
    ]  # fmt: skip
    row = next(r for r in table["rows"] if r["cells"][0] == "framed")
    assert row["object"]["apiVersion"] == "autoscaling/v1"

    rv = listing["metadata"]["resourceVersion"]
    watched = await client.get(f"{V1}?watch=1&resourceVersion={rv}&timeoutSeconds=1")
    events = [json.loads(line) for line in watched.text.splitlines() if line]
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "framed")]
    assert events[0]["object"]["apiVersion"] == "autoscaling/v1"

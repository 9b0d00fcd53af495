"""autoscaling/v2 HorizontalPodAutoscalers in the store: SetDefaults_HorizontalPodAutoscaler, the status a create
starts from, validation with kube's messages, and the columns ``kubectl get hpa`` shows."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.cluster.api.tables.autoscaling import format_targets
from kss_sim.cluster.api.tables.core import table
from kss_sim.cluster.errors import Invalid
from kss_sim.cluster.kinds.registry import kind_info
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.kube.objects import Obj


@pytest.fixture
def store() -> ClusterStore:
    store = ClusterStore(None)
    store.ensure_builtins()
    return store


def autoscaler(**spec: Any) -> Obj:
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": "web"},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "maxReplicas": 5,
            **spec,
        },
    }


def test_defaults_and_a_new_status(store: ClusterStore) -> None:
    created = store.create(
        "HorizontalPodAutoscaler",
        {**autoscaler(behavior={"scaleDown": {"stabilizationWindowSeconds": 60}}), "status": {"currentReplicas": 9}},
        "default",
    )
    spec = created["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"] == [
        {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}
    ]
    assert spec["behavior"] == {
        "scaleDown": {
            "stabilizationWindowSeconds": 60,
            "selectPolicy": "Max",
            "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}],
        },
        "scaleUp": {
            "stabilizationWindowSeconds": 0,
            "selectPolicy": "Max",
            "policies": [
                {"type": "Pods", "value": 4, "periodSeconds": 15},
                {"type": "Percent", "value": 100, "periodSeconds": 15},
            ],
        },
    }
    assert created["status"] == {"desiredReplicas": 0}
    # Without a behavior none is made up: the controller then uses its own rules.
    plain = store.create("HorizontalPodAutoscaler", {**autoscaler(), "metadata": {"name": "plain"}}, "default")
    assert "behavior" not in plain["spec"]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"maxReplicas": 0}, "spec.maxReplicas: Invalid value: 0: must be greater than 0"),
        (
            {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "", "name": "a/b"}},
            'spec.scaleTargetRef.kind: Required value, spec.scaleTargetRef.name: Invalid value: "a/b": may not contain '
            "'/'",
        ),
        (
            {"metrics": [{"type": "Memory"}]},
            'spec.metrics[0].type: Unsupported value: "Memory": supported values: "ContainerResource", "External", '
            '"Object", "Pods", "Resource"',
        ),
        (
            {"metrics": [{"type": "Resource"}]},
            "spec.metrics[0].resource: Required value: must populate information for the given metric source",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 50, "averageValue": "1"},
                        },
                    }
                ]
            },
            "spec.metrics[0].resource.target.averageValue: Forbidden: may not set both a target raw value and a target "
            "utilization",
        ),
        (
            {
                "metrics": [
                    {"type": "Pods", "pods": {"metric": {"name": "rps"}, "target": {"type": "Value", "value": "1"}}}
                ]
            },
            "spec.metrics[0].pods.target.averageValue: Required value: must specify a positive target averageValue",
        ),
        (
            {"metrics": [{"type": "Object", "object": {"metric": {"name": "a/b"}, "target": {"type": "Value"}}}]},
            "spec.metrics[0].object.metric.name: Invalid value: \"a/b\": may not contain '/', "
            "spec.metrics[0].object.target.averageValue: Required value: must set either a target value or "
            "averageValue",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "External",
                        "external": {"metric": {}, "target": {"type": "Value", "value": "1", "averageValue": "1"}},
                    }
                ]
            },
            "spec.metrics[0].external.metric.name: Required value: must specify a metric name, "
            "spec.metrics[0].external.target.value: Forbidden: may not set both a target value for metric and a "
            "per-pod target",
        ),
        (
            {
                "metrics": [
                    {
                        "type": "ContainerResource",
                        "containerResource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 5},
                        },
                    }
                ]
            },
            "spec.metrics[0].containerResource.container: Required value: must specify a container",
        ),
        (
            {"behavior": {"scaleDown": {"selectPolicy": "Fastest", "policies": []}}},
            'spec.behavior.scaleDown.selectPolicy: Unsupported value: "Fastest": supported values: "Disabled", "Max", '
            '"Min", spec.behavior.scaleDown.policies: Required value: must specify at least one Policy',
        ),
        (
            {"behavior": {"scaleUp": {"policies": [{"type": "Pods", "value": 0, "periodSeconds": 1801}]}}},
            "[spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero, "
            "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800]",
        ),
    ],
)
def test_invalid_specs(store: ClusterStore, spec: Obj, message: str) -> None:
    with pytest.raises(Invalid) as refused:
        store.create("HorizontalPodAutoscaler", autoscaler(**spec), "default")
    assert message in str(refused.value)


def test_kubectl_columns(store: ClusterStore) -> None:
    created = store.create("HorizontalPodAutoscaler", autoscaler(minReplicas=2), "default")
    got = table(kind_info("HorizontalPodAutoscaler"), [created], None)
    assert [c["name"] for c in got["columnDefinitions"]] == [
        "Name",
        "Reference",
        "Targets",
        "MinPods",
        "MaxPods",
        "Replicas",
        "Age",
    ]
    assert got["rows"][0]["cells"][:6] == ["web", "Deployment/web", "cpu: <unknown>/80%", "2", 5, 0]


def test_targets_column() -> None:
    resource = {
        "type": "Resource",
        "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "1Gi"}},
    }
    pods = {
        "type": "Pods",
        "pods": {"metric": {"name": "qps"}, "target": {"type": "AverageValue", "averageValue": "10"}},
    }
    external = {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "5"}}}
    statuses = [{"type": "Resource", "resource": {"name": "memory", "current": {"averageValue": "512Mi"}}}]
    assert format_targets([], []) == "<none>"
    assert format_targets([resource, pods], statuses) == "memory: 512Mi/1Gi, <unknown>/10"
    assert format_targets([resource, pods, external], statuses) == "memory: 512Mi/1Gi, <unknown>/10 + 1 more..."


def test_targets_column_reads_the_status_as_the_printer_does() -> None:
    """The status at a metric's index gives its current value; a value read unchecked is Go's nil quantity."""
    cpu = {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}}
    queue = {"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "5"}}}
    average = {
        "type": "Object",
        "object": {"metric": {"name": "h"}, "target": {"type": "AverageValue", "averageValue": "2"}},
    }
    external_status = {"type": "External", "external": {"metric": {"name": "q"}, "current": {}}}
    assert format_targets([cpu, queue], [external_status, external_status]) == "cpu: <unknown>/50%, <nil>/5"
    assert format_targets([average], [{"type": "Object", "object": {"current": {"value": "3"}}}]) == "<unknown>/2 (avg)"
    assert format_targets([{"type": "Bogus"}], []) == "<unknown type>"


def test_quantities_are_stored_canonical(store: ClusterStore) -> None:
    pods = {
        "type": "Pods",
        "pods": {"metric": {"name": "rps"}, "target": {"type": "AverageValue", "averageValue": "1000m"}},
    }
    created = store.create("HorizontalPodAutoscaler", autoscaler(metrics=[pods]), "default")
    assert created["spec"]["metrics"][0]["pods"]["target"]["averageValue"] == "1"

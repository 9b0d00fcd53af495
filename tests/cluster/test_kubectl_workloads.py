"""Deployments, Jobs, CronJobs, StatefulSets, DaemonSets and Leases through the real kubectl and the official
client against ``kss serve``: apply, the generators (``kubectl create deployment|job|cronjob``, sent as protobuf),
``get -o wide``, ``describe``, ``scale``, refusals worded as kube-apiserver words them, the status subresource,
and node capacities read back in canonical form."""

from __future__ import annotations

import json
import os

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

from tests.conftest import KUBECTL, KubectlRunner, Server

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

DEPLOYMENT = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: kwl-apps}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: nginx
        image: nginx:1.27
        resources: {requests: {cpu: 250m, memory: 64Mi}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: kwl-apps}
spec:
  serviceName: db
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      containers: [{name: pg, image: postgres:17}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kwl-apps}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      nodeSelector: {kubernetes.io/os: linux}
      containers: [{name: agent, image: busybox}]
"""


def _table(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


def test_apply_get_wide_describe_and_scale(kubectl: KubectlRunner) -> None:
    out = kubectl("apply", "-f", "-", input=DEPLOYMENT).stdout
    assert "deployment.apps/web created" in out and "statefulset.apps/db created" in out
    rows = _table(kubectl("get", "deploy", "-n", "kwl-apps", "-o", "wide").stdout)
    assert rows[0] == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"]
    assert rows[1][:4] == ["web", "0/2", "0", "0"] and rows[1][5:] == ["nginx", "nginx:1.27", "app=web"]
    rows = _table(kubectl("get", "sts,ds", "-n", "kwl-apps").stdout)
    assert rows[0] == ["NAME", "READY", "AGE"] and rows[1][:2] == ["statefulset.apps/db", "0/1"]
    assert rows[3] == ["NAME", "DESIRED", "CURRENT", "READY", "UP-TO-DATE", "AVAILABLE", "NODE", "SELECTOR", "AGE"]
    assert rows[4][:7] == ["daemonset.apps/agent", "0", "0", "0", "0", "0", "kubernetes.io/os=linux"]

    described = kubectl("describe", "deploy", "web", "-n", "kwl-apps").stdout
    assert "Replicas:               2 desired | 0 updated | 0 total | 0 available | 0 unavailable" in described
    assert "RollingUpdateStrategy:  25% max unavailable, 25% max surge" in described

    assert "deployment.apps/web scaled" in kubectl("scale", "deploy/web", "-n", "kwl-apps", "--replicas=5").stdout
    d = json.loads(kubectl("get", "deploy", "web", "-n", "kwl-apps", "-o", "json").stdout)
    assert (d["spec"]["replicas"], d["metadata"]["generation"]) == (5, 2)
    kubectl("scale", "sts/db", "-n", "kwl-apps", "--replicas=3")
    assert kubectl("get", "sts", "db", "-n", "kwl-apps", "-o", "jsonpath={.spec.replicas}").stdout == "3"
    # Applying the file again puts the replicas back and changes nothing else.
    kubectl("apply", "-f", "-", input=DEPLOYMENT)
    assert kubectl("get", "deploy", "web", "-n", "kwl-apps", "-o", "jsonpath={.spec.replicas}").stdout == "2"


def test_generators_create_deployments_jobs_and_cron_jobs(kubectl: KubectlRunner) -> None:
    kubectl("create", "namespace", "kwl-gen")
    kubectl("create", "deployment", "api", "-n", "kwl-gen", "--image=nginx", "--replicas=2", "--port=8080")
    d = json.loads(kubectl("get", "deploy", "api", "-n", "kwl-gen", "-o", "json").stdout)
    assert d["spec"]["replicas"] == 2 and d["spec"]["selector"] == {"matchLabels": {"app": "api"}}
    container = d["spec"]["template"]["spec"]["containers"][0]
    assert container["ports"] == [{"containerPort": 8080, "protocol": "TCP"}]
    assert d["spec"]["template"]["metadata"] == {"labels": {"app": "api"}}, "no zero values from protobuf"
    assert "minReadySeconds" not in d["spec"] and "paused" not in d["spec"]

    kubectl("create", "cronjob", "tick", "-n", "kwl-gen", "--image=busybox", "--schedule=*/5 * * * *", "--", "date")
    kubectl("create", "job", "once", "-n", "kwl-gen", "--from=cronjob/tick")
    j = json.loads(kubectl("get", "job", "once", "-n", "kwl-gen", "-o", "json").stdout)
    uid = j["metadata"]["uid"]
    assert j["spec"]["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    assert j["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    assert j["metadata"]["annotations"] == {"cronjob.kubernetes.io/instantiate": "manual"}
    assert j["spec"]["template"]["spec"]["containers"][0]["command"] == ["date"]
    kubectl("create", "job", "pi", "-n", "kwl-gen", "--image=perl", "--", "perl", "-e", "print 1")

    rows = _table(kubectl("get", "jobs", "-n", "kwl-gen").stdout)
    assert rows[0] == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert sorted(r[:3] for r in rows[1:]) == [["once", "Running", "0/1"], ["pi", "Running", "0/1"]]
    rows = _table(kubectl("get", "cronjobs", "-n", "kwl-gen").stdout)
    assert rows[0] == ["NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST", "SCHEDULE", "AGE"]
    assert rows[1][0] == "tick" and rows[1][1:6] == ["*/5", "*", "*", "*", "*"]
    assert rows[1][6:10] == ["<none>", "False", "0", "<none>"]
    described = kubectl("describe", "cronjob", "tick", "-n", "kwl-gen").stdout
    assert "Schedule:                      */5 * * * *" in described
    assert "Concurrency Policy:            Allow" in described
    assert "Controlled By:    CronJob/tick" in kubectl("describe", "job", "once", "-n", "kwl-gen").stdout


def test_bad_workloads_are_refused_in_kube_apiservers_words_and_change_nothing(kubectl: KubectlRunner) -> None:
    bad = DEPLOYMENT.split("---")[0].replace("name: web, namespace: kwl-apps", "name: broken, namespace: kwl-bad")
    bad = bad.replace("selector: {matchLabels: {app: web}}", "selector: {matchLabels: {app: other}}")
    result = kubectl("apply", "-f", "-", input=bad, check=False)
    assert result.returncode != 0
    assert (
        'The Deployment "broken" is invalid: spec.template.metadata.labels: Invalid value: '
        'map[string]string{"app":"web"}: `selector` does not match template `labels`' in result.stderr
    )
    assert kubectl("get", "deploy", "-n", "kwl-bad", "-o", "name").stdout == ""
    typo = bad.replace("replicas: 2", "replicas: two")
    result = kubectl("apply", "-f", "-", input=typo, check=False)
    assert result.returncode != 0
    assert "cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32" in result.stderr
    result = kubectl("create", "cronjob", "never", "--image=busybox", "--schedule=every day", check=False)
    assert result.returncode != 0
    assert 'spec.schedule: Invalid value: "every day": expected exactly 5 fields, found 2: [every day]' in result.stderr


def test_official_client_status_scale_and_canonical_node_capacity(server: Server) -> None:
    api_client = config.new_client_from_config(str(server.kubeconfig))
    apps, batch, core = client.AppsV1Api(api_client), client.BatchV1Api(api_client), client.CoreV1Api(api_client)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name="kwl-client")))
    body = client.V1Deployment(
        metadata=client.V1ObjectMeta(name="cache"),
        spec=client.V1DeploymentSpec(
            selector=client.V1LabelSelector(match_labels={"app": "cache"}),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels={"app": "cache"}),
                spec=client.V1PodSpec(containers=[client.V1Container(name="redis", image="redis:7")]),
            ),
        ),
    )
    created = apps.create_namespaced_deployment("kwl-client", body)
    assert created.spec.replicas == 1 and created.spec.strategy.rolling_update.max_surge == "25%"
    scale = apps.patch_namespaced_deployment_scale("cache", "kwl-client", {"spec": {"replicas": 4}})
    assert (scale.spec.replicas, scale.status.selector) == (4, "app=cache")
    status = {"status": {"replicas": 4, "readyReplicas": 3, "availableReplicas": 3, "updatedReplicas": 4}}
    apps.patch_namespaced_deployment_status("cache", "kwl-client", status)
    read = apps.read_namespaced_deployment_status("cache", "kwl-client")
    assert (read.status.ready_replicas, read.spec.replicas) == (3, 4)
    with pytest.raises(ApiException) as err:
        apps.patch_namespaced_deployment("cache", "kwl-client", {"spec": {"selector": {"matchLabels": {"app": "x"}}}})
    assert err.value.status == 422 and "field is immutable" in json.loads(err.value.body)["message"]
    assert batch.list_namespaced_job("kwl-client").items == []

    node = client.V1Node(
        metadata=client.V1ObjectMeta(name="kwl-node"),
        status=client.V1NodeStatus(capacity={"cpu": "64000m", "memory": "262144Mi", "nvidia.com/gpu": "8"}),
    )
    core.create_node(node)
    read_node = core.read_node("kwl-node")
    assert read_node.status.capacity == {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "8"}
    assert read_node.status.allocatable == read_node.status.capacity


def test_explain_reads_the_served_schemas(kubectl: KubectlRunner) -> None:
    out = kubectl("explain", "deployment.spec").stdout
    assert "GROUP:      apps\nKIND:       Deployment\nVERSION:    v1" in out
    assert "FIELD: spec <DeploymentSpec>" in out
    assert "replicas\t<integer>" in out and "Number of desired pods." in out
    assert "selector\t<LabelSelector> -required-" in out
    out = kubectl("explain", "cronjob.spec.jobTemplate.spec.template.spec.containers.image").stdout
    assert "FIELD: image <string>" in out
    result = kubectl("explain", "deployment.spec.replicaz", check=False)
    assert result.returncode != 0 and 'field "replicaz" does not exist' in result.stderr

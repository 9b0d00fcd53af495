"""The real kubectl (/usr/bin/kubectl) against a real ``kss serve``."""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.conftest import KUBECTL, KubectlRunner, Server

pytestmark = pytest.mark.skipif(not __import__("os").path.exists(KUBECTL), reason="kubectl not installed")

MANIFEST = """
apiVersion: v1
kind: Node
metadata:
  name: kc-node-a
  labels: {zone: a}
status:
  capacity: {cpu: "8", memory: 16Gi, pods: "110"}
---
apiVersion: v1
kind: Node
metadata:
  name: kc-node-b
status:
  capacity: {cpu: "4", memory: 8Gi, pods: "110"}
---
apiVersion: v1
kind: Pod
metadata:
  name: kc-web
  namespace: kc
  labels: {app: web}
spec:
  nodeName: kc-node-a
  containers:
  - name: web
    image: nginx:1.27
    resources:
      limits: {cpu: 500m, memory: 256Mi}
---
apiVersion: v1
kind: Pod
metadata:
  name: kc-pending
  namespace: kc
spec:
  containers:
  - name: main
    image: busybox
"""


def test_apply_get_describe_label_cordon_taint_delete(kubectl: KubectlRunner) -> None:
    out = kubectl("apply", "-f", "-", input=MANIFEST).stdout
    assert "node/kc-node-a created" in out and "pod/kc-pending created" in out
    again = kubectl("apply", "-f", "-", input=MANIFEST.replace("app: web", "app: web2")).stdout
    assert "pod/kc-web configured" in again and "node/kc-node-b unchanged" in again
    assert json.loads(kubectl("get", "pod", "kc-web", "-n", "kc", "-o", "json").stdout)["metadata"]["labels"] == {
        "app": "web2"
    }

    wide = kubectl("get", "pods", "-n", "kc", "-o", "wide").stdout.splitlines()
    assert wide[0].split() == [
        "NAME",
        "READY",
        "STATUS",
        "RESTARTS",
        "AGE",
        "IP",
        "NODE",
        "NOMINATED",
        "NODE",
        "READINESS",
        "GATES",
    ]
    rows = {line.split()[0]: line.split() for line in wide[1:]}
    assert rows["kc-web"][1:4] == ["0/1", "Pending", "0"] and rows["kc-web"][6] == "kc-node-a"
    assert rows["kc-pending"][6] == "<none>"

    pod = json.loads(kubectl("get", "pod", "kc-web", "-n", "kc", "-o", "json").stdout)
    assert pod["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "500m", "memory": "256Mi"}
    assert pod["status"]["qosClass"] == "Guaranteed"

    described = kubectl("describe", "pod", "kc-web", "-n", "kc").stdout
    assert "Name:         kc-web" in described and "Node:         kc-node-a" in described and "Events:" in described

    kubectl("label", "node", "kc-node-b", "disk=ssd")
    assert "disk=ssd" in kubectl("get", "node", "kc-node-b", "--show-labels").stdout
    kubectl("annotate", "pod", "kc-pending", "-n", "kc", "note=hello")
    assert (
        json.loads(kubectl("get", "pod", "kc-pending", "-n", "kc", "-o", "json").stdout)["metadata"]["annotations"][
            "note"
        ]
        == "hello"
    )

    kubectl("cordon", "kc-node-b")
    nodes = {line.split()[0]: line.split()[1] for line in kubectl("get", "nodes").stdout.splitlines()[1:]}
    assert nodes["kc-node-b"] == "Ready,SchedulingDisabled" and nodes["kc-node-a"] == "Ready"
    kubectl("uncordon", "kc-node-b")

    kubectl("taint", "node", "kc-node-b", "gpu=true:NoSchedule")
    taints = json.loads(kubectl("get", "node", "kc-node-b", "-o", "json").stdout)["spec"]["taints"]
    assert taints == [{"key": "gpu", "value": "true", "effect": "NoSchedule"}]
    kubectl("taint", "node", "kc-node-b", "gpu=true:NoSchedule-")
    assert "taints" not in json.loads(kubectl("get", "node", "kc-node-b", "-o", "json").stdout)["spec"]

    assert 'pod "kc-pending" deleted' in kubectl("delete", "pod", "kc-pending", "-n", "kc").stdout
    missing = kubectl("get", "pod", "kc-pending", "-n", "kc", check=False)
    assert missing.returncode != 0 and 'pods "kc-pending" not found' in missing.stderr
    kubectl("delete", "node", "kc-node-a")
    # kube-apiserver leaves a Node's pods to the pod GC (which this server, without controllers, does not run).
    assert kubectl("get", "pods", "-n", "kc", "-o", "name").stdout.strip() == "pod/kc-web"


def test_get_pods_watch_receives_an_event(kubectl: KubectlRunner, server: Server) -> None:
    kubectl("apply", "-f", "-", input="apiVersion: v1\nkind: Namespace\nmetadata: {name: kc-watch}\n")
    watcher = subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(server.kubeconfig), "get", "pods", "-n", "kc-watch", "-w"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(1.5)
        kubectl("run", "watched", "--image=nginx", "-n", "kc-watch")
        deadline = time.monotonic() + 15
        seen = ""
        assert watcher.stdout is not None
        while time.monotonic() < deadline and "watched" not in seen:
            seen += watcher.stdout.readline()
        assert "watched" in seen and "Pending" in seen
    finally:
        watcher.kill()
        watcher.wait()


def test_errors_reach_kubectl_as_status_messages(kubectl: KubectlRunner) -> None:
    bad = kubectl(
        "apply",
        "-f",
        "-",
        input="apiVersion: v1\nkind: Pod\nmetadata: {name: Bad_Name}\nspec: {containers: [{name: c, image: x}]}\n",
        check=False,
    )
    assert bad.returncode != 0 and "is invalid" in bad.stderr and "metadata.name" in bad.stderr
    quantity = kubectl(
        "apply",
        "-f",
        "-",
        input="apiVersion: v1\nkind: Pod\nmetadata: {name: q}\n"
        "spec: {containers: [{name: c, image: x, resources: {requests: {memory: 1.5.3Gi}}}]}\n",
        check=False,
    )
    assert quantity.returncode != 0 and "quantities must match" in quantity.stderr


def test_get_pv_and_pvc_print_kubectls_columns(kubectl: KubectlRunner) -> None:
    kubectl(
        "apply",
        "-f",
        "-",
        input="""
apiVersion: v1
kind: PersistentVolume
metadata: {name: kc-pv}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteMany, ReadWriteOnce]
  storageClassName: slow
  hostPath: {path: /data}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: kc-claim, namespace: kc}
spec: {storageClassName: slow, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
""",
    )
    pv = kubectl("get", "pv", "kc-pv").stdout.splitlines()
    assert pv[0].split() == [
        "NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM", "POLICY", "STATUS", "CLAIM", "STORAGECLASS",
        "VOLUMEATTRIBUTESCLASS", "REASON", "AGE",
    ]  # fmt: skip
    assert pv[1].split()[:6] == ["kc-pv", "10Gi", "RWO,RWX", "Retain", "Available", "slow"]
    pvc = kubectl("get", "pvc", "-n", "kc", "kc-claim").stdout.splitlines()
    assert pvc[0].split()[:4] == ["NAME", "STATUS", "VOLUME", "CAPACITY"]
    # Unbound: no volume, capacity or access modes yet, as kubectl shows a pending claim.
    assert pvc[1].split()[:4] == ["kc-claim", "Pending", "slow", "<unset>"]

"""The kinds kss stores without acting on them (ConfigMap, Secret, ServiceAccount, Service, Endpoints, EndpointSlice,
ReplicationController, CSIDriver, CSIStorageCapacity, VolumeAttachment, the RBAC kinds): what control-plane clients
list and watch, and real manifests create, read back as from kube-apiserver — defaults, validation, tables."""

from __future__ import annotations

import json

import httpx

from kss_sim.cluster.api import protobuf, protobuf_codec
from kss_sim.cluster.api.protobuf import PROTOBUF
from tests.conftest import KubectlRunner

ACCEPT = {"accept": f"{PROTOBUF}, application/json"}

# What kube-scheduler v1.35's informers list and watch (with its default protobuf content type) beyond the kinds
# kss schedules with; each answered 404 before.
SCHEDULER_INFORMERS = [
    "/api/v1/services",
    "/api/v1/replicationcontrollers",
    "/apis/storage.k8s.io/v1/csidrivers",
    "/apis/storage.k8s.io/v1/csistoragecapacities",
    "/apis/storage.k8s.io/v1/volumeattachments",
]


async def test_kube_scheduler_informers_list_and_watch_in_protobuf(client: httpx.AsyncClient) -> None:
    for url in SCHEDULER_INFORMERS:
        listed = await client.get(f"{url}?limit=500&resourceVersion=0", headers=ACCEPT)
        assert listed.status_code == 200 and listed.headers["content-type"] == PROTOBUF, url
        answer = protobuf.decode(listed.content)
        assert answer["kind"].endswith("List") and answer["metadata"]["resourceVersion"], url
        rv = answer["metadata"]["resourceVersion"]
        watched = await client.get(
            f"{url}?watch=true&resourceVersion={rv}&timeoutSeconds=1&allowWatchBookmarks=true", headers=ACCEPT
        )
        assert watched.status_code == 200 and watched.headers["content-type"] == protobuf.PROTOBUF_STREAM, url


async def test_defaults_as_kube_apiserver_sets_them(client: httpx.AsyncClient) -> None:
    svc = await client.post(
        "/api/v1/namespaces/default/services",
        json={"metadata": {"name": "web"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}},
    )
    assert svc.status_code == 201, svc.text
    spec = svc.json()["spec"]
    assert spec["ports"] == [{"port": 80, "protocol": "TCP", "targetPort": 80}]
    assert (spec["sessionAffinity"], spec["externalTrafficPolicy"], spec["internalTrafficPolicy"]) == (
        "None",
        "Cluster",
        "Cluster",
    )
    driver = await client.post("/apis/storage.k8s.io/v1/csidrivers", json={"metadata": {"name": "x.csi"}})
    assert driver.json()["spec"] == {
        "attachRequired": True,
        "podInfoOnMount": False,
        "storageCapacity": False,
        "fsGroupPolicy": "ReadWriteOnceWithFSType",
        "requiresRepublish": False,
        "seLinuxMount": False,
        "volumeLifecycleModes": ["Persistent"],
    }
    secret = await client.post("/api/v1/namespaces/default/secrets", json={"metadata": {"name": "s"}})
    assert secret.json()["type"] == "Opaque"
    template = {"metadata": {"labels": {"app": "rc"}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}
    rc = await client.post(
        "/api/v1/namespaces/default/replicationcontrollers",
        json={"metadata": {"name": "rc"}, "spec": {"template": template}},
    )
    assert rc.status_code == 201, rc.text
    body = rc.json()
    assert (body["spec"]["replicas"], body["spec"]["selector"], body["metadata"]["labels"]) == (
        1,
        {"app": "rc"},
        {"app": "rc"},
    )
    assert body["spec"]["template"]["spec"]["restartPolicy"] == "Always"


async def test_invalid_objects_are_422_and_not_stored(client: httpx.AsyncClient) -> None:
    cases = [
        ("/api/v1/namespaces/default/configmaps", {"metadata": {"name": "c"}, "data": {"a/b": "x"}}, "data[a/b]"),
        (
            "/api/v1/namespaces/default/services",
            {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80}, {"port": 70000, "name": "b"}]}},
            "spec.ports[0].name",
        ),
        (
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            {
                "metadata": {"name": "b"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
            },
            "roleRef.kind",
        ),
        (
            "/apis/storage.k8s.io/v1/volumeattachments",
            {"metadata": {"name": "v"}, "spec": {"attacher": "x", "nodeName": "n", "source": {}}},
            "spec.source",
        ),
    ]
    for url, body, field in cases:
        r = await client.post(url, json=body)
        assert r.status_code == 422, r.text
        assert field in [c["field"] for c in r.json()["details"]["causes"]], r.text
        assert (await client.get(f"{url}/{body['metadata']['name']}")).status_code == 404
    # a binding's roleRef cannot change
    url = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
    ref = {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "a"}
    assert (await client.post(url, json={"metadata": {"name": "rb"}, "roleRef": ref})).status_code == 201
    r = await client.patch(
        f"{url}/rb",
        json={"roleRef": {**ref, "name": "b"}},
        headers={"content-type": "application/merge-patch+json"},
    )
    assert r.status_code == 422 and "cannot change roleRef" in r.text


def _rows(kubectl: KubectlRunner, *args: str) -> list[list[str]]:
    out = kubectl("get", *args).stdout
    return [line.split() for line in out.splitlines()]


def test_kubectl_creates_and_prints_them_as_on_a_cluster(kubectl: KubectlRunner) -> None:
    # kubectl's generators send these in protobuf
    ns = ["-n", "stored"]
    kubectl("create", "namespace", "stored")
    kubectl("create", "configmap", "settings", "--from-literal=mode=fast", "--from-literal=level=3", *ns)
    kubectl("create", "secret", "generic", "creds", "--from-literal=password=s3cret", *ns)
    kubectl("create", "serviceaccount", "robot", *ns)
    kubectl("create", "service", "nodeport", "web", "--tcp=80:8080", "--node-port=30080", *ns)
    kubectl("create", "role", "reader", "--verb=get,list", "--resource=pods", *ns)
    kubectl("create", "rolebinding", "reader", "--role=reader", "--serviceaccount=stored:robot", *ns)
    kubectl("create", "clusterrole", "stored-reader", "--verb=get", "--resource=nodes")
    kubectl("create", "clusterrolebinding", "stored-reader", "--clusterrole=stored-reader", "--user=alice")
    manifest = """
apiVersion: v1
kind: ReplicationController
metadata: {name: rc1, namespace: stored}
spec:
  replicas: 2
  template:
    metadata: {labels: {app: rc1}}
    spec: {containers: [{name: c, image: nginx}]}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: stored.csi.example.com}
---
apiVersion: storage.k8s.io/v1
kind: CSIStorageCapacity
metadata: {name: cap1, namespace: stored}
storageClassName: fast
capacity: 100Gi
---
apiVersion: storage.k8s.io/v1
kind: VolumeAttachment
metadata: {name: stored-va}
spec: {attacher: stored.csi.example.com, nodeName: n1, source: {persistentVolumeName: pv1}}
---
apiVersion: v1
kind: Endpoints
metadata: {name: web, namespace: stored}
subsets: [{addresses: [{ip: 10.0.0.1}, {ip: 10.0.0.2}], ports: [{port: 8080}]}]
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-abc, namespace: stored}
addressType: IPv4
endpoints: [{addresses: [10.0.0.1]}]
ports: [{port: 8080, protocol: TCP}]
"""
    kubectl("apply", "-f", "-", input=manifest)

    assert _rows(kubectl, "configmap", "settings", *ns)[0] == ["NAME", "DATA", "AGE"]
    assert _rows(kubectl, "configmap", "settings", *ns)[1][:2] == ["settings", "2"]
    assert _rows(kubectl, "secret", "creds", *ns)[1][:3] == ["creds", "Opaque", "1"]
    assert _rows(kubectl, "sa", "robot", *ns)[0] == ["NAME", "SECRETS", "AGE"]
    svc = _rows(kubectl, "svc", "web", "-o", "wide", *ns)
    assert svc[0] == ["NAME", "TYPE", "CLUSTER-IP", "EXTERNAL-IP", "PORT(S)", "AGE", "SELECTOR"]
    assert svc[1][1] == "NodePort" and svc[1][4] == "80:30080/TCP" and svc[1][6] == "app=web"
    assert _rows(kubectl, "ep", "web", *ns)[1][1] == "10.0.0.1:8080,10.0.0.2:8080"
    assert _rows(kubectl, "endpointslices", "web-abc", *ns)[1][1:4] == ["IPv4", "8080", "10.0.0.1"]
    assert _rows(kubectl, "rc", "rc1", "-o", "wide", *ns)[1][:2] == ["rc1", "2"]
    assert _rows(kubectl, "role", "reader", *ns)[0] == ["NAME", "CREATED", "AT"]
    assert _rows(kubectl, "rolebinding", "reader", "-o", "wide", *ns)[1][1] == "Role/reader"
    binding = _rows(kubectl, "clusterrolebinding", "stored-reader", "-o", "wide")[1]
    assert (binding[1], binding[3]) == ("ClusterRole/stored-reader", "alice")
    assert _rows(kubectl, "csidriver", "stored.csi.example.com")[0][:3] == ["NAME", "ATTACHREQUIRED", "PODINFOONMOUNT"]
    assert _rows(kubectl, "csistoragecapacities", "cap1", *ns)[1] == ["cap1", "fast", "100Gi"]
    assert _rows(kubectl, "volumeattachment", "stored-va")[1][1:5] == ["stored.csi.example.com", "pv1", "n1", "false"]

    # -o json reads back what was sent (a Secret's data base64 as sent, the ConfigMap's data)
    cm = json.loads(kubectl("get", "cm", "settings", "-o", "json", *ns).stdout)
    assert cm["data"] == {"mode": "fast", "level": "3"}
    # the objects round-trip through kss's protobuf codec as stored
    for kind in ("secret/creds", "service/web", "rolebinding/reader", "replicationcontroller/rc1"):
        obj = json.loads(kubectl("get", kind, "-o", "json", *ns).stdout)
        encoded = protobuf_codec.encode(obj)
        assert encoded is not None and protobuf.decode(encoded) == obj, kind

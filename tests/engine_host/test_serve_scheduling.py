"""The scheduler inside ``kss serve``, driven with the real kubectl and the official client."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.conftest import KubectlRunner, Server, start_server

NODE_TEMPLATE = """
apiVersion: v1
kind: Node
metadata: {{name: {name}, labels: {{kubernetes.io/hostname: {name}}}}}
spec: {{{spec}}}
status: {{capacity: {{cpu: "{cpu}", memory: 32Gi, pods: "110"}}}}
"""
POD_TEMPLATE = """
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  {extra}
  containers: [{{name: c, image: nginx, resources: {{requests: {{cpu: "{cpu}", memory: 1Gi}}}}}}]
"""


def node_yaml(name: str, cpu: str = "4", spec: str = "") -> str:
    return NODE_TEMPLATE.format(name=name, cpu=cpu, spec=spec)


def pod_yaml(name: str, cpu: str = "500m", extra: str = "") -> str:
    return POD_TEMPLATE.format(name=name, cpu=cpu, extra=extra)


@pytest.fixture(scope="module")
def sched_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    workdir = tmp_path_factory.mktemp("kss-sched")
    srv = start_server(workdir, f"sqlite:///{workdir / 'kss.db'}")
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def kctl(sched_server: Server) -> KubectlRunner:
    return KubectlRunner(sched_server.kubeconfig)


@pytest.fixture(scope="module")
def core(sched_server: Server) -> k8s.CoreV1Api:
    api_client = k8s_config.new_client_from_config(config_file=str(sched_server.kubeconfig))
    return k8s.CoreV1Api(api_client)


def wait_for(predicate: Callable[[], Any], timeout: float = 10.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def apply(kctl: KubectlRunner, *docs: str) -> None:
    kctl("apply", "-f", "-", input="\n---\n".join(docs))


def pod_json(kctl: KubectlRunner, name: str) -> dict[str, Any]:
    out: dict[str, Any] = json.loads(kctl("get", "pod", name, "-o", "json").stdout)
    return out


def test_pods_created_with_kubectl_get_bound_with_a_scheduled_event(kctl: KubectlRunner) -> None:
    apply(kctl, node_yaml("alpha"), node_yaml("beta", spec="taints: [{key: gpu, value: 'true', effect: NoSchedule}]"))
    start = time.monotonic()
    apply(kctl, pod_yaml("web-1"), pod_yaml("web-2"))
    for name in ("web-1", "web-2"):
        node = wait_for(lambda n=name: pod_json(kctl, n)["spec"].get("nodeName"))
        assert node == "alpha"  # beta's taint is not tolerated
    bound_after = time.monotonic() - start
    assert bound_after < 5, f"binding took {bound_after:.2f}s"
    describe = kctl("describe", "pod", "web-1").stdout
    assert "Scheduled" in describe and "Successfully assigned default/web-1 to alpha" in describe
    conditions = {c["type"]: c for c in pod_json(kctl, "web-1")["status"]["conditions"]}
    assert conditions["PodScheduled"]["status"] == "True"


def test_impossible_pod_shows_kube_scheduler_message_in_its_condition(kctl: KubectlRunner) -> None:
    apply(kctl, node_yaml("gamma", cpu="2"))
    apply(kctl, pod_yaml("too-big", cpu="64"))

    def condition() -> dict[str, Any] | None:
        for c in pod_json(kctl, "too-big")["status"].get("conditions") or []:
            if c["type"] == "PodScheduled" and c["status"] == "False":
                return c
        return None

    cond = wait_for(condition)
    assert cond["reason"] == "Unschedulable"
    assert cond["message"].startswith("0/3 nodes are available: ")
    assert "Insufficient cpu" in cond["message"]
    assert "1 node(s) had untolerated taint(s)" in cond["message"]
    events = kctl("get", "events", "--field-selector", "involvedObject.name=too-big").stdout
    assert "FailedScheduling" in events


def test_high_priority_pod_preempts_and_events_show_it(kctl: KubectlRunner) -> None:
    apply(
        kctl,
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: low}\nvalue: 10",
        "apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata: {name: high}\nvalue: 10000",
        node_yaml("solo", cpu="2", spec="taints: [{key: solo, value: 'x', effect: NoSchedule}]"),
    )
    pin = "tolerations: [{key: solo, operator: Exists}]\n  nodeSelector: {kubernetes.io/hostname: solo}"
    grace = "terminationGracePeriodSeconds: 3"
    apply(kctl, pod_yaml("low-1", cpu="1500m", extra=f"priorityClassName: low\n  {grace}\n  {pin}"))
    assert wait_for(lambda: pod_json(kctl, "low-1")["spec"].get("nodeName")) == "solo"
    apply(
        kctl,
        pod_yaml("vip", cpu="1500m", extra=f"priorityClassName: high\n  {pin}"),
    )
    # The victim ends gracefully: marked DisruptionTarget, it holds the node for its 3 s while vip is nominated.
    victim = wait_for(lambda: (p := pod_json(kctl, "low-1"))["metadata"].get("deletionTimestamp") and p)
    assert victim["metadata"]["deletionGracePeriodSeconds"] == 3
    assert {
        "type": "DisruptionTarget",
        "status": "True",
        "reason": "PreemptionByScheduler",
        "message": "default-scheduler: preempting to accommodate a higher priority pod",
    }.items() <= next(c for c in victim["status"]["conditions"] if c["type"] == "DisruptionTarget").items()
    waiting = pod_json(kctl, "vip")
    assert waiting["status"].get("nominatedNodeName") == "solo" and not waiting["spec"].get("nodeName")
    assert wait_for(lambda: pod_json(kctl, "vip")["spec"].get("nodeName"), timeout=20) == "solo"
    # The nomination is spent with the binding (ClearingNominatedNodeNameAfterBinding, on in v1.35).
    assert "nominatedNodeName" not in pod_json(kctl, "vip")["status"]
    gone = kctl("get", "pod", "low-1", check=False)
    assert gone.returncode != 0 and "NotFound" in gone.stderr
    events = kctl("get", "events", "-o", "json").stdout
    reasons = {(e["reason"], e["involvedObject"]["name"]) for e in json.loads(events)["items"]}
    assert ("Preempted", "low-1") in reasons
    assert ("FailedScheduling", "vip") in reasons


def test_results_api_and_annotations_for_a_pod_that_fails_then_succeeds(
    kctl: KubectlRunner, core: k8s.CoreV1Api, sched_server: Server
) -> None:
    apply(kctl, pod_yaml("late", cpu="6"))  # no node has 6 CPUs free yet
    wait_for(
        lambda: any(
            c.get("reason") == "Unschedulable" for c in pod_json(kctl, "late")["status"].get("conditions") or []
        )
    )
    apply(kctl, node_yaml("roomy", cpu="16"))
    assert wait_for(lambda: pod_json(kctl, "late")["spec"].get("nodeName"), timeout=20) == "roomy"

    listing = wait_for(
        lambda: (
            (r := httpx.get(f"{sched_server.url}/simulator/v1/namespaces/default/pods/late/results").json())
            and len(r["attempts"]) >= 2
            and r
        )
    )
    attempts = listing["attempts"]
    assert attempts[0]["result"] == "scheduled" and attempts[0]["boundTo"] == "roomy"
    assert attempts[-1]["result"] == "unschedulable"
    assert attempts[-1]["rejections"]["NodeResourcesFit"]["Insufficient cpu"] >= 1

    newest = attempts[0]["attempt"]
    detail = httpx.get(
        f"{sched_server.url}/simulator/v1/namespaces/default/pods/late/results/{newest}", params={"sort": "total"}
    ).json()
    assert detail["matrix"]["rows"][0]["node"] == "roomy" and detail["matrix"]["rows"][0]["selected"]
    assert detail["weights"]["TaintToleration"] == 3

    def annotations() -> dict[str, str] | None:
        pod = core.read_namespaced_pod("late", "default")
        ann = pod.metadata.annotations or {}
        return ann if ann.get("kube-scheduler-simulator.sigs.k8s.io/selected-node") == "roomy" else None

    ann = wait_for(annotations)
    prefix = "kube-scheduler-simulator.sigs.k8s.io/"
    filter_result = json.loads(ann[prefix + "filter-result"])
    assert filter_result["roomy"]["NodeResourcesFit"] == "passed"
    assert filter_result["alpha"]["NodeResourcesFit"] == "Insufficient cpu"
    score = json.loads(ann[prefix + "score-result"])
    final = json.loads(ann[prefix + "finalscore-result"])
    assert set(score["roomy"]) == set(final["roomy"])
    assert all(isinstance(v, str) and v.isdigit() for v in final["roomy"].values())
    assert json.loads(ann[prefix + "bind-result"]) == {"DefaultBinder": "success"}
    history = json.loads(ann[prefix + "result-history"])
    assert len(history) >= 2 and history[-1][prefix + "selected-node"] == "roomy"


def test_unknown_attempt_is_a_kubernetes_status_404(sched_server: Server) -> None:
    r = httpx.get(f"{sched_server.url}/simulator/v1/namespaces/default/pods/nope/results/3")
    assert r.status_code == 404
    body = r.json()
    assert body["kind"] == "Status" and body["reason"] == "NotFound"


def test_openapi_documents_the_results_endpoints(sched_server: Server) -> None:
    spec = httpx.get(f"{sched_server.url}/simulator/v1/openapi.json").json()
    paths = spec["paths"]
    assert "/simulator/v1/namespaces/{namespace}/pods/{name}/results" in paths
    assert "/simulator/v1/namespaces/{namespace}/pods/{name}/results/{attempt}" in paths
    example_source = json.dumps(spec["components"]["schemas"]["AttemptSummary"])
    assert "examples" in example_source


def test_wait_for_first_consumer_claim_lands_the_pod_where_its_static_volume_is(kctl: KubectlRunner) -> None:
    # Last in this module: it adds a node the other tests do not count.
    apply(
        kctl,
        node_yaml("storage-node"),
        """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: local-wffc}
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
""",
        """
apiVersion: v1
kind: PersistentVolume
metadata: {name: local-pv}
spec:
  capacity: {storage: 10Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local-wffc
  local: {path: /data}
  nodeAffinity:
    required:
      nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [storage-node]}]}]
""",
        """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: local-claim, namespace: default}
spec: {storageClassName: local-wffc, accessModes: [ReadWriteOnce], resources: {requests: {storage: 5Gi}}}
""",
        pod_yaml("with-volume", extra="volumes: [{name: d, persistentVolumeClaim: {claimName: local-claim}}]"),
    )
    assert wait_for(lambda: pod_json(kctl, "with-volume")["spec"].get("nodeName")) == "storage-node"
    # PreBind did what the volume binder and the PV controller do in a cluster: both sides Bound.
    pvc = json.loads(kctl("get", "pvc", "local-claim", "-o", "json").stdout)
    assert pvc["spec"]["volumeName"] == "local-pv" and pvc["status"]["phase"] == "Bound"
    assert pvc["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    pv = json.loads(kctl("get", "pv", "local-pv", "-o", "json").stdout)
    assert pv["spec"]["claimRef"]["name"] == "local-claim" and pv["status"]["phase"] == "Bound"
    # A second claim cannot take the same volume: its pod stays pending.
    apply(
        kctl,
        """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: local-claim-2, namespace: default}
spec: {storageClassName: local-wffc, accessModes: [ReadWriteOnce], resources: {requests: {storage: 5Gi}}}
""",
        pod_yaml("with-volume-2", extra="volumes: [{name: d, persistentVolumeClaim: {claimName: local-claim-2}}]"),
    )
    cond = wait_for(
        lambda: next(
            (c for c in pod_json(kctl, "with-volume-2")["status"].get("conditions") or [] if c["status"] == "False"),
            None,
        )
    )
    assert "didn't find available persistent volumes to bind" in cond["message"]


def test_dynamically_provisioned_claim_gets_a_volume_on_the_chosen_node(kctl: KubectlRunner) -> None:
    apply(
        kctl,
        """
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: csi.example.com
volumeBindingMode: WaitForFirstConsumer
""",
        """
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: dyn-claim, namespace: default}
spec: {storageClassName: fast, accessModes: [ReadWriteOnce], resources: {requests: {storage: 3Gi}}}
""",
        pod_yaml("with-dyn", extra="volumes: [{name: d, persistentVolumeClaim: {claimName: dyn-claim}}]"),
    )
    node = wait_for(lambda: pod_json(kctl, "with-dyn")["spec"].get("nodeName"))
    pvc = json.loads(kctl("get", "pvc", "dyn-claim", "-o", "json").stdout)
    assert pvc["status"]["phase"] == "Bound"
    assert pvc["metadata"]["annotations"]["volume.kubernetes.io/selected-node"] == node
    pv = json.loads(kctl("get", "pv", pvc["spec"]["volumeName"], "-o", "json").stdout)
    assert pv["spec"]["capacity"]["storage"] == "3Gi" and pv["spec"]["storageClassName"] == "fast"
    assert pv["spec"]["claimRef"]["name"] == "dyn-claim"
    terms = pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert terms[0]["matchExpressions"][0]["values"] == [node]


def test_a_pending_pod_being_deleted_is_skipped_not_scheduled(kctl: KubectlRunner) -> None:
    """skipPodSchedule: a finalizer holds a deleted pending pod; when a node it fits comes, it is not bound."""
    held = pod_yaml("held", cpu="40").replace("namespace: default}", "namespace: default, finalizers: [kss.test/hold]}")
    apply(kctl, held)
    wait_for(lambda: any(c.get("reason") == "Unschedulable" for c in pod_json(kctl, "held")["status"]["conditions"]))
    kctl("delete", "pod", "held", "--wait=false")
    assert pod_json(kctl, "held")["metadata"]["deletionTimestamp"]
    apply(kctl, node_yaml("huge", cpu="64"))
    wait_for(
        lambda: (
            "skip schedule deleting pod: default/held"
            in kctl("get", "events", "--field-selector", "involvedObject.name=held", "-o", "json").stdout
        ),
        timeout=20,
    )
    assert not pod_json(kctl, "held")["spec"].get("nodeName")
    kctl("patch", "pod", "held", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')

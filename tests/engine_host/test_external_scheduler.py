"""Another scheduler binding pods through ``kss serve``: its bindings recorded as attempts (binder, node, Events,
conditions, its kube-scheduler-simulator result annotations in the matrices) and, with ``--shadow``, judged by kss's
own scheduler. The "external scheduler" is written here against the official Python client, as a debuggable
scheduler behaves: it binds, posts its Scheduled Event, then writes its result annotations onto the pod."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from kubernetes import client as k8s
from kubernetes import config as k8s_config

from tests.conftest import Server, start_server

PREFIX = "kube-scheduler-simulator.sigs.k8s.io/"
EXTERNAL = "external-scheduler"
# cpu per node: kss's default profile (least allocated, balanced) prefers the biggest node for these pods.
NODES = {"n-big": "16", "n-mid": "8", "n-small": "4"}


@pytest.fixture(scope="module")
def shadow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    srv = start_shadow_server(tmp_path_factory)
    yield srv
    srv.stop()


def start_shadow_server(tmp_path_factory: pytest.TempPathFactory) -> Server:
    """kss serve with its scheduler off (another binds) and the shadow on."""
    workdir = tmp_path_factory.mktemp("kss-external")
    return start_server(
        workdir,
        f"sqlite:///{workdir / 'kss.db'}",
        env={"KSS_SCHEDULER_ENABLED": "false", "KSS_SHADOW": "true", "KSS_KUBELET": "false"},
    )


@pytest.fixture(scope="module")
def core(shadow_server: Server) -> k8s.CoreV1Api:
    return with_nodes(shadow_server)


def with_nodes(server: Server) -> k8s.CoreV1Api:
    """A client of ``server``, whose nodes it creates."""
    api = k8s.CoreV1Api(k8s_config.new_client_from_config(config_file=str(server.kubeconfig)))
    for name, cpu in NODES.items():
        api.create_node(
            k8s.V1Node(
                metadata=k8s.V1ObjectMeta(name=name, labels={"kubernetes.io/hostname": name}),
                status=k8s.V1NodeStatus(capacity={"cpu": cpu, "memory": "32Gi", "pods": "110"}),
            )
        )
    return api


def create_pod(core: k8s.CoreV1Api, name: str) -> None:
    core.create_namespaced_pod(
        "default",
        k8s.V1Pod(
            metadata=k8s.V1ObjectMeta(name=name),
            spec=k8s.V1PodSpec(
                scheduler_name=EXTERNAL,
                containers=[
                    k8s.V1Container(
                        name="c",
                        image="nginx",
                        resources=k8s.V1ResourceRequirements(requests={"cpu": "1", "memory": "1Gi"}),
                    )
                ],
            ),
        ),
    )


def bind_as_external(
    core: k8s.CoreV1Api,
    name: str,
    node: str,
    annotations: dict[str, str] | None,
    *,
    field_manager: str | None = EXTERNAL,
    binding_client: k8s.CoreV1Api | None = None,
) -> None:
    """The external scheduler's binding cycle: the Binding (with ``field_manager``, through ``binding_client``),
    its Scheduled Event, then (a debuggable scheduler's store reflector) the result annotations in an update of
    their own."""
    pod = core.read_namespaced_pod(name, "default")
    assert pod.spec.node_name is None
    binding = k8s.V1Binding(metadata=k8s.V1ObjectMeta(name=name), target=k8s.V1ObjectReference(kind="Node", name=node))
    options = {"field_manager": field_manager} if field_manager else {}
    # The client cannot deserialize the Status a binding answers with: read the raw answer.
    (binding_client or core).create_namespaced_pod_binding(name, "default", binding, _preload_content=False, **options)
    core.create_namespaced_event(
        "default",
        k8s.CoreV1Event(
            metadata=k8s.V1ObjectMeta(generate_name=f"{name}."),
            involved_object=k8s.V1ObjectReference(kind="Pod", namespace="default", name=name, uid=pod.metadata.uid),
            reason="Scheduled",
            message=f"Successfully assigned default/{name} to {node}",
            type="Normal",
            source=k8s.V1EventSource(component=EXTERNAL),
            reporting_component=EXTERNAL,
            reporting_instance=f"{EXTERNAL}-0",
        ),
    )
    if annotations is not None:
        core.patch_namespaced_pod(name, "default", {"metadata": {"annotations": annotations}})


def debuggable_annotations(node: str, *, worst: str) -> dict[str, str]:
    """What a debuggable scheduler writes: every plugin's verdict and score per node, as annotations.py shapes them."""
    filters = {n: {"NodeResourcesFit": "passed", "TaintToleration": "passed"} for n in NODES}
    filters[worst]["NodeResourcesFit"] = "Insufficient cpu"
    scored = [n for n in NODES if n != worst]
    score = {n: {"NodeResourcesFit": str(40 + 10 * i), "TaintToleration": "0"} for i, n in enumerate(scored)}
    final = {n: {"NodeResourcesFit": str(40 + 10 * i), "TaintToleration": "300"} for i, n in enumerate(scored)}
    return {
        PREFIX + "filter-result": json.dumps(filters),
        PREFIX + "score-result": json.dumps(score),
        PREFIX + "finalscore-result": json.dumps(final),
        PREFIX + "prefilter-result-status": json.dumps({"NodeResourcesFit": "success"}),
        PREFIX + "prescore-result": json.dumps({"NodeResourcesFit": "success"}),
        PREFIX + "reserve-result": json.dumps({"VolumeBinding": "success"}),
        PREFIX + "permit-result": json.dumps({}),
        PREFIX + "prebind-result": json.dumps({"VolumeBinding": "success"}),
        PREFIX + "bind-result": json.dumps({"DefaultBinder": "success"}),
        PREFIX + "selected-node": node,
    }


def recorded(server: Server, name: str, timeout: float = 30.0) -> dict[str, Any]:
    """The pod's newest recorded attempt in full, once recorded (bindings are recorded a moment after)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        listed = httpx.get(f"{server.url}/simulator/v1/namespaces/default/pods/{name}/results", timeout=10).json()
        attempts = listed.get("attempts") or []
        if attempts:
            number = attempts[0]["attempt"]
            answer = httpx.get(f"{server.url}/simulator/v1/namespaces/default/pods/{name}/results/{number}", timeout=10)
            assert answer.status_code == 200, answer.text
            detail: dict[str, Any] = answer.json()
            return detail
        time.sleep(0.2)
    raise AssertionError(f"no attempt recorded for {name}")


def test_binding_with_annotations_is_recorded_with_its_matrices_and_agreement(
    shadow_server: Server, core: k8s.CoreV1Api
) -> None:
    create_pod(core, "agreed")
    bind_as_external(core, "agreed", "n-big", debuggable_annotations("n-big", worst="n-small"))
    detail = recorded(shadow_server, "agreed")
    assert detail["result"] == "scheduled"
    assert detail["boundTo"] == "n-big"
    assert detail["boundBy"] == "external"
    assert detail["scheduledBy"] == EXTERNAL
    assert detail["profile"] == EXTERNAL
    external = detail["external"]
    assert external["binder"] == EXTERNAL
    assert external["warnings"] == []
    assert external["secondsToBind"] is not None and external["secondsToBind"] >= 0
    assert any(e["reason"] == "Scheduled" and e["reportingController"] == EXTERNAL for e in external["events"])
    assert any(c["type"] == "PodScheduled" and c["status"] == "True" for c in external["conditions"])
    # The external scheduler's verdicts and scores, in the same matrix kss's own attempts have.
    rows = {r["node"]: r for r in detail["matrix"]["rows"]}
    assert rows["n-small"]["filter"]["NodeResourcesFit"] == "Insufficient cpu"
    assert rows["n-small"]["stoppedAt"] == "NodeResourcesFit"
    assert rows["n-big"]["filter"] == {"NodeResourcesFit": "passed", "TaintToleration": "passed"}
    assert rows["n-big"]["score"] == {"NodeResourcesFit": 40, "TaintToleration": 0}
    assert rows["n-big"]["finalScore"] == {"NodeResourcesFit": 40, "TaintToleration": 300}
    assert rows["n-big"]["total"] == 340 and rows["n-mid"]["total"] == 350
    assert detail["feasibleNodes"] == 2
    assert detail["rejections"] == {"NodeResourcesFit": {"Insufficient cpu": 1}}
    assert detail["bind"] == {"DefaultBinder": "success"}
    assert detail["reserve"] == {"VolumeBinding": "success"}
    # kss's own scheduler would have chosen the biggest node too.
    shadow = detail["shadow"]
    assert shadow["node"] == "n-big" and shadow["agrees"] is True
    assert detail["shadowAgrees"] is True


def test_binding_to_the_worst_node_is_a_disagreement_with_the_rows_that_explain_it(
    shadow_server: Server, core: k8s.CoreV1Api
) -> None:
    create_pod(core, "forced")
    bind_as_external(core, "forced", "n-small", None)  # no annotations: the binding alone is recorded
    detail = recorded(shadow_server, "forced")
    assert detail["boundTo"] == "n-small" and detail["scheduledBy"] == EXTERNAL
    assert detail["external"]["annotations"] == []
    assert detail["matrix"]["rows"] == []
    shadow = detail["shadow"]
    assert shadow["agrees"] is False and detail["shadowAgrees"] is False
    assert shadow["node"] == "n-big"
    assert shadow["result"] == "scheduled"
    assert set(shadow["rows"]) == {"n-small", "n-big"}
    assert shadow["rows"]["n-big"]["total"] > shadow["rows"]["n-small"]["total"]
    assert shadow["rows"]["n-small"]["stoppedAt"] is None  # it fit, it scored lower
    # The Shadow page lists the difference, not the agreement; /metrics counts both.
    page = httpx.get(f"{shadow_server.url}/ui/shadow", timeout=10).text
    assert "default/forced" in page and "default/agreed" not in page
    everything = httpx.get(f"{shadow_server.url}/ui/shadow?all=1", timeout=10).text
    assert "default/forced" in everything and "default/agreed" in everything
    metrics = httpx.get(f"{shadow_server.url}/metrics", timeout=10).text
    assert 'kss_shadow_judgements_total{verdict="differ"} 1.0' in metrics
    assert 'kss_shadow_judgements_total{verdict="agree"} 1.0' in metrics


def test_annotations_of_the_wrong_shape_are_a_warning_on_the_attempt(
    shadow_server: Server, core: k8s.CoreV1Api
) -> None:
    create_pod(core, "garbled")
    annotations = debuggable_annotations("n-mid", worst="n-small")
    annotations[PREFIX + "filter-result"] = "{not json"
    annotations[PREFIX + "score-result"] = json.dumps({"n-mid": {"NodeResourcesFit": "high"}})
    bind_as_external(core, "garbled", "n-mid", annotations)
    detail = recorded(shadow_server, "garbled")
    warnings = detail["external"]["warnings"]
    assert len(warnings) == 2
    assert any(PREFIX + "filter-result" in w and "not JSON" in w for w in warnings)
    assert any(PREFIX + "score-result" in w and "'high' is not an integer" in w for w in warnings)
    # The rest of the record stands: the final scores and the other extension points.
    rows = {r["node"]: r for r in detail["matrix"]["rows"]}
    assert rows["n-mid"]["finalScore"] == {"NodeResourcesFit": 50, "TaintToleration": 300}
    assert detail["bind"] == {"DefaultBinder": "success"}
    assert detail["boundTo"] == "n-mid"
    # The pod page shows the warning and the judgement.
    page = httpx.get(f"{shadow_server.url}/ui/pods/default/garbled", timeout=10).text
    assert 'data-testid="external-warning"' in page and "not an integer" in page
    assert 'data-testid="shadow-verdict"' in page


def test_the_binder_is_the_bindings_field_manager_before_the_scheduled_events_controller(
    shadow_server: Server, core: k8s.CoreV1Api
) -> None:
    # A real kube-scheduler sends no fieldManager: its Binding's manager is its User-Agent's prefix, as
    # kube-apiserver names the manager of a write; the Scheduled Event (reporting EXTERNAL here) comes second.
    client = k8s_config.new_client_from_config(config_file=str(shadow_server.kubeconfig))
    client.user_agent = "kube-scheduler/v1.35.4 (linux/amd64) kubernetes/6c1cd99/scheduler"
    create_pod(core, "by-agent")
    bind_as_external(core, "by-agent", "n-big", None, field_manager=None, binding_client=k8s.CoreV1Api(client))
    create_pod(core, "by-manager")
    bind_as_external(core, "by-manager", "n-big", None, field_manager="gang-binder")
    assert recorded(shadow_server, "by-agent")["external"]["binder"] == "kube-scheduler"
    detail = recorded(shadow_server, "by-manager")
    assert detail["external"]["binder"] == "gang-binder" and detail["scheduledBy"] == "gang-binder"
    assert any(e["reportingController"] == EXTERNAL for e in detail["external"]["events"])

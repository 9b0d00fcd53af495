"""ValidatePodStatusUpdate: each rule broken by a write through ``pods/{name}/status`` as kubectl sends it (merge,
strategic-merge and JSON patches, PUT), answered 422 with kube-apiserver's field paths and messages; the rules that
differ between versions at each version; and the writes the simulator's own components make still pass."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from kss_sim.cluster.admission.validation.pod_status import PodStatusRules, validate_pod_status_update
from kss_sim.cluster.errors import Invalid
from kss_sim.cluster.storage.store import ClusterStore
from tests.cluster.factories import pod

STATUS = "/api/v1/namespaces/default/pods/{}/status"
MERGE = {"content-type": "application/merge-patch+json"}
STRATEGIC = {"content-type": "application/strategic-merge-patch+json"}
JSON_PATCH = {"content-type": "application/json-patch+json"}
NOT_TERMINATED = "Forbidden: may not be transitioned to non-terminated state"


def _causes(response: httpx.Response) -> list[tuple[str, str]]:
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["reason"] == "Invalid" and body["details"]["kind"] == "Pod"
    return [(c["field"], c["message"]) for c in body["details"]["causes"]]


async def _create(client: httpx.AsyncClient, body: dict[str, Any]) -> None:
    created = await client.post("/api/v1/namespaces/default/pods", json=body)
    assert created.status_code == 201, created.text


async def _merge(client: httpx.AsyncClient, name: str, status: dict[str, Any]) -> httpx.Response:
    return await client.patch(STATUS.format(name), content=json.dumps({"status": status}), headers=MERGE)


def _terminated(name: str, exit_code: int) -> dict[str, Any]:
    return {"name": name, "state": {"terminated": {"exitCode": exit_code}}}


def _running(name: str) -> dict[str, Any]:
    return {"name": name, "state": {"running": {}}}


async def test_conditions_nomination_and_generation(client: httpx.AsyncClient) -> None:
    await _create(client, pod("a"))
    bad_type = await _merge(client, "a", {"conditions": [{"type": "bad type!", "status": "True"}]})
    [(field, message)] = _causes(bad_type)
    assert field == "status.conditions[0].Type"
    assert message.startswith('Invalid value: "bad type!": name part must consist of alphanumeric characters')
    negative = {"conditions": [{"type": "Ready", "status": "True", "observedGeneration": -1}]}
    assert _causes(await _merge(client, "a", negative)) == [
        ("status.conditions[0].observedGeneration", "Invalid value: -1: must be a non-negative integer")
    ]
    strategic = await client.patch(
        STATUS.format("a"),
        content=json.dumps({"status": {"nominatedNodeName": "Bad_Name", "observedGeneration": -2}}),
        headers=STRATEGIC,
    )
    causes = _causes(strategic)
    assert [f for f, _ in causes] == ["status.nominatedNodeName", "status.observedGeneration"]
    assert causes[0][1].startswith('Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain')
    assert causes[1][1] == "Invalid value: -2: must be a non-negative integer"
    # A custom condition with a qualified name is a condition like any other.
    fine = await _merge(client, "a", {"conditions": [{"type": "example.com/Warm", "status": "True"}]})
    assert fine.status_code == 200, fine.text


async def test_the_qos_class_is_immutable_and_kept_when_left_out(client: httpx.AsyncClient) -> None:
    await _create(client, pod("q"))
    patch = [{"op": "replace", "path": "/status/qosClass", "value": "Guaranteed"}]
    replaced = await client.patch(STATUS.format("q"), content=json.dumps(patch), headers=JSON_PATCH)
    assert _causes(replaced) == [("status.qosClass", 'Invalid value: "Guaranteed": field is immutable')]
    current = (await client.get(STATUS.format("q"))).json()
    current["status"] = {"phase": "Pending"}  # an old kubelet's write: no qosClass
    put = await client.put(STATUS.format("q"), json=current)
    assert put.status_code == 200, put.text
    assert put.json()["status"]["qosClass"] == "BestEffort"


async def test_pod_and_host_addresses(client: httpx.AsyncClient) -> None:
    await _create(client, pod("ip"))
    one_family = await _merge(client, "ip", {"podIPs": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]})
    assert _causes(one_family) == [
        (
            "status.podIPs",
            'Invalid value: [{"ip":"10.0.0.1"},{"ip":"10.0.0.2"}]: may specify no more than one IP for each IP family',
        )
    ]
    not_an_ip = _causes(await _merge(client, "ip", {"podIPs": [{"ip": "x"}]}))
    assert not_an_ip == [
        ("status.podIPs[0]", 'Invalid value: "x": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)')
    ]
    host = await _merge(client, "ip", {"hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.3"}]})
    assert _causes(host) == [("status.hostIPs[0].ip", 'Invalid value: "10.0.0.3": must be equal to `hostIP`')]
    # Dual stack, and Go's sloppy IPv4 (leading zeros) are accepted.
    dual = {"podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}]}
    assert (await _merge(client, "ip", dual)).status_code == 200
    sloppy = {"hostIP": "010.0.0.1", "hostIPs": [{"ip": "010.0.0.1"}]}
    assert (await _merge(client, "ip", sloppy)).status_code == 200


async def test_a_terminated_container_leaves_terminated_only_when_restarted(client: httpx.AsyncClient) -> None:
    await _create(client, pod("never", restartPolicy="Never"))
    assert (await _merge(client, "never", {"containerStatuses": [_terminated("c", 0)]})).status_code == 200
    back = await _merge(client, "never", {"containerStatuses": [_running("c")]})
    assert _causes(back) == [("status.containerStatuses[0].state", NOT_TERMINATED)]
    # OnFailure restarts a failed container, not a succeeded one.
    await _create(client, pod("onfailure", restartPolicy="OnFailure"))
    await _merge(client, "onfailure", {"containerStatuses": [_terminated("c", 1)]})
    assert (await _merge(client, "onfailure", {"containerStatuses": [_running("c")]})).status_code == 200
    await _merge(client, "onfailure", {"containerStatuses": [_terminated("c", 0)]})
    again = await _merge(client, "onfailure", {"containerStatuses": [_running("c")]})
    assert _causes(again) == [("status.containerStatuses[0].state", NOT_TERMINATED)]
    # Always restarts everything.
    await _create(client, pod("always"))
    await _merge(client, "always", {"containerStatuses": [_terminated("c", 0)]})
    assert (await _merge(client, "always", {"containerStatuses": [_running("c")]})).status_code == 200


async def test_init_sidecar_and_ephemeral_container_states(client: httpx.AsyncClient) -> None:
    init = [
        {"name": "setup", "image": "busybox"},
        {"name": "sidecar", "image": "busybox", "restartPolicy": "Always"},
    ]
    await _create(client, pod("init", restartPolicy="Never", initContainers=init))
    ended = {"initContainerStatuses": [_terminated("setup", 0), _terminated("sidecar", 0)]}
    assert (await _merge(client, "init", ended)).status_code == 200
    sidecar_back = {"initContainerStatuses": [_terminated("setup", 0), _running("sidecar")]}
    assert (await _merge(client, "init", sidecar_back)).status_code == 200
    setup_back = {"initContainerStatuses": [_running("setup"), _running("sidecar")]}
    assert _causes(await _merge(client, "init", setup_back)) == [
        ("status.initContainerStatuses[0].state", NOT_TERMINATED)
    ]
    # An ephemeral container is never restarted, whatever the pod's policy.
    assert (await _merge(client, "init", {"ephemeralContainerStatuses": [_terminated("debug", 0)]})).status_code == 200
    ephemeral_back = await _merge(client, "init", {"ephemeralContainerStatuses": [_running("debug")]})
    assert _causes(ephemeral_back) == [("status.ephemeralContainerStatuses[0].state", NOT_TERMINATED)]


async def test_claims_users_and_allocated_resources(client: httpx.AsyncClient) -> None:
    claims = [{"name": "gpu", "resourceClaimName": "gpu-claim"}]
    body = pod("res", cpu="1", resourceClaims=claims)
    await _create(client, body)
    unknown = {"resourceClaimStatuses": [{"name": "tpu", "resourceClaimName": "x"}, {"name": "tpu"}]}
    no_entry = 'Invalid value: "tpu": must match the name of an entry in `spec.resourceClaims`'
    assert _causes(await _merge(client, "res", unknown)) == [
        ("status.resourceClaimStatuses[0].name", no_entry),
        ("status.resourceClaimStatuses[1].name", no_entry),
        ("status.resourceClaimStatuses[1].name", 'Duplicate value: "tpu"'),
    ]
    user = {"containerStatuses": [{"name": "c", "user": {"linux": {"uid": -1, "gid": 0, "supplementalGroups": [5]}}}]}
    assert _causes(await _merge(client, "res", user)) == [
        ("status.containerStatuses[0].user.linux.uid", "Invalid value: -1: must be between 0 and 2147483647, inclusive")
    ]
    allocated = {
        "containerStatuses": [
            {
                "name": "c",
                "allocatedResourcesStatus": [
                    {"name": "memory", "resources": [{"resourceID": "r", "health": "Healthy"}]},
                    {"name": "cpu", "resources": [{"resourceID": "r", "health": "Fine"}, {"resourceID": "r"}]},
                ],
            }
        ],
        "ephemeralContainerStatuses": [{"name": "debug", "allocatedResourcesStatus": [{"name": "cpu"}]}],
    }
    p = "status.containerStatuses[0].allocatedResourcesStatus"
    supported = 'supported values: "Healthy", "Unhealthy", "Unknown"'
    assert _causes(await _merge(client, "res", allocated)) == [
        (f"{p}[0].name", 'Invalid value: "memory": must match one of the container\'s resource requests'),
        (f"{p}[1].resources[0].health", f'Unsupported value: "Fine": {supported}'),
        (f"{p}[1].resources[1].health", f'Unsupported value: "": {supported}'),
        (f"{p}[1].resources[1].resourceID", 'Duplicate value: "r"'),
        (
            "status.ephemeralContainerStatuses[0].allocatedResourcesStatus",
            "Forbidden: must not be specified in container status",
        ),
    ]
    extended = {"extendedResourceClaimStatus": {"requestMappings": [], "resourceClaimName": ""}}
    p = "status.extendedResourceClaimStatus"
    assert _causes(await _merge(client, "res", extended)) == [
        (f"{p}.requestMappings", "Required value: at least one request mapping is required"),
        (f"{p}.resourceClaimName", "Required value"),
    ]


async def test_a_refused_status_write_stores_nothing(client: httpx.AsyncClient) -> None:
    await _create(client, pod("kept"))
    before = (await client.get(STATUS.format("kept"))).json()
    assert (await _merge(client, "kept", {"phase": "Running", "observedGeneration": -1})).status_code == 422
    after = (await client.get(STATUS.format("kept"))).json()
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["status"] == before["status"]


# ------------------------------------------------------------------------------------------ by version


def _store(version: str) -> ClusterStore:
    store = ClusterStore(None, kube_version=version)
    store.create("Node", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"}})
    return store


def _status_causes(store: ClusterStore, name: str, status: dict[str, Any]) -> list[tuple[str, str]]:
    try:
        store.patch("Pod", "default", name, {"status": status}, "merge", subresource="status")
    except Invalid as refused:
        return [(c["field"], c["message"]) for c in refused.to_status()["details"]["causes"]]
    return []


@pytest.mark.parametrize(("version", "refused"), [("1.33", False), ("1.34", False), ("1.35", True), ("1.36", True)])
def test_a_bound_pod_takes_no_new_nomination_once_binding_clears_it(version: str, refused: bool) -> None:
    store = _store(version)
    store.create("Pod", pod("b"), namespace="default")
    store.bind_pod("default", "b", "n1")
    causes = _status_causes(store, "b", {"nominatedNodeName": "n2"})
    expected = [("status.nominatedNodeName", "Forbidden: may not be set on pods that are already bound to a node")]
    assert causes == (expected if refused else [])


@pytest.mark.parametrize(("version", "by_rules"), [("1.34", False), ("1.35", True), ("1.36", True)])
def test_restart_rules_decide_from_v1_35(version: str, by_rules: bool) -> None:
    """ContainerRestartRules (on from v1.35): a container whose rule restarts on exit code 42 may leave Terminated
    in a Never pod; at v1.34 (the gate off), the pod's policy alone decides."""
    store = _store(version)
    rule = {"action": "Restart", "exitCodes": {"operator": "In", "values": [42]}}
    container = {"name": "c", "image": "busybox", "restartPolicy": "Never", "restartPolicyRules": [rule]}
    body = pod("r", restartPolicy="Never")
    body["spec"]["containers"] = [container]
    store.create("Pod", body, namespace="default")
    assert _status_causes(store, "r", {"containerStatuses": [_terminated("c", 42)]}) == []
    causes = _status_causes(store, "r", {"containerStatuses": [_running("c")]})
    assert causes == ([] if by_rules else [("status.containerStatuses[0].state", NOT_TERMINATED)])
    if by_rules:  # another exit code falls back to the container's own policy: Never
        assert _status_causes(store, "r", {"containerStatuses": [_terminated("c", 1)]}) == []
        back = _status_causes(store, "r", {"containerStatuses": [_running("c")]})
        assert back == [("status.containerStatuses[0].state", NOT_TERMINATED)]


def test_the_mirror_pod_and_apparmor_annotations_may_not_change() -> None:
    rules = PodStatusRules.of(35, clearing_nominated=True)
    old = pod("m")
    old["metadata"].update(namespace="default", annotations={"kubernetes.io/config.mirror": "x"})
    new = json.loads(json.dumps(old))
    new["metadata"]["annotations"] = {"container.apparmor.security.beta.kubernetes.io/c": "runtime/default"}
    mirror = "metadata.annotations[kubernetes.io/config.mirror]"
    apparmor = "metadata.annotations[container.apparmor.security.beta.kubernetes.io/c]"
    assert [(c.field, c.message) for c in validate_pod_status_update(new, old, rules)] == [
        (mirror, "Forbidden: may not remove or update mirror pod annotation"),
        (apparmor, "Forbidden: may not add AppArmor annotations"),
    ]


def test_a_pod_stored_before_types_were_checked_is_judged_without_raising() -> None:
    """A database older than the typed decoder may hold any shape: the rules read what they can."""
    rules = PodStatusRules.of(35, clearing_nominated=True)
    old = {"metadata": {"name": "o", "namespace": "default", "annotations": "x"}, "spec": "y", "status": "z"}
    rule = {"action": "Restart", "exitCodes": {"operator": "In", "values": "42"}}
    new = {
        "metadata": {"name": "o", "namespace": "default"},
        "spec": {"os": "linux", "containers": [{"name": "c", "restartPolicy": "Never", "restartPolicyRules": [rule]}]},
        "status": {"containerStatuses": [_running("c")], "qosClass": "BestEffort"},
    }
    old_terminated = {**old, "spec": new["spec"], "status": {"containerStatuses": [_terminated("c", 42)]}}
    assert [c.field for c in validate_pod_status_update(new, old, rules)] == ["status.qosClass"]
    assert [c.field for c in validate_pod_status_update(new, old_terminated, rules)] == [
        "status.qosClass",
        "status.containerStatuses[0].state",
    ]


@pytest.mark.parametrize("version", ["1.35", "1.36"])
def test_v1_36_moves_the_claim_name_error_and_checks_health_messages(version: str) -> None:
    store = _store(version)
    body = pod("h", cpu="1", resourceClaims=[{"name": "gpu", "resourceClaimName": "gpu-claim"}])
    store.create("Pod", body, namespace="default")
    claim = {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "Bad_Claim"}]}
    [(field, message)] = _status_causes(store, "h", claim)
    assert field == ("status.resourceClaimStatuses[0]." + ("resourceClaimName" if version == "1.36" else "name"))
    assert message.startswith('Invalid value: "Bad_Claim": a lowercase RFC 1123 subdomain')
    resources = [
        {"resourceID": "a", "health": "Healthy", "message": ""},
        {"resourceID": "b", "health": "Unknown", "message": "x" * 1025},
    ]
    health = {
        "containerStatuses": [{"name": "c", "allocatedResourcesStatus": [{"name": "cpu", "resources": resources}]}]
    }
    p = "status.containerStatuses[0].allocatedResourcesStatus[0].resources"
    expected = [
        (f"{p}[0].message", "Required value: must be non-empty if specified"),
        (f"{p}[1].message", "Too long: may not be more than 1024 bytes"),
    ]
    assert _status_causes(store, "h", health) == (expected if version == "1.36" else [])

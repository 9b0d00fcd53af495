"""events.k8s.io/v1 Events with real clients against ``kss serve``: the official Python client's EventsV1Api
(create, list, watch, patch) seeing core/v1 Events and CoreV1Api seeing its, and the real kubectl's
``kubectl get events.v1.events.k8s.io`` and ``kubectl events`` over the same stored Events."""

from __future__ import annotations

import datetime
import json
import os
from collections.abc import Iterator

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from tests.conftest import KUBECTL, KubectlRunner, Server

NAMESPACE = "ev1-clients"


@pytest.fixture(scope="module")
def api_client(server: Server) -> Iterator[client.ApiClient]:
    api = config.new_client_from_config(str(server.kubeconfig))
    client.CoreV1Api(api).create_namespace({"metadata": {"name": NAMESPACE}})
    yield api
    api.close()


def _new_style(name: str) -> client.EventsV1Event:
    return client.EventsV1Event(
        metadata=client.V1ObjectMeta(name=name, namespace=NAMESPACE),
        event_time=datetime.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=datetime.UTC),
        reporting_controller="example.com/gang-plugin",
        reporting_instance="gang-plugin-0",
        action="Scheduling",
        reason="Waiting",
        note="waiting for 2 more members",
        type="Normal",
        regarding=client.V1ObjectReference(kind="Pod", namespace=NAMESPACE, name="worker-0", api_version="v1"),
    )


def test_events_v1_api_and_core_v1_api_see_each_others_events(api_client: client.ApiClient) -> None:
    events = client.EventsV1Api(api_client)
    core = client.CoreV1Api(api_client)
    start = events.list_namespaced_event(NAMESPACE).metadata.resource_version

    created = events.create_namespaced_event(NAMESPACE, _new_style("from-events-api"))
    assert created.regarding.name == "worker-0" and created.note == "waiting for 2 more members"
    assert created.event_time == datetime.datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=datetime.UTC)
    as_core = core.read_namespaced_event("from-events-api", NAMESPACE)
    assert as_core.involved_object.name == "worker-0" and as_core.message == "waiting for 2 more members"
    assert as_core.reporting_component == "example.com/gang-plugin" and as_core.action == "Scheduling"

    # The client's EventsV1Event refuses an eventTime of null (as a core Event without one reads on any cluster),
    # so this core/v1 Event has one, and the reporting fields kube-apiserver then asks for. Its microseconds are not
    # zero: the client re-serializes the time (isoformat drops ".000000"), which kube-apiserver's MicroTime refuses.
    core.create_namespaced_event(
        NAMESPACE,
        {
            "metadata": {"name": "from-core-api"},
            "eventTime": "2026-01-02T03:04:06.250000Z",
            "reportingComponent": "kubelet",
            "reportingInstance": "n1",
            "action": "Pulling",
            "involvedObject": {"kind": "Pod", "namespace": NAMESPACE, "name": "worker-1"},
            "reason": "Pulled",
            "message": "image pulled",
            "type": "Normal",
            "source": {"component": "kubelet", "host": "n1"},
            "count": 2,
        },
    )
    listed = {e.metadata.name: e for e in events.list_namespaced_event(NAMESPACE).items}
    assert set(listed) == {"from-events-api", "from-core-api"}
    old_style = listed["from-core-api"]
    assert old_style.regarding.name == "worker-1" and old_style.note == "image pulled"
    assert old_style.deprecated_source.component == "kubelet" and old_style.deprecated_count == 2

    stream = watch.Watch().stream(events.list_namespaced_event, NAMESPACE, resource_version=start, timeout_seconds=1)
    seen = [(e["type"], e["object"].metadata.name, type(e["object"]).__name__) for e in stream]
    assert ("ADDED", "from-events-api", "EventsV1Event") in seen
    assert ("ADDED", "from-core-api", "EventsV1Event") in seen

    # client-go's events recorder marks a repeat with a series patch; core/v1 readers see it too.
    patched = events.patch_namespaced_event(
        "from-events-api",
        NAMESPACE,
        {"series": {"count": 2, "lastObservedTime": "2026-01-02T03:05:00.500000Z"}},
    )
    assert patched.series.count == 2
    assert core.read_namespaced_event("from-events-api", NAMESPACE).series.count == 2


def test_a_new_style_event_without_its_required_fields_is_refused(api_client: client.ApiClient) -> None:
    events = client.EventsV1Api(api_client)
    bad = _new_style("incomplete")
    bad.action = None
    bad.reporting_controller = None
    with pytest.raises(ApiException) as refused:
        events.create_namespaced_event(NAMESPACE, bad)
    assert refused.value.status == 422
    status = json.loads(refused.value.body)
    # IsQualifiedName("") adds its two messages to the Required one, as upstream's does.
    assert status["message"].startswith(
        'Event.events.k8s.io "incomplete" is invalid: [reportingController: Required value, '
        'reportingController: Invalid value: "": name part must be non-empty, '
    )
    assert status["message"].endswith(", action: Required value]")
    with pytest.raises(ApiException) as missing:
        client.CoreV1Api(api_client).read_namespaced_event("incomplete", NAMESPACE)
    assert missing.value.status == 404


@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")
def test_kubectl_reads_the_same_events_in_both_forms(api_client: client.ApiClient, kubectl: KubectlRunner) -> None:
    client.EventsV1Api(api_client).create_namespaced_event(NAMESPACE, _new_style("for-kubectl"))
    table = kubectl("get", "events.v1.events.k8s.io", "-n", NAMESPACE).stdout
    assert table.split("\n")[0].split() == ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert "pod/worker-0" in table and "waiting for 2 more members" in table
    as_json = json.loads(kubectl("get", "events.v1.events.k8s.io", "for-kubectl", "-n", NAMESPACE, "-o", "json").stdout)
    assert as_json["apiVersion"] == "events.k8s.io/v1" and as_json["regarding"]["name"] == "worker-0"
    resources = kubectl("api-resources", "--api-group", "events.k8s.io").stdout
    assert resources.split("\n")[1].split() == ["events", "ev", "events.k8s.io/v1", "true", "Event"]
    explained = kubectl("explain", "events", "--api-version=events.k8s.io/v1").stdout
    assert "GROUP:      events.k8s.io" in explained and "regarding" in explained and "involvedObject" not in explained
    # The plain resource name stays core/v1's, as kubectl prefers the legacy group.
    plain = json.loads(kubectl("get", "events", "for-kubectl", "-n", NAMESPACE, "-o", "json").stdout)
    assert plain["apiVersion"] == "v1" and plain["involvedObject"]["name"] == "worker-0"
    listed = kubectl("events", "-n", NAMESPACE).stdout
    assert "Waiting" in listed and "Pod/worker-0" in listed and "waiting for 2 more members" in listed

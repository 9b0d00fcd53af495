"""Formats decoded as kube-apiserver decodes them, per version: times (``time.Parse``), quantities
(``ParseQuantity``), int-or-strings, base64 bytes, int32/int64 ranges and nulls; the messages are Go's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from kss_sim.cluster.admission import go_values
from kss_sim.cluster.admission.decode_types import check_types, schema
from kss_sim.cluster.errors import BadRequest
from kss_sim.config import Settings
from kss_sim.main import create_app
from tests.cluster.factories import node, pod
from tests.conftest import asgi_client

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"
TIME_LAYOUT = '"2006-01-02T15:04:05Z07:00"'
QUANTITY_FORMAT = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


def _cannot_handle(kind: str, message: str) -> str:
    return f'{kind} in version "v1" cannot be handled as a {kind}: {message}'


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("2024-05-01T10:00:00Z", None),
        ("2024-05-01T10:00:00.123456789+02:00", None),  # a fraction the layout lacks is read all the same
        ("2024-05-01T9:00:00Z", None),  # the hour takes one digit (Go's stdHour)
        ("not-a-time", f'parsing time "not-a-time" as {TIME_LAYOUT}: cannot parse "not-a-time" as "2006"'),
        ("2024-05-01", f'parsing time "2024-05-01" as {TIME_LAYOUT}: cannot parse "" as "T"'),
        ("2024-5-01T10:00:00Z",
         f'parsing time "2024-5-01T10:00:00Z" as {TIME_LAYOUT}: cannot parse "5-01T10:00:00Z" as "01"'),
        ("2024-13-01T10:00:00Z", 'parsing time "2024-13-01T10:00:00Z": month out of range'),
        ("2023-02-29T10:00:00Z", 'parsing time "2023-02-29T10:00:00Z": day out of range'),
        ("2024-02-29T10:00:00Z", None),
        ("2024-05-01T24:00:00Z", 'parsing time "2024-05-01T24:00:00Z": hour out of range'),
        ("2024-05-01T10:00:00Zjunk", 'parsing time "2024-05-01T10:00:00Zjunk": extra text: "junk"'),
        ("2024-05-01T10:00:00+0200",
         f'parsing time "2024-05-01T10:00:00+0200" as {TIME_LAYOUT}: cannot parse "+0200" as "Z07:00"'),
        ("é", f'parsing time "\\xc3\\xa9" as {TIME_LAYOUT}: cannot parse "\\xc3\\xa9" as "2006"'),
    ],
)  # fmt: skip
def test_times_parse_as_go_time_parse_with_rfc3339(text: str, error: str | None) -> None:
    assert go_values.time_error(text) == error


def test_micro_times_need_their_six_digits() -> None:
    assert go_values.time_error("2024-05-01T10:00:00.000000Z", go_values.RFC3339_MICRO) is None
    assert go_values.time_error("2024-05-01T10:00:00Z", go_values.RFC3339_MICRO) == (
        'parsing time "2024-05-01T10:00:00Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse "Z" as ".000000"'
    )


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("aGVsbG8=", None),
        ("aGVs\nbG8=", None),  # line breaks are skipped
        ("", None),
        ("aGVsbG8", "illegal base64 data at input byte 4"),  # the last group is not whole
        ("a!Vs", "illegal base64 data at input byte 1"),
        ("=aGV", "illegal base64 data at input byte 0"),
        ("aGVsbA=", "illegal base64 data at input byte 7"),
        ("aGVsbA=x", "illegal base64 data at input byte 6"),
        ("aGVsbA==aGVs", "illegal base64 data at input byte 8"),
    ],
)
def test_bytes_decode_as_standard_base64(value: str, error: str | None) -> None:
    assert go_values.base64_error(value) == error


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("1e1000", None),
        (" 1", None),
        ("1 ", None),
        (5, None),
        (0.5, None),
        ("abc", QUANTITY_FORMAT),
        ("", QUANTITY_FORMAT),
        (True, QUANTITY_FORMAT),
        ([1], QUANTITY_FORMAT),
        ("1e99999999999999999999", "unable to parse quantity's suffix"),
    ],
)
def test_quantities_parse_as_parse_quantity(value: Any, error: str | None) -> None:
    assert go_values.quantity_error(value) == error


@pytest.mark.parametrize(
    ("value", "error"),
    [
        ("25%", None),
        (3, None),
        (2**31 - 1, None),
        (2**31, "json: cannot unmarshal number 2147483648 into Go value of type int32"),
        (1.5, "json: cannot unmarshal number 1.5 into Go value of type int32"),
        (True, "json: cannot unmarshal bool into Go value of type int32"),
        ({}, "json: cannot unmarshal object into Go value of type int32"),
    ],
)
def test_int_or_strings_are_a_string_or_an_int32(value: Any, error: str | None) -> None:
    assert go_values.int_or_string_error(value) == error


def test_nulls_become_what_go_decodes_them_into() -> None:
    body = pod("p")
    body["metadata"].update(labels={"a": None}, finalizers=[None], deletionTimestamp=None)
    body["spec"].update(nodeName=None, tolerations=[None], priority=None)
    check_types("Pod", body, version="v1")
    assert body["metadata"]["labels"] == {"a": ""} and body["metadata"]["finalizers"] == [""]
    assert "deletionTimestamp" not in body["metadata"]
    assert "nodeName" not in body["spec"] and "priority" not in body["spec"]
    assert body["spec"]["tolerations"] == [{}]
    # Fields without omitempty keep their zero value: Go writes it back (a zero metav1.Time as null).
    body = pod("p")
    body["spec"]["containers"][0]["name"] = None
    body["status"] = {"conditions": [{"type": "Ready", "status": None, "lastProbeTime": None}]}
    check_types("Pod", body, version="v1")
    assert body["spec"]["containers"][0]["name"] == ""
    assert body["status"]["conditions"] == [{"type": "Ready", "status": "", "lastProbeTime": None}]


def test_nulls_follow_each_versions_json_tags() -> None:
    # ObjectMeta.creationTimestamp is `json:"creationTimestamp,omitempty"` in v1.33: a zero metav1.Time is written
    # back as null; v1.34 added omitzero, which leaves it out. A nil map with omitempty is left out everywhere.
    for version, kept in [("1.33", True), ("1.34", False), ("1.35", False), ("1.36", False)]:
        body = pod("p")
        body["metadata"].update(creationTimestamp=None)
        body["spec"]["affinity"] = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"topologyKey": "zone", "labelSelector": {"matchLabels": None}}]}}  # fmt: skip
        check_types("Pod", body, version="v1", kube_version=version)
        assert ("creationTimestamp" in body["metadata"]) is kept, version
        assert body["metadata"].get("creationTimestamp") is None
        term = body["spec"]["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
        assert term["labelSelector"] == {}, version


def test_a_struct_that_omitempty_cannot_leave_out_is_its_zero_value() -> None:
    # ServicePort.targetPort is a non-pointer intstr.IntOrString with omitempty: encoding/json writes a struct
    # whatever its omitempty, so a null is the zero IntOrString, 0 (which defaulting then sets to the port).
    body = {"metadata": {"name": "s"}, "spec": {"ports": [{"port": 80, "targetPort": None}]}}
    check_types("Service", body, version="v1")
    assert body["spec"]["ports"] == [{"port": 80, "targetPort": 0}]


async def test_a_template_with_a_null_creation_timestamp_is_stored_per_version(
    client: httpx.AsyncClient, client_133: httpx.AsyncClient
) -> None:
    template = {"metadata": {"labels": {"a": "b"}, "creationTimestamp": None}, "spec": pod()["spec"]}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": template},
    }
    r = await client_133.post(DEPLOYMENTS, json=body)
    assert r.status_code == 201, r.text
    stored = (await client_133.get(f"{DEPLOYMENTS}/d")).json()
    assert stored["spec"]["template"]["metadata"] == {"labels": {"a": "b"}, "creationTimestamp": None}
    r = await client.post(DEPLOYMENTS, json=body)
    assert r.status_code == 201, r.text
    stored = (await client.get(f"{DEPLOYMENTS}/d")).json()
    assert stored["spec"]["template"]["metadata"] == {"labels": {"a": "b"}}


def test_each_version_decodes_with_its_own_schema() -> None:
    # v1.36 added CSIDriverSpec.preventPodSchedulingIfMissing (a bool); every version checks it as a bool (the
    # nearest one that has it), and every version has its own v1.35-and-later fields' types.
    assert schema("1.36").structs["storage.v1.CSIDriverSpec"]["preventPodSchedulingIfMissing"] == "bool"
    assert "hostnameOverride" in schema("1.35").structs["core.v1.PodSpec"]
    body = {"metadata": {"name": "d"}, "spec": {"preventPodSchedulingIfMissing": "yes"}}
    for version in ("1.33", "1.36"):
        with pytest.raises(BadRequest, match=r"CSIDriverSpec\.spec\.preventPodSchedulingIfMissing of type bool"):
            check_types("CSIDriver", body, version="v1", kube_version=version)
    # A kind a version does not have (resource.k8s.io/v1 before v1.34) is checked with the nearest version's.
    assert schema("1.33").roots["ResourceClaim"] == "resource.v1.ResourceClaim"


async def test_creation_timestamp_that_is_not_a_time_is_a_400(client: httpx.AsyncClient) -> None:
    body = pod("bad")
    body["metadata"]["creationTimestamp"] = "not-a-time"
    r = await client.post(PODS, json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _cannot_handle(
        "Pod", f'parsing time "not-a-time" as {TIME_LAYOUT}: cannot parse "not-a-time" as "2006"'
    )
    body["metadata"]["creationTimestamp"] = 5
    r = await client.post(PODS, json=body)
    assert r.json()["message"] == _cannot_handle("Pod", "json: cannot unmarshal number into Go value of type string")
    assert (await client.get(f"{PODS}/bad")).status_code == 404


async def test_quantities_kube_apiserver_takes_are_stored_canonical(client: httpx.AsyncClient) -> None:
    body = node("big", cpu="1e1000")
    assert (await client.post("/api/v1/nodes", json=body)).status_code == 201
    spaced = pod("spaced", cpu=" 1", limits={"cpu": "1 "})
    r = await client.post(PODS, json=spaced)
    assert r.status_code == 201, r.text
    resources = r.json()["spec"]["containers"][0]["resources"]
    assert resources == {"requests": {"cpu": "1"}, "limits": {"cpu": "1"}}
    r = await client.post(PODS, json=pod("bad", cpu="abc"))
    assert r.status_code == 400 and r.json()["message"] == _cannot_handle("Pod", QUANTITY_FORMAT)


async def test_an_int_or_string_beyond_int32_is_a_400(client: httpx.AsyncClient) -> None:
    template = {"metadata": {"labels": {"a": "b"}}, "spec": pod()["spec"]}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {
            "selector": {"matchLabels": {"a": "b"}},
            "template": template,
            "strategy": {"rollingUpdate": {"maxSurge": 1.5}},
        },
    }
    r = await client.post(DEPLOYMENTS, json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _cannot_handle(
        "Deployment", "json: cannot unmarshal number 1.5 into Go value of type int32"
    )
    body["spec"]["strategy"]["rollingUpdate"]["maxSurge"] = "50%"
    assert (await client.post(DEPLOYMENTS, json=body)).status_code == 201


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1e30, "1e+30"),
        (1e20, "100000000000000000000"),
        (2.0**64, "18446744073709552000"),
        (1e21, "1e+21"),
        (100000.0, "100000"),
        (1.5e-7, "1.5e-7"),
        (1e-6, "0.000001"),
        (-2.5, "-2.5"),
        (0.0, "0"),
    ],
)
def test_floats_print_as_encoding_json_writes_them(value: float, text: str) -> None:
    assert go_values.format_float(value) == text


def _deployment(replicas: str, strategy: str = "{}") -> bytes:
    """A Deployment's JSON with ``replicas`` and ``strategy`` written as given (numbers no float can hold)."""
    template = '{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"x"}]}}'
    head = '{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":'
    tail = f',"selector":{{"matchLabels":{{"a":"b"}}}},"template":{template},"strategy":{strategy}}}}}'
    return (head + replicas + tail).encode()


@pytest.mark.parametrize(
    "literal",
    ["99999999999999999999", "18446744073709551616", "-9223372036854775809", "1e30", "1E+30", "1e5", "2.50", "1e1000",
     "-1E+999"],
)  # fmt: skip
async def test_a_number_an_int32_cannot_hold_is_quoted_as_it_was_sent(client: httpx.AsyncClient, literal: str) -> None:
    # encoding/json's literalStore quotes the literal (ParseInt failed), never a float's rendering of it.
    r = await client.post(DEPLOYMENTS, content=_deployment(literal), headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _cannot_handle(
        "Deployment",
        f"json: cannot unmarshal number {literal} into Go struct field DeploymentSpec.spec.replicas of type int32",
    )


async def test_an_int_or_string_beyond_64_bits_is_quoted_as_sent(client: httpx.AsyncClient) -> None:
    body = _deployment("1", '{"rollingUpdate":{"maxSurge":99999999999999999999}}')
    r = await client.post(DEPLOYMENTS, content=body, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _cannot_handle(
        "Deployment", "json: cannot unmarshal number 99999999999999999999 into Go value of type int32"
    )


async def test_a_merge_patch_keeps_the_literal_and_yaml_is_read_as_go_yaml_reads_it(
    client: httpx.AsyncClient,
) -> None:
    assert (await client.post(DEPLOYMENTS, content=_deployment("1"))).status_code == 201
    r = await client.patch(
        f"{DEPLOYMENTS}/d",
        content=b'{"spec":{"replicas":18446744073709551616}}',
        headers={"content-type": "application/merge-patch+json"},
    )
    assert r.status_code == 400, r.text
    assert "cannot unmarshal number 18446744073709551616 into Go struct field" in r.json()["message"]
    # YAML: go-yaml reads an integer beyond uint64 as a float64, which the JSON it becomes writes in full.
    # (Named "big": go-yaml reads a plain ``y`` as true.)
    body = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: big}\nspec: {replicas: 99999999999999999999}\n"
    r = await client.post(DEPLOYMENTS, content=body, headers={"content-type": "application/yaml"})
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _cannot_handle(
        "Deployment",
        "json: cannot unmarshal number 100000000000000000000 into Go struct field DeploymentSpec.spec.replicas of "
        "type int32",
    )


async def test_secret_data_that_is_not_base64_is_a_400(client: httpx.AsyncClient) -> None:
    url = "/api/v1/namespaces/default/secrets"
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"k": "not base64"}}
    r = await client.post(url, json=body)
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _cannot_handle("Secret", "illegal base64 data at input byte 3")
    body["data"] = {"k": 5}
    r = await client.post(url, json=body)
    assert r.json()["message"] == _cannot_handle(
        "Secret", "json: cannot unmarshal number into Go struct field Secret.data of type []uint8"
    )
    body["data"] = {"k": "aGVsbG8="}
    assert (await client.post(url, json=body)).status_code == 201


async def test_a_lease_renew_time_needs_microseconds(client: httpx.AsyncClient) -> None:
    url = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
    body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}}
    body["spec"] = {"holderIdentity": "x", "renewTime": "2024-05-01T10:00:00Z"}
    r = await client.post(url, json=body)
    assert r.status_code == 400, r.text
    assert 'cannot parse "Z" as ".000000"' in r.json()["message"]
    body["spec"]["renewTime"] = "2024-05-01T10:00:00.000000Z"
    assert (await client.post(url, json=body)).status_code == 201


async def test_a_null_scalar_is_stored_as_kube_apiserver_stores_it(client: httpx.AsyncClient) -> None:
    body = pod("p")
    body["metadata"]["labels"] = {"a": None}
    body["spec"].update(nodeName=None, hostNetwork=None, terminationGracePeriodSeconds=None)
    r = await client.post(PODS, json=body)
    assert r.status_code == 201, r.text
    stored = (await client.get(f"{PODS}/p")).json()
    assert stored["metadata"]["labels"] == {"a": ""}
    assert "nodeName" not in stored["spec"] and "hostNetwork" not in stored["spec"]
    assert stored["spec"]["terminationGracePeriodSeconds"] == 30  # absent, so defaulted


@pytest.fixture
async def client_133(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """The API of a kss serving Kubernetes v1.33."""
    settings = Settings(
        database_url=f"sqlite:///{tmp_path / 'kss-v133.db'}",  # beside the default app's kss.db
        kube_version="1.33",
        scheduler_enabled=False,
        controllers=False,
        kubelet=False,
    )
    application = create_app(settings)
    async with application.router.lifespan_context(application), asgi_client(application) as client:
        yield client


async def test_a_field_the_version_lacks_is_unknown_there(
    client: httpx.AsyncClient, client_133: httpx.AsyncClient
) -> None:
    # spec.hostnameOverride came in v1.34: v1.33's kube-apiserver drops it with a warning, or refuses it (Strict).
    body = pod("p", hostnameOverride="h")
    r = await client_133.post(PODS, json=body)
    assert r.status_code == 201, r.text
    assert r.headers["warning"] == '299 - "unknown field \\"spec.hostnameOverride\\""'
    assert "hostnameOverride" not in r.json()["spec"]
    r = await client_133.post(f"{PODS}?fieldValidation=Strict", json=pod("q", hostnameOverride="h"))
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _cannot_handle("Pod", 'strict decoding error: unknown field "spec.hostnameOverride"')
    r = await client.post(PODS, json=body)  # the default version, v1.35, has it
    assert r.status_code == 201 and r.json()["spec"]["hostnameOverride"] == "h" and "warning" not in r.headers


def _json(client: httpx.AsyncClient, url: str, body: str) -> Any:
    return client.post(url, content=body.encode(), headers={"content-type": "application/json"})


async def test_a_number_beyond_float64_is_judged_by_its_fields_type(client: httpx.AsyncClient) -> None:
    # orjson refuses 1e1000 as a syntax error; Go's decoder leaves it to the field: a Quantity parses its text, an
    # int or float field refuses it with the literal, a field the kind lacks drops it.
    container = '{"name":"c","image":"x","resources":{"requests":{"cpu":1e1000},"limits":{"memory":2e999}}}'
    body = '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"q"},"spec":{"containers":[%s],"bogus":-1e1000}}'
    r = await _json(client, PODS + "?fieldValidation=Ignore", body % container)
    assert r.status_code == 201, r.text
    resources = r.json()["spec"]["containers"][0]["resources"]
    strings = await client.post(PODS, json=pod("s", cpu="1e1000", limits={"memory": "2e999"}))
    assert strings.status_code == 201, strings.text
    assert resources == strings.json()["spec"]["containers"][0]["resources"]  # as the same text in a string
    assert "bogus" not in r.json()["spec"]
    body = '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"g"},"spec":{"containers":[%s],%s}}'
    r = await _json(client, PODS, body % ('{"name":"c","image":"x"}', '"terminationGracePeriodSeconds":1e1000'))
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _cannot_handle(
        "Pod", "json: cannot unmarshal number 1e1000 into Go struct field PodSpec.spec.terminationGracePeriodSeconds"
        " of type int64"
    )  # fmt: skip
    # A string field names no literal; an int-or-string quotes it.
    r = await _json(client, PODS, body % ('{"name":1e1000,"image":"x"}', '"hostname":"h"'))
    assert r.status_code == 400
    assert r.json()["message"] == _cannot_handle(
        "Pod", "json: cannot unmarshal number into Go struct field Container.spec.containers.name of type string"
    )
    r = await _json(client, DEPLOYMENTS, _deployment("1", '{"rollingUpdate":{"maxSurge":-1e1000}}').decode())
    assert r.status_code == 400
    assert r.json()["message"] == _cannot_handle(
        "Deployment", "json: cannot unmarshal number -1e1000 into Go value of type int32"
    )
    # Still not JSON: NaN, Infinity, and a syntax error after the big number.
    for broken in ('{"a":1e1000,"b":NaN}', '{"a":1e1000,"b":Infinity}', '{"a":1e1000,', '{"a":1e1000,"b":"\\ud800"}'):
        r = await _json(client, PODS, broken)
        assert r.status_code == 400 and "json parse error" in r.json()["message"], (broken, r.text)
    assert (await client.get(f"{PODS}/g")).status_code == 404


async def test_a_number_beyond_float64_in_a_float_field_or_a_custom_resource_is_a_400(
    client: httpx.AsyncClient,
) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Widget", "plural": "widgets"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": {"type": "object", "properties": {"size": {"type": "string"}}}},
                        }
                    },
                }
            ],
        },
    }
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    text = orjson.dumps(crd).decode().replace('"type":"string"}', '"type":"number","maximum":1e1000}')
    r = await _json(client, crds, text)
    assert r.status_code == 400, r.text
    message = r.json()["message"]
    assert message.startswith('CustomResourceDefinition in version "v1" cannot be handled as a ')
    assert message.endswith("json: cannot unmarshal number 1e1000 into Go struct field JSONSchemaProps.spec.versions."
                            "schema.openAPIV3Schema.properties.properties.maximum of type float64")  # fmt: skip
    assert (await client.post(crds, json=crd)).status_code == 201
    # A custom resource is decoded as unstructured: interface{} values, where convertNumber refuses it anywhere.
    widgets = "/apis/example.com/v1/namespaces/default/widgets"
    widget = '{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":"1","x":[1e1000]}}'
    for _ in range(50):  # the CRD is served once established
        r = await _json(client, widgets, widget)
        if r.status_code != 404:
            break
    assert r.status_code == 400, r.text
    assert r.json()["message"] == _cannot_handle(
        "Widget", "json: cannot unmarshal number 1e1000 into Go value of type float64"
    )


async def test_a_number_beyond_float64_in_a_raw_extension_is_left_to_validation_where_it_parses_the_bytes(
    client: httpx.AsyncClient,
) -> None:
    # A RawExtension keeps the bytes it was sent (no decode error); resource.k8s.io's validateRawExtension then
    # reads them with encoding/json into interface{}, which refuses the number: 422 at the field, not a 400.
    claims = "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
    config = '{"opaque":{"driver":"gpu.example.com","parameters":{"mode":"fast","limit":%s}}}'
    claim = ('{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"c"},"spec":{"devices":'
             '{"requests":[{"name":"r","exactly":{"deviceClassName":"gpu"}}],"config":[%s]}}}')  # fmt: skip
    r = await _json(client, claims, claim % (config % "1e1000"))
    assert r.status_code == 422, r.text
    assert r.json()["message"] == (
        'ResourceClaim.resource.k8s.io "c" is invalid: spec.devices.config[0].opaque.parameters: Invalid value: '
        '"<value omitted>": error parsing data as JSON: json: cannot unmarshal number 1e1000 into Go value of type'
        " float64"
    )
    assert (await _json(client, claims, claim % (config % "1e300"))).status_code == 201
    # ControllerRevision.data, which nothing validates, Go keeps as sent: stored with the number's text
    # (tests/cluster/test_raw_extension_numbers.py reads it back every way).
    revisions = "/apis/apps/v1/namespaces/default/controllerrevisions"
    revision = '{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{"name":"%s"},"revision":1,"data":%s}'
    r = await _json(client, revisions, revision % ("r", '{"spec":{"x":1e1000}}'))
    assert r.status_code == 201, r.text
    assert b'"data":{"spec":{"x":1e1000}}' in r.content
    assert (await _json(client, revisions, revision % ("s", '{"spec":{"x":1e300}}'))).status_code == 201


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        ("application/merge-patch+json", '{"spec":{"replicas":1e1000}}'),
        ("application/strategic-merge-patch+json", '{"spec":{"replicas":1e1000}}'),
        ("application/json-patch+json", '[{"op":"replace","path":"/spec/replicas","value":1e1000}]'),
    ],
)
async def test_a_patch_with_a_number_beyond_float64_is_judged_on_its_result(
    client: httpx.AsyncClient, content_type: str, patch: str
) -> None:
    assert (await client.post(DEPLOYMENTS, content=_deployment("1"))).status_code == 201
    r = await client.patch(f"{DEPLOYMENTS}/d", content=patch.encode(), headers={"content-type": content_type})
    assert r.status_code == 400, r.text
    assert r.json()["message"].endswith(
        "json: cannot unmarshal number 1e1000 into Go struct field DeploymentSpec.spec.replicas of type int32"
    )
    node_patch = patch.replace("/spec/replicas", "/status/allocatable/cpu").replace(
        '{"spec":{"replicas":1e1000}}', '{"status":{"allocatable":{"cpu":1e1000}}}'
    )
    assert (await client.post("/api/v1/nodes", json=node("n1"))).status_code == 201
    r = await client.patch(
        "/api/v1/nodes/n1/status", content=node_patch.encode(), headers={"content-type": content_type}
    )
    assert r.status_code == 200, r.text
    assert r.json()["status"]["allocatable"]["cpu"] == "10e999"  # Quantity.String() of 1e1000, as for "1e1000"


async def test_a_number_beyond_float64_in_another_view_of_a_kind(client: httpx.AsyncClient) -> None:
    # events.k8s.io/v1 is served from core Events: its body is decoded in its own form first.
    body = (
        '{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e"},"eventTime":"2026-01-01T00:00:00.000000Z",'
        '"reportingController":"c","reportingInstance":"i","action":"A","reason":"R","type":"Normal",'
        '"regarding":{"kind":"Pod","name":"p","namespace":"default"},"deprecatedCount":1e1000}'
    )
    r = await _json(client, "/apis/events.k8s.io/v1/namespaces/default/events", body)
    assert r.status_code == 400, r.text
    # kube-apiserver names the field (Event.deprecatedCount of type int32); kss has no decoding schema for this view
    # and refuses the number as a value of interface{} (it would otherwise be stored as null).
    assert r.json()["message"] == (
        'Event in version "v1" cannot be handled as a Event: json: cannot unmarshal number 1e1000 into Go value of '
        "type float64"
    )
    assert (await client.get("/apis/events.k8s.io/v1/namespaces/default/events/e")).status_code == 404

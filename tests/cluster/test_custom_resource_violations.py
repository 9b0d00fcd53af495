"""An invalid custom object is refused with every violation of its schema in one 422, as apiextensions-apiserver
reports them (message ``Kind.group "name" is invalid: [err1, err2, ...]``, one cause each), its ``format``s
checked as kube checks them, and its CEL rules skipped with kube's notice when a violation leaves the object
without its shape; the same through the real kubectl."""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import httpx
import pytest

from tests.conftest import KUBECTL, KubectlRunner

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GADGETS = "/apis/violations.kss.example/v1/namespaces/default/gadgets"

SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["size"],
    "x-kubernetes-validations": [{"rule": "self.size < 10", "message": "size must be below 10"}],
    "properties": {
        "size": {"type": "integer", "minimum": 1},
        "mode": {"type": "string", "enum": ["fast", "slow"]},
        "label": {"type": "string", "maxLength": 3},
        "owner": {"type": "string", "format": "email"},
        "since": {"type": "string", "format": "date-time"},
        "day": {"type": "string", "format": "date"},
        "id": {"type": "string", "format": "uuid"},
        "address": {"type": "string", "format": "ipv4"},
        "address6": {"type": "string", "format": "ipv6"},
        "network": {"type": "string", "format": "cidr"},
        "host": {"type": "string", "format": "hostname"},
        "blob": {"type": "string", "format": "byte"},
        "timeout": {"type": "string", "format": "duration"},
        "book": {"type": "string", "format": "isbn"},
        "card": {"type": "string", "format": "creditcard"},
        # Descriptions only: kube-apiserver does not check these.
        "count32": {"type": "integer", "format": "int32"},
        "secret": {"type": "string", "format": "password"},
        "tags": {"type": "array", "maxItems": 1, "items": {"type": "string", "pattern": "^[a-z]+$"}},
    },
}

GADGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.violations.kss.example"},
    "spec": {
        "group": "violations.kss.example",
        "scope": "Namespaced",
        "names": {"kind": "Gadget", "plural": "gadgets"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": SPEC_SCHEMA}}},
            }
        ],
    },
}

NOT_CHECKED = (
    'Invalid value: "null": some validation rules were not checked because the object was invalid; correct the '
    "existing errors to complete validation"
)


def _gadget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "violations.kss.example/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}


def _causes(body: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(c["field"], c["reason"], c["message"]) for c in body["details"]["causes"]]


@pytest.fixture
async def gadgets(client: httpx.AsyncClient) -> httpx.AsyncClient:
    created = await client.post(CRDS, json=GADGET_CRD)
    assert created.status_code == 201, created.text
    return client


async def test_every_violation_is_reported_in_one_422(gadgets: httpx.AsyncClient) -> None:
    body = _gadget("g1", size=0, mode="warp", label="toolong", tags=["A", "b"])
    answer = await gadgets.post(GADGETS, json=body)
    assert answer.status_code == 422
    causes = _causes(answer.json())
    assert causes == [
        ("spec.size", "FieldValueInvalid", "Invalid value: 0: spec.size in body should be greater than or equal to 1"),
        ("spec.mode", "FieldValueNotSupported", 'Unsupported value: "warp": supported values: "fast", "slow"'),
        ("spec.label", "FieldValueTooLong", "Too long: may not be more than 3 bytes"),
        ("spec.tags", "FieldValueTooMany", "Too many: 2: must have at most 1 items"),
        ("spec.tags[0]", "FieldValueInvalid", "Invalid value: \"A\": spec.tags[0] in body should match '^[a-z]+$'"),
        ("<nil>", "FieldValueInvalid", NOT_CHECKED),
    ]
    joined = ", ".join(f"{field}: {message}" for field, _, message in causes)
    assert answer.json()["message"] == f'Gadget.violations.kss.example "g1" is invalid: [{joined}]'
    assert (await gadgets.get(f"{GADGETS}/g1")).status_code == 404  # nothing stored


async def test_metadata_and_schema_violations_come_together(gadgets: httpx.AsyncClient) -> None:
    answer = await gadgets.post(GADGETS, json=_gadget("Bad_Name", size=0))
    fields = [field for field, _, _ in _causes(answer.json())]
    assert fields == ["metadata.name", "spec.size"]


async def test_cel_rules_run_beside_violations_that_do_not_block_them(gadgets: httpx.AsyncClient) -> None:
    # A minimum is not a blocking violation: the rules still run, and theirs join the list.
    answer = await gadgets.post(GADGETS, json=_gadget("g2", size=12, mode="warp"))
    assert [f for f, _, _ in _causes(answer.json())] == ["spec.mode", "<nil>"]  # an enum blocks
    answer = await gadgets.post(GADGETS, json=_gadget("g2", size=12, day="2024-02-30"))
    assert _causes(answer.json())[-1] == ("<nil>", "FieldValueInvalid", NOT_CHECKED)  # a format is a type error
    answer = await gadgets.post(GADGETS, json=_gadget("g2", size=12, tags=["A"]))
    assert _causes(answer.json()) == [
        ("spec.tags[0]", "FieldValueInvalid", "Invalid value: \"A\": spec.tags[0] in body should match '^[a-z]+$'"),
        ("spec", "FieldValueInvalid", 'Invalid value: "object": size must be below 10'),
    ]


async def test_a_missing_required_field_and_a_wrong_type_block_the_rules(gadgets: httpx.AsyncClient) -> None:
    answer = await gadgets.post(GADGETS, json=_gadget("g3", mode="fast"))
    assert _causes(answer.json()) == [
        ("spec.size", "FieldValueRequired", "Required value"),
        ("<nil>", "FieldValueInvalid", NOT_CHECKED),
    ]
    answer = await gadgets.post(GADGETS, json=_gadget("g3", size="big"))
    assert _causes(answer.json())[0] == (
        "spec.size",
        "FieldValueTypeInvalid",
        'Invalid value: "string": spec.size in body must be of type integer: "string"',
    )


GOOD_FORMATS = {
    "owner": "ops@example.com",
    "since": "2024-01-02T03:04:05Z",
    "day": "2024-02-29",
    "id": "123e4567-e89b-12d3-a456-426614174000",
    "address": "10.0.0.1",
    "address6": "fd00::1",
    "network": "10.0.0.0/8",
    "host": "node-1.example.com",
    "blob": "aGVsbG8=",
    "timeout": "1h30m",
    "book": "978-0-306-40615-7",
    "card": "4111 1111 1111 1111",
    "count32": 5_000_000_000,  # int32 is a description: not checked
    "secret": "anything",
}
BAD_FORMATS = {
    "owner": ("not-an-address", "email"),
    "since": ("yesterday", "date-time"),
    "day": ("2024-13-01", "date"),
    "id": ("123", "uuid"),
    "address": ("10.0.0.256", "ipv4"),
    "address6": ("10.0.0.1", "ipv6"),
    "network": ("10.0.0.0", "cidr"),
    "host": ("-bad-.example", "hostname"),
    "blob": ("not base64!", "byte"),
    "timeout": ("soon", "duration"),
    "book": ("978-0-306-40615-8", "isbn"),
    "card": ("4111 1111 1111 1112", "creditcard"),
}


async def test_formats_are_checked_as_kube_apiserver_checks_them(gadgets: httpx.AsyncClient) -> None:
    good = await gadgets.post(GADGETS, json=_gadget("good", size=1, **GOOD_FORMATS))
    assert good.status_code == 201, good.text
    for field, (value, fmt) in BAD_FORMATS.items():
        spec = copy.deepcopy(GOOD_FORMATS) | {field: value}
        answer = await gadgets.post(GADGETS, json=_gadget(f"bad-{field.lower()}", size=1, **spec))
        assert answer.status_code == 422, field
        assert _causes(answer.json())[0] == (
            f"spec.{field}",
            "FieldValueTypeInvalid",
            f'Invalid value: "{value}": spec.{field} in body must be of type {fmt}: "{value}"',
        )


async def test_an_update_reports_every_violation_too(gadgets: httpx.AsyncClient) -> None:
    created = (await gadgets.post(GADGETS, json=_gadget("g4", size=1))).json()
    created["spec"] |= {"size": 0, "owner": "nobody"}
    answer = await gadgets.put(f"{GADGETS}/g4", json=created)
    assert answer.status_code == 422
    assert [f for f, _, _ in _causes(answer.json())] == ["spec.size", "spec.owner", "<nil>"]


@pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")
def test_kubectl_shows_every_violation(kubectl: KubectlRunner) -> None:
    kubectl("apply", "-f", "-", input=json.dumps(GADGET_CRD))
    try:
        kubectl("wait", "--for", "condition=Established", "crd/gadgets.violations.kss.example", "--timeout=30s")
        bad = _gadget("k1", size=0, mode="warp", owner="nobody")
        bad["metadata"]["namespace"] = "default"
        refused = kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
        assert refused.returncode != 0
        # kubectl sent the CRD as a Go map's JSON, its properties sorted: they are checked in that order.
        assert (
            'The Gadget "k1" is invalid: \n'
            '* spec.mode: Unsupported value: "warp": supported values: "fast", "slow"\n'
            '* spec.owner: Invalid value: "nobody": spec.owner in body must be of type email: "nobody"\n'
            "* spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1\n"
            f"* <nil>: {NOT_CHECKED}\n"
        ) in refused.stderr
    finally:
        kubectl("delete", "crd", "gadgets.violations.kss.example", "--wait=false", check=False)


def _crd_with_rules(name: str, *rules: dict[str, Any]) -> dict[str, Any]:
    crd = copy.deepcopy(GADGET_CRD)
    crd["metadata"]["name"] = f"gadgets.{name}.kss.example"
    crd["spec"]["group"] = f"{name}.kss.example"
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = list(
        rules
    )
    return crd


async def test_a_failed_rule_says_its_message_expression(client: httpx.AsyncClient) -> None:
    crd = _crd_with_rules(
        "messages",
        {"rule": "self.size < 10", "messageExpression": "'size ' + string(self.size) + ' is not below 10'"},
        # Evaluates to an error (no such field): the message is used instead.
        {"rule": "self.size < 11", "message": "size below 11", "messageExpression": "'mode ' + self.mode"},
        # Evaluates to an empty string: the default words are used.
        {"rule": "self.size < 12", "messageExpression": "''"},
        # Evaluates to more than one line: not used either.
        {"rule": "self.size < 13", "message": "one line", "messageExpression": "'two\\nlines'"},
    )
    assert (await client.post(CRDS, json=crd)).status_code == 201
    url = "/apis/messages.kss.example/v1/namespaces/default/gadgets"
    answer = await client.post(url, json=_gadget("g", size=20) | {"apiVersion": "messages.kss.example/v1"})
    assert _causes(answer.json()) == [
        ("spec", "FieldValueInvalid", 'Invalid value: "object": size 20 is not below 10'),
        ("spec", "FieldValueInvalid", 'Invalid value: "object": size below 11'),
        ("spec", "FieldValueInvalid", 'Invalid value: "object": failed rule: self.size < 12'),
        ("spec", "FieldValueInvalid", 'Invalid value: "object": one line'),
    ]


async def test_a_message_expression_that_cannot_give_a_string_refuses_the_crd(client: httpx.AsyncClient) -> None:
    crd = _crd_with_rules(
        "badmessages",
        {"rule": "self.size < 10", "messageExpression": "'size ' + this does not compile"},
        {"rule": "self.size < 10", "messageExpression": "1 + 2"},
    )
    refused = await client.post(CRDS, json=crd)
    assert refused.status_code == 422
    where = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    causes = _causes(refused.json())
    assert [c[0] for c in causes] == [f"{where}[0].messageExpression", f"{where}[1].messageExpression"]
    assert causes[0][2].startswith(
        'Invalid value: apiextensions.ValidationRule{Rule:"self.size < 10", Message:"", '
        "MessageExpression:\"'size ' + this does not compile\", Reason:(*apiextensions.FieldValueErrorReason)(nil), "
        'FieldPath:"", OptionalOldSelf:(*bool)(nil)}: messageExpression compilation failed: ERROR: <input>:1:16: '
        "Syntax error: mismatched input 'does' expecting <EOF>"
    )
    assert causes[1][2].endswith(": messageExpression must evaluate to a string")

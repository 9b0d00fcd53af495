"""The estimated cost of a CRD's CEL rules (kss_sim/cluster/crd/cel_cost.py): a rule kube-apiserver surely refuses
(its estimate over 100 times the limit: comprehensions nested over unbounded collections, string searches over every
item of an unbounded list) is a 422 with kube's words; rules the schema bounds, or whose estimate stays near the
limit, are accepted."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from kss_sim.cluster.crd import cel_cost
from kss_sim.cluster.crd.cel import compile_errors

INTS = {"type": "array", "items": {"type": "integer"}}
STRINGS = {"type": "array", "items": {"type": "string"}}


def _at(schema: dict[str, Any], rule: str) -> list[Any]:
    return compile_errors(
        {**schema, "x-kubernetes-validations": [{"rule": rule}]}, "spec.versions[0].schema.openAPIV3Schema"
    )


@pytest.mark.parametrize(
    ("schema", "rule"),
    [
        # the example of kube's documentation: a regex over every string of an unbounded list of unbounded strings
        (STRINGS, "self.all(x, x.matches('^[a-zA-Z]*$'))"),
        ({"type": "array", "items": INTS}, "self.all(x, x.all(y, y > 0))"),
        (
            {
                "type": "object",
                "properties": {
                    "items": {"type": "array", "items": {"type": "object", "properties": {"tags": STRINGS}}}
                },
            },
            "self.items.all(i, i.tags.exists(t, t.startsWith('a')))",
        ),
        ({"type": "object", "additionalProperties": STRINGS}, "self.all(k, self[k].all(v, v.contains('x')))"),
        # bounded, yet past 100 times the limit
        ({"type": "array", "maxItems": 100000, "items": {**INTS, "maxItems": 100000}}, "self.all(x, x.all(y, y > 0))"),
    ],
)
def test_rules_kube_surely_refuses_for_their_cost_are_refused_in_its_words(schema: dict[str, Any], rule: str) -> None:
    (cause,) = _at(schema, rule)
    assert cause.field == "spec.versions[0].schema.openAPIV3Schema.x-kubernetes-validations[0].rule"
    assert cause.reason == "FieldValueForbidden"
    assert cause.message == (
        "Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or "
        "adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )


@pytest.mark.parametrize(
    ("schema", "rule"),
    [
        (STRINGS, "self.all(x, x.size() < 10)"),  # one pass over an unbounded list: within the limit
        (
            {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 64}},
            "self.all(x, x.matches('^a'))",
        ),
        ({"type": "array", "maxItems": 100, "items": {**INTS, "maxItems": 100}}, "self.all(x, x.all(y, y > 0))"),
        ({"type": "object", "properties": {"n": {"type": "integer"}}}, "self.n < 10"),
        ({"type": "string"}, "self.startsWith('a')"),  # one unbounded string: near the limit at most
        ({"type": "object", "x-kubernetes-preserve-unknown-fields": True}, "self.all(k, k != 'x')"),
    ],
)
def test_rules_within_or_near_the_limit_are_accepted(schema: dict[str, Any], rule: str) -> None:
    assert _at(schema, rule) == []


def test_the_bound_reads_the_checked_ast() -> None:
    from kss_sim.cluster.crd.cel import _Environment

    root = cel_cost.checked_root(
        _Environment.get().compile("self.items.all(x, x.tags.all(y, y.size() < 5))").serialize()
    )
    assert root.kind == "comprehension" and root.name == "x"
    assert root.iter_range is not None and (root.iter_range.kind, root.iter_range.name) == ("select", "items")


async def test_a_crd_with_a_too_costly_rule_is_a_422(client: httpx.AsyncClient) -> None:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "costs.cost.kss.example"},
        "spec": {
            "group": "cost.kss.example",
            "scope": "Namespaced",
            "names": {"kind": "Cost", "plural": "costs"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {
                                "spec": {
                                    "type": "object",
                                    "properties": {"names": STRINGS},
                                    "x-kubernetes-validations": [{"rule": "self.names.all(n, n.matches('^[a-z]+$'))"}],
                                }
                            },
                        }
                    },
                }
            ],
        },
    }
    answer = await client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)
    assert answer.status_code == 422, answer.text
    (cause,) = answer.json()["details"]["causes"]
    assert cause["field"] == "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    assert "estimated rule cost exceeds budget by factor of more than 100x" in cause["message"]
    # Bounded by the schema, the same rule is accepted.
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]  # type: ignore[index]
    spec["properties"]["names"] = {**STRINGS, "maxItems": 20, "items": {"type": "string", "maxLength": 63}}
    assert (await client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)).status_code == 201

"""Node selector helpers against the rules of apimachinery's labels and component-helpers' nodeaffinity."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.kube.labels import (
    NodeSelector,
    RequiredNodeAffinity,
    aggregate_message,
    label_key_errors,
    label_selector_matches,
    label_value_errors,
    node_selector_matches,
    node_selector_requirement_matches,
    node_selector_term_matches,
    parse_int64,
    parse_preferred_terms,
    parse_selector_string,
    requirements_match,
)


def node(name: str = "n1", **labels: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels}}


def req(key: str, op: str, *values: str) -> dict[str, Any]:
    out: dict[str, Any] = {"key": key, "operator": op}
    if values:
        out["values"] = list(values)
    return out


def test_in_and_notin_follow_key_presence() -> None:
    labels = {"zone": "a"}
    assert node_selector_requirement_matches(req("zone", "In", "a", "b"), labels)
    assert not node_selector_requirement_matches(req("zone", "In", "b"), labels)
    assert not node_selector_requirement_matches(req("other", "In", "a"), labels)
    assert node_selector_requirement_matches(req("other", "NotIn", "a"), labels)
    assert not node_selector_requirement_matches(req("zone", "NotIn", "a"), labels)


def test_exists_and_does_not_exist() -> None:
    labels = {"gpu": ""}
    assert node_selector_requirement_matches(req("gpu", "Exists"), labels)
    assert not node_selector_requirement_matches(req("gpu", "DoesNotExist"), labels)
    assert node_selector_requirement_matches(req("ssd", "DoesNotExist"), labels)


def test_gt_lt_compare_int64_and_fail_on_non_integer_labels() -> None:
    assert node_selector_requirement_matches(req("gen", "Gt", "4"), {"gen": "5"})
    assert not node_selector_requirement_matches(req("gen", "Gt", "5"), {"gen": "5"})
    assert node_selector_requirement_matches(req("gen", "Lt", "10"), {"gen": "9"})
    assert node_selector_requirement_matches(req("gen", "Gt", "9"), {"gen": "10"})  # numeric, not string order
    # "-1" parses as an integer but is no valid label value, so the requirement is invalid.
    assert not node_selector_requirement_matches(req("gen", "Lt", "-1"), {"gen": "-2"})
    # A node label that is not an integer (or absent) never satisfies Gt/Lt.
    assert not node_selector_requirement_matches(req("gen", "Gt", "1"), {"gen": "v5"})
    assert not node_selector_requirement_matches(req("gen", "Lt", "100"), {"gen": "1_0"})
    assert not node_selector_requirement_matches(req("gen", "Lt", "100"), {})


@pytest.mark.parametrize(
    "bad",
    [
        req("", "Exists"),
        req("zone", "In"),
        req("zone", "NotIn"),
        req("zone", "Exists", "a"),
        req("zone", "DoesNotExist", "a"),
        req("gen", "Gt"),
        req("gen", "Gt", "1", "2"),
        req("gen", "Lt", "x"),
        req("gen", "Gt", "99999999999999999999"),
        req("zone", "In", "not a label value"),
        req("zone", "in", "a"),
        req("bad key!", "Exists"),
    ],
)
def test_invalid_requirement_matches_nothing(bad: dict[str, Any]) -> None:
    # NotIn/DoesNotExist would match an unlabelled node if they were valid.
    labels = {"zone": "a", "gen": "5"}
    assert not node_selector_requirement_matches(bad, labels)
    assert not node_selector_requirement_matches(bad, {})


def test_erroneous_term_is_skipped_but_other_terms_still_count() -> None:
    selector = {
        "nodeSelectorTerms": [
            {"matchExpressions": [req("zone", "In")]},
            {"matchExpressions": [req("zone", "In", "a")]},
        ]
    }
    assert node_selector_matches(selector, node(zone="a"))
    assert not node_selector_matches(selector, node(zone="b"))
    parsed = NodeSelector(selector)
    assert parsed.errors == [
        (
            "nodeSelectorTerms[0].matchExpressions[0].values",
            "Invalid value: null: for 'in', 'notin' operators, values set can't be empty",
        )
    ]


def test_empty_terms_match_nothing() -> None:
    assert not node_selector_term_matches({}, node())
    assert not node_selector_matches({"nodeSelectorTerms": [{}]}, node())
    assert not node_selector_matches({"nodeSelectorTerms": []}, node())
    # An empty term is dropped, not an error, and does not hide a matching one.
    assert node_selector_matches({"nodeSelectorTerms": [{}, {"matchExpressions": [req("a", "Exists")]}]}, node(a="1"))


def test_match_fields_compares_node_name_with_one_value() -> None:
    def fields(op: str, *values: str) -> dict[str, Any]:
        return {"matchFields": [req("metadata.name", op, *values)]}

    assert node_selector_term_matches(fields("In", "n1"), node("n1"))
    assert not node_selector_term_matches(fields("In", "n2"), node("n1"))
    assert node_selector_term_matches(fields("NotIn", "n2"), node("n1"))
    assert not node_selector_term_matches(fields("NotIn", "n1"), node("n1"))
    # Exactly one value, and only In/NotIn.
    assert not node_selector_term_matches(fields("In", "n1", "n2"), node("n1"))
    assert not node_selector_term_matches(fields("NotIn"), node("n1"))
    assert not node_selector_term_matches(fields("Exists"), node("n1"))


def test_match_fields_and_expressions_are_anded() -> None:
    term = {"matchExpressions": [req("zone", "In", "a")], "matchFields": [req("metadata.name", "In", "n1")]}
    assert node_selector_term_matches(term, node("n1", zone="a"))
    assert not node_selector_term_matches(term, node("n1", zone="b"))
    assert not node_selector_term_matches(term, node("n2", zone="a"))


def test_unknown_field_key_reads_as_empty_string() -> None:
    # fields.Set.Get gives "" for a missing field; the API server rejects such keys anyway.
    assert node_selector_term_matches({"matchFields": [req("spec.foo", "In", "")]}, node("n1"))
    assert not node_selector_term_matches({"matchFields": [req("spec.foo", "In", "n1")]}, node("n1"))


def test_required_node_affinity_ands_node_selector_and_terms() -> None:
    spec = {
        "nodeSelector": {"disk": "ssd"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [req("zone", "In", "a")]}]
                }
            }
        },
    }
    r = RequiredNodeAffinity(spec)
    assert r.matches_node(node(disk="ssd", zone="a"))
    assert not r.matches_node(node(disk="hdd", zone="a"))
    assert not r.matches_node(node(disk="ssd", zone="b"))
    assert RequiredNodeAffinity({}).matches_node(node())


def test_node_selector_values_are_not_syntax_checked() -> None:
    # SelectorFromValidatedSet: plain equality even for values a label could never have.
    assert RequiredNodeAffinity({"nodeSelector": {"k": "a b"}}).matches_node(node(k="a b"))


def test_preferred_terms_skip_zero_weight_and_sum_matches() -> None:
    terms = [
        {"weight": 10, "preference": {"matchExpressions": [req("zone", "In", "a")]}},
        {"weight": 0, "preference": {"matchExpressions": [req("zone", "In")]}},
        {"weight": 5, "preference": {"matchExpressions": [req("disk", "Exists")]}},
        {"weight": 7, "preference": {}},
    ]
    parsed, errs = parse_preferred_terms(terms)
    assert errs == [] and parsed is not None
    assert parsed.score({"zone": "a", "disk": "x"}, "n1") == 15
    assert parsed.score({"zone": "b"}, "n1") == 0


def test_preferred_terms_report_every_parse_error_with_its_path() -> None:
    terms = [
        {"weight": 1, "preference": {"matchExpressions": [req("gen", "Gt", "x")]}},
        {"weight": 1, "preference": {"matchFields": [req("metadata.name", "In", "a", "b")]}},
    ]
    parsed, errs = parse_preferred_terms(terms)
    assert parsed is None
    assert errs == [
        (
            "[0].matchExpressions[0].values[0]",
            "Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        ("[1].matchFields[0].values", 'Invalid value: ["a","b"]: must have one element'),
    ]
    assert aggregate_message(errs).startswith("[[0].matchExpressions[0].values[0]: Invalid value")


def test_unsupported_operator_lists_the_supported_ones() -> None:
    errs = NodeSelector({"nodeSelectorTerms": [{"matchExpressions": [req("k", "Has")]}]}).errors
    assert errs == [
        (
            "nodeSelectorTerms[0].matchExpressions[0].operator",
            'Unsupported value: "Has": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"',
        )
    ]


def test_label_key_and_value_syntax() -> None:
    assert label_key_errors("topology.kubernetes.io/zone") == []
    assert label_key_errors("a" * 63) == []
    assert label_key_errors("a" * 64) != []
    assert label_key_errors("Example.com/x") != []  # the prefix must be lowercase DNS
    assert label_key_errors("/x") == ["prefix part must be non-empty"]
    assert label_key_errors("a/b/c") != []
    assert label_value_errors("") == []
    assert label_value_errors("a-b_c.D") == []
    assert label_value_errors("-a") != []
    assert label_value_errors("a\n") != []


def test_parse_int64_is_strconv_strict() -> None:
    assert parse_int64("42") == 42
    assert parse_int64("-7") == -7
    assert parse_int64("+7") == 7
    assert parse_int64(str(2**63 - 1)) == 2**63 - 1
    assert parse_int64(str(2**63)) is None
    for bad in ("", " 1", "1 ", "1_000", "0x10", "١"):
        assert parse_int64(bad) is None


def test_label_selector_helpers_still_work() -> None:
    sel = {"matchLabels": {"app": "web"}, "matchExpressions": [req("tier", "NotIn", "db")]}
    assert label_selector_matches(sel, {"app": "web", "tier": "fe"})
    assert not label_selector_matches(sel, {"app": "web", "tier": "db"})
    assert not label_selector_matches(None, {"app": "web"})
    assert label_selector_matches({}, {})
    reqs = parse_selector_string("app=web,tier notin (db),!legacy")
    assert reqs == [("app", "In", ["web"]), ("tier", "NotIn", ["db"]), ("legacy", "DoesNotExist", [])]
    assert requirements_match(reqs, {"app": "web"})
    assert not requirements_match(reqs, {"app": "web", "legacy": "1"})

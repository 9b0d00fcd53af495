"""Extender answers of any shape (issue #35): a field encoding/json could not decode into kube-scheduler's extender
types is an error naming the extender and the field, never an exception out of the cycle; the next pod schedules."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.scheduler.cycle import ScheduleOptions
from kss_sim.scheduler.nodeinfo import PodInfo
from tests.extender_server import extender_server
from tests.scheduler.factories import make_pod
from tests.scheduler.test_extenders import OPTS, Binds, scheduler

FILTER_ANSWERS = [
    ({"NodeNames": 5, "FailedNodes": "x"}, "ExtenderFilterResult.NodeNames of type []string"),
    ({"NodeNames": [1, 2]}, "ExtenderFilterResult.NodeNames of type []string"),
    ({"NodeNames": ["n0"], "FailedNodes": "x"}, "ExtenderFilterResult.FailedNodes of type v1.FailedNodesMap"),
    ({"FailedNodes": {"n0": 5}}, "ExtenderFilterResult.FailedNodes of type v1.FailedNodesMap"),
    ({"FailedAndUnresolvableNodes": [1]}, "ExtenderFilterResult.FailedAndUnresolvableNodes of type"),
    ({"Error": 5}, "cannot unmarshal number into Go struct field ExtenderFilterResult.Error of type string"),
    ({"Nodes": "x"}, "ExtenderFilterResult.Nodes of type v1.NodeList"),
    ({"Nodes": {"items": "x"}}, "ExtenderFilterResult.Nodes.items of type []v1.Node"),
    ({"Nodes": {"items": [5]}}, "ExtenderFilterResult.Nodes.items of type v1.Node"),
    ({"Nodes": {"items": [{"metadata": "x"}]}}, "ExtenderFilterResult.Nodes.items.metadata of type v1.ObjectMeta"),
    ({"Nodes": {"items": [{"metadata": {"name": 7}}]}}, "Nodes.items.metadata.name of type string"),
]


@pytest.mark.parametrize("node_cache_capable", [True, False])
@pytest.mark.parametrize(("answer", "problem"), FILTER_ANSWERS)
def test_a_filter_answer_of_the_wrong_shape_is_an_error_naming_extender_and_field(
    answer: Any, problem: str, node_cache_capable: bool
) -> None:
    with extender_server({"filter": lambda body: (200, answer)}) as ext:
        s = scheduler([{"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": node_cache_capable}])
        att = s.schedule_one(PodInfo(make_pod(name="p")), 1, OPTS)
    assert att.result == "error", att.message
    assert att.message.startswith(f"extender {ext.url!r}: json: cannot unmarshal ")
    assert problem in att.message
    assert att.extenders[f"Extender({ext.url})"]["filter"] == f"error: {att.message}"


def test_an_ignorable_extender_of_the_wrong_shape_is_skipped() -> None:
    with extender_server({"filter": lambda body: (200, {"NodeNames": 5, "FailedNodes": "x"})}) as ext:
        s = scheduler([{"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": True, "ignorable": True}])
        att = s.schedule_one(PodInfo(make_pod(name="p")), 1, OPTS)
    assert att.result == "scheduled"
    assert "ExtenderFilterResult.NodeNames" in att.extenders[f"Extender({ext.url})"]["filter"]


@pytest.mark.parametrize(
    "answer",
    [{"x": 1}, [5], [{"Host": 5, "Score": 1}], [{"Host": "n0", "Score": "9"}], [{"Host": "n0", "Score": 1.5}], "x"],
)
def test_a_prioritize_answer_of_the_wrong_shape_gives_no_score_and_the_pod_schedules(answer: Any) -> None:
    with extender_server({"prioritize": lambda body: (200, answer)}) as ext:
        s = scheduler([{"urlPrefix": ext.url, "prioritizeVerb": "prioritize", "weight": 1}])
        att = s.schedule_one(PodInfo(make_pod(name="p")), 1, OPTS)
    assert att.result == "scheduled", att.message
    assert ext.verbs() == ["prioritize"]


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ([1], "cannot unmarshal array into Go value of type v1.ExtenderBindingResult"),
        ("x", "cannot unmarshal string into Go value of type v1.ExtenderBindingResult"),
        ({"Error": 5}, "cannot unmarshal number into Go struct field ExtenderBindingResult.Error of type string"),
    ],
)
def test_a_bind_answer_of_the_wrong_shape_fails_the_binding_naming_the_field(answer: Any, problem: str) -> None:
    actions = Binds()
    with extender_server({"bind": lambda body: (200, answer)}) as ext:
        s = scheduler([{"urlPrefix": ext.url, "bindVerb": "bind"}], actions)
        opts = ScheduleOptions(record=True, tie_break="name", run_binding_cycle=True)
        att = s.schedule_one(PodInfo(make_pod(name="p")), 1, opts)
        assert att.result == "error" and att.message == f"extender {ext.url!r}: json: {problem}"
        assert actions.bound == []
        # The next pod is not held up by the first one.
        ext.routes["bind"] = lambda body: (200, {"Error": ""})
        again = s.schedule_one(PodInfo(make_pod(name="q")), 1, opts)
    assert again.result == "scheduled"

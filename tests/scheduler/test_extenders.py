"""Scheduler extenders over real HTTP (a server on 127.0.0.1): filter, prioritize, bind, errors, timeouts."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.extender_http.transport import http_transport
from kss_sim.scheduler.cache import SchedulerCache
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.cycle import ScheduleOptions, Scheduler
from kss_sim.scheduler.extender import build_extenders
from kss_sim.scheduler.framework import Handle, PodActions, Status
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError, parse_config
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.profiles import build_framework
from kss_sim.simulation.runner import ScenarioRun
from tests.extender_server import extender_server, node_names, sleeping
from tests.scheduler.factories import make_node, make_pod

NODES = ["n0", "n1", "n2"]
OPTS = ScheduleOptions(record=True, tie_break="name", run_binding_cycle=False)


class Binds(PodActions):
    def __init__(self) -> None:
        self.bound: list[tuple[str, str]] = []

    def bind(self, pod: PodInfo, node_name: str) -> Status:
        self.bound.append((pod.key, node_name))
        return Status()

    def delete_victim(self, victim: PodInfo, preemptor: PodInfo, preempting_group: Any = None) -> Status:
        return Status()

    def set_nominated_node(self, pod: PodInfo, node_name: str) -> None:
        pass


def scheduler(extenders: list[dict[str, Any]], actions: PodActions | None = None) -> Scheduler:
    cache = SchedulerCache()
    for name in NODES:
        cache.add_node(make_node(name=name))
    cfg = parse_config({"extenders": extenders})
    handle = Handle(ClusterObjects(), actions)
    fwks = {p.scheduler_name: build_framework(p, handle) for p in cfg.profiles}
    return Scheduler(fwks, cache.snapshot, cache=cache, extenders=build_extenders(cfg.extenders, http_transport))


def filtering(body: dict[str, Any]) -> tuple[int, Any]:
    """Keeps n2; n0 fails (retryable), n1 fails for good."""
    names = node_names(body)
    kept = [n for n in names if n == "n2"]
    result: dict[str, Any] = {
        "failedNodes": {"n0": "n0 is busy"},
        "failedAndUnresolvableNodes": {"n1": "n1 is the wrong kind"},
        "error": "",
    }
    if body.get("NodeNames") is not None:
        result["NodeNames"] = kept
    else:
        items = [n for n in body["Nodes"]["items"] if n["metadata"]["name"] in kept]
        result["Nodes"] = {"kind": "NodeList", "apiVersion": "v1", "items": items}
    return 200, result


def rejecting_all(body: dict[str, Any]) -> tuple[int, Any]:
    return 200, {
        "nodenames": [],
        "failedNodes": {"n0": "n0 is busy", "n2": "n2 is busy"},
        "failedAndUnresolvableNodes": {"n1": "n1 is the wrong kind", "n2": "n2 is gone"},
        "error": "",
    }


@pytest.mark.parametrize("node_cache_capable", [True, False])
def test_a_filter_extender_drops_nodes_and_is_sent_names_or_the_node_list(node_cache_capable: bool) -> None:
    with extender_server({"filter": filtering}) as ext:
        s = scheduler([{"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": node_cache_capable}])
        att = s.schedule_one(PodInfo(make_pod(name="p")), 1, OPTS)
    assert att.result == "scheduled" and att.bound_to == "n2"
    assert ext.verbs() == ["filter"]
    body = ext.calls[0][1]
    assert set(body) == {"Pod", "Nodes", "NodeNames"}  # Go's field names: extender/v1 has no JSON tags
    assert body["Pod"]["metadata"]["name"] == "p"
    if node_cache_capable:
        assert sorted(body["NodeNames"]) == NODES and body.get("Nodes") is None
    else:
        assert body.get("NodeNames") is None
        assert body["Nodes"]["kind"] == "NodeList"
        assert sorted(n["metadata"]["name"] for n in body["Nodes"]["items"]) == NODES
        assert all("status" in n for n in body["Nodes"]["items"])  # whole Node objects
    key = f"Extender({ext.url})"
    assert att.filter_plugins[-1] == key
    assert att.filter["n2"][key] == "passed"
    assert att.filter["n0"][key] == "n0 is busy" and att.filter["n1"][key] == "n1 is the wrong kind"
    assert att.unresolvable["n1"] == [key] and "n0" not in att.unresolvable
    assert att.filter_fail["n0"] == f"{key}: n0 is busy"
    assert att.feasible == ["n2"]
    assert att.extenders == {key: {"filter": "success"}}


def test_failed_and_unresolvable_nodes_make_the_fit_error_and_take_precedence() -> None:
    with extender_server({"filter": rejecting_all}) as ext:
        s = scheduler([{"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": True}])
        att = s.schedule_one(PodInfo(make_pod(name="p")), 1, OPTS)
    assert att.result == "unschedulable"
    # n2 is in both maps: failedAndUnresolvableNodes wins.
    assert att.message.startswith("0/3 nodes are available: 1 n0 is busy, 1 n1 is the wrong kind, 1 n2 is gone. ")
    # Preemption sees the verdicts: only n0 (Unschedulable) is worth trying.
    assert "1 No preemption victims found for incoming pod, 2 Preemption is not helpful" in att.message
    key = f"Extender({ext.url})"
    assert att.unresolvable == {"n1": [key], "n2": [key]}


def test_prioritize_scores_times_weight_scaled_to_max_node_score_are_added_to_the_plugins_totals() -> None:
    first = {"n0": 1, "n1": 5, "n2": 3}
    second = {"n0": 10, "n1": 0, "n2": 4}

    def scores(table: dict[str, int]) -> Any:
        return lambda body: (200, [{"host": n, "score": table[n]} for n in node_names(body)])

    with extender_server({"prioritize": scores(first)}) as a, extender_server({"prioritize": scores(second)}) as b:
        s = scheduler(
            [
                {"urlPrefix": a.url, "prioritizeVerb": "prioritize", "weight": 2},
                {"urlPrefix": b.url, "prioritizeVerb": "prioritize", "weight": 3, "nodeCacheCapable": True},
            ]
        )
        att = s.schedule_one(PodInfo(make_pod(name="p")), 1, OPTS)
    ka, kb = f"Extender({a.url})", f"Extender({b.url})"
    assert att.score_plugins[-2:] == [ka, kb] and att.weights[ka] == 2 and att.weights[kb] == 3
    assert att.final_score is not None and att.total is not None and att.score is not None
    for n in NODES:
        plugins = sum(v for p, v in att.final_score[n].items() if p not in (ka, kb))
        assert att.final_score[n][ka] == first[n] * 2 * 10
        assert att.final_score[n][kb] == second[n] * 3 * 10
        assert att.score[n][ka] == first[n]
        assert att.total[n] == plugins + first[n] * 20 + second[n] * 30
    # Equal nodes: the plugins tie, the extenders decide (n0: 20+300, n1: 100+0, n2: 60+120).
    assert att.bound_to == "n0"
    assert att.extenders == {ka: {"prioritize": "success"}, kb: {"prioritize": "success"}}


def test_a_prioritize_error_gives_no_score_and_does_not_fail_the_attempt() -> None:
    with extender_server({"prioritize": lambda body: (500, {})}) as ext:
        s = scheduler([{"urlPrefix": ext.url, "prioritizeVerb": "prioritize", "weight": 1}])
        att = s.schedule_one(PodInfo(make_pod(name="p")), 1, OPTS)
    key = f"Extender({ext.url})"
    assert att.result == "scheduled"
    assert att.extenders[key]["prioritize"].startswith("ignored error: failed prioritize with extender at URL")
    assert att.final_score is not None and all(key not in v for v in att.final_score.values())


@pytest.mark.parametrize(
    "route",
    [
        sleeping(2.0, (200, {"nodenames": ["n0"]})),
        lambda body: (500, {}),
        lambda body: (200, {"error": "the extender is broken"}),
    ],
    ids=["timeout", "http-500", "error-field"],
)
@pytest.mark.parametrize("ignorable", [False, True])
def test_a_failing_filter_extender_fails_the_attempt_unless_ignorable(route: Any, ignorable: bool) -> None:
    with extender_server({"filter": route}) as ext:
        s = scheduler(
            [
                {
                    "urlPrefix": ext.url,
                    "filterVerb": "filter",
                    "nodeCacheCapable": True,
                    "httpTimeout": "200ms",
                    "ignorable": ignorable,
                }
            ]
        )
        att = s.schedule_one(PodInfo(make_pod(name="p")), 1, OPTS)
    key = f"Extender({ext.url})"
    if ignorable:
        assert att.result == "scheduled" and att.feasible == NODES
        assert att.extenders[key]["filter"].startswith("ignored error: ")
    else:
        assert att.result == "error"
        assert att.extenders[key]["filter"] == f"error: {att.message}"
    assert ext.verbs() == ["filter"]


def test_error_messages_name_the_failure() -> None:
    cases = {
        "500": (lambda body: (500, {}), "failed filter with extender at URL {url}/filter, code 500"),
        "field": (lambda body: (200, {"error": "the extender is broken"}), "the extender is broken"),
    }
    for route, expected in cases.values():
        with extender_server({"filter": route}) as ext:
            s = scheduler([{"urlPrefix": ext.url, "filterVerb": "filter"}])
            att = s.schedule_one(PodInfo(make_pod(name="p")), 1, OPTS)
        assert att.result == "error" and att.message == expected.format(url=ext.url)
    with extender_server({"filter": sleeping(2.0, (200, {}))}) as ext:
        s = scheduler([{"urlPrefix": ext.url, "filterVerb": "filter", "httpTimeout": "0.2s"}])
        att = s.schedule_one(PodInfo(make_pod(name="p")), 1, OPTS)
    assert att.result == "error" and "timed out after 0.2s" in att.message


def test_managed_resources_call_the_extender_only_for_pods_requesting_them() -> None:
    with extender_server({"filter": filtering}) as ext:
        s = scheduler(
            [
                {
                    "urlPrefix": ext.url,
                    "filterVerb": "filter",
                    "nodeCacheCapable": True,
                    "managedResources": [{"name": "example.com/gpu", "ignoredByScheduler": True}],
                }
            ]
        )
        plain = s.schedule_one(PodInfo(make_pod(name="plain")), 1, OPTS)
        assert ext.calls == [] and plain.result == "scheduled" and plain.extenders == {}
        limits = make_pod(name="gpu")
        limits["spec"]["initContainers"] = [
            {"name": "i", "image": "x", "resources": {"limits": {"example.com/gpu": "1"}}}
        ]
        gpu = s.schedule_one(PodInfo(limits), 1, OPTS)
    assert ext.verbs() == ["filter"] and gpu.bound_to == "n2"


def test_the_bind_extender_binds_instead_of_the_bind_plugins() -> None:
    def bind(body: dict[str, Any]) -> tuple[int, Any]:
        return 200, {"error": ""}

    actions = Binds()
    with extender_server({"bind": bind}) as ext:
        s = scheduler([{"urlPrefix": ext.url, "bindVerb": "bind"}], actions)
        opts = ScheduleOptions(record=True, tie_break="name", run_binding_cycle=True)
        att = s.schedule_one(PodInfo(make_pod(name="p", namespace="team")), 1, opts)
    assert att.result == "scheduled" and att.bound_to == "n0"
    assert ext.calls == [("bind", {"PodName": "p", "PodNamespace": "team", "PodUID": "uid-team-p", "Node": "n0"})]
    key = f"Extender({ext.url})"
    assert att.bind == {key: "success"} and att.extenders == {key: {"bind": "success"}}
    assert actions.bound == [("team/p", "n0")]  # the binding the extender accepted is written once


@pytest.mark.parametrize("ignorable", [False, True])
def test_a_failing_bind_extender_fails_the_binding_unless_ignorable(ignorable: bool) -> None:
    actions = Binds()
    with extender_server({"bind": lambda body: (200, {"error": "no room"})}) as ext:
        s = scheduler([{"urlPrefix": ext.url, "bindVerb": "bind", "ignorable": ignorable}], actions)
        opts = ScheduleOptions(record=True, tie_break="name", run_binding_cycle=True)
        att = s.schedule_one(PodInfo(make_pod(name="p")), 1, opts)
    if ignorable:  # skipped: DefaultBinder binds
        assert att.result == "scheduled" and att.bind == {"DefaultBinder": "success"}
    else:
        assert att.result == "error" and att.message == "no room"
    assert actions.bound == ([("default/p", "n0")] if ignorable else [])


def test_no_extender_is_called_for_a_lone_feasible_node_and_filters_come_first() -> None:
    with extender_server({"filter": filtering, "prioritize": lambda body: (200, [])}) as ext:
        s = scheduler(
            [{"urlPrefix": ext.url, "filterVerb": "filter", "prioritizeVerb": "prioritize", "weight": 1,
              "nodeCacheCapable": True}]
        )  # fmt: skip
        att = s.schedule_one(PodInfo(make_pod(name="p")), 1, OPTS)
    assert att.bound_to == "n2" and ext.verbs() == ["filter"]  # one feasible node: no prioritize call


def _cfg_error(extenders: Any) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_config({"extenders": extenders})
    return info.value


def test_configuration_defaults_and_validation() -> None:
    cfg = parse_config({"extenders": [{"urlPrefix": "http://e", "filterVerb": "filter"}]})
    e = cfg.extenders[0]
    assert e.http_timeout == 5.0 and e.weight == 0 and not e.ignorable and not e.node_cache_capable
    assert (
        parse_config({"extenders": [{"urlPrefix": "http://e", "httpTimeout": "1m30s"}]}).extenders[0].http_timeout == 90
    )
    assert _cfg_error([{"filterVerb": "f"}]).field == "extenders[0].urlPrefix"
    err = _cfg_error([{"urlPrefix": "http://e", "prioritizeVerb": "p"}])
    assert err.field == "extenders[0].weight" and "must have a positive weight" in err.detail
    err = _cfg_error([{"urlPrefix": "http://a", "bindVerb": "b"}, {"urlPrefix": "http://b", "bindVerb": "b"}])
    assert err.field == "extenders" and "only one extender can implement bind" in err.detail
    err = _cfg_error([{"urlPrefix": "http://a", "managedResources": [{"name": "kubernetes.io/foo"}]}])
    assert err.field == "extenders[0].managedResources[0].name" and "invalid extended resource name" in err.detail
    err = _cfg_error(
        [
            {"urlPrefix": "http://a", "managedResources": [{"name": "example.com/gpu"}]},
            {"urlPrefix": "http://b", "managedResources": [{"name": "example.com/gpu"}]},
        ]
    )
    assert err.field == "extenders[1].managedResources[0].name" and "duplicate" in err.detail
    assert _cfg_error([{"urlPrefix": "http://a", "httpTimeout": "soon"}]).field == "extenders[0].httpTimeout"
    assert _cfg_error([{"urlPrefix": "http://a", "verb": "x"}]).field == "extenders[0].verb"
    assert _cfg_error([{"urlPrefix": "http://a", "tlsConfig": {"ca": "x"}}]).field == "extenders[0].tlsConfig.ca"


def test_no_extenders_keep_the_batch_path() -> None:
    s = scheduler([])
    assert s.extenders == []
    att = s.schedule_one(PodInfo(make_pod(name="p")), 1, OPTS)
    assert att.result == "scheduled" and att.extenders == {}
    assert att.filter_matrix is not None  # the batch record path


def test_the_nominated_node_goes_through_the_extenders_too() -> None:
    with extender_server({"filter": filtering}) as ext:
        s = scheduler([{"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": True}])
        nominated = make_pod(name="p")
        nominated["status"] = {"nominatedNodeName": "n0"}
        att = s.schedule_one(PodInfo(nominated), 1, OPTS)
    # n0 passes the plugins but the extender fails it: every node is evaluated next, and n2 is kept.
    assert [body["NodeNames"] for _, body in ext.calls] == [["n0"], NODES]
    assert att.bound_to == "n2"


def test_kss_simulate_calls_the_configured_extenders() -> None:
    with extender_server({"filter": filtering}) as ext:
        scenario = {
            "config": {"extenders": [{"urlPrefix": ext.url, "filterVerb": "filter", "nodeCacheCapable": True}]},
            "nodes": [make_node(name=n) for n in NODES],
            "pending": [make_pod(name="p")],
        }
        attempts = ScenarioRun(scenario).run()
    assert [att.bound_to for att, _ in attempts] == ["n2"] and ext.verbs() == ["filter"]


@pytest.mark.parametrize("ignored", [True, False])
def test_resources_an_extender_manages_with_ignored_by_scheduler_are_not_checked_by_node_resources_fit(
    ignored: bool,
) -> None:
    with extender_server({"filter": filtering}) as ext:
        s = scheduler(
            [
                {
                    "urlPrefix": ext.url,
                    "filterVerb": "filter",
                    "nodeCacheCapable": True,
                    "managedResources": [{"name": "example.com/fpga", "ignoredByScheduler": ignored}],
                }
            ]
        )
        att = s.schedule_one(PodInfo(make_pod(name="fpga", requests={"example.com/fpga": "1"})), 1, OPTS)
    if ignored:  # no node has the resource, but the extender decides: it keeps n2
        assert att.result == "scheduled" and att.bound_to == "n2" and ext.verbs() == ["filter"]
    else:  # NodeResourcesFit rejects every node before the extenders run
        assert att.result == "unschedulable" and ext.calls == []
        assert "Insufficient example.com/fpga" in att.message
    fit_args = (
        parse_config(
            {
                "extenders": [
                    {
                        "urlPrefix": "http://127.0.0.1:1",
                        "managedResources": [{"name": "example.com/fpga", "ignoredByScheduler": ignored}],
                    }
                ]
            }
        )
        .profiles[0]
        .plugin_config.get("NodeResourcesFit")
        or {}
    )
    assert ("example.com/fpga" in (fit_args.get("ignoredResources") or [])) is ignored


# --- preemptVerb (ProcessPreemption) -----------------------------------------------------------------------------


class Evicts(Binds):
    """Records the victims preemption deletes."""

    def __init__(self) -> None:
        super().__init__()
        self.deleted: list[str] = []

    def delete_victim(self, victim: PodInfo, preemptor: PodInfo, preempting_group: Any = None) -> Status:
        self.deleted.append(victim.key)
        return Status()


def preempting_scheduler(extenders: list[dict[str, Any]], actions: PodActions) -> Scheduler:
    """n0 and n1 each hold lower-priority pods a preemptor of 3 CPUs can evict (a0 on n0; b1 and c1 on n1); n2's pod
    has a higher priority. Without extenders the preemptor is nominated to n0 (one victim of the lowest priority)."""
    s = scheduler(extenders, actions)
    assert s.cache is not None
    for name, node, cpu, priority in (
        ("a0", "n0", "3", 1),
        ("b1", "n1", "2", 1),
        ("c1", "n1", "2", 2),
        ("z2", "n2", "4", 100),
    ):
        s.cache.add_pod(PodInfo(make_pod(name=name, node_name=node, priority=priority, requests={"cpu": cpu})))
    return s


def preemptor(**kwargs: Any) -> PodInfo:
    return PodInfo(make_pod(name="high", priority=10, requests={"cpu": "3"}, **kwargs))


def sent_victims(body: dict[str, Any]) -> dict[str, list[str]]:
    """Node -> victim UIDs of an ExtenderPreemptionArgs, from full pods or meta victims."""
    if body.get("NodeNameToMetaVictims") is not None:
        return {n: [p["UID"] for p in v["Pods"]] for n, v in body["NodeNameToMetaVictims"].items()}
    return {n: [p["metadata"]["uid"] for p in v["Pods"]] for n, v in body["NodeNameToVictims"].items()}


def answering(change: Any) -> Any:
    """A preempt verb answering with ``change(node -> victim UIDs)`` as nodeNameToMetaVictims."""

    def handle(body: dict[str, Any]) -> tuple[int, Any]:
        kept = change(sent_victims(body))
        meta = {n: {"pods": [{"uid": u} for u in uids], "numPDBViolations": 0} for n, uids in kept.items()}
        return 200, {"nodeNameToMetaVictims": meta}

    return handle


def test_without_a_preempt_extender_preemption_is_unchanged() -> None:
    actions = Evicts()
    s = preempting_scheduler([], actions)
    att = s.schedule_one(preemptor(), 1, OPTS)
    assert att.nominated_node == "n0" and att.victims == ["default/a0"] and actions.deleted == ["default/a0"]
    assert att.extenders == {}


@pytest.mark.parametrize("node_cache_capable", [False, True])
def test_a_preempt_extender_that_drops_a_candidate_node_moves_the_nomination(node_cache_capable: bool) -> None:
    with extender_server({"preempt": answering(lambda v: {n: u for n, u in v.items() if n != "n0"})}) as ext:
        actions = Evicts()
        cfg = {"urlPrefix": ext.url, "preemptVerb": "preempt", "nodeCacheCapable": node_cache_capable}
        s = preempting_scheduler([cfg], actions)
        att = s.schedule_one(preemptor(), 1, OPTS)
    assert ext.verbs() == ["preempt"]
    body = ext.calls[0][1]
    assert body["Pod"]["metadata"]["name"] == "high"
    assert sent_victims(body) == {"n0": ["uid-default-a0"], "n1": ["uid-default-c1", "uid-default-b1"]}
    if node_cache_capable:
        # Only UIDs (meta victims), as a node-cache-capable extender knows the pods.
        assert body["NodeNameToVictims"] is None
        assert body["NodeNameToMetaVictims"]["n0"] == {"Pods": [{"UID": "uid-default-a0"}], "NumPDBViolations": 0}
    else:
        assert body["NodeNameToMetaVictims"] is None
        full = body["NodeNameToVictims"]["n0"]
        assert full["NumPDBViolations"] == 0 and full["Pods"][0]["spec"]["nodeName"] == "n0"
    assert att.nominated_node == "n1"
    assert att.victims == ["default/c1", "default/b1"] and actions.deleted == att.victims
    assert att.extenders == {f"Extender({ext.url})": {"preempt": "success"}}


def test_a_preempt_extender_may_drop_a_victim() -> None:
    # Keep only n1, and there only c1: the preemptor is nominated to n1 and only c1 is evicted.
    with extender_server({"preempt": answering(lambda v: {"n1": ["uid-default-c1"]})}) as ext:
        actions = Evicts()
        s = preempting_scheduler([{"urlPrefix": ext.url, "preemptVerb": "preempt", "nodeCacheCapable": True}], actions)
        att = s.schedule_one(preemptor(), 1, OPTS)
    assert att.nominated_node == "n1" and att.victims == ["default/c1"] and actions.deleted == ["default/c1"]
    # The answer as kube-scheduler-simulator's extender-preempt-result shows it (UIDs per node).
    assert att.extender_results["preempt"] == {
        ext.url: {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "uid-default-c1"}], "NumPDBViolations": 0}}}
    }


def test_the_answer_is_read_as_go_reads_it_case_insensitively() -> None:
    def upper(body: dict[str, Any]) -> tuple[int, Any]:
        return 200, {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "uid-default-b1"}], "NumPDBViolations": 1}}}

    with extender_server({"preempt": upper}) as ext:
        actions = Evicts()
        s = preempting_scheduler([{"urlPrefix": ext.url, "preemptVerb": "preempt"}], actions)
        att = s.schedule_one(preemptor(), 1, OPTS)
    assert att.nominated_node == "n1" and att.victims == ["default/b1"]


def test_extenders_are_chained_and_an_empty_answer_ends_preemption() -> None:
    with (
        extender_server({"preempt": answering(lambda v: {})}) as first,
        extender_server({"preempt": answering(lambda v: v)}) as second,
    ):
        actions = Evicts()
        cfgs = [{"urlPrefix": e.url, "preemptVerb": "preempt"} for e in (first, second)]
        s = preempting_scheduler(cfgs, actions)
        att = s.schedule_one(preemptor(), 1, OPTS)
    assert first.verbs() == ["preempt"] and second.verbs() == []
    assert att.nominated_node is None and actions.deleted == []
    assert att.postfilter is not None and "no candidate node for preemption" in att.message


def test_a_later_extender_gets_what_the_earlier_one_kept() -> None:
    with (
        extender_server({"preempt": answering(lambda v: {n: u for n, u in v.items() if n == "n1"})}) as first,
        extender_server({"preempt": answering(lambda v: v)}) as second,
    ):
        cfgs = [{"urlPrefix": e.url, "preemptVerb": "preempt"} for e in (first, second)]
        att = preempting_scheduler(cfgs, Evicts()).schedule_one(preemptor(), 1, OPTS)
    assert sent_victims(second.calls[0][1]) == {"n1": ["uid-default-c1", "uid-default-b1"]}
    assert att.nominated_node == "n1"


@pytest.mark.parametrize(
    ("route", "message"),
    [
        (lambda body: (500, {}), "code 500"),
        (answering(lambda v: {"n0": []}), 'expected at least one victim pod on node "n0"'),
        (answering(lambda v: {"n0": ["uid-default-b1"]}), "claims to preempt pod (UID: uid-default-b1) on node: n0"),
        (answering(lambda v: {"nowhere": ["x"]}), 'nodeinfo not found for node name "nowhere"'),
    ],
)
@pytest.mark.parametrize("ignorable", [False, True])
def test_a_failing_preempt_extender_fails_preemption_unless_ignorable(
    route: Any, message: str, ignorable: bool
) -> None:
    with extender_server({"preempt": route}) as ext:
        actions = Evicts()
        cfg = {"urlPrefix": ext.url, "preemptVerb": "preempt", "ignorable": ignorable}
        s = preempting_scheduler([cfg], actions)
        att = s.schedule_one(preemptor(), 1, OPTS)
    outcome = att.extenders[f"Extender({ext.url})"]["preempt"]
    if not ignorable:
        assert outcome.startswith("error: ") and message in outcome
        assert att.nominated_node is None and actions.deleted == []
        assert att.postfilter is not None and message in att.message
    elif "expected at least one victim" in message:
        # An ignorable extender's node without victims is dropped (the call succeeded); none is left here.
        assert outcome == "success" and att.nominated_node is None and actions.deleted == []
    else:
        assert outcome.startswith("ignored error: ") and message in outcome
        assert att.nominated_node == "n0" and actions.deleted == ["default/a0"]


def test_an_ignorable_extender_s_node_without_victims_is_dropped() -> None:
    with extender_server({"preempt": answering(lambda v: {**v, "n0": []})}) as ext:
        cfg = {"urlPrefix": ext.url, "preemptVerb": "preempt", "ignorable": True}
        att = preempting_scheduler([cfg], Evicts()).schedule_one(preemptor(), 1, OPTS)
    assert att.nominated_node == "n1" and att.victims == ["default/c1", "default/b1"]


def test_a_pod_the_preempt_extender_is_not_interested_in_does_not_call_it() -> None:
    with extender_server({"preempt": answering(lambda v: {})}) as ext:
        actions = Evicts()
        cfg = {"urlPrefix": ext.url, "preemptVerb": "preempt", "managedResources": [{"name": "example.com/gpu"}]}
        s = preempting_scheduler([cfg], actions)
        att = s.schedule_one(preemptor(), 1, OPTS)
    assert ext.verbs() == []
    assert att.nominated_node == "n0" and actions.deleted == ["default/a0"] and att.extenders == {}

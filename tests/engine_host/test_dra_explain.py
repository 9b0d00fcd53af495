"""The simulator's explanation of DynamicResources' verdicts (``kss_sim.engine_host.dra_explain``), on plain objects:
the counts per request (devices the node can use, of the class, matching, free) and the verdict in words."""

from __future__ import annotations

from typing import Any

from kss_sim.engine_host.dra_explain import DraListers, explain_on_node, summarize_in_cluster
from kss_sim.kube.objects import Obj
from kss_sim.scheduler.dra.allocated import DeviceID

DRIVER = "gpu.example.com"


def node(name: str, **labels: str) -> Obj:
    return {"metadata": {"name": name, "labels": labels}}


def slice_(name: str, devices: list[tuple[str, str]], **where: Any) -> Obj:
    return {
        "metadata": {"name": name},
        "spec": {
            "driver": DRIVER,
            "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
            "devices": [{"name": n, "attributes": {"model": {"string": m}}} for n, m in devices],
            **where,
        },
    }


def claim(name: str, *requests: Obj, allocation: Obj | None = None) -> Obj:
    out: Obj = {"metadata": {"name": name, "namespace": "default"}, "spec": {"devices": {"requests": list(requests)}}}
    if allocation is not None:
        out["status"] = {"allocation": allocation}
    return out


def exactly(name: str, model: str | None = None, **extra: Any) -> Obj:
    spec: Obj = {"deviceClassName": "gpu", **extra}
    if model is not None:
        spec["selectors"] = [{"cel": {"expression": f'device.attributes["{DRIVER}"].model == "{model}"'}}]
    return {"name": name, "exactly": spec}


def pod(*claim_names: str) -> Obj:
    return {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"resourceClaims": [{"name": f"c{i}", "resourceClaimName": n} for i, n in enumerate(claim_names)]},
    }


GPU_CLASS = {
    "metadata": {"name": "gpu"},
    "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
}


def listers(claims: list[Obj], slices: list[Obj], allocated: set[DeviceID] | None = None) -> DraListers:
    by_name = {c["metadata"]["name"]: c for c in claims}
    return DraListers(lambda ns, n: by_name.get(n), {"gpu": GPU_CLASS}, slices, allocated or set())


def verdicts(p: Obj, n: Obj, ls: DraListers) -> list[tuple[str, int, int, int, int, str, bool]]:
    return [
        (e.request, e.on_node, e.of_class, e.matching, e.free, e.sentence, e.fits) for e in explain_on_node(p, n, ls)
    ]


def test_counts_devices_matching_and_free_per_request() -> None:
    slices = [slice_("a", [("g0", "a100"), ("g1", "a100"), ("g2", "t4")], nodeName="a")]
    ls = listers(
        [claim("two", exactly("big", "a100", count=2), exactly("small", "t4"), exactly("any", allocationMode="All"))],
        slices,
        {DeviceID(DRIVER, "a", "g1")},
    )
    assert verdicts(pod("two"), node("a"), ls) == [
        ("big", 3, 3, 2, 1, "only 1 of 2 matching devices free, 2 wanted", False),
        ("small", 3, 3, 1, 1, "1 of 1 matching devices free, 1 wanted", True),
        ("any", 3, 3, 3, 2, "only 2 of 3 matching devices free, all wanted", False),
    ]
    # Admin access may use allocated devices.
    admin = listers(
        [claim("adm", exactly("big", "a100", count=2, adminAccess=True))], slices, {DeviceID(DRIVER, "a", "g1")}
    )
    assert verdicts(pod("adm"), node("a"), admin)[0][4:] == (2, "2 of 2 matching devices free, 2 wanted", True)


def test_a_node_without_devices_or_matching_ones_says_which() -> None:
    slices = [slice_("a", [("g0", "t4")], nodeName="a")]
    ls = listers([claim("c", exactly("gpu", "h100"))], slices)
    assert verdicts(pod("c"), node("b"), ls) == [
        ("gpu", 0, 0, 0, 0, "no ResourceSlice offers this node any device", False)
    ]
    assert verdicts(pod("c"), node("a"), ls) == [
        ("gpu", 1, 1, 0, 0, f'no device matches selector device.attributes["{DRIVER}"].model == "h100"', False)
    ]


def test_network_attached_slices_reach_the_nodes_their_selector_picks() -> None:
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    slices = [slice_("net", [("g0", "a100")], nodeSelector=selector), slice_("all", [("g1", "t4")], allNodes=True)]
    ls = listers([claim("c", exactly("gpu", "a100"))], slices)
    assert verdicts(pod("c"), node("a", rack="r1"), ls)[0][1:5] == (2, 2, 1, 1)
    assert verdicts(pod("c"), node("b", rack="r2"), ls)[0][1:5] == (1, 1, 0, 0)


def test_missing_class_cel_error_allocated_claim_and_missing_claim() -> None:
    slices = [slice_("a", [("g0", "a100")], nodeName="a")]
    bad = {
        "name": "bad",
        "exactly": {"deviceClassName": "gpu", "selectors": [{"cel": {"expression": 'device.attributes["x"].y'}}]},
    }
    allocation = {
        "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "b", "device": "g9"}]},
        "nodeSelector": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["b"]}]}]
        },
    }
    ls = listers(
        [claim("c", {"name": "nc", "exactly": {"deviceClassName": "none"}}, bad), claim("done", allocation=allocation)],
        slices,
    )
    rows = explain_on_node(pod("c", "done", "gone"), node("a"), ls)
    assert [(r.claim, r.request, r.fits) for r in rows] == [
        ("default/c", "nc", False),
        ("default/c", "bad", False),
        ("default/done", "-", False),
        ("default/gone", "-", False),
    ]
    assert rows[0].sentence == "device class none does not exist"
    assert rows[1].sentence.startswith("selector 'device.attributes[\"x\"].y' fails on device g0: ")
    assert rows[2].sentence == "already allocated (g9) where its nodeSelector points, not on this node"
    assert rows[3].sentence == "claim not found"
    assert explain_on_node(pod("done"), node("b"), ls)[0].sentence == "already allocated (g9); usable on this node"


def summaries(p: Obj, nodes: list[Obj], ls: DraListers) -> list[tuple[str, str, int, int, int, int, int, int, str]]:
    return [
        (s.request, s.wanted, s.of_class, s.matching, s.free, s.nodes_of_class, s.nodes_matching, s.nodes_fitting,
         s.sentence)
        for s in summarize_in_cluster(p, nodes, ls)
    ]  # fmt: skip


def test_the_cluster_summary_counts_each_device_once_and_says_what_no_node_has() -> None:
    selector = {"nodeSelectorTerms": [{"matchExpressions": [{"key": "rack", "operator": "In", "values": ["r1"]}]}]}
    slices = [
        slice_("a", [("g0", "a100"), ("g1", "a100")], nodeName="a"),
        slice_("b", [("g0", "t4")], nodeName="b"),
        slice_("net", [("n0", "a100")], nodeSelector=selector),  # one device both rack-r1 nodes can use
    ]
    nodes = [node("a", rack="r1"), node("b", rack="r1"), *(node(f"cpu-{i}") for i in range(20))]
    ls = listers(
        [claim("c", exactly("h100", "h100"), exactly("pair", "a100", count=2), exactly("one", "a100"))],
        slices,
        {DeviceID(DRIVER, "a", "g1")},
    )
    assert summaries(pod("c"), nodes, ls) == [
        ("h100", "1", 4, 0, 0, 2, 0, 0, "none of the 4 devices of class gpu matches the selector"),
        ("pair", "2", 4, 3, 2, 2, 2, 1, "1 node could satisfy it now"),
        ("one", "1", 4, 3, 2, 2, 2, 2, "2 nodes could satisfy it now"),
    ]
    # The network-attached device taken, no node has two free A100s any more.
    taken = listers(
        [claim("c", exactly("pair", "a100", count=2))],
        slices,
        {DeviceID(DRIVER, "a", "g1"), DeviceID(DRIVER, "net", "n0")},
    )
    assert (
        summaries(pod("c"), nodes, taken)[0][-1]
        == "no node has 2 matching devices free now (1 of 3 free in the cluster)"
    )
    # No slice at all, a class that does not exist, an allocated claim.
    allocation = {"devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": "a", "device": "g0"}]}}
    ls = listers([claim("c", exactly("gpu")), claim("x", {"name": "r", "exactly": {"deviceClassName": "none"}}),
                  claim("done", allocation=allocation)], [])  # fmt: skip
    rows = summarize_in_cluster(pod("c", "x", "done"), nodes, ls)
    assert [(r.sentence, r.fits) for r in rows] == [
        ("no node of this cluster can use a device of class gpu", False),
        ("device class none does not exist", False),
        ("already allocated (g0)", True),
    ]

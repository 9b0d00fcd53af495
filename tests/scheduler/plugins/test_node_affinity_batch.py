"""NodeAffinity's batch Filter (decided once per distinct value of what the selectors read) gives every node the
verdict ``filter`` gives it, and its status keys stand for ``filter``'s statuses: pods with nodeSelector, required
terms on labels (every operator), terms on ``metadata.name``, erroneous terms, and a scheduler-enforced
addedAffinity."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from kss_sim.scheduler.columns import NodeBatch
from kss_sim.scheduler.framework import CycleState
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.node_affinity import NodeAffinity
from tests.scheduler.factories import make_handle, make_node, make_pod


def _nodes() -> list[dict[str, Any]]:
    rng = random.Random(11)
    out = []
    for i in range(60):
        labels = {"zone": rng.choice(["a", "b", "c"])}
        if rng.random() < 0.5:
            labels["gpu"] = rng.choice(["1", "2", "8"])
        if rng.random() < 0.3:
            labels["spot"] = ""
        out.append(make_node(name=f"n{i:02d}", labels=labels))
    return out


def _required(*terms: dict[str, Any]) -> dict[str, Any]:
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def _expr(key: str, op: str, *values: str) -> dict[str, Any]:
    return {"key": key, "operator": op, **({"values": list(values)} if values or op in ("In", "NotIn") else {})}


PODS: list[dict[str, Any]] = [
    {"nodeSelector": {"zone": "a"}},
    {"affinity": _required({"matchExpressions": [_expr("zone", "In", "a", "b"), _expr("gpu", "Exists")]})},
    {
        "affinity": _required(
            {"matchExpressions": [_expr("gpu", "Gt", "1")]}, {"matchExpressions": [_expr("spot", "DoesNotExist")]}
        )
    },
    {"affinity": _required({"matchExpressions": [_expr("zone", "NotIn", "c"), _expr("gpu", "Lt", "8")]})},
    {
        "affinity": _required(
            {"matchFields": [_expr("metadata.name", "In", "n07")]}, {"matchExpressions": [_expr("zone", "In", "z")]}
        )
    },
    {"affinity": _required({"matchExpressions": [_expr("zone", "Bogus", "a")]})},  # an erroneous term matches nothing
    {"nodeSelector": {"zone": "b"}, "affinity": _required({"matchExpressions": [_expr("spot", "Exists")]})},
    # The node's name only (a DaemonSet pod's affinity): the mentioned names are decided apart from the rest.
    {"affinity": _required({"matchFields": [_expr("metadata.name", "In", "n07")]})},
    {
        "affinity": _required(
            {"matchFields": [_expr("metadata.name", "In", "n31")]},
            {"matchFields": [_expr("metadata.name", "In", "n02")]},
            {"matchFields": [_expr("metadata.name", "In", "gone")]},
        )
    },
    {
        "affinity": _required(
            {"matchFields": [_expr("metadata.name", "NotIn", "n07"), _expr("metadata.name", "NotIn", "n08")]}
        )
    },
    {"affinity": _required(*({"matchFields": [_expr("metadata.name", "In", f"n{i:02d}")]} for i in range(0, 60, 3)))},
    {"affinity": _required({"matchFields": [_expr("metadata.uid", "In", "n07")]})},  # only metadata.name is known
    {"affinity": _required({"matchFields": [_expr("metadata.name", "In", "n07", "n08")]})},  # one value allowed
]
ADDED = {"addedAffinity": _required({"matchExpressions": [_expr("zone", "NotIn", "a")]})["nodeAffinity"]}
ADDED_BY_NAME = {"addedAffinity": _required({"matchFields": [_expr("metadata.name", "NotIn", "n31")]})["nodeAffinity"]}


@pytest.mark.parametrize("args", [{}, ADDED, ADDED_BY_NAME], ids=["plain", "addedAffinity", "addedAffinityByName"])
@pytest.mark.parametrize("spec", PODS)
def test_the_batch_verdicts_and_status_keys_are_filters(spec: dict[str, Any], args: dict[str, Any]) -> None:
    handle = make_handle(nodes=_nodes())
    plugin = NodeAffinity(handle, NodeAffinity.defaulted_args(args))
    pod = make_pod(name="p")
    pod["spec"].update(spec)
    info = PodInfo(pod)
    state = CycleState()
    plugin.pre_filter(state, info, handle.snapshot.node_info_list)
    cols = handle.snapshot.columns()
    batch = NodeBatch.all(cols)
    mask = plugin.filter_nodes(state, info, batch)
    assert mask is not None
    statuses = [plugin.filter(state, info, ni) for ni in cols.infos]
    assert mask.tolist() == [st.is_success() for st in statuses]
    rejected = batch.subset(~mask)
    keys = plugin.filter_status_keys(state, info, rejected)
    assert keys is not None
    by_key: dict[int, tuple[Any, ...]] = {}
    for key, pos in zip(keys.tolist(), np.flatnonzero(~mask).tolist(), strict=True):
        seen = (statuses[pos].code, tuple(statuses[pos].reasons))
        assert by_key.setdefault(key, seen) == seen  # equal keys, equal statuses
    assert len(set(by_key.values())) == len(by_key)


@pytest.mark.parametrize("args", [{}, ADDED, ADDED_BY_NAME], ids=["plain", "addedAffinity", "addedAffinityByName"])
@pytest.mark.parametrize("spec", PODS)
def test_the_record_keys_give_each_node_its_filter_status(spec: dict[str, Any], args: dict[str, Any]) -> None:
    """``filter_keys`` (0 where ``filter`` passes) and ``filter_status_of_key``: what the record asks instead of
    ``filter`` per node, also on a part of the nodes (those a PreFilterResult left out)."""
    handle = make_handle(nodes=_nodes())
    plugin = NodeAffinity(handle, NodeAffinity.defaulted_args(args))
    pod = make_pod(name="p")
    pod["spec"].update(spec)
    info = PodInfo(pod)
    state = CycleState()
    plugin.pre_filter(state, info, handle.snapshot.node_info_list)
    cols = handle.snapshot.columns()
    part = np.array([i for i in range(cols.n) if i % 7 != 0], np.int64)
    for batch in (NodeBatch.all(cols), NodeBatch(cols, part)):
        keys = plugin.filter_keys(state, info, batch)
        assert keys is not None
        for key, ni in zip(keys.tolist(), batch.nodes, strict=True):
            st = plugin.filter(state, info, ni)
            if key == 0:
                assert st.is_success(), ni.name
                continue
            of_key = plugin.filter_status_of_key(state, info, key)
            assert of_key is not None
            assert (of_key.code, of_key.reasons) == (st.code, st.reasons), ni.name

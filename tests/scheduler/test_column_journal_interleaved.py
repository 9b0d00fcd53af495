"""The pod journal's caches against fresh counts with reads between any two changes, including what kss serve
does that an offline run rarely does: a pod forgotten (a Permit rejection, a failed binding) and assumed again on
the same node, identical to aggregates, with or without a scheduling cycle reading the journal in between; its
binding and status write following. Every cached answer must equal a fresh computation at every read."""

from __future__ import annotations

import copy
import random

import pytest

from kss_sim.scheduler import columns as columns_module
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.plugins.inter_pod_affinity import InterPodAffinity
from kss_sim.scheduler.plugins.node_resources_fit import NodeResourcesFit
from kss_sim.scheduler.plugins.pod_topology_spread import PodTopologySpread
from tests.scheduler.factories import make_pod
from tests.scheduler.test_column_journal import (
    WEB_SPREAD,
    WEB_ZONE_TERM,
    _affinity_state,
    _cache,
    _fit_verdicts,
    _handle,
    _pod,
    _running,
    _spread_counts,
)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("cap", [None, 24], ids=["uncapped", "cap-24"])
def test_cached_counts_equal_fresh_ones_with_reads_between_forget_and_assume_again(
    seed: int, cap: int | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    if cap is not None:
        monkeypatch.setattr(columns_module, "_JOURNAL_MAX", cap)
    rng = random.Random(seed)
    cache = _cache(nodes=3)
    handle = _handle(cache)
    spread = PodTopologySpread(handle, PodTopologySpread.defaulted_args({}))
    affinity = InterPodAffinity(handle, InterPodAffinity.defaulted_args({}))
    fit = NodeResourcesFit(handle, NodeResourcesFit.defaulted_args({}))
    constraint, term = WEB_SPREAD, WEB_ZONE_TERM
    incoming = make_pod(
        name="in",
        labels={"app": "web"},
        requests={"cpu": "1500m"},
        spec={"topologySpreadConstraints": [constraint]},
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )
    live: dict[str, PodInfo] = {}
    forgotten: dict[str, PodInfo] = {}  # pods forgotten, to be assumed again as they were
    reads = 0
    for step in range(600):
        name = f"p{rng.randrange(8)}"
        op = rng.random()
        if name in forgotten and name not in live and op < 0.7:
            again = PodInfo(copy.deepcopy(forgotten.pop(name).pod))  # assumed again, same node, same everything
            cache.add_pod(again)
            live[name] = again
        elif name not in live:
            pi = _pod(name, f"n{rng.randrange(3)}", app=rng.choice(["web", "api"]), cpu=rng.choice(["500m", "1"]))
            cache.add_pod(pi)
            live[name] = pi
            forgotten.pop(name, None)
        elif op < 0.35:  # the binding or the kubelet's status write: nothing an aggregate reads changes
            current = live[name]
            live[name] = _running(current) if rng.random() < 0.5 else PodInfo(copy.deepcopy(current.pod))
            cache.add_pod(live[name])
        elif op < 0.5:  # a change aggregates do see
            raw = copy.deepcopy(live[name].pod)
            raw["metadata"]["labels"]["app"] = "api" if raw["metadata"]["labels"]["app"] == "web" else "web"
            live[name] = PodInfo(raw)
            cache.add_pod(live[name])
        else:  # forgotten or deleted
            gone = live.pop(name)
            cache.remove_pod(gone.uid)
            if rng.random() < 0.7:
                forgotten[name] = gone
        if rng.random() < 0.5:
            reads += 1
            pod = PodInfo(copy.deepcopy(incoming))
            cached, fresh = _spread_counts(spread, handle, pod)
            assert cached == fresh, step
            cached, fresh = _affinity_state(affinity, handle, pod)
            assert cached == fresh, step
            got, want = _fit_verdicts(fit, handle, pod)
            assert got == want, step
    assert reads > 200

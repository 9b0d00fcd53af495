"""``kss simulate``'s result document says which release's scheduler produced it."""

from __future__ import annotations

import pytest

from kss_sim.kube.versions import kube_version
from kss_sim.simulation.runner import run_scenario
from tests.simulation.test_gangs_offline import _node, _pod


@pytest.mark.parametrize(("version", "patch_prefix"), [("1.33", "v1.33."), ("1.34", "v1.34."), ("1.36", "v1.36.")])
def test_the_oracle_names_the_release_the_run_was_at(version: str, patch_prefix: str) -> None:
    scenario = {"nodes": [_node("n0")], "pending": [_pod("p0")]}
    document = run_scenario(scenario, "placements", kube_version=kube_version(version))
    assert document["oracle"].startswith(f"kss (Python port of kube-scheduler {patch_prefix}"), document["oracle"]
    assert [r["boundTo"] for r in document["results"]] == ["n0"]

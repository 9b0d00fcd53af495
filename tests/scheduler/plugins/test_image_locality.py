"""ImageLocality: spread-weighted image sizes, clamped to [23 MB, 1000 MB x containers], scaled to 0-100."""

from __future__ import annotations

from typing import Any

from kss_sim.scheduler.framework import CycleState
from kss_sim.scheduler.plugins.image_locality import ImageLocality
from tests.scheduler.factories import make_handle, make_node, make_pod, pod_info

MB = 1024 * 1024


def _node(name: str, images: list[tuple[list[str], int]]) -> dict[str, Any]:
    node = make_node(name=name)
    node["status"]["images"] = [{"names": names, "sizeBytes": size} for names, size in images]
    return node


def _scores(nodes: list[dict[str, Any]], containers: list[str], init: list[str] | None = None) -> dict[str, int]:
    handle = make_handle(nodes=nodes)
    spec: dict[str, Any] = {"containers": [{"name": f"c{i}", "image": im} for i, im in enumerate(containers)]}
    if init:
        spec["initContainers"] = [{"name": f"i{i}", "image": im} for i, im in enumerate(init)]
    pod = pod_info(make_pod(spec=spec))
    infos = handle.snapshot.node_info_list
    scores, st = ImageLocality(handle, {}).score_nodes(CycleState(), pod, infos)
    assert st.is_success()
    return {ni.name: s for ni, s in zip(infos, scores, strict=True)}


def test_score_weights_size_by_share_of_nodes_holding_the_image() -> None:
    nodes = [_node("a", [(["nginx:latest"], 500 * MB)]), _node("b", [(["nginx:latest"], 500 * MB)])]
    nodes += [_node("c", []), _node("d", [])]
    # 500 MB * 2/4 = 250 MB; 100 * (250 - 23) / (1000 - 23) = 22700 / 977 = 23.
    assert _scores(nodes, ["nginx"]) == {"a": 23, "b": 23, "c": 0, "d": 0}


def test_untagged_names_get_latest_but_no_registry_prefix() -> None:
    nodes = [_node("a", [(["docker.io/library/nginx:latest"], 900 * MB)]), _node("b", [(["nginx:latest"], 900 * MB)])]
    # Only b matches "nginx:latest": 900 MB * 1/2 = 450 MB; 100 * (450 - 23) / 977 = 42700 / 977 = 43.
    assert _scores(nodes, ["nginx"]) == {"a": 0, "b": 43}


def test_registry_port_is_not_mistaken_for_a_tag() -> None:
    nodes = [_node("a", [(["localhost:5000/app:latest"], 1023 * MB)])]
    # One node: full size 1023 MB, clamped to 1000 MB -> 100.
    assert _scores(nodes, ["localhost:5000/app"]) == {"a": 100}


def test_max_threshold_grows_with_containers_including_init_containers() -> None:
    nodes = [_node("a", [(["big:1"], 1000 * MB)])]
    assert _scores(nodes, ["big:1"]) == {"a": 100}
    # Two containers: threshold 2000 MB; 100 * (1000 - 23) / (2000 - 23) = 97700 / 1977 = 49.
    assert _scores(nodes, ["big:1", "other:1"]) == {"a": 49}
    # An init container counts as a container and its image counts too: 2000 MB of 2000 MB.
    assert _scores(nodes, ["big:1"], init=["big:1"]) == {"a": 100}


def test_below_min_threshold_scores_zero() -> None:
    nodes = [_node("a", [(["tiny:1"], 23 * MB)])]
    assert _scores(nodes, ["tiny:1"]) == {"a": 0}


def test_image_size_comes_from_the_first_node_listing_it() -> None:
    # kube-scheduler's cache keeps one size per image name: the first node's (300 MB), not node b's 600 MB.
    nodes = [_node("a", [(["app:1"], 300 * MB)]), _node("b", [(["app:1"], 600 * MB)])]
    # 300 MB * 2/2: 100 * (300 - 23) / 977 = 27700 / 977 = 28 on both nodes.
    assert _scores(nodes, ["app:1"]) == {"a": 28, "b": 28}

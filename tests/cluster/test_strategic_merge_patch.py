"""Strategic merge patch directives as ``strategicpatch.StrategicMergePatch`` applies them: ``$patch: replace`` and
``delete`` in maps and lists (``kubectl rollout undo`` of a StatefulSet or DaemonSet sends a template with
``$patch: replace``), ``$retainKeys``, and the directives it refuses."""

from __future__ import annotations

from typing import Any

import pytest

from kss_sim.cluster.admission.patch import PatchError, strategic_merge_patch

POD: dict[str, Any] = {
    "metadata": {"name": "p", "labels": {"app": "a", "tier": "web"}},
    "spec": {
        "containers": [
            {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}]},
            {"name": "b", "image": "b:1"},
        ],
        "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
        "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}},
    },
}


def test_replace_in_a_map_takes_the_patch_map_whole() -> None:
    template = {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "a", "image": "a:0"}]}}
    patched = strategic_merge_patch(POD, {"spec": {"$patch": "replace", **template["spec"]}})
    assert patched["spec"] == template["spec"]  # no container b, no affinity
    assert patched["metadata"] == POD["metadata"]


def test_replace_of_a_stored_template_as_kubectl_rollout_undo_sends_it() -> None:
    sts = {"spec": {"replicas": 3, "template": {"metadata": {"labels": {"x": "1"}, "annotations": {"a": "b"}}}}}
    data = {"spec": {"template": {"metadata": {"labels": {"x": "0"}, "creationTimestamp": None}, "$patch": "replace"}}}
    patched = strategic_merge_patch(sts, data)
    assert patched["spec"] == {
        "replicas": 3,
        "template": {"metadata": {"labels": {"x": "0"}, "creationTimestamp": None}},
    }


def test_delete_in_a_map_leaves_an_empty_map() -> None:
    patched = strategic_merge_patch(POD, {"spec": {"affinity": {"$patch": "delete"}}})
    assert patched["spec"]["affinity"] == {}


def test_delete_of_the_whole_object_is_refused() -> None:
    with pytest.raises(PatchError):
        strategic_merge_patch(POD, {"$patch": "delete"})


def test_unknown_or_merge_directive_in_a_map_is_refused() -> None:
    for directive in ("merge", "bogus"):
        with pytest.raises(PatchError, match=f"unknown patch type: {directive}"):
            strategic_merge_patch(POD, {"spec": {"$patch": directive, "x": 1}})


def test_list_directives_delete_by_merge_key_and_replace_with_the_other_items() -> None:
    deleted = strategic_merge_patch(POD, {"spec": {"containers": [{"name": "b", "$patch": "delete"}]}})
    assert [c["name"] for c in deleted["spec"]["containers"]] == ["a"]
    replaced = strategic_merge_patch(
        POD,
        {
            "spec": {
                "containers": [
                    {"name": "c", "image": "c:1"},
                    {"$patch": "replace"},
                    {"name": "a", "$patch": "delete"},
                ]
            }
        },
    )
    assert replaced["spec"]["containers"] == [{"name": "c", "image": "c:1"}]
    merged = strategic_merge_patch(POD, {"spec": {"containers": [{"name": "a", "image": "a:2"}]}})
    assert merged["spec"]["containers"][0] == {"name": "a", "image": "a:2", "env": [{"name": "X", "value": "1"}]}


def test_list_directives_refused_as_upstream_refuses_them() -> None:
    with pytest.raises(PatchError, match="delete patch type with no merge key defined"):
        strategic_merge_patch(POD, {"spec": {"containers": [{"$patch": "delete"}]}})
    with pytest.raises(PatchError, match="merging lists cannot yet be specified in the patch"):
        strategic_merge_patch(POD, {"spec": {"containers": [{"name": "a", "$patch": "merge"}]}})


def test_retain_keys_clears_the_unlisted_keys_and_requires_the_patched_ones_listed() -> None:
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": None}}}
    assert strategic_merge_patch(POD, patch)["spec"]["strategy"] == {"type": "Recreate"}
    with pytest.raises(PatchError, match="invalid patch format of retainKeys"):
        strategic_merge_patch(POD, {"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": {"maxSurge": 2}}}})
    with pytest.raises(PatchError, match="invalid patch format of retainKeys"):
        strategic_merge_patch(POD, {"spec": {"strategy": {"$retainKeys": "type"}}})

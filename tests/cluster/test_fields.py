"""Field validation's schema: which fields each served kind has, unknown ones found (and dropped) by path."""

from __future__ import annotations

import json
from typing import Any

import pytest

from kss_sim.cluster.admission import decode_types, fields
from kss_sim.cluster.kinds.registry import KINDS
from kss_sim.kube.versions import VERSIONS


def test_schema_file_matches_the_kubernetes_client() -> None:
    # Regenerate with `python -m kss_sim.cluster.admission.fields` after upgrading the client.
    doc = json.loads(fields.SCHEMA_FILE.read_text())
    generated = fields.generate()
    if doc["client"] == fields.client_version():
        assert doc["models"] == generated
    else:  # another client release (a fresh install): every field the file knows still exists there
        for model, known in doc["models"].items():
            if model in generated:
                assert set(known) <= set(generated[model]), model


def test_every_served_kind_has_a_model() -> None:
    assert {k.kind for k in KINDS} == set(fields.ROOT_MODELS)


def test_unknown_fields_are_found_by_path_and_pruned() -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web", "labels": {"any-key": "x"}, "annotations": {"a": "b"}, "owner": "me"},
        "spec": {
            "nodeSelecter": {"zone": "a"},
            "containers": [
                {"name": "c", "image": "i", "resources": {"requests": {"cpu": "1"}}},
                {"name": "d", "image": "i", "imagePullPolicyy": "Never"},
            ],
            "tolerations": [{"key": "k", "efect": "NoSchedule"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"], "weight": 3}]}
            ]}}},
        },
    }  # fmt: skip
    found = fields.unknown_fields("Pod", pod, prune=True)
    assert found == [
        "metadata.owner",
        "spec.nodeSelecter",
        "spec.containers[1].imagePullPolicyy",
        "spec.tolerations[0].efect",
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]"
        ".matchExpressions[0].weight",
    ]
    # Dropped; maps of free keys (labels, annotations, requests) and known fields are kept.
    assert "owner" not in pod["metadata"] and pod["metadata"]["labels"] == {"any-key": "x"}
    assert "nodeSelecter" not in pod["spec"] and pod["spec"]["tolerations"] == [{"key": "k"}]
    assert pod["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1"}}
    assert fields.unknown_fields("Pod", pod, prune=False) == []


def test_known_objects_of_every_kind_have_no_unknown_fields() -> None:
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": "n"},
        "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
        "status": {"capacity": {"cpu": "4"}, "allocatable": {"cpu": "4"}, "images": [{"names": ["a"], "sizeBytes": 1}]},
    }
    pdb = {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": "p"},
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}},
        "status": {"disruptionsAllowed": 0},
    }
    sc = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": "s"},
        "provisioner": "x",
        "volumeBindingMode": "WaitForFirstConsumer",
        "allowedTopologies": [{"matchLabelExpressions": [{"key": "z", "values": ["a"]}]}],
    }
    for kind, obj in (("Node", node), ("PodDisruptionBudget", pdb), ("StorageClass", sc)):
        assert fields.unknown_fields(kind, obj, prune=False) == [], kind
    assert fields.unknown_fields("StorageClass", {**sc, "provisoner": "y"}, prune=False) == ["provisoner"]
    assert fields.unknown_fields("NotServed", {"x": 1}, prune=False) == []


def _every_field(decoding: decode_types.Schema, struct: str, stack: tuple[str, ...]) -> dict[str, Any]:
    """An object of ``struct`` holding every field the version itself has (not borrowed), down to each struct once
    per path (recursive types: JSONSchemaProps)."""
    out: dict[str, Any] = {}
    borrowed = decoding.borrowed.get(struct, frozenset())
    for field, code in decoding.structs[struct].items():
        if field in borrowed:
            continue
        inner = code.lstrip("[{")
        if not inner.startswith("@") or inner[1:] in stack:
            out[field] = "x"  # fields checks names, not values
            continue
        nested = _every_field(decoding, inner[1:], (*stack, inner[1:]))
        out[field] = [nested] if code[0] == "[" else {"k": nested} if code[0] == "{" else nested
    return out


@pytest.mark.parametrize("version", list(VERSIONS))
def test_every_field_a_version_has_is_known_there(version: str) -> None:
    # kube-apiserver decodes every field of its release's types: none may be pruned as unknown (the client's models
    # that kss's field tree comes from lag or lead the release: v1.36's bools of a device attribute).
    decoding = decode_types.schema(version)
    checked = 0
    for info in KINDS:
        root = decoding.roots.get(info.kind)
        if info.custom or root is None or info.kind not in fields.ROOT_MODELS:
            continue
        obj = _every_field(decoding, root, (root,))
        assert fields.unknown_fields(info.kind, obj, prune=False, kube_version=version) == [], info.kind
        checked += 1
    assert checked > 30

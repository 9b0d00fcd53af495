"""OwnedIndex: the orphans a selector may adopt, found through their labels as they change, and what a claim
reads."""

from __future__ import annotations

from kss_sim.controllers.owned import OwnedIndex
from kss_sim.kube.objects import Obj


def _pod(name: str, labels: dict[str, str], *, owner: str | None = None, namespace: str = "default") -> Obj:
    metadata: Obj = {"name": name, "namespace": namespace, "labels": labels}
    if owner is not None:
        metadata["ownerReferences"] = [{"kind": "ReplicaSet", "name": "rs", "uid": owner, "controller": True}]
    return {"metadata": metadata}


def test_orphans_for_narrows_by_every_match_label_and_follows_label_changes_adoption_and_deletion() -> None:
    index = OwnedIndex()
    index.track(_pod("a", {"app": "web", "tier": "front"}), deleted=False)
    index.track(_pod("b", {"app": "web"}), deleted=False)
    index.track(_pod("c", {"app": "db"}), deleted=False)
    index.track(_pod("d", {"app": "web"}, namespace="other"), deleted=False)
    index.track(_pod("e", {"app": "web"}, owner="uid-1"), deleted=False)

    assert index.orphans_for("default", {"matchLabels": {"app": "web"}}) == [("default", "a"), ("default", "b")]
    assert index.orphans_for("default", {"matchLabels": {"app": "web", "tier": "front"}}) == [("default", "a")]
    assert index.orphans_for("default", {"matchLabels": {"app": "none"}}) == []
    # No matchLabels to narrow by: every orphan of the namespace (the caller matches the expressions).
    expressions = {"matchExpressions": [{"key": "app", "operator": "Exists"}]}
    assert index.orphans_for("default", expressions) == [("default", "a"), ("default", "b"), ("default", "c")]

    index.track(_pod("b", {"app": "db"}), deleted=False)  # relabelled
    index.track(_pod("a", {"app": "web", "tier": "front"}, owner="uid-1"), deleted=False)  # adopted
    index.track(_pod("e", {"app": "web"}), deleted=False)  # released
    index.track(_pod("c", {"app": "db"}), deleted=True)

    assert index.orphans_for("default", {"matchLabels": {"app": "web"}}) == [("default", "e")]
    assert index.orphans_for("default", {"matchLabels": {"app": "db"}}) == [("default", "b")]
    assert index.owned_by("uid-1") == [("default", "a")]
    assert index.orphans_for("other", {"matchLabels": {"app": "web"}}) == [("other", "d")]
    # A claim reads what the owner controls in its namespace and the orphans it may adopt.
    index.track(_pod("f", {"app": "web"}, owner="uid-1", namespace="other"), deleted=False)
    assert index.claimable("uid-1", "default", {"matchLabels": {"app": "web"}}) == [("default", "a"), ("default", "e")]

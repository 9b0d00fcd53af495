"""Kubernetes objects as kss holds them: plain dicts decoded from JSON, with types for the metadata it reads by key.

An object stays a plain ``dict`` everywhere (the store, the engine's snapshot, the web's views): ``Obj`` is that
dict. ``ObjectMeta`` and ``OwnerReference`` type the keys of ``metadata`` that kss reads; they are ``total=False``
because a stored object may lack any of them, and they describe the same dicts (no conversion, no copy).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

Obj = dict[str, Any]
"""One Kubernetes object (or any JSON object within one) as decoded JSON."""


class OwnerReference(TypedDict, total=False):
    """``metav1.OwnerReference``: one entry of ``metadata.ownerReferences``."""

    apiVersion: str
    kind: str
    name: str
    uid: str
    controller: bool
    blockOwnerDeletion: bool


class ObjectMeta(TypedDict, total=False):
    """``metav1.ObjectMeta``: an object's ``metadata``."""

    name: str
    generateName: str
    namespace: str
    uid: str
    resourceVersion: str
    generation: int
    creationTimestamp: str
    deletionTimestamp: str
    deletionGracePeriodSeconds: int
    labels: dict[str, str]
    annotations: dict[str, str]
    ownerReferences: list[OwnerReference]
    finalizers: list[str]
    managedFields: list[Obj]


def metadata_of(obj: Mapping[str, Any]) -> ObjectMeta:
    """``obj.metadata``, or an empty one when the object has none (read-only: the dict is the object's own)."""
    meta: ObjectMeta = obj.get("metadata") or ObjectMeta()
    return meta

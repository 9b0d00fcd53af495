"""A CRD's kind served at several versions, converted as the CRD's ``None`` strategy converts: only the
``apiVersion`` changes. The store keeps each object in the storage version; a request through another served
version is written in the storage version and answered in its own."""

from __future__ import annotations

from typing import Any

from kss_sim.cluster.crd.kinds import CustomKindInfo
from kss_sim.cluster.kinds.registry import KindInfo


def to_storage_version(info: KindInfo, body: dict[str, Any]) -> None:
    """A custom object sent in another served version of its CRD, as the CRD's ``None`` conversion makes it: only
    its apiVersion changes (the store keeps the storage version)."""
    if not isinstance(info, CustomKindInfo) or info.version == info.storage_version:
        return
    if body.get("apiVersion") == info.api_version:
        body["apiVersion"] = info.storage_api_version


def converted(info: KindInfo) -> bool:
    """Whether objects of ``info`` are answered in another version than stored: a CRD's kind read through a served
    version that is not its storage version (the ``None`` conversion: only the apiVersion changes)."""
    return isinstance(info, CustomKindInfo) and info.version != info.storage_version


def in_version(info: KindInfo, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as answered through ``info``'s version (see ``converted``)."""
    return {**obj, "apiVersion": info.api_version} if converted(info) else obj

"""A CRD's kind served at several versions, converted as the CRD's strategy says: ``None`` changes only the
``apiVersion``, ``Webhook`` asks the CRD's conversion webhook (``crd.conversion``). The store keeps each object in
the storage version; a request through another served version is written in the storage version and answered in
its own. A patch through another version is applied to the stored form (the two forms agree under ``None``; under
``Webhook`` a patch of fields only the other version has is not converted first, where kube-apiserver converts
the object to the request's version, patches it, and converts it back)."""

from __future__ import annotations

from typing import Any

from kss_sim.cluster.crd.kinds import CustomKindInfo
from kss_sim.cluster.kinds.registry import KindInfo


def to_storage_version(info: KindInfo, body: dict[str, Any]) -> None:
    """A custom object sent in another served version of its CRD, in place, as the CRD's conversion makes it: the
    storage version's apiVersion (``None``), or what the webhook answers (``Webhook``; ``ConversionFailed``)."""
    if not isinstance(info, CustomKindInfo) or info.version == info.storage_version:
        return
    if body.get("apiVersion") != info.api_version:
        return
    if info.conversion is None:
        body["apiVersion"] = info.storage_api_version
        return
    (stored,) = info.conversion.convert([body], info.storage_api_version)
    body.clear()
    body.update(stored)


def converted(info: KindInfo) -> bool:
    """Whether objects of ``info`` are answered in another version than stored: a CRD's kind read through a served
    version that is not its storage version."""
    return isinstance(info, CustomKindInfo) and info.version != info.storage_version


def in_version(info: KindInfo, obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` as answered through ``info``'s version (see ``converted``)."""
    return in_versions(info, [obj])[0] if converted(info) else obj


def in_versions(info: KindInfo, objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stored objects as answered through ``info``'s version: a list's items in one webhook call, as kube-apiserver
    converts a list."""
    if not converted(info) or not objects:
        return objects
    assert isinstance(info, CustomKindInfo)
    if info.conversion is None:
        return [{**obj, "apiVersion": info.api_version} for obj in objects]
    return info.conversion.convert(objects, info.api_version)

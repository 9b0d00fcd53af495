"""OpenAPI v3 component schemas of the built-in kinds, with kube-apiserver's descriptions, for ``kubectl explain``.

kubectl explain reads ``components.schemas`` of a group version's document, finds the schema whose
``x-kubernetes-group-version-kind`` names the kind and follows ``$ref``s down the field path. The schemas are
built from the official client's models (the API types of a release at least as new as v1.35, the same source
as ``field_schema.json``): each field's type, whether it is required and its description. Kinds the client has
no model for (the PodGroup CRD, v1.35's and v1.36's alpha Workloads) get none, so explain says it does not know
them.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from kss_sim.cluster.admission.fields import ABSENT_FIELDS, ROOT_MODELS
from kss_sim.cluster.kinds.registry import (
    AUTOSCALING_V1,
    DRA_V1BETA1,
    DRA_V1BETA2,
    EVENTS_V1,
    POD_GROUP_V1BETA1,
    WORKLOAD_V1BETA1,
    KindInfo,
)

# The client's models of the kinds served from another kind's stored objects (``KindInfo.view``), by apiVersion
# and kind.
VIEW_MODELS = {
    (EVENTS_V1.api_version, EVENTS_V1.kind): "EventsV1Event",
    (AUTOSCALING_V1.api_version, AUTOSCALING_V1.kind): "V1HorizontalPodAutoscaler",
    **{(info.api_version, info.kind): f"V1beta1{info.kind}" for info in DRA_V1BETA1},
    **{(info.api_version, info.kind): f"V1beta2{info.kind}" for info in DRA_V1BETA2},
    # v1.37's Workload API: the client's v1beta1 models (v1alpha2's, over which these are served, it has none).
    **{(info.api_version, info.kind): f"V1beta1{info.api_kind}" for info in (WORKLOAD_V1BETA1, POD_GROUP_V1BETA1)},
}

_LIST = re.compile(r"^[Ll]ist\[(.+)\]$")
_DICT = re.compile(r"^(?:Dict\[str, (.+)\]|dict\(str, (.+)\))$")
_SCALARS: dict[str, dict[str, Any]] = {
    "str": {"type": "string"},
    "int": {"type": "integer", "format": "int64"},
    "float": {"type": "number", "format": "double"},
    "bool": {"type": "boolean"},
    "datetime": {"type": "string", "format": "date-time"},
    "date": {"type": "string", "format": "date"},
    "bytes": {"type": "string", "format": "byte"},
    "object": {"type": "object"},
}
_REF = "#/components/schemas/"


def _client_model(name: str) -> Any:
    import kubernetes.client as models

    return getattr(models, name, None)


def _describe(cls: Any) -> str:
    """The type's own description: the model's docstring up to its generated ``Attributes:`` section."""
    doc = (cls.__doc__ or "").split("Attributes:")[0]
    return " ".join(line.strip() for line in doc.strip().splitlines() if line.strip())


def schema_name(model: str) -> str:
    """The schema's name: the API type's (``V1DeploymentSpec`` -> ``io.k8s.api.DeploymentSpec``; kubectl explain
    shows the last part as the field's type)."""
    return "io.k8s.api." + re.sub(r"^(Core)?V\d+((alpha|beta)\d+)?", "", model)


def _type_schema(type_name: str, todo: list[str], *, nested: bool = False) -> dict[str, Any]:
    if type_name in _SCALARS:
        return dict(_SCALARS[type_name])
    match = _LIST.match(type_name)
    if match:
        return {"type": "array", "items": _type_schema(match.group(1), todo, nested=True)}
    match = _DICT.match(type_name)
    if match:
        value = match.group(1) or match.group(2)
        return {"type": "object", "additionalProperties": _type_schema(value, todo, nested=True)}
    todo.append(type_name)
    ref = {"$ref": _REF + schema_name(type_name)}
    # A field's own reference is wrapped (so a description can stand beside it), as kube-apiserver's are; a list's
    # items or a map's values are the reference itself.
    return ref if nested else {"allOf": [ref]}


def _model_schema(cls: Any, todo: list[str]) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    fields = getattr(cls, "model_fields", {})
    absent = ABSENT_FIELDS.get(cls.__name__, ())
    for attr, type_name in cls.openapi_types.items():
        json_name = cls.attribute_map[attr]
        if json_name in absent:
            continue  # newer than v1.35
        prop = _type_schema(type_name, todo)
        info = fields.get(attr)
        if info is not None and info.description:
            prop["description"] = info.description
        if info is not None and info.is_required():
            required.append(json_name)
        properties[json_name] = prop
    schema: dict[str, Any] = {"type": "object", "description": _describe(cls), "properties": properties}
    if required:
        schema["required"] = required
    return schema


@cache
def _schemas_from(roots: tuple[str, ...]) -> dict[str, Any]:
    schemas: dict[str, Any] = {}
    todo = list(roots)
    while todo:
        name = todo.pop()
        if schema_name(name) in schemas:
            continue
        cls = _client_model(name)
        key = schema_name(name)
        if cls is None or not hasattr(cls, "openapi_types"):
            schemas[key] = {"type": "object"}
            continue
        schemas[key] = _model_schema(cls, todo)
    return schemas


def _model_of(info: KindInfo) -> str | None:
    """The client's model of a kind as this group version serves it (a view's own, not its stored kind's)."""
    return VIEW_MODELS.get((info.api_version, info.kind)) if info.view else ROOT_MODELS.get(info.kind)


def component_schemas(kinds: list[KindInfo]) -> dict[str, Any]:
    """``components.schemas`` for ``kinds`` (one group version's): their models and every model they use, the
    kinds' own schemas tagged with their group, version and kind."""
    roots = {m: k for k in kinds if (m := _model_of(k)) and _client_model(m)}
    schemas = {name: dict(schema) for name, schema in _schemas_from(tuple(sorted(roots))).items()}
    for name, info in roots.items():
        schemas[schema_name(name)]["x-kubernetes-group-version-kind"] = [
            {"group": info.group, "kind": info.api_kind, "version": info.version}
        ]
    return schemas

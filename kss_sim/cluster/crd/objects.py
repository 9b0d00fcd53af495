"""What a write of a custom object goes through after decoding, as apiextensions-apiserver's handler does: unknown
fields pruned, structural defaults applied, then ObjectMeta and the version's schema checked (422 with the field
path). Importing this module also registers the CustomResourceDefinition kind's own defaults and validation in
admission's tables, as the validation modules register theirs.
"""

from __future__ import annotations

from typing import Any

from kss_sim.cluster.admission.defaults import core as defaults
from kss_sim.cluster.admission.validation import core as validation
from kss_sim.cluster.admission.validation.metadata import validate_metadata
from kss_sim.cluster.crd import schema as crd_schema
from kss_sim.cluster.crd.definition import KIND, default_crd, immutable_causes, validate_crd
from kss_sim.cluster.crd.kinds import CustomKindInfo
from kss_sim.cluster.errors import Cause
from kss_sim.cluster.kinds.registry import KindInfo
from kss_sim.kube.objects import Obj

defaults.DEFAULTERS[KIND] = default_crd
validation.VALIDATORS[KIND] = validate_crd
validation.UPDATE_VALIDATORS[KIND] = lambda new, old: validate_crd(new) + immutable_causes(new, old)


def admit(info: CustomKindInfo, body: Obj) -> None:
    """Prune ``body``'s unknown fields and apply its schema's defaults, in place."""
    crd_schema.prune(dict(info.schema), body)
    crd_schema.apply_defaults(dict(info.schema), body)


def unknown_fields(info: CustomKindInfo, body: dict[str, Any]) -> list[str]:
    """The paths of ``body``'s fields the schema does not specify, removed from it (``fieldValidation``)."""
    return crd_schema.prune(dict(info.schema), body)


# Schema violations that leave the object without the shape its CEL rules were written for: the rules are not run
# (apiextensions-apiserver's hasBlockingErr), and one more error says so.
_BLOCKING = frozenset(
    {"FieldValueNotSupported", "FieldValueRequired", "FieldValueTooLong", "FieldValueTooMany", "FieldValueTypeInvalid"}
)
RULES_NOT_CHECKED = Cause(
    "<nil>",
    "FieldValueInvalid",
    'Invalid value: "null": some validation rules were not checked because the object was invalid; '
    "correct the existing errors to complete validation",
)


def validate(info: CustomKindInfo, body: Obj, old: Obj | None = None) -> list[Cause]:
    """ObjectMeta's rules, then every violation of the version's schema, then its CEL rules (``old``: the stored
    object, on updates) unless a schema violation blocks them, all in one list as kube reports them."""
    causes = validate_metadata(body, namespaced=info.namespaced)
    if info.validator is not None:
        causes += info.validator(body)
    if info.validations is not None and info.validations.rules:
        if any(c.reason in _BLOCKING for c in causes):
            causes.append(RULES_NOT_CHECKED)
        else:
            causes += info.validations.causes(body, old)
    return causes


def content_changed(new: Obj, old: Obj) -> bool:
    """Whether a write changes more than metadata and status: what bumps a custom object's generation."""
    keys = (set(new) | set(old)) - {"metadata", "status"}
    return any(new.get(k) != old.get(k) for k in keys)


class CustomResourceRules:
    """This module's admit and validate as admission's pipeline calls them (``CustomResources``), for the kinds
    served from a CustomResourceDefinition."""

    def admit(self, info: KindInfo, body: Obj) -> None:
        """``admit`` of a CRD's kind."""
        assert isinstance(info, CustomKindInfo)  # the pipeline calls this only for ``info.from_definition``
        admit(info, body)

    def validate(self, info: KindInfo, body: Obj, old: Obj | None) -> list[Cause]:
        """``validate`` of a CRD's kind."""
        assert isinstance(info, CustomKindInfo)
        return validate(info, body, old)

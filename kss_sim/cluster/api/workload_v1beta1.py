"""scheduling.k8s.io/v1beta1 (Kubernetes v1.37) served from the v1alpha2 objects the store holds.

The forms and their conversion are ``kss_sim.cluster.kinds.workload_v1beta1``'s; this serves them as views
(``views``): a v1beta1 body's fields that v1beta1 lacks (v1alpha2's ``podGroupTemplateRef`` among them) are
unknown there, and what the store refuses is worded with v1beta1's field paths (``spec.workloadRef.templateName``).
Patches other than apply are applied to the object read in v1beta1 form and written back.
"""

from __future__ import annotations

import re
from typing import Any

from kss_sim.cluster.api.views import Conversion
from kss_sim.cluster.errors import ApiError, BadRequest, Invalid
from kss_sim.cluster.kinds import workload_v1beta1 as forms
from kss_sim.cluster.kinds.registry import BY_KIND, KindInfo

# The fields each v1beta1 object part has: others are unknown there.
_GROUP_FIELDS = frozenset(
    {"schedulingPolicy", "schedulingConstraints", "resourceClaims", "disruptionMode", "priorityClassName", "priority"}
)
_KNOWN = {
    "Workload.spec": frozenset({"controllerRef", "podGroupTemplates", *forms.DROPPED_WORKLOAD_SPEC}),
    "Workload.template": _GROUP_FIELDS | {"name", *forms.DROPPED_GROUP_FIELDS},
    "PodGroup.spec": _GROUP_FIELDS | {"workloadRef", *forms.DROPPED_POD_GROUP_SPEC},
    "PodGroup.workloadRef": frozenset({"workloadName", "templateName"}),
    "disruptionMode": frozenset({"single", "all"}),
}
# v1alpha2's field paths in the store's errors, as v1beta1 names them (longest first).
_ERROR_PATHS = (
    ("spec.podGroupTemplateRef.workload.podGroupTemplateName", "spec.workloadRef.templateName"),
    ("spec.podGroupTemplateRef.workload.workloadName", "spec.workloadRef.workloadName"),
    ("spec.podGroupTemplateRef.workload", "spec.workloadRef"),
    ("spec.podGroupTemplateRef", "spec.workloadRef"),
)


def _pop_unknown_keys(part: Any, known: frozenset[str], path: str, unknown: list[str]) -> None:
    if not isinstance(part, dict):
        return
    for key in [k for k in part if k not in known]:
        part.pop(key)
        unknown.append(f"{path}.{key}")


def _v1beta1_unknown(obj: dict[str, Any], kind: str) -> list[str]:
    """The fields of a v1beta1 body its parts lack, each removed: unknown there, as the strict decoder says."""
    unknown: list[str] = []
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return unknown
    if kind == "Workload":
        _pop_unknown_keys(spec, _KNOWN["Workload.spec"], "spec", unknown)
        for i, template in enumerate(forms.templates(spec)):
            at = f"spec.podGroupTemplates[{i}]"
            _pop_unknown_keys(template, _KNOWN["Workload.template"], at, unknown)
            _pop_unknown_keys(template.get("disruptionMode"), _KNOWN["disruptionMode"], f"{at}.disruptionMode", unknown)
        return unknown
    _pop_unknown_keys(spec, _KNOWN["PodGroup.spec"], "spec", unknown)
    _pop_unknown_keys(spec.get("workloadRef"), _KNOWN["PodGroup.workloadRef"], "spec.workloadRef", unknown)
    _pop_unknown_keys(spec.get("disruptionMode"), _KNOWN["disruptionMode"], "spec.disruptionMode", unknown)
    return unknown


def _renamed_paths(text: str) -> str:
    for old, new in _ERROR_PATHS:
        text = text.replace(old, new)
    return text


def _v1beta1_error(exc: ApiError) -> ApiError:
    """The store's validation error with v1beta1's field paths in place of v1alpha2's (the group and kind are the
    same), and its decoder's error with v1beta1's version and Go types (the structs it can name are named alike in
    both: the parts typed otherwise are refused before conversion); others, such as the view's own unknown fields,
    as they are."""
    if isinstance(exc, BadRequest):
        exc.message = exc.message.replace('version "v1alpha2"', 'version "v1beta1"')
        exc.message = re.sub(r"\bv1alpha2\.(?=[A-Z])", "v1beta1.", exc.message)
        exc.args = (exc.message,)
        return exc
    if not isinstance(exc, Invalid):
        return exc
    exc.message = _renamed_paths(exc.message)
    exc.args = (exc.message,)
    if exc.details and isinstance(exc.details.get("causes"), list):
        causes = [
            {**c, "field": _renamed_paths(str(c.get("field", "")))} if isinstance(c, dict) else c
            for c in exc.details["causes"]
        ]
        exc.details = {**exc.details, "causes": causes}
    return exc


def _conversion(view: KindInfo) -> Conversion:
    return Conversion(
        view=view,
        stored=BY_KIND[view.kind],
        to_view=lambda obj: forms.to_view(view, obj),
        to_stored=lambda obj: forms.to_stored(view, obj),
        pop_unknown=lambda body: _v1beta1_unknown(body, view.api_kind),
        regroup=_v1beta1_error,
    )


CONVERSIONS: tuple[Conversion, ...] = tuple(_conversion(view) for view in forms.VIEWS)

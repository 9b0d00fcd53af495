"""What the workload kinds' validation shares (apps/v1 in ``apps.py``, batch/v1 in ``batch.py``): Go's ``%#v`` of the
values kube-apiserver quotes in its messages, and the rules every pod-template owner follows (a selector that
matches the template's labels, counts that are not negative, int-or-percent values), with upstream's field paths
and messages.
"""

from __future__ import annotations

import re
from typing import Any

from kss_sim.cluster.admission.validation.metadata import qualified_name_errors, selector_errors, validate_labels
from kss_sim.cluster.admission.validation.pod import validate_pod
from kss_sim.cluster.errors import Cause, forbidden, invalid, not_supported, required
from kss_sim.kube.labels import SelectorError, label_selector_matches, validate_label_selector
from kss_sim.kube.objects import Obj

# ---------------------------------------------------------------------------------------------- Go's %#v of values


def go_string_map(values: Any) -> str:
    """A ``map[string]string`` as Go's ``%#v`` prints it (keys sorted)."""
    if not values:
        return "map[string]string(nil)" if values is None else "map[string]string{}"
    inner = ", ".join(f'"{k}":"{v}"' for k, v in sorted(values.items()))
    return f"map[string]string{{{inner}}}"


def go_label_selector(selector: Any) -> str:
    """A ``metav1.LabelSelector`` (dereferenced) as Go's ``%#v`` prints it in a field error."""
    if not isinstance(selector, dict):
        return "null"
    exprs = selector.get("matchExpressions")
    if exprs:
        items = []
        for e in exprs:
            values = e.get("values")
            shown = "[]string(nil)" if not values else "[]string{" + ", ".join(f'"{v}"' for v in values) + "}"
            items.append(
                f'v1.LabelSelectorRequirement{{Key:"{e.get("key", "")}", Operator:"{e.get("operator", "")}", '
                f"Values:{shown}}}"
            )
        expr_text = "[]v1.LabelSelectorRequirement{" + ", ".join(items) + "}"
    else:
        expr_text = "[]v1.LabelSelectorRequirement(nil)"
    return f"v1.LabelSelector{{MatchLabels:{go_string_map(selector.get('matchLabels'))}, MatchExpressions:{expr_text}}}"


def invalid_raw(field: str, shown: str, detail: str) -> Cause:
    """``field.Invalid`` with a value already rendered as Go renders it."""
    return Cause(field, "FieldValueInvalid", f"Invalid value: {shown}: {detail}")


def immutable(field: str, new: Any, old: Any, shown: str | None = None) -> list[Cause]:
    """``ValidateImmutableField``."""
    if new == old:
        return []
    if shown is None:
        shown = "null" if new is None else (f'"{new}"' if isinstance(new, str) else str(new).lower() if isinstance(
            new, bool) else str(new))  # fmt: skip
    return [invalid_raw(field, shown, "field is immutable")]


# ---------------------------------------------------------------------------------------------- shared rules (422)


def nonnegative(path: str, value: Any) -> list[Cause]:
    """``ValidateNonnegativeField``."""
    if isinstance(value, int) and not isinstance(value, bool) and value < 0:
        return [invalid(path, value, "must be greater than or equal to 0")]
    return []


def pod_template_errors(template: Any, path: str) -> list[Cause]:
    """``ValidatePodTemplateSpec`` at ``path``: its labels and annotations, and its spec as the pod validator checks
    a pod's (paths ``{path}.spec...``); ephemeral containers are not allowed in a template."""
    if not isinstance(template, dict):
        return [required(path)]
    meta = template.get("metadata") or {}
    causes = validate_labels(f"{path}.labels", meta.get("labels"))
    for key in meta.get("annotations") or {}:
        causes += qualified_name_errors(f"{path}.annotations", key.lower())
    spec = template.get("spec") or {}
    pod = {"metadata": {"name": "template", "namespace": "template"}, "spec": spec}
    causes += [Cause(f"{path}.{c.field}", c.reason, c.message) for c in validate_pod(pod) if c.field.startswith("spec")]
    if spec.get("ephemeralContainers"):
        causes.append(forbidden(f"{path}.spec.ephemeralContainers", "ephemeral containers not allowed in pod template"))
    return causes


def selector_valid(selector: Any) -> bool:
    """Whether ``LabelSelectorAsSelector`` succeeds."""
    if not isinstance(selector, dict):
        return selector is None
    try:
        validate_label_selector(selector)
    except SelectorError:
        return False
    return True


def template_labels(template: Any) -> dict[str, str]:
    meta = template.get("metadata") if isinstance(template, dict) else None
    labels = meta.get("labels") if isinstance(meta, dict) else None
    return labels if isinstance(labels, dict) else {}


def selector_required_errors(spec: Obj, what: str) -> list[Cause]:
    """The apps kinds' selector: required, a valid label selector, not empty."""
    selector = spec.get("selector")
    if selector is None:
        return [required("spec.selector")]
    causes = selector_errors("spec.selector", selector)
    if isinstance(selector, dict) and not (selector.get("matchLabels") or selector.get("matchExpressions")):
        causes.append(
            invalid_raw("spec.selector", go_label_selector(selector), f"empty selector is invalid for {what}")
        )
    return causes


def selector_matches_template(spec: Obj, path: str = "spec") -> list[Cause]:
    """ "`selector` does not match template `labels`" (a nil or empty selector matches nothing to compare)."""
    selector = spec.get("selector")
    if not isinstance(selector, dict) or not selector_valid(selector):
        return []
    if not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return []
    labels = template_labels(spec.get("template"))
    if label_selector_matches(selector, labels):
        return []
    shown = go_string_map(template_labels(spec.get("template")) or None)
    return [invalid_raw(f"{path}.template.metadata.labels", shown, "`selector` does not match template `labels`")]


def restart_always(spec: Obj, kind: str) -> list[Cause]:
    template_spec = (spec.get("template") or {}).get("spec") or {}
    causes: list[Cause] = []
    if template_spec.get("restartPolicy") != "Always":
        causes.append(not_supported("spec.template.spec.restartPolicy", template_spec.get("restartPolicy"), ["Always"]))
    if template_spec.get("activeDeadlineSeconds") is not None:
        causes.append(
            forbidden("spec.template.spec.activeDeadlineSeconds", f"activeDeadlineSeconds in {kind} is not Supported")
        )
    return causes


_PERCENT = re.compile(r"^[0-9]+%$")


def int_or_percent(path: str, value: Any) -> list[Cause]:
    """``ValidatePositiveIntOrPercent`` and ``IsNotMoreThan100Percent``."""
    if value is None:
        return []
    if isinstance(value, str):
        if not _PERCENT.match(value):
            return [
                invalid(path, value, "a valid percent string must be a numeric string followed by an ending '%' "
                        "(e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")
            ]  # fmt: skip
        if int(value[:-1]) > 100:
            return [invalid(path, value, "must not be greater than 100%")]
        return []
    if isinstance(value, int) and not isinstance(value, bool):
        return nonnegative(path, value)
    return [invalid(path, str(value), "must be an integer or percentage (e.g '5%')")]


def int_or_percent_value(value: Any) -> int:
    if isinstance(value, str) and _PERCENT.match(value):
        return int(value[:-1])
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


_STATUS_COUNTERS = {
    "Deployment": ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                   "unavailableReplicas", "collisionCount"),
    "ReplicaSet": ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"),
    "StatefulSet": ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas",
                    "observedGeneration", "collisionCount"),
    "DaemonSet": ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady",
                  "observedGeneration", "updatedNumberScheduled", "numberAvailable", "numberUnavailable",
                  "collisionCount"),
    "Job": ("active", "succeeded", "failed"),
}  # fmt: skip
_NOT_ABOVE_REPLICAS = {
    "Deployment": ("updatedReplicas", "readyReplicas", "availableReplicas"),
    "ReplicaSet": ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"),
    "StatefulSet": ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"),
}


def validate_status(kind: str, obj: Obj, old: Obj | None = None) -> list[Cause]:
    """The status rules of Validate<Kind>StatusUpdate: counters never negative nor above ``status.replicas``, no
    more available than ready, a collision count never decremented."""
    raw_status = obj.get("status")
    status: Obj = raw_status if isinstance(raw_status, dict) else {}
    causes: list[Cause] = []
    for field in _STATUS_COUNTERS.get(kind, ()):
        causes += nonnegative(f"status.{field}", status.get(field))
    replicas = status.get("replicas") or 0
    for field in _NOT_ABOVE_REPLICAS.get(kind, ()):
        value = status.get(field) or 0
        if isinstance(value, int) and isinstance(replicas, int) and value > replicas:
            causes.append(invalid(f"status.{field}", value, "cannot be greater than status.replicas"))
    if kind in _NOT_ABOVE_REPLICAS:
        available, ready = status.get("availableReplicas") or 0, status.get("readyReplicas") or 0
        if isinstance(available, int) and isinstance(ready, int) and available > ready:
            detail = "cannot be greater than status.readyReplicas" if kind == "StatefulSet" else (
                "cannot be greater than readyReplicas")  # fmt: skip
            causes.append(invalid("status.availableReplicas", available, detail))
    if old is not None:
        new_count = status.get("collisionCount")
        old_count = (old.get("status") or {}).get("collisionCount")
        if isinstance(old_count, int) and (new_count is None or (isinstance(new_count, int) and new_count < old_count)):
            causes.append(invalid("status.collisionCount", new_count or 0, "cannot be decremented"))
    return causes

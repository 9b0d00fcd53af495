"""CustomResourceDefinitions (``apiextensions.k8s.io/v1``) themselves: their validation as kube-apiserver's
apiextensions strategy does it (names, group, scope, versions, exactly one storage version, structural schemas),
their defaults, and the status the apiextensions controllers write once the names are accepted and the kinds
served (``NamesAccepted`` and ``Established`` conditions, ``acceptedNames``).

kss writes that status in the same write as the CRD itself (there is no controller to wait for), so a custom
object can be created as soon as its CRD's create has returned.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from kss_sim.cluster.admission.validation.metadata import dns_label_messages, subdomain_messages, validate_metadata
from kss_sim.cluster.crd import conversion
from kss_sim.cluster.crd.cel import compile_errors
from kss_sim.cluster.crd.schema import structural_causes
from kss_sim.cluster.errors import Cause, invalid, not_supported, required
from kss_sim.kube.objects import Obj

KIND = "CustomResourceDefinition"
_SCOPES = ["Cluster", "Namespaced"]
_PRINTER_TYPES = ["boolean", "date", "integer", "number", "string"]
_KIND_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]*$")


def default_crd(crd: Obj) -> None:
    """SetDefaults for a CRD, in place: names' singular and listKind, the conversion strategy."""
    spec = crd.setdefault("spec", {})
    if not isinstance(spec, dict):
        return
    names = spec.get("names")
    if isinstance(names, dict) and isinstance(names.get("kind"), str):
        names.setdefault("singular", names["kind"].lower())
        names.setdefault("listKind", f"{names['kind']}List")
    spec.setdefault("conversion", {"strategy": "None"})


def validate_crd(crd: Obj) -> list[Cause]:
    """ValidateCustomResourceDefinition: what makes a CRD a 422."""
    causes = validate_metadata(crd, namespaced=False)
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [*causes, required("spec")]
    group = spec.get("group")
    names: dict[str, Any] = spec["names"] if isinstance(spec.get("names"), dict) else {}
    plural = names.get("plural")
    if not group:
        causes.append(required("spec.group"))
    elif not isinstance(group, str) or subdomain_messages(group):
        causes.append(invalid("spec.group", group, "; ".join(subdomain_messages(str(group)))))
    elif "." not in group:
        causes.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    name = str((crd.get("metadata") or {}).get("name") or "")
    if plural and group and name != f"{plural}.{group}":
        causes.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    scope = spec.get("scope")
    if not scope:
        causes.append(required("spec.scope"))
    elif scope not in _SCOPES:
        causes.append(not_supported("spec.scope", scope, _SCOPES))
    causes += _names_causes(names)
    causes += _versions_causes(spec.get("versions"))
    causes += conversion.validate(spec)
    return causes


def _names_causes(names: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for field in ("plural", "singular"):
        value = names.get(field)
        if not value:
            causes.append(required(f"spec.names.{field}"))
        elif dns_label_messages(str(value)):
            causes.append(invalid(f"spec.names.{field}", value, "; ".join(dns_label_messages(str(value)))))
    for field in ("kind", "listKind"):
        value = names.get(field)
        if not value:
            causes.append(required(f"spec.names.{field}"))
        elif not isinstance(value, str) or not _KIND_NAME.match(value):
            causes.append(
                invalid(
                    f"spec.names.{field}",
                    value,
                    "may have mixed case, but should otherwise match: [a-z]([-a-z0-9]*[a-z0-9])?",
                )
            )
    if names.get("kind") and names.get("kind") == names.get("listKind"):
        causes.append(invalid("spec.names.listKind", names["listKind"], "kind and listKind may not be the same"))
    for field in ("shortNames", "categories"):
        for i, value in enumerate(names.get(field) or []):
            if not isinstance(value, str) or dns_label_messages(value):
                causes.append(invalid(f"spec.names.{field}[{i}]", value, "; ".join(dns_label_messages(str(value)))))
    return causes


def _versions_causes(versions: Any) -> list[Cause]:
    if not isinstance(versions, list) or not versions:
        return [
            invalid(
                "spec.versions",
                versions if versions is not None else "null",
                "must have exactly one version marked as storage version",
            )
        ]
    causes: list[Cause] = []
    seen: set[str] = set()
    storage = 0
    served = 0
    for i, version in enumerate(versions):
        path = f"spec.versions[{i}]"
        if not isinstance(version, dict):
            causes.append(invalid(path, version, "must be an object"))
            continue
        name = version.get("name")
        if not name:
            causes.append(required(f"{path}.name"))
        elif not isinstance(name, str) or dns_label_messages(name):
            causes.append(invalid(f"{path}.name", name, "; ".join(dns_label_messages(str(name)))))
        elif name in seen:
            causes.append(invalid("spec.versions", name, "must contain unique version names"))
        seen.add(str(name))
        storage += bool(version.get("storage"))
        served += bool(version.get("served"))
        schema = (
            (version.get("schema") or {}).get("openAPIV3Schema") if isinstance(version.get("schema"), dict) else None
        )
        schema_causes = structural_causes(schema, f"{path}.schema.openAPIV3Schema")
        causes += schema_causes or compile_errors(schema, f"{path}.schema.openAPIV3Schema")
        subresources = version.get("subresources") or {}
        scale = subresources.get("scale") if isinstance(subresources, dict) else None
        if isinstance(scale, dict):
            for field in ("specReplicasPath", "statusReplicasPath"):
                value = scale.get(field)
                if not value:
                    causes.append(required(f"{path}.subresources.scale.{field}"))
                elif not str(value).startswith(".spec." if field == "specReplicasPath" else ".status."):
                    where = ".spec" if field == "specReplicasPath" else ".status"
                    causes.append(
                        invalid(f"{path}.subresources.scale.{field}", value, f"should be a json path under {where}")
                    )
        for j, column in enumerate(version.get("additionalPrinterColumns") or []):
            cpath = f"{path}.additionalPrinterColumns[{j}]"
            if not isinstance(column, dict):
                causes.append(invalid(cpath, column, "must be an object"))
                continue
            for field in ("name", "type", "jsonPath"):
                if not column.get(field):
                    causes.append(required(f"{cpath}.{field}"))
            if column.get("type") and column["type"] not in _PRINTER_TYPES:
                causes.append(not_supported(f"{cpath}.type", column["type"], _PRINTER_TYPES))
    if storage != 1:
        causes.append(
            invalid("spec.versions", _go_list(versions), "must have exactly one version marked as storage version")
        )
    if served == 0:
        causes.append(invalid("spec.versions", _go_list(versions), "must have at least one version marked as served"))
    return causes


def _go_list(versions: list[Any]) -> str:
    return "[" + " ".join(str(v.get("name")) if isinstance(v, dict) else "?" for v in versions) + "]"


def immutable_causes(new: Obj, old: Obj) -> list[Cause]:
    """ValidateCustomResourceDefinitionUpdate's immutable fields: the group, the scope once objects may exist."""
    causes: list[Cause] = []
    new_spec, old_spec = new.get("spec") or {}, old.get("spec") or {}
    if new_spec.get("group") != old_spec.get("group"):
        causes.append(invalid("spec.group", new_spec.get("group"), "field is immutable"))
    if new_spec.get("scope") != old_spec.get("scope"):
        causes.append(invalid("spec.scope", new_spec.get("scope"), "field is immutable"))
    return causes


def established_status(crd: Obj, now: str, conflicts: Iterable[str] = ()) -> Obj:
    """The status the apiextensions controllers write: names accepted (unless another CRD of the group holds one
    of them: ``conflicts``) and, once they are, Established."""
    spec = crd.get("spec") or {}
    names = dict(spec.get("names") or {})
    old = {c.get("type"): c for c in ((crd.get("status") or {}).get("conditions") or []) if isinstance(c, dict)}
    problems = list(conflicts)

    def condition(kind: str, ok: bool, reason: str, message: str) -> Obj:
        status = "True" if ok else "False"
        before = old.get(kind) or {}
        since = before.get("lastTransitionTime") if before.get("status") == status else None
        return {
            "type": kind,
            "status": status,
            "lastTransitionTime": since or now,
            "reason": reason,
            "message": message,
        }

    accepted = not problems
    conditions = [
        condition(
            "NamesAccepted",
            accepted,
            "NoConflicts" if accepted else "NameConflict",
            "no conflicts found" if accepted else "; ".join(problems),
        ),
        condition(
            "Established",
            accepted,
            "InitialNamesAccepted" if accepted else "NotAccepted",
            "the initial names have been accepted" if accepted else "not all names are accepted",
        ),
    ]
    stored = [v["name"] for v in spec.get("versions") or [] if isinstance(v, dict) and v.get("storage")]
    return {
        "conditions": conditions,
        "acceptedNames": names if accepted else {"plural": "", "kind": ""},
        "storedVersions": stored,
    }


def is_established(crd: Obj) -> bool:
    """Whether the CRD's kinds are served (its Established condition is True)."""
    for condition in (crd.get("status") or {}).get("conditions") or []:
        if isinstance(condition, dict) and condition.get("type") == "Established":
            return condition.get("status") == "True"
    return False

"""The YAML editor: starter manifests, and creating, replacing and deleting objects through the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from kss_sim.cluster.errors import ApiError, Invalid
from kss_sim.cluster.kinds.registry import BY_KIND, KINDS, KindInfo
from kss_sim.kube import go_yaml
from kss_sim.kube.objects import Obj
from kss_sim.package_data import TEMPLATES_DIR
from kss_sim.web.formatting import to_yaml
from kss_sim.web.ports import Store


@dataclass(slots=True)
class FieldProblem:
    """One field error shown under the editor."""

    field: str
    message: str


@dataclass(slots=True)
class EditOutcome:
    """The result of submitting YAML: the saved object, or why nothing was saved."""

    ok: bool
    kind: str = ""
    namespace: str = ""
    name: str = ""
    message: str = ""
    reason: str = ""
    code: int = 200
    problems: list[FieldProblem] = field(default_factory=list)
    obj: Obj | None = None


@dataclass(frozen=True, slots=True)
class Target:
    """Which object an edit form replaces."""

    kind: str
    namespace: str
    name: str


STARTER_DIR = TEMPLATES_DIR / "starters"
# The editor's tabs, in this order; each kind's starter manifest is templates/starters/<kind, lower case>.yaml.
STARTER_KINDS = (
    "Node",
    "Pod",
    "Namespace",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "StorageClass",
    "PodDisruptionBudget",
    "PodGroup",
    "CSINode",
    "Event",
)


def load_starters(directory: Path = STARTER_DIR) -> dict[str, str]:
    """Each starter kind's manifest, read from ``directory``."""
    return {kind: (directory / f"{kind.lower()}.yaml").read_text(encoding="utf-8") for kind in STARTER_KINDS}


TEMPLATES: dict[str, str] = load_starters()


def starter(kind: str) -> str:
    """The editor's text for a new object of ``kind``: its starter, else a bare manifest of the kind."""
    text = TEMPLATES.get(kind)
    if text is not None:
        return text
    info = BY_KIND[kind]
    namespace = "\n  namespace: default" if info.namespaced else ""
    return f"apiVersion: {info.api_version}\nkind: {kind}\nmetadata:\n  name: example{namespace}\nspec: {{}}\n"


def editable_kinds() -> list[KindInfo]:
    """Every kind the virtual cluster serves, in registry order."""
    return list(KINDS)


def _problems_of(exc: ApiError) -> list[FieldProblem]:
    if isinstance(exc, Invalid):
        return [FieldProblem(c.field, c.message) for c in exc.causes]
    causes = (exc.details or {}).get("causes") or []
    return [FieldProblem(str(c.get("field") or ""), str(c.get("message") or "")) for c in causes]


def _failure(exc: ApiError, kind: str = "", namespace: str = "", name: str = "") -> EditOutcome:
    return EditOutcome(False, kind, namespace, name, exc.message, exc.reason, exc.code, _problems_of(exc))


def _bad(message: str, field_path: str = "", reason: str = "BadRequest") -> EditOutcome:
    problems = [FieldProblem(field_path, message)] if field_path else []
    return EditOutcome(False, message=message, reason=reason, code=400, problems=problems)


def object_yaml(store: Store, kind: str, namespace: str, name: str) -> str | None:
    """An object's full YAML for the editor, or None."""
    obj = store.get(kind, namespace or None, name)
    if obj is None:
        return None
    obj.get("metadata", {}).pop("managedFields", None)
    return to_yaml(obj)


def save_yaml(store: Store, text: str, *, target: Target | None = None) -> EditOutcome:
    """Create the object in ``text`` (or replace ``target`` with it) through the store, as the API would.

    On any error nothing is saved and the outcome carries the Status message and the field causes.
    """
    try:
        docs = [d for d in go_yaml.load_all(text) if d is not None]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        return _bad(f"the YAML could not be parsed{where}: {problem}", "<document>")
    except RecursionError:  # PyYAML's constructor recurses once per level of nesting
        return _bad("the YAML could not be parsed: exceeded max depth", "<document>")
    if not docs:
        return _bad("the document is empty: write one Kubernetes object", "<document>")
    if len(docs) > 1:
        return _bad(f"found {len(docs)} documents: submit one object at a time", "<document>")
    obj = docs[0]
    if not isinstance(obj, dict):
        return _bad("the document must be a Kubernetes object (a mapping)", "<document>")
    kind = obj.get("kind")
    if not isinstance(kind, str) or not kind:
        return _bad("Required value: every object needs a kind", "kind")
    info = BY_KIND.get(kind)
    if info is None:
        supported = ", ".join(k.kind for k in KINDS)
        return _bad(f'Unsupported value: "{kind}": supported values: {supported}', "kind")
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
    assert isinstance(meta, dict)
    namespace = str(meta.get("namespace") or ("default" if info.namespaced else ""))
    name = str(meta.get("name") or "")
    try:
        if target is None:
            saved = store.create(kind, obj)
        else:
            if (kind, name) != (target.kind, target.name) or (info.namespaced and namespace != target.namespace):
                shown = f"{namespace}/{name}" if info.namespaced else name
                return _bad(
                    f"the object in the editor ({kind} {shown}) is not the one being edited "
                    f"({target.kind} {target.namespace + '/' if target.namespace else ''}{target.name})",
                    "metadata.name",
                )
            saved = store.update(kind, obj)
    except ApiError as exc:
        return _failure(exc, kind, namespace, name)
    smeta = saved.get("metadata") or {}
    return EditOutcome(True, kind, str(smeta.get("namespace") or ""), str(smeta.get("name") or ""), obj=saved)


def delete(store: Store, kind: str, namespace: str, name: str) -> EditOutcome:
    """Delete one object (a node takes its pods with it, as in the store)."""
    if kind not in BY_KIND:
        return _bad(f'Unsupported value: "{kind}"', "kind")
    try:
        store.delete(kind, namespace or None, name)
    except ApiError as exc:
        return _failure(exc, kind, namespace, name)
    return EditOutcome(True, kind, namespace, name)

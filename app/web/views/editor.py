"""The YAML editor: starter manifests, and creating, replacing and deleting objects through the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.cluster.errors import ApiError, Invalid
from app.cluster.kinds import KINDS, KindInfo

Obj = dict[str, Any]


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


STARTER_DIR = Path(__file__).resolve().parents[3] / "templates" / "starters"
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
    "CSINode",
    "Event",
)


def load_starters(directory: Path = STARTER_DIR) -> dict[str, str]:
    """Each starter kind's manifest, read from ``directory``."""
    return {kind: (directory / f"{kind.lower()}.yaml").read_text(encoding="utf-8") for kind in STARTER_KINDS}


TEMPLATES: dict[str, str] = load_starters()


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

"""Table output of a CRD's kind: Name, then its version's ``additionalPrinterColumns`` (or Age when it has none),
each cell read at the column's JSONPath as apiextensions-apiserver's table convertor reads it."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kss_sim.cluster.api.tables import core
from kss_sim.cluster.crd.kinds import CustomKindInfo, PrinterColumn
from kss_sim.kube.objects import Obj

Column = core.Column
_AGE = PrinterColumn("Age", "date", "", "", 0, ".metadata.creationTimestamp")
_NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some resources may "
    "allow a client to request the generation of an appropriate name automatically. Name is primarily intended "
    "for creation idempotence and configuration definition. Cannot be updated."
)
# .field, ['field'], [0], [*], [?(@.key=="value")]: the simple JSONPaths CRDs' printer columns use.
_TOKEN = re.compile(
    r"\.(?P<field>(?:\\.|[^.\[\\])+)"
    r"|\[\?\(@\.(?P<fkey>[\w.-]+)\s*==\s*['\"](?P<fvalue>[^'\"]*)['\"]\)\]"
    r"|\['(?P<quoted>[^']*)'\]"
    r"|\[(?P<index>-?\d+|\*)\]"
)


def evaluate(path: str, obj: Any) -> list[Any]:
    """The values ``path`` (``.status.conditions[?(@.type=="Ready")].status``) finds in ``obj``."""
    path = path.strip()
    if path.startswith("{") and path.endswith("}"):
        path = path[1:-1]
    current = [obj]
    pos = 0
    while pos < len(path):
        match = _TOKEN.match(path, pos)
        if match is None:
            return []
        pos = match.end()
        found: list[Any] = []
        for value in current:
            if match["field"] is not None or match["quoted"] is not None:
                name = match["quoted"] if match["quoted"] is not None else match["field"].replace("\\.", ".")
                if isinstance(value, dict) and name in value:
                    found.append(value[name])
            elif match["index"] is not None and isinstance(value, list):
                if match["index"] == "*":
                    found.extend(value)
                elif -len(value) <= int(match["index"]) < len(value):
                    found.append(value[int(match["index"])])
            elif match["fkey"] is not None and isinstance(value, list):
                found.extend(
                    item for item in value if isinstance(item, dict) and str(item.get(match["fkey"])) == match["fvalue"]
                )
        current = found
    return current


def _go_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict | list):
        import json

        return json.dumps(value, separators=(",", ":"))
    return str(value)


def _cell(column: PrinterColumn, obj: Obj, now: datetime) -> Any:
    found = evaluate(column.json_path, obj)
    if not found or found[0] is None:
        return None
    value = found[0]
    if column.type == "string":
        return _go_string(value)
    if column.type == "integer":
        return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    if column.type == "number":
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None
    if column.type == "boolean":
        return value if isinstance(value, bool) else None
    if column.type == "date" and isinstance(value, str):
        try:
            moment = datetime.strptime(value, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        except ValueError:
            return None
        return core.human_duration((now - moment).total_seconds())
    return None


def columns(info: CustomKindInfo) -> tuple[list[Column], Callable[[Obj, datetime], list[Any]]]:
    """The Table columns of ``info`` and the function that renders one object's row."""
    printer = info.printer_columns or (_AGE,)
    defs: list[Column] = [("Name", "string", 0, _NAME_DESCRIPTION)]
    defs += [(c.name, c.type, c.priority, c.description) for c in printer]

    def row(obj: Obj, now: datetime) -> list[Any]:
        name = str((obj.get("metadata") or {}).get("name", ""))
        return [name, *(_cell(c, obj, now) for c in printer)]

    return defs, row


core.register(
    {
        "CustomResourceDefinition": (
            [
                ("Name", "string", 0, _NAME_DESCRIPTION),
                (
                    "Created At",
                    "date",
                    0,
                    "CreationTimestamp is a timestamp representing the server time when this object was created.",
                ),
            ],
            lambda o, _now: [str(o["metadata"].get("name", "")), o["metadata"].get("creationTimestamp")],
        )
    }
)

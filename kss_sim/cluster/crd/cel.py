"""A CRD schema's ``x-kubernetes-validations``: CEL rules compiled when the CRD is written (a rule that does not
compile is a 422 on the CRD) and run on each custom object at the nodes that carry them, with ``self`` the value
there and, for transition rules, ``oldSelf`` the stored one (run on updates only, where the old value exists), as
apiextensions-apiserver's CEL validator does.

The runtime is cel-expr-python, the one DRA's selectors use, with the same extension libraries; values are passed
as plain JSON (``self`` is dynamic: no type checking against the schema, so a misspelt field fails when it is
evaluated, not when the CRD is written). A failed rule's message is its ``messageExpression``'s value when that
evaluates to a non-empty single line of at most 5 KiB, else its ``message``, else ``failed rule: <rule>``, as
kube's validator falls back. A rule whose estimated cost is surely over kube's limit is refused with the CRD
(``cel_cost``); a rule's runtime cost is not tracked (cel-expr-python has no cost tracker: see
docs/custom-resources.md). Not there: the Kubernetes URL, IP and CIDR libraries.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kss_sim.cluster.crd import cel_cost
from kss_sim.cluster.errors import Cause
from kss_sim.kube.cel_environment import EXTENSIONS

_OLD_SELF = re.compile(r"\boldSelf\b")
# celconfig.MaxEvaluatedMessageExpressionSizeBytes: a longer evaluated message is not used.
MAX_MESSAGE_BYTES = 5 * 1024
_REASONS = {
    "FieldValueInvalid": "FieldValueInvalid",
    "FieldValueForbidden": "FieldValueForbidden",
    "FieldValueRequired": "FieldValueRequired",
    "FieldValueDuplicate": "FieldValueDuplicate",
}


class _Environment:
    """Built once, on first use: ``self`` and ``oldSelf`` dynamic."""

    _lock = threading.Lock()
    _env: Any = None

    @classmethod
    def get(cls) -> Any:
        # Imported on first use, as DRA's selectors import it: most servers never meet a CEL rule.
        from cel_expr_python import cel as celx

        from kss_sim.kube.dra.cel_library import POOL

        with cls._lock:
            if cls._env is None:
                cls._env = celx.NewEnv(
                    POOL,
                    config=celx.NewEnvConfigFromYaml(EXTENSIONS),
                    variables={"self": celx.Type.DYN, "oldSelf": celx.Type.DYN},
                    functions=[],
                )
            return cls._env


@dataclass(frozen=True, slots=True)
class Rule:
    """One compiled ``x-kubernetes-validations`` entry."""

    rule: str
    message: str
    reason: str
    field_path: str
    transition: bool
    program: Any
    message_program: Any = None  # the compiled messageExpression, if any

    def failure_message(self, data: Mapping[str, Any]) -> str:
        """What the 422 says when this rule fails on ``data``."""
        if self.message_program is not None:
            try:
                result = self.message_program.eval(data=data)
            except RuntimeError:
                result = None
            if result is not None and result.type().name() == "STRING":
                text = str(result.value())
                if text.strip() and "\n" not in text and len(text.encode()) <= MAX_MESSAGE_BYTES:
                    return text
        return self.message or f"failed rule: {self.rule}"


def _compile(rule: str) -> Any:
    env = _Environment.get()
    checked = env.compile(rule)
    return env.deserialize(checked.serialize())


def compile_errors(schema: Any, path: str) -> list[Cause]:
    """The rules of ``schema`` (at ``path`` in the CRD) that do not compile, as the CRD's validation reports them."""
    causes: list[Cause] = []
    for node, node_path in _nodes(schema, path):
        for i, entry in enumerate(node.get("x-kubernetes-validations") or []):
            rule = entry.get("rule") if isinstance(entry, dict) else None
            where = f"{node_path}.x-kubernetes-validations[{i}].rule"
            if not isinstance(rule, str) or not rule:
                causes.append(Cause(where, "FieldValueRequired", "Required value"))
                continue
            try:
                checked = _Environment.get().compile(rule)
            except RuntimeError as exc:
                detail = str(exc).split("ERROR: ", 1)[-1].strip()
                causes.append(
                    Cause(where, "FieldValueInvalid", f'Invalid value: "{rule}": compilation failed: {detail}')
                )
            else:
                if cel_cost.refused(checked.serialize(), node):
                    causes.append(Cause(where, "FieldValueForbidden", f"Forbidden: {cel_cost.MESSAGE}"))
            expression = entry.get("messageExpression")
            if isinstance(expression, str) and expression:
                problem = _message_expression_problem(expression)
                if problem:
                    where = f"{node_path}.x-kubernetes-validations[{i}].messageExpression"
                    causes.append(Cause(where, "FieldValueInvalid", f"Invalid value: {_go_rule(entry)}: {problem}"))
    return causes


def _message_expression_problem(expression: str) -> str:
    """Why a ``messageExpression`` cannot be used ("" when it can), in kube's words: it does not compile, or it
    cannot give a string (``self`` being dynamic, an expression of unknown type is let through)."""
    env = _Environment.get()
    try:
        checked = env.compile(expression)
    except RuntimeError as exc:
        issues = "ERROR: " + str(exc).split("ERROR: ", 1)[-1].removesuffix("[INVALID_ARGUMENT]").strip()
        return f"messageExpression compilation failed: {issues}"
    if checked.return_type().name() not in ("STRING", "DYN"):
        return "messageExpression must evaluate to a string"
    return ""


def _go_rule(entry: Mapping[str, Any]) -> str:
    """A rule as Go's ``%#v`` prints the ``apiextensions.ValidationRule`` kube reports as the bad value (its
    pointers as Go prints a set one: an address, which varies in kube)."""

    def quoted(key: str) -> str:
        return json.dumps(str(entry.get(key) or ""), ensure_ascii=False)

    reason = (
        "(*apiextensions.FieldValueErrorReason)(nil)"
        if not entry.get("reason")
        else ("(*apiextensions.FieldValueErrorReason)(0xc000000000)")
    )
    optional = "(*bool)(nil)" if entry.get("optionalOldSelf") is None else "(*bool)(0xc000000000)"
    return (
        f"apiextensions.ValidationRule{{Rule:{quoted('rule')}, Message:{quoted('message')}, "
        f"MessageExpression:{quoted('messageExpression')}, Reason:{reason}, FieldPath:{quoted('fieldPath')}, "
        f"OptionalOldSelf:{optional}}}"
    )


def _nodes(schema: Any, path: str) -> list[tuple[Mapping[str, Any], str]]:
    if not isinstance(schema, Mapping):
        return []
    out: list[tuple[Mapping[str, Any], str]] = [(schema, path)]
    for name, child in (schema.get("properties") or {}).items():
        out += _nodes(child, f"{path}.properties[{name}]")
    if isinstance(schema.get("items"), Mapping):
        out += _nodes(schema["items"], f"{path}.items")
    if isinstance(schema.get("additionalProperties"), Mapping):
        out += _nodes(schema["additionalProperties"], f"{path}.additionalProperties")
    return out


@dataclass(frozen=True, slots=True)
class Validations:
    """A CRD version's rules, compiled, by schema node (the node's ``id`` in the schema it was built from)."""

    rules: Mapping[int, tuple[Rule, ...]]
    schema: Mapping[str, Any]

    def causes(self, obj: Any, old: Any | None) -> list[Cause]:
        """Every rule ``obj`` breaks (``old``: the stored object, for transition rules), with its field path."""
        out: list[Cause] = []
        if self.rules:
            self._walk(self.schema, obj, old, "", out, root=True)
        return out

    def _walk(self, node: Mapping[str, Any], value: Any, old: Any, path: str, out: list[Cause], *, root: bool) -> None:
        if value is None:
            return
        for rule in self.rules.get(id(node), ()):
            if rule.transition and old is None:
                continue
            data = {"self": value, "oldSelf": old} if rule.transition else {"self": value}
            try:
                result = rule.program.eval(data=data)
                ok = result.type().name() == "BOOL" and bool(result.value())
                failure = "" if ok else rule.failure_message(data)
            except RuntimeError as exc:
                failure = str(exc).split(": ", 1)[-1]
            if failure:
                where = path + rule.field_path if rule.field_path else path
                shown = _type_name(node, value)
                text = {
                    "FieldValueForbidden": f"Forbidden: {failure}",
                    "FieldValueRequired": f"Required value: {failure}",
                    "FieldValueDuplicate": f'Duplicate value: "{shown}"',
                }.get(rule.reason, f'Invalid value: "{shown}": {failure}')
                out.append(Cause(where.lstrip(".") or "<nil>", rule.reason, text))
        properties = node.get("properties") or {}
        if isinstance(value, dict):
            for key, child in properties.items():
                if key in value and not (root and key == "metadata"):
                    sub_old = old.get(key) if isinstance(old, dict) else None
                    self._walk(child, value[key], sub_old, f"{path}.{key}", out, root=False)
            extra = node.get("additionalProperties")
            if isinstance(extra, Mapping):
                for key, item in value.items():
                    if key not in properties:
                        sub_old = old.get(key) if isinstance(old, dict) else None
                        self._walk(extra, item, sub_old, f"{path}[{key}]", out, root=False)
        elif isinstance(value, list) and isinstance(node.get("items"), Mapping):
            for i, item in enumerate(value):
                self._walk(node["items"], item, None, f"{path}[{i}]", out, root=False)


def _type_name(node: Mapping[str, Any], value: Any) -> str:
    typ = node.get("type")
    if typ:
        return str(typ)
    return "object" if isinstance(value, dict) else "array" if isinstance(value, list) else type(value).__name__


def compile_validations(schema: Mapping[str, Any]) -> Validations:
    """The rules of a CRD version's schema, compiled (the CRD's validation refused those that do not compile)."""
    rules: dict[int, tuple[Rule, ...]] = {}
    for node, _ in _nodes(schema, ""):
        compiled: list[Rule] = []
        for entry in node.get("x-kubernetes-validations") or []:
            if not isinstance(entry, dict) or not isinstance(entry.get("rule"), str):
                continue
            rule = entry["rule"]
            try:
                program = _compile(rule)
            except RuntimeError:
                continue
            expression = entry.get("messageExpression")
            message_program = None
            if isinstance(expression, str) and expression and not _message_expression_problem(expression):
                message_program = _compile(expression)
            compiled.append(
                Rule(
                    rule,
                    str(entry.get("message") or ""),
                    _REASONS.get(str(entry.get("reason") or ""), "FieldValueInvalid"),
                    str(entry.get("fieldPath") or ""),
                    bool(_OLD_SELF.search(rule)),
                    program,
                    message_program,
                )
            )
        if compiled:
            rules[id(node)] = tuple(compiled)
    return Validations(rules, schema)

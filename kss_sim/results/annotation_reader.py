"""Reading kube-scheduler-simulator's result annotations off a pod another scheduler bound.

``annotations.py`` writes them for kss's own attempts; a debuggable scheduler built with kube-scheduler-simulator's
``simulator/scheduler`` packages writes the same keys after it binds (its store reflector updates the pod). The
shapes, as ``annotations.py`` builds them: plugin -> status text (prefilter-result-status, prescore-result,
reserve-result, permit-result, prebind-result, bind-result), plugin -> node names (prefilter-result), node -> plugin
-> verdict (filter-result, postfilter-result), node -> plugin -> score as a decimal string (score-result,
finalscore-result), and the selected node as a plain string. Older simulators wrote the same keys under
``scheduler-simulator/``; both are read. A value of the wrong shape is a warning naming the key, and that key alone
is left out: the rest of the record stands.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from kss_sim.results import annotations as keys
from kss_sim.scheduler.record import Attempt

LEGACY_PREFIX = "scheduler-simulator/"


@dataclass
class ExternalResults:
    """What a pod's result annotations say of the attempt that bound it (empty maps: the key was absent)."""

    prefilter: dict[str, str] = field(default_factory=dict)
    prefilter_plugin_nodes: dict[str, list[str]] = field(default_factory=dict)
    filter: dict[str, dict[str, str]] = field(default_factory=dict)
    postfilter: dict[str, dict[str, str]] = field(default_factory=dict)
    prescore: dict[str, str] = field(default_factory=dict)
    score: dict[str, dict[str, int]] = field(default_factory=dict)
    final_score: dict[str, dict[str, int]] = field(default_factory=dict)
    reserve: dict[str, str] = field(default_factory=dict)
    permit: dict[str, str] = field(default_factory=dict)
    prebind: dict[str, str] = field(default_factory=dict)
    bind: dict[str, str] = field(default_factory=dict)
    selected_node: str | None = None
    found: list[str] = field(default_factory=list)  # the result keys present (the current prefix's names)
    warnings: list[str] = field(default_factory=list)


class _Shape(ValueError):
    """A value that is not what the key holds."""


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Shape(f"{what} must be a JSON object, not {_json_type(value)}")
    return value


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if value is None:
        return "null"
    return "an object"


def _texts(value: Any) -> dict[str, str]:
    """plugin -> status text."""
    out: dict[str, str] = {}
    for plugin, text in _object(value, "the value").items():
        if not isinstance(text, str):
            raise _Shape(f"{plugin!r} must be a string, not {_json_type(text)}")
        out[plugin] = text
    return out


def _node_lists(value: Any) -> dict[str, list[str]]:
    """plugin -> node names."""
    out: dict[str, list[str]] = {}
    for plugin, names in _object(value, "the value").items():
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise _Shape(f"{plugin!r} must be an array of node names")
        out[plugin] = list(names)
    return out


def _per_node_texts(value: Any) -> dict[str, dict[str, str]]:
    """node -> plugin -> verdict."""
    out: dict[str, dict[str, str]] = {}
    for node, plugins in _object(value, "the value").items():
        try:
            out[node] = _texts(plugins)
        except _Shape as exc:
            raise _Shape(f"node {node!r}: {exc}") from None
    return out


def _score(text: Any) -> int:
    # Upstream formats each score with strconv.FormatInt; a bare JSON integer is taken as well.
    if isinstance(text, int) and not isinstance(text, bool):
        return text
    if isinstance(text, str):
        stripped = text[1:] if text[:1] == "-" else text
        if stripped.isdigit() and stripped.isascii():
            return int(text)
    raise _Shape(f"score {text!r} is not an integer")


def _per_node_scores(value: Any) -> dict[str, dict[str, int]]:
    """node -> plugin -> score."""
    out: dict[str, dict[str, int]] = {}
    for node, plugins in _object(value, "the value").items():
        scores = _object(plugins, f"node {node!r}")
        try:
            out[node] = {plugin: _score(v) for plugin, v in scores.items()}
        except _Shape as exc:
            raise _Shape(f"node {node!r}, {exc}") from None
    return out


_READERS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    keys.PREFILTER_STATUS: ("prefilter", _texts),
    keys.PREFILTER_RESULT: ("prefilter_plugin_nodes", _node_lists),
    keys.FILTER_RESULT: ("filter", _per_node_texts),
    keys.POSTFILTER_RESULT: ("postfilter", _per_node_texts),
    keys.PRESCORE_RESULT: ("prescore", _texts),
    keys.SCORE_RESULT: ("score", _per_node_scores),
    keys.FINALSCORE_RESULT: ("final_score", _per_node_scores),
    keys.RESERVE_RESULT: ("reserve", _texts),
    keys.PERMIT_RESULT: ("permit", _texts),
    keys.PREBIND_RESULT: ("prebind", _texts),
    keys.BIND_RESULT: ("bind", _texts),
}


def _value(annotations: Mapping[str, Any], key: str) -> tuple[str, Any] | None:
    """The annotation under ``key`` or its legacy name: (the name it was found under, its value)."""
    for name in (key, LEGACY_PREFIX + key.removeprefix(keys.PREFIX)):
        if name in annotations:
            return name, annotations[name]
    return None


def read_result_annotations(annotations: Mapping[str, Any] | None) -> ExternalResults:
    """Every result annotation ``annotations`` carries, parsed; each one of the wrong shape is a warning."""
    out = ExternalResults()
    annotations = annotations or {}
    for key, (attr, reader) in _READERS.items():
        hit = _value(annotations, key)
        if hit is None:
            continue
        name, raw = hit
        try:
            if not isinstance(raw, str):
                raise _Shape(f"the value must be a string, not {_json_type(raw)}")
            try:
                decoded = orjson.loads(raw)
            except orjson.JSONDecodeError as exc:
                raise _Shape(f"not JSON ({exc})") from None
            setattr(out, attr, reader(decoded))
            out.found.append(key)
        except _Shape as exc:
            out.warnings.append(f"annotation {name}: {exc}; left out")
    hit = _value(annotations, keys.SELECTED_NODE)
    if hit is not None:
        name, raw = hit
        if isinstance(raw, str):
            out.selected_node = raw or None
            out.found.append(keys.SELECTED_NODE)
        else:
            out.warnings.append(f"annotation {name}: the value must be a string, not {_json_type(raw)}; left out")
    return out


def _ordered_plugins(per_node: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The plugins named anywhere in ``per_node``, in the order first met (the annotations are JSON objects written
    with sorted keys, so this is by name)."""
    seen: dict[str, None] = {}
    for plugins in per_node.values():
        for plugin in plugins:
            seen.setdefault(plugin, None)
    return list(seen)


def fill_attempt(att: Attempt, results: ExternalResults) -> None:
    """Put what the annotations say into ``att``'s record, in the form kss's own attempts have, so the same matrices
    show it. The annotations give raw and final scores but not the weights: the final score is stored as the
    normalized score with weight 1 (the totals and the final-score column are the scheduler's own). PostFilter's
    per-node map has no place in kss's record (its PostFilter record is DefaultPreemption's outcome): the caller
    keeps it beside the attempt."""
    att.prefilter = dict(results.prefilter)
    att.prefilter_plugin_nodes = dict(results.prefilter_plugin_nodes)
    att.prescore = dict(results.prescore) if results.prescore else None
    att.reserve, att.permit = dict(results.reserve), dict(results.permit)
    att.prebind, att.bind = dict(results.prebind), dict(results.bind)
    filter_plugins = _ordered_plugins(results.filter)
    att.filter_plugins = filter_plugins
    att.filter = {node: dict(verdicts) for node, verdicts in results.filter.items()}
    feasible: list[str] = []
    for node, verdicts in results.filter.items():
        failed = next((p for p in filter_plugins if verdicts.get(p, "passed") not in ("passed", "skip")), None)
        if failed is None:
            feasible.append(node)
            continue
        att.stopped_at[node] = failed
        att.filter_fail[node] = f"{failed}: {verdicts[failed]}"
    att.feasible, att.feasible_count = feasible, len(feasible)
    att.num_nodes = len(set(results.filter) | set(results.score) | set(results.final_score))
    att.evaluated_nodes = len(results.filter)
    final = results.final_score or results.score
    score_plugins = _ordered_plugins(results.score) or _ordered_plugins(final)
    for plugin in _ordered_plugins(final):
        if plugin not in score_plugins:
            score_plugins.append(plugin)
    att.score_plugins = score_plugins
    att.weights = dict.fromkeys(score_plugins, 1)
    if not final:
        return
    raw = results.score or final
    nodes = list(dict.fromkeys([*raw, *final]))
    att.score = {n: {p: raw.get(n, {}).get(p, 0) for p in score_plugins} for n in nodes}
    att.normalized_score = {n: {p: final.get(n, {}).get(p, 0) for p in score_plugins} for n in nodes}
    att.final_score = {n: dict(v) for n, v in att.normalized_score.items()}
    att.total = {n: sum(v.values()) for n, v in att.final_score.items()}
    best = max(att.total.values())
    att.selected = sorted(n for n, t in att.total.items() if t == best)

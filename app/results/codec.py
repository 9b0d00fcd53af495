"""Compact storage of one attempt's node × plugin matrices.

A 1,200-node attempt has ~15,000 filter verdicts and ~20,000 scores; stored as JSON dicts that is
~1 MB. Here verdicts become small integers into a table of distinct reason texts and scores become
integer rows, and the whole is zlib-compressed: a few KB per attempt.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

from app.scheduler.cycle import Attempt

PASSED = 0
SKIP = 1
_FIRST_REASON = 2
FORMAT_VERSION = 1


def encode_matrices(att: Attempt) -> bytes:
    """The filter verdicts, where the loop stopped, and raw/normalized scores of ``att``."""
    nodes = list(att.filter)
    for name in att.total or {}:
        if name not in att.filter:
            nodes.append(name)
    plugins = list(att.filter_plugins)
    reasons: dict[str, int] = {}
    rows: list[list[int]] = []
    stopped: list[int] = []
    for node in nodes:
        verdicts = att.filter.get(node, {})
        row = []
        for p in plugins:
            v = verdicts.get(p, "skip")
            if v == "passed":
                row.append(PASSED)
            elif v == "skip":
                row.append(SKIP)
            else:
                row.append(_FIRST_REASON + reasons.setdefault(v, len(reasons)))
        rows.append(row)
        fail = att.filter_fail.get(node)
        stop_plugin = fail.split(":", 1)[0] if fail else None
        stopped.append(plugins.index(stop_plugin) if stop_plugin in plugins else -1)
    score_plugins = [p for p in att.score_plugins if att.score and any(p in s for s in att.score.values())]
    scored = [n for n in nodes if att.score and n in att.score]
    raw = [[(att.score or {})[n].get(p, 0) for p in score_plugins] for n in scored]
    norm = [[(att.normalized_score or {}).get(n, {}).get(p, 0) for p in score_plugins] for n in scored]
    doc = {
        "v": FORMAT_VERSION,
        "nodes": nodes,
        "filterPlugins": plugins,
        "reasons": list(reasons),
        "filter": rows,
        "stopped": stopped,
        "unresolvable": att.unresolvable,
        "scorePlugins": score_plugins,
        "weights": [att.weights.get(p, 1) for p in score_plugins],
        "scoredNodes": scored,
        "raw": raw,
        "normalized": norm,
    }
    return zlib.compress(json.dumps(doc, separators=(",", ":")).encode(), 6)


def decode_matrices(blob: bytes | None) -> dict[str, Any]:
    """Back to readable matrices: ``filter`` node -> plugin -> text, ``stoppedAt``, ``score``, ``finalscore``."""
    if not blob:
        return {"filter": {}, "stoppedAt": {}, "unresolvable": {}, "score": {}, "normalizedscore": {},
                "finalscore": {}, "total": {}, "filterPlugins": [], "scorePlugins": [], "weights": {}}  # fmt: skip
    doc = json.loads(zlib.decompress(blob))
    reasons: list[str] = doc["reasons"]
    plugins: list[str] = doc["filterPlugins"]

    def text(code: int) -> str:
        if code == PASSED:
            return "passed"
        if code == SKIP:
            return "skip"
        return reasons[code - _FIRST_REASON]

    filt: dict[str, dict[str, str]] = {}
    stopped_at: dict[str, str] = {}
    for node, row, stop in zip(doc["nodes"], doc["filter"], doc["stopped"], strict=True):
        if row:
            filt[node] = {p: text(c) for p, c in zip(plugins, row, strict=True)}
        if stop >= 0:
            stopped_at[node] = plugins[stop]
    sp: list[str] = doc["scorePlugins"]
    weights = dict(zip(sp, doc["weights"], strict=True))
    score: dict[str, dict[str, int]] = {}
    normalized: dict[str, dict[str, int]] = {}
    final: dict[str, dict[str, int]] = {}
    total: dict[str, int] = {}
    for node, raw, norm in zip(doc["scoredNodes"], doc["raw"], doc["normalized"], strict=True):
        score[node] = dict(zip(sp, raw, strict=True))
        normalized[node] = dict(zip(sp, norm, strict=True))
        final[node] = {p: n * weights[p] for p, n in zip(sp, norm, strict=True)}
        total[node] = sum(final[node].values())
    return {
        "filter": filt,
        "stoppedAt": stopped_at,
        "unresolvable": doc.get("unresolvable") or {},
        "score": score,
        "normalizedscore": normalized,
        "finalscore": final,
        "total": total,
        "filterPlugins": plugins,
        "scorePlugins": sp,
        "weights": weights,
    }

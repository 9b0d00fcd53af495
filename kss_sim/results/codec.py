"""Compact storage of one attempt's node × plugin matrices.

A 1,200-node attempt has ~15,000 filter verdicts and ~20,000 scores; stored as JSON dicts that is
~1 MB. Here verdicts become small integers into a table of distinct reason texts and scores become
integer rows, and the whole is zlib-compressed: a few KB per attempt.

Two layouts: version 1 (JSON document, built from the attempt's dicts) and version 2 (a short JSON header
followed by the matrices as raw little-endian arrays, column by column, in the smallest integer type that
holds them; built straight from the engine's ``FilterMatrix`` / ``ScoreMatrix``). Both decode alike. Version 2
headers may say ``scoredFeasible`` (the scored nodes are the filter rows that passed, in order: no index array)
and give a normalized-score row as ``"="`` (equal to the plugin's raw row); older version 2 blobs have neither.
Version 2 is written with zstd (magic ``KSS\x03``): five times faster than zlib at the same size, and the
node-name list, in every row, a third of zlib's size; blobs written with zlib (``KSS\x02``) still decode.
"""

from __future__ import annotations

import json
import struct
import threading
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson
import zstandard

from kss_sim.scheduler.record import Attempt, FilterMatrix, ScoreMatrix

PASSED = 0
SKIP = 1
_FIRST_REASON = 2
FORMAT_VERSION = 1
_V2_MAGIC = b"KSS\x02"  # version 2 with zlib (read only)
_V2_ZSTD_MAGIC = b"KSS\x03"  # version 2 with zstd
_LEVEL = 1  # zlib, version 1: level 6 saves ~2 % more at twice the CPU
_ZSTD_LEVEL = 1  # the matrices: ~15 us for ~4 KB (zlib level 1: ~75 us), the same size
_ZSTD_NAMES_LEVEL = 3  # a node-name list is compressed once and stored in every row: smaller is worth it
_zstd = threading.local()  # a compressor is not safe to share between threads (the server's writer, ...)


def _compress(data: bytes, level: int = _ZSTD_LEVEL) -> bytes:
    compressors: dict[int, zstandard.ZstdCompressor] | None = getattr(_zstd, "compressors", None)
    if compressors is None:
        compressors = _zstd.compressors = {}
    compressor = compressors.get(level)
    if compressor is None:
        compressor = compressors[level] = zstandard.ZstdCompressor(level=level)
    return compressor.compress(data)


def _decompress(data: bytes, zstd: bool) -> bytes:
    if not zstd:
        return zlib.decompress(data)
    decompressor: zstandard.ZstdDecompressor | None = getattr(_zstd, "decompressor", None)
    if decompressor is None:
        decompressor = _zstd.decompressor = zstandard.ZstdDecompressor()
    return decompressor.decompress(data)


def encode_matrices(att: Attempt) -> bytes:
    """The filter verdicts, where the loop stopped, and raw/normalized scores of ``att``."""
    pure = att.matrices_only()
    if pure is not None:
        return encode_record(att.filter_plugins, att.score_plugins, *pure)
    return _encode_v1(att)


def _encode_v1(att: Attempt) -> bytes:
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
        if fail and stop_plugin not in plugins:  # a name holding ":" (an extender's, "Extender(<urlPrefix>)")
            stop_plugin = next((p for p in plugins if fail.startswith(p + ": ")), None)
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
    return zlib.compress(json.dumps(doc, separators=(",", ":")).encode(), _LEVEL)


_SAME_AS_RAW = "="  # a normalized-score row equal to the plugin's raw row (stored once)


def _pack(rows: npt.NDArray[Any], parts: list[bytes], same: list[bool] | None = None) -> list[int | str]:
    """Each row of a 2-D array as a constant (an int: every value equal) or a dtype whose bytes go to ``parts``;
    rows flagged in ``same`` as ``_SAME_AS_RAW`` (no bytes)."""
    if not rows.shape[0]:
        return []
    if not rows.shape[1]:
        return [0] * rows.shape[0]
    if rows.dtype == np.uint8:
        # Every non-constant row is stored as <u1: only which rows are constant matters (one comparison).
        firsts = rows[:, 0].tolist()
        constant = (rows == rows[:, :1]).all(axis=1).tolist()
        lows = [v if c else 0 for v, c in zip(firsts, constant, strict=True)]
        highs = [v if c else 255 for v, c in zip(firsts, constant, strict=True)]
    else:
        lows, highs = rows.min(axis=1).tolist(), rows.max(axis=1).tolist()
    spec: list[int | str] = []
    for k, (lo, hi) in enumerate(zip(lows, highs, strict=True)):
        if lo == hi:
            spec.append(int(lo))
        elif same is not None and same[k]:
            spec.append(_SAME_AS_RAW)
        else:
            dt = _dtype_for(lo, hi)
            spec.append(dt)
            row = rows[k]
            parts.append(row.tobytes() if row.dtype.str == dt else row.astype(dt).tobytes())
    return spec


def _pack_cells(fm: FilterMatrix, parts: list[bytes]) -> list[int | str]:
    """``_pack`` of the filter cells (plugin-major); by column when the batch path said which plugins' cells are
    constant (the same spec and bytes)."""
    constant, varying = fm.constant, fm.varying
    if constant is None or not len(fm) or len(constant) != len(fm.plugins):
        return _pack(np.ascontiguousarray(fm.cells.T), parts)  # plugin-major; row scans are much faster contiguous
    if varying is None:
        by_plugin = fm.cells.T
        varying = [by_plugin[k] for k, c in enumerate(constant) if c < 0]
    spec: list[int | str] = []
    columns = iter(varying)
    for c in constant:
        spec += [c] if c >= 0 else _pack(next(columns)[None, :], parts)
    return spec


_BOUNDS = [(dt, int(np.iinfo(np.dtype(dt)).min), int(np.iinfo(np.dtype(dt)).max)) for dt in
           ("<u1", "<i1", "<u2", "<i2", "<u4", "<i4")]  # fmt: skip


def _dtype_for(lo: int, hi: int) -> str:
    for dt, low, high in _BOUNDS:
        if low <= lo and hi <= high:
            return dt
    return "<i8"


def _unpack(
    spec: list[int | str], n: int, data: bytes, pos: int, raw: npt.NDArray[np.int64] | None = None
) -> tuple[npt.NDArray[np.int64], int]:
    out = np.empty((len(spec), n), np.int64)
    for k, s in enumerate(spec):
        if isinstance(s, int):
            out[k] = s
        elif s == _SAME_AS_RAW:
            assert raw is not None
            out[k] = raw[k]
        else:
            dt = np.dtype(s)
            out[k] = np.frombuffer(data, dt, n, pos)
            pos += n * dt.itemsize
    return out, pos


# Compressed JSON of recently seen node-name lists (the snapshot's list is shared by every attempt until the
# nodes change): id -> (the list, kept alive so the id stays its own, the compressed JSON).
_NAME_BLOCKS: dict[int, tuple[Sequence[str], bytes]] = {}
_NAME_BLOCKS_MAX = 4


_EMPTY_NAMES = _compress(b"[]", _ZSTD_NAMES_LEVEL)


def _names_block(names: Sequence[str]) -> bytes:
    hit = _NAME_BLOCKS.get(id(names))
    if hit is not None and hit[0] is names:
        return hit[1]
    block = _compress(json.dumps(list(names), separators=(",", ":")).encode(), _ZSTD_NAMES_LEVEL)
    if len(_NAME_BLOCKS) >= _NAME_BLOCKS_MAX:
        _NAME_BLOCKS.pop(next(iter(_NAME_BLOCKS)))
    _NAME_BLOCKS[id(names)] = (names, block)
    return block


def _rotation_start(idx: npt.NDArray[Any], n: int) -> int | None:
    """``s`` when ``idx`` is ``s, s+1, ... (mod n)``, the order the walk visits nodes in; else None."""
    if not len(idx) or len(idx) > n:
        return None
    start = int(idx[0])
    if int(idx[-1]) != (start + len(idx) - 1) % n:
        # Not a rotation (a PreFilterResult's left-out nodes first, then the walk): known without the pass below
        # over every row (15,000 at SchedulingDaemonset's scale).
        return None
    expected = np.arange(start, start + len(idx), dtype=np.int64) % n
    return start if np.array_equal(idx, expected) else None


def encode_record(
    filter_plugins: Sequence[str], score_plugins: Sequence[str], fm: FilterMatrix | None, sm: ScoreMatrix | None
) -> bytes:
    """Format 2 of an attempt's matrices (``Attempt.matrices_only``) and its profile's filter / score plugins."""
    plugins = list(filter_plugins)
    reasons: list[str] = []
    unres: list[bool] = []
    cells_spec: list[int | str] | None = None  # packed below, after the node names' parts
    stopped: npt.NDArray[Any] = np.zeros(0, np.int64)
    # Node names: the rows of the filter matrix are usually a rotation of the snapshot's node list; that list
    # is stored (compressed once per list) with the rotation, else the row names themselves.
    rows_spec: dict[str, int] | None = None
    row_count = 0
    block = _EMPTY_NAMES
    if fm is not None:
        row_count = len(fm)
        start = fm.rotation if fm.rotation is not None else _rotation_start(fm.idx, len(fm.all_names))
        if start is not None:
            rows_spec = {"start": start, "count": row_count}
            block = _names_block(fm.all_names)
        else:
            block = _compress(json.dumps(fm.nodes, separators=(",", ":")).encode(), _ZSTD_NAMES_LEVEL)
        reasons = list(fm.reasons)
        unres = [bool(u) for u in fm.unresolvable]
        if fm.plugins == plugins:
            if fm.fail.dtype == np.int8:  # -1 (passed) .. 126: the stored values 0 .. 127 as bytes
                stopped = (fm.fail + 1).view(np.uint8)
            else:
                stopped = fm.fail.astype(np.int64) + 1
        else:  # a matrix without plugins (the profile has no filter): every verdict reads "skip"
            cells_spec = [SKIP if row_count else 0] * len(plugins)
            stopped = np.zeros(row_count, np.int64)
    extra: list[str] = []
    kept: list[str] = []
    weights: list[int] = []
    scored_idx = np.zeros(0, np.int64)
    scored_feasible = False  # the scored nodes are the filter rows that passed, in row order
    raw: npt.NDArray[Any] = np.zeros((0, 0), np.int64)
    norm: npt.NDArray[Any] = np.zeros((0, 0), np.int64)
    if sm is not None and len(sm):
        kept = [p for p in score_plugins if p in sm.plugins]
        order = [sm.plugins.index(p) for p in kept]
        weights = [int(sm.weights[k]) for k in order]
        if fm is not None and fm.all_names is sm.all_names and len(fm) and fm.plugins == plugins:
            passed = fm.fail < 0
            scored_feasible = len(sm) == int(np.count_nonzero(passed)) and np.array_equal(sm.idx, fm.idx[passed])
        if scored_feasible:
            scored_idx = np.zeros(0, np.int64)
        elif fm is not None and fm.all_names is sm.all_names and len(fm):
            # Both matrices name rows by positions in the same list: map score rows to filter rows.
            inverse = np.full(max(int(fm.idx.max()), int(sm.idx.max())) + 1, -1, np.int64)
            inverse[fm.idx] = np.arange(len(fm), dtype=np.int64)
            scored_idx = inverse[sm.idx]
        else:
            scored_idx = np.full(len(sm), -1, np.int64)
        missing = np.flatnonzero(scored_idx < 0)
        if len(missing):
            index = {name: i for i, name in enumerate(fm.nodes)} if fm is not None else {}
            sm_nodes = sm.nodes
            for j in missing.tolist():
                name = sm_nodes[j]
                i = index.get(name)
                if i is None:
                    i = index[name] = row_count + len(extra)
                    extra.append(name)
                scored_idx[j] = i
        if order == list(range(len(sm.plugins))):
            raw, norm = sm.raw, sm.normalized
        else:
            raw, norm = sm.raw[order], sm.normalized[order]
    same = (raw == norm).all(axis=1).tolist() if raw.shape[1] else None
    parts: list[bytes] = []
    header = {
        "v": 2,
        "rows": rows_spec,
        "extraNodes": extra,
        "filterRows": row_count,
        "filterPlugins": plugins,
        "reasons": reasons,
        "reasonUnresolvable": unres,
        "scorePlugins": kept,
        "weights": weights,
        "scored": len(sm) if scored_feasible and sm is not None else len(scored_idx),
        "scoredFeasible": scored_feasible,
        "cells": cells_spec if cells_spec is not None else [0] * len(plugins) if fm is None else _pack_cells(fm, parts),
        "stopped": _pack(stopped[None, :], parts),
        "scoredNodes": [] if scored_feasible else _pack(scored_idx[None, :], parts),
        "raw": _pack(raw, parts),
        "normalized": _pack(norm, parts, same),
    }
    head = orjson.dumps(header)
    body = _compress(b"".join([struct.pack("<I", len(head)), head, *parts]))
    return b"".join([_V2_ZSTD_MAGIC, struct.pack("<I", len(block)), block, body])


def _empty() -> dict[str, Any]:
    return {"filter": {}, "stoppedAt": {}, "unresolvable": {}, "score": {}, "normalizedscore": {},
            "finalscore": {}, "total": {}, "filterPlugins": [], "scorePlugins": [], "weights": {}}  # fmt: skip


def decode_matrices(blob: bytes | None) -> dict[str, Any]:
    """Back to readable matrices: ``filter`` node -> plugin -> text, ``stoppedAt``, ``score``, ``finalscore``."""
    if not blob:
        return _empty()
    if blob.startswith(_V2_ZSTD_MAGIC):
        return _decode_v2(blob, zstd=True)
    if blob.startswith(_V2_MAGIC):
        return _decode_v2(blob, zstd=False)
    data = zlib.decompress(blob)
    doc = json.loads(data)
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
    return _with_scores(
        filt,
        stopped_at,
        doc.get("unresolvable") or {},
        plugins,
        doc["scorePlugins"],
        doc["weights"],
        doc["scoredNodes"],
        doc["raw"],
        doc["normalized"],
    )


def _with_scores(
    filt: dict[str, dict[str, str]],
    stopped_at: dict[str, str],
    unresolvable: dict[str, list[str]],
    plugins: list[str],
    sp: list[str],
    weight_list: list[int],
    scored_nodes: list[str],
    raw_rows: list[list[int]],
    norm_rows: list[list[int]],
) -> dict[str, Any]:
    weights = dict(zip(sp, weight_list, strict=True))
    score: dict[str, dict[str, int]] = {}
    normalized: dict[str, dict[str, int]] = {}
    final: dict[str, dict[str, int]] = {}
    total: dict[str, int] = {}
    for node, raw, norm in zip(scored_nodes, raw_rows, norm_rows, strict=True):
        score[node] = dict(zip(sp, raw, strict=True))
        normalized[node] = dict(zip(sp, norm, strict=True))
        final[node] = {p: n * weights[p] for p, n in zip(sp, norm, strict=True)}
        total[node] = sum(final[node].values())
    return {
        "filter": filt,
        "stoppedAt": stopped_at,
        "unresolvable": unresolvable,
        "score": score,
        "normalizedscore": normalized,
        "finalscore": final,
        "total": total,
        "filterPlugins": plugins,
        "scorePlugins": sp,
        "weights": weights,
    }


def _decode_v2(blob: bytes, *, zstd: bool) -> dict[str, Any]:
    pos = len(_V2_MAGIC)
    (block_len,) = struct.unpack_from("<I", blob, pos)
    pos += 4
    listed: list[str] = json.loads(_decompress(blob[pos : pos + block_len], zstd))
    data = _decompress(blob[pos + block_len :], zstd)
    (head_len,) = struct.unpack_from("<I", data, 0)
    h = json.loads(data[4 : 4 + head_len])
    pos = 4 + head_len
    rows_spec = h["rows"]
    if rows_spec is None:
        nodes = listed
    else:
        n, start = len(listed), rows_spec["start"]
        nodes = [listed[(start + i) % n] for i in range(rows_spec["count"])]
    nodes = nodes + h["extraNodes"]
    plugins: list[str] = h["filterPlugins"]
    sp: list[str] = h["scorePlugins"]
    rows, scored = h["filterRows"], h["scored"]
    cells_pm, pos = _unpack(h["cells"], rows, data, pos)
    stopped, pos = _unpack(h["stopped"], rows, data, pos)
    if h.get("scoredFeasible"):
        scored_idx = np.flatnonzero(stopped[0] == 0)[None, :]
    else:
        scored_idx, pos = _unpack(h["scoredNodes"], scored, data, pos)
    raw, pos = _unpack(h["raw"], scored, data, pos)
    norm, pos = _unpack(h["normalized"], scored, data, pos, raw)
    unres_flags: list[bool] = h["reasonUnresolvable"]
    texts = ["passed", "skip", *h["reasons"]]
    filt: dict[str, dict[str, str]] = {}
    unresolvable: dict[str, list[str]] = {}
    stopped_at: dict[str, str] = {}
    for i, (row, stop) in enumerate(zip(cells_pm.T.tolist(), stopped[0].tolist(), strict=True)):
        node = nodes[i]
        if row:
            filt[node] = {p: texts[c] for p, c in zip(plugins, row, strict=True)}
            unres = [p for p, c in zip(plugins, row, strict=True) if c >= _FIRST_REASON and unres_flags[c - 2]]
            if unres:
                unresolvable[node] = unres
        if stop > 0:
            stopped_at[node] = plugins[stop - 1]
    scored_nodes = [nodes[i] for i in scored_idx[0].tolist()]
    return _with_scores(
        filt, stopped_at, unresolvable, plugins, sp, h["weights"], scored_nodes, raw.T.tolist(), norm.T.tolist()
    )

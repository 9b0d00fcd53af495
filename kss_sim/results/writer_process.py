"""The results writer process (``process_writer.py`` starts it): it reads the batches of attempts the scheduling
side writes to its pipe, rebuilds each attempt's matrices as views on what it read, encodes them, counts the
rejections and inserts the rows, one transaction for whatever is waiting; and the wire format both sides share.

Wire format, parent -> child: frames ``<II`` (meta length, body length), a pickled meta, then the body (the
batch's arrays back to back). Child -> parent: acknowledgements ``(seq, errors)`` on a ``multiprocessing`` pipe.
"""

from __future__ import annotations

import math
import os
import pickle
import select
import signal
import struct
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session

from kss_sim.results.codec import encode_record
from kss_sim.results.rows import (
    BEST_TOTAL,
    DETAIL_KEYS,
    SELECTED,
    AttemptRetention,
    details_json,
    matrix_rejections,
    stamp_version,
    table_row,
    write_rows,
)
from kss_sim.scheduler.record import FIRST_REASON, FilterMatrix, ScoreMatrix

AnyArray = npt.NDArray[Any]

FRAME = struct.Struct("<II")
BATCH_BYTES = 1 << 20
NAME_LISTS = 4  # node-name lists the parent remembers (the child keeps twice as many)
# The writer process gets the details most attempts share apart (see ``ProcessWriter._pack``), the others, and
# ``selected`` (unless it is stored as ``BEST_TOTAL``).
SHARED_DETAILS = [
    DETAIL_KEYS.index(k) for k in ("prefilter", "prescore", "reserve", "filterPlugins", "scorePlugins", "weights")
]
OWN_DETAILS = [i for i in range(len(DETAIL_KEYS)) if i not in SHARED_DETAILS and i != SELECTED]
FILTER_PLUGINS, SCORE_PLUGINS = 3, 4  # their positions in the shared values
_ROWS_PER_TRANSACTION = 512


def _read_exact(f: Any, n: int, buf: bytearray | None = None) -> memoryview | None:
    """``n`` bytes from ``f`` (into ``buf`` when given, big enough); None at the end of the stream."""
    view = memoryview(buf)[:n] if buf is not None else memoryview(bytearray(n))
    got = 0
    while got < n:
        k = f.readinto(view[got:])
        if not k:
            return None
        got += k
    return view


def writer_main(
    data: Any, acks: Any, url: str, sqlite_synchronous: str, retention: AttemptRetention, kube_version: str | None
) -> None:
    """The writer process: read batches, encode, insert (one transaction while more batches are waiting)."""
    from kss_sim.db import make_engine, make_session_factory, session_scope

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # see process_writer._sigint_ignored (started from another thread)

    engine = make_engine(url, sqlite_synchronous=sqlite_synchronous)
    factory = make_session_factory(engine)

    def scope() -> AbstractContextManager[Session]:
        return session_scope(factory)

    names: dict[int, list[str]] = {}
    errors: list[str] = []
    rows: list[dict[str, Any]] = []
    body_buf = bytearray(BATCH_BYTES * 2)
    f = os.fdopen(data.fileno(), "rb", buffering=0, closefd=False)

    def write() -> None:
        if rows:
            try:
                stamp_version(rows, kube_version)
                write_rows(scope, rows, retention)
            except Exception as exc:  # the batch is lost; later ones may still be written
                errors.append(f"{type(exc).__name__}: {exc}")
            rows.clear()

    try:
        while True:
            head = _read_exact(f, FRAME.size)
            if head is None:
                break
            meta_len, body_len = FRAME.unpack(head)
            meta_view = _read_exact(f, meta_len)
            if len(body_buf) < body_len:  # reused: a batch's arrays are done with before the next is read
                body_buf = bytearray(body_len)
            body = _read_exact(f, body_len, body_buf)
            if meta_view is None or body is None:
                break
            metas: list[tuple[Any, ...]] = pickle.loads(meta_view)
            pos = 0
            control: tuple[Any, ...] | None = None
            for m in metas:
                kind = m[0]
                try:
                    if kind == "names":
                        names[m[1]] = m[2]
                        while len(names) > 2 * NAME_LISTS:
                            gone = next(iter(names))
                            names.pop(gone)
                    elif kind == "row":
                        rows.append(m[1])
                    elif kind == "attempt":
                        row, pos = _attempt_row(m, body, pos, names)
                        rows.append(row)
                    else:
                        control = m
                except Exception as exc:  # one bad attempt must not stop the rest
                    errors.append(f"{type(exc).__name__}: {exc}")
            # One transaction for everything already waiting (commits cost more than inserts).
            if control is not None or len(rows) >= _ROWS_PER_TRANSACTION or not _readable(f):
                write()
            if control is not None:
                acks.send((control[1], errors))
                errors = []
                if control[0] == "stop":
                    break
        write()
    finally:
        engine.dispose()
    # Everything is committed and acknowledged: skip the interpreter's teardown (tens of ms the caller would wait
    # for in join()).
    os._exit(0)


def _readable(f: Any) -> bool:
    ready, _, _ = select.select([f], [], [], 0)
    return bool(ready)


def _take(body: memoryview, pos: int, spec: tuple[str, tuple[int, ...]]) -> tuple[AnyArray, int]:
    dtype = np.dtype(spec[0])
    shape = spec[1]
    count = math.prod(shape)
    if not count:
        return np.zeros(shape, dtype), pos
    return np.frombuffer(body, dtype, count, pos).reshape(shape), pos + count * dtype.itemsize


def _first_rejections(count: int, constant: list[int], block: AnyArray) -> AnyArray:
    """A filter matrix's ``fail`` from its varying columns (``block``, one row per plugin whose ``constant`` is
    -1): the first plugin (in order) holding a reason."""
    fail = np.full(count, -1, np.int8)
    varying = [k for k, c in enumerate(constant) if c < 0]
    # Assigned last to first so the first one wins.
    for j in range(len(varying) - 1, -1, -1):
        fail[block[j] >= FIRST_REASON] = varying[j]
    return fail


def _attempt_row(
    m: tuple[Any, ...],
    body: memoryview,
    pos: int,
    names: dict[int, list[str]],
) -> tuple[dict[str, Any], int]:
    _, row, own, selected, shared, fm_meta, sm_meta = m
    details: list[Any] = [None] * len(DETAIL_KEYS)
    for i, value in zip(OWN_DETAILS, own, strict=True):
        details[i] = value
    details[SELECTED] = selected
    for i, value in zip(SHARED_DETAILS, shared, strict=False):  # the last shared value is the score matrix's
        details[i] = value
    filter_plugins, score_plugins, same = shared[FILTER_PLUGINS], shared[SCORE_PLUGINS], shared[-1]
    fm = sm = None
    if fm_meta is not None:
        token, rotation, count, plugins, reasons, unresolvable, idx_spec, cells_meta = fm_meta
        all_names = names[token]
        if rotation is None:
            idx, pos = _take(body, pos, idx_spec)
        else:
            idx = (np.arange(rotation, rotation + count, dtype=np.int64)) % max(len(all_names), 1)
        if len(cells_meta) == 2:
            cells, pos = _take(body, pos, cells_meta[0])
            fail, pos = _take(body, pos, cells_meta[1])
            fm = FilterMatrix(all_names, idx, plugins, cells, reasons, unresolvable, fail, rotation)
        else:
            char, constant, block_shape = cells_meta
            block, pos = _take(body, pos, (char, block_shape))
            fail = _first_rejections(count, constant, block)
            columns = list(block)
            fm = FilterMatrix(all_names, idx, plugins, None, reasons, unresolvable, fail, rotation, constant, columns)
    if sm_meta is not None:
        token, plugins, weights, idx_spec, raw_spec, norm_spec, norm_char, selected_from_scores = sm_meta
        if idx_spec is None:
            assert fm is not None
            idx = fm.idx[fm.fail < 0].astype(np.int32)
        else:
            idx, pos = _take(body, pos, idx_spec)
        raw, pos = _take(body, pos, raw_spec)
        normalized, pos = _take(body, pos, norm_spec)
        if same is not None:
            full = np.empty(raw.shape, np.dtype(norm_char))
            j = 0
            for k, eq in enumerate(same):
                if eq:
                    full[k] = raw[k]
                else:
                    full[k] = normalized[j]
                    j += 1
            normalized = full
        sm = ScoreMatrix(names[token], idx, plugins, raw, normalized, np.array(weights, np.int64))
        if selected_from_scores and len(idx):
            details[SELECTED] = BEST_TOTAL
    blob = encode_record(filter_plugins, score_plugins, fm, sm)
    return table_row(row, details_json(details, matrix_rejections(fm)), blob), pos

"""The results writer process for big offline runs: attempts handed over a pipe, encoded and inserted by a child.

The results service's writer thread encodes and inserts attempts beside the scheduling thread, but both want the
GIL: on a 1,200-node cluster encoding an attempt (~0.3 ms) and inserting it cost as much CPU as scheduling it.
:class:`ProcessWriter` moves that work to a child process. The scheduling side only copies what the row needs:
the attempt's scalars and small dicts (pickled, once per batch; values most attempts share are sent once per
batch) and its record matrices as raw array bytes (joined into one buffer per batch, one ``write``); the
node-name list the matrices index is sent once per list, and the best nodes as positions into it. The child
rebuilds the matrices as views on what it read, encodes them (``codec.encode_record``), counts the rejections
from them and inserts the rows, one transaction for whatever is waiting. The pipe is non-blocking: what does
not fit stays queued in memory and is written as the child reads (topped up at every submit), so the scheduling
side waits for the writer only at a flush or stop, or when more than ``_MAX_PENDING_BYTES`` are queued.

Wire format, parent -> child: frames ``<II`` (meta length, body length), a pickled meta, then the body (the
batch's arrays back to back). Child -> parent: acknowledgements ``(seq, errors)`` on a
``multiprocessing`` pipe.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import math
import multiprocessing
import operator
import os
import pickle
import select
import signal
import struct
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import Any

import numpy as np
import numpy.typing as npt
from sqlalchemy.orm import Session

from kss_sim.results.codec import encode_record
from kss_sim.results.rows import (
    BEST_TOTAL,
    DETAIL_KEYS,
    DETAILS,
    SELECTED,
    AttemptRetention,
    attempt_row,
    details_json,
    matrix_rejections,
    row_values,
    stamp_version,
    table_row,
    write_rows,
)
from kss_sim.scheduler.record import FIRST_REASON, Attempt, FilterMatrix, ScoreMatrix

_FRAME = struct.Struct("<II")
_PIPE_BYTES = 4 << 20  # the pipe buffer we ask for (Linux allows /proc/sys/fs/pipe-max-size, 1 MB by default)
# Bytes the scheduling side keeps queued (in memory) when the pipe is full before it waits for the writer.
_MAX_PENDING_BYTES = 256 << 20
_BATCH_ATTEMPTS = 32
_BATCH_BYTES = 1 << 20
_IOV_MAX = os.sysconf("SC_IOV_MAX") if "SC_IOV_MAX" in os.sysconf_names else 1024  # buffers one writev takes
_NAME_LISTS = 4  # node-name lists the parent remembers (the child keeps twice as many)
# The writer process gets the details most attempts share apart (see ``ProcessWriter._pack``), the others, and
# ``selected`` (unless it is stored as ``BEST_TOTAL``).
_SHARED_DETAILS = [
    DETAIL_KEYS.index(k) for k in ("prefilter", "prescore", "reserve", "filterPlugins", "scorePlugins", "weights")
]
_OWN_DETAILS = [i for i in range(len(DETAIL_KEYS)) if i not in _SHARED_DETAILS and i != SELECTED]
_get_shared_details = operator.attrgetter(*(DETAILS[i][1] for i in _SHARED_DETAILS))
_get_own_details = operator.attrgetter(*(DETAILS[i][1] for i in _OWN_DETAILS))
_FILTER_PLUGINS, _SCORE_PLUGINS = 3, 4  # their positions in the shared values


# --- the scheduling side ------------------------------------------------------------------------------------
AnyArray = npt.NDArray[Any]


def _contiguous(a: AnyArray) -> AnyArray:
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


class ProcessWriter:
    """Encodes and inserts attempts in a child process (spawned) writing to the database at ``url``."""

    def __init__(
        self,
        url: str,
        *,
        sqlite_synchronous: str = "FULL",
        retention: AttemptRetention = AttemptRetention(),
        kube_version: str | None = None,
    ) -> None:
        self.url = url
        self.kube_version = kube_version
        self.sqlite_synchronous = sqlite_synchronous
        self.retention = retention
        self.errors: list[str] = []
        self._proc: Any = None
        self._data: Any = None
        self._fd = -1
        self._poll: Any = None
        self._acks: Any = None
        self._lock = threading.Lock()
        self._metas: list[tuple[Any, ...]] = []
        self._arrays: list[AnyArray] = []
        self._bytes = 0
        self._seq = 0
        self._broken = False
        # Frames written only in part (the pipe was full): the rest, as buffers (bytes, arrays, memoryviews).
        self._pending: collections.deque[Any] = collections.deque()
        self._pending_bytes = 0
        # id(list) -> (the list, kept alive so the id stays its own; its token)
        self._names: dict[int, tuple[Sequence[str], int]] = {}
        self._next_token = 0
        self._last_names: tuple[Sequence[str] | None, int] = (None, -1)  # the last hit of ``_names``
        # id(weights array) -> (the array, kept alive so the id stays its own; the same weights as a list)
        self._weights: dict[int, tuple[AnyArray, list[int]]] = {}
        # The shared values of the attempt sent last (see ``_pack``).
        self._shared: tuple[Any, ...] = ()

    def start(self) -> None:
        """Start the writer process (``submit`` starts it too)."""
        with self._lock:
            self._start()

    def _start(self) -> None:
        if self._proc is not None:
            return
        ctx = multiprocessing.get_context("spawn")
        data_r, data_w = ctx.Pipe(duplex=False)
        ack_r, ack_w = ctx.Pipe(duplex=False)
        _widen_pipe(data_w.fileno())
        self._proc = ctx.Process(
            target=_child_main,
            args=(data_r, ack_w, self.url, self.sqlite_synchronous, self.retention, self.kube_version),
            name="kss-results-writer",
            daemon=True,
        )
        with _sigint_ignored():
            self._proc.start()
        data_r.close()
        ack_w.close()
        self._data, self._fd, self._acks = data_w, data_w.fileno(), ack_r
        os.set_blocking(self._fd, False)
        self._poll = select.poll()
        self._poll.register(self._fd, select.POLLOUT)
        self._broken = False

    # Metas: ("names", token, list) | ("attempt", row values, detail values, filter plugins, score plugins,
    # filter meta, score meta) | ("row", row dict) | ("flush", seq) | ("stop", seq). The arrays of "attempt"
    # metas follow in the body, in order.
    def submit(
        self,
        att: Attempt,
        namespace: str,
        pod_name: str,
        pod_uid: str,
        queued_seconds: float,
        run_id: int | None = None,
    ) -> None:
        """Queue one attempt (sent with the next batch); ``run_id``: the replay run it belongs to."""
        with self._lock:
            if self._proc is None:
                self._start()
            try:
                meta, arrays = self._pack(att, namespace, pod_name, pod_uid, queued_seconds, run_id)
            except Exception as exc:  # like the thread writer: the attempt is not recorded, scheduling goes on
                self.errors.append(f"{type(exc).__name__}: {exc}")
                return
            self._metas.append(meta)
            self._arrays += arrays
            self._bytes += sum(a.nbytes for a in arrays)
            if len(self._metas) >= _BATCH_ATTEMPTS or self._bytes >= _BATCH_BYTES:
                self._send()
            elif self._pending:  # keep the pipe topped up: the writer may have read what was in it
                self._drain(block=False)

    def _pack(
        self, att: Attempt, namespace: str, pod_name: str, pod_uid: str, queued_seconds: float, run_id: int | None
    ) -> tuple[tuple[Any, ...], list[AnyArray]]:
        """The meta of one attempt and the arrays that go with it."""
        pure = att.matrices_only()
        if pure is not None and not ((pure[0] is not None and len(pure[0])) or (pure[1] is not None and len(pure[1]))):
            pure = None  # empty matrices: nothing per node to send
        if pure is None:
            # No matrices, or entries written to the record dicts directly: encoded here (rare).
            row = attempt_row(
                att,
                namespace=namespace,
                pod_name=pod_name,
                pod_uid=pod_uid,
                queued_seconds=queued_seconds,
                run_id=run_id,
            )
            return ("row", row), []
        fm, sm = pure
        fm_meta = sm_meta = None
        arrays: list[AnyArray] = []
        same = sm.norm_same if sm is not None else None
        if same is not None and not any(same):
            same = None
        # Values most attempts share (plugin lists, PreFilter/PreScore/Reserve maps, weights, which normalized rows
        # are the raw ones): the tuple sent before when equal, which pickle writes once per batch and then as a
        # two-byte reference. (The maps are built in profile order: equal maps give the same JSON.)
        shared = (*_get_shared_details(att), same)
        if shared == self._shared:
            shared = self._shared
        else:
            self._shared = shared
        if fm is not None:
            rotation = fm.rotation
            if rotation is None:
                arrays.append(_contiguous(fm.idx))
            constant, varying = fm.constant, fm.varying
            if constant is None or varying is None or fm.fail.dtype != np.int8:
                arrays.append(_contiguous(fm.cells))
                arrays.append(_contiguous(fm.fail))
                cells_meta: Any = (_spec(fm.cells), _spec(fm.fail))
            else:
                # Fewer bytes: only the columns where some node was rejected; the child derives ``fail`` (the first
                # column holding a reason).
                arrays += [_contiguous(c) for c in varying]
                char = varying[0].dtype.char if varying else "B"
                cells_meta = (char, constant, (len(varying), len(fm)))
            fm_plugins = shared[_FILTER_PLUGINS] if fm.plugins is att.filter_plugins else fm.plugins
            fm_meta = (
                self._token(fm.all_names), rotation, len(fm), fm_plugins, fm.reasons, fm.unresolvable,
                None if rotation is not None else _spec(fm.idx), cells_meta,
            )  # fmt: skip
        selected_from_scores = False
        if sm is not None:
            # Scored rows that are the filter rows that passed are rebuilt from the filter matrix; normalized rows
            # equal to raw ones are not sent.
            sm_idx = not (sm.feasible_rows and fm is not None and fm.constant is not None)
            if sm_idx:
                arrays.append(_contiguous(sm.idx))
            arrays.append(_contiguous(sm.raw))
            normalized = _contiguous(sm.normalized)
            if same is None:
                arrays.append(normalized)
                norm_spec = _spec(normalized)
            else:
                differ = [k for k, eq in enumerate(same) if not eq]
                arrays += [normalized[k] for k in differ]  # rows of a C-contiguous array: no copy
                norm_spec = (normalized.dtype.char, (len(differ), normalized.shape[1]))
            # The best nodes (often hundreds on a cluster of alike nodes), when the engine took them from these
            # scores (positions into the same name list): not sent, stored as BEST_TOTAL by the child.
            positions = att.selected_positions()
            if positions is not None and positions[0] is sm.all_names:
                selected_from_scores = True
        if sm is not None:
            weights = self._weights.get(id(sm.weights))
            if weights is None or weights[0] is not sm.weights:  # the engine shares one array per plugin list
                if len(self._weights) >= 64:
                    self._weights.clear()
                weights = self._weights[id(sm.weights)] = (sm.weights, sm.weights.tolist())
            sm_plugins = shared[_SCORE_PLUGINS] if sm.plugins is att.score_plugins else sm.plugins
            sm_meta = (
                self._token(sm.all_names), sm_plugins, weights[1], _spec(sm.idx) if sm_idx else None, _spec(sm.raw),
                norm_spec, normalized.dtype.char, selected_from_scores,
            )  # fmt: skip
        columns = row_values(att, namespace, pod_name, pod_uid, queued_seconds, run_id)
        selected = None if selected_from_scores else att.selected
        return ("attempt", columns, _get_own_details(att), selected, shared, fm_meta, sm_meta), arrays

    def _token(self, names: Sequence[str]) -> int:
        """The number ``names`` goes by in the writer process (the list is sent with the first use)."""
        if names is self._last_names[0]:
            return self._last_names[1]
        hit = self._names.get(id(names))
        if hit is not None and hit[0] is names:
            self._last_names = hit
            return hit[1]
        token = self._next_token
        self._next_token += 1
        if len(self._names) >= _NAME_LISTS:
            self._names.pop(next(iter(self._names)))
        self._names[id(names)] = self._last_names = (names, token)
        self._metas.append(("names", token, list(names)))
        return token

    def _send(self, control: tuple[Any, ...] | None = None) -> None:
        metas, arrays, body = self._metas, self._arrays, self._bytes
        if control is not None:
            metas.append(control)
        self._metas, self._arrays, self._bytes = [], [], 0
        if not metas or self._broken:
            return
        try:
            meta = pickle.dumps(metas, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # something in a detail that cannot be copied: the batch is lost
            self.errors.append(f"{type(exc).__name__}: {exc}")
            self._names.clear()  # the lists it introduced never reach the writer
            self._last_names = (None, -1)
            if control is None:
                return
            meta, arrays, body = pickle.dumps([control], protocol=pickle.HIGHEST_PROTOCOL), [], 0
        buffers: list[Any] = [_FRAME.pack(len(meta), body), meta, *arrays]
        size = _FRAME.size + len(meta) + body
        written = 0
        if not self._pending and len(buffers) <= _IOV_MAX and self._poll.poll(0):
            # The pipe has room: the kernel copies straight from the arrays (no joined copy of the batch).
            try:
                written = os.writev(self._fd, buffers)
            except BlockingIOError:
                written = 0
            except OSError as exc:
                self._lost(exc)
                return
            if written == size:
                return
        # The rest waits, as one buffer (the pipe is full: the writer is behind).
        rest = memoryview(b"".join(buffers))[written:]
        self._pending.append(rest)
        self._pending_bytes += len(rest)
        # Write what the pipe takes now; wait for the writer only when it is far behind (or at a flush).
        self._drain(block=control is not None or self._pending_bytes > _MAX_PENDING_BYTES)

    def _drain(self, *, block: bool) -> None:
        """Write queued batches to the pipe; without ``block``, only what it takes now (a cheap poll first: while
        the writer is behind, the pipe stays full)."""
        pending = self._pending
        try:
            while pending:
                if not block and not self._poll.poll(0):
                    return
                head = pending[0]
                try:
                    n = os.write(self._fd, head)
                except BlockingIOError:
                    if not block:
                        return
                    if not self._proc.is_alive():
                        raise BrokenPipeError("the writer process is gone") from None
                    select.select([], [self._fd], [], 1.0)
                    continue
                self._pending_bytes -= n
                if n < len(head):
                    pending[0] = memoryview(head)[n:]
                    if not block:
                        return  # the pipe is full
                else:
                    pending.popleft()
        except OSError as exc:
            self._lost(exc)

    def _lost(self, exc: OSError) -> None:
        """The writer died: what is queued is dropped (its own error, if any, comes with the acknowledgements)."""
        self._broken = True
        self._pending.clear()
        self._pending_bytes = 0
        self.errors.append(f"results writer process: {type(exc).__name__}: {exc}")

    def flush(self) -> None:
        """Block until every attempt submitted so far is written."""
        with self._lock:
            self._round_trip("flush")

    def stop(self) -> None:
        """Write what is queued and end the writer process."""
        with self._lock:
            if not self._round_trip("stop"):
                return
            self._proc.join(timeout=30)
            self._data.close()
            self._acks.close()
            self._proc = None
            self._names.clear()
            self._last_names = (None, -1)

    def _round_trip(self, kind: str) -> bool:
        """Send a ``kind`` control after what is queued and wait for its acknowledgement (False: no writer)."""
        if self._proc is None:
            return False
        self._seq += 1
        self._send((kind, self._seq))
        self._wait(self._seq)
        return True

    def _wait(self, seq: int) -> None:
        while not self._broken:
            if self._acks.poll(0.2):
                try:
                    got, errors = self._acks.recv()
                except EOFError:
                    break
                self.errors.extend(errors)
                if got >= seq:
                    return
            elif not self._proc.is_alive() and not self._acks.poll(0):
                break
        self._broken = True
        self.errors.append(f"results writer process exited (code {self._proc.exitcode}); attempts were lost")


def _spec(a: AnyArray) -> tuple[str, tuple[int, ...]]:
    """How the child reads ``a`` back: its type code (same machine) and shape."""
    return a.dtype.char, a.shape


def _widen_pipe(fd: int) -> None:
    """As big a pipe buffer as allowed: the scheduling side then rarely finds it full (Linux only)."""
    op = getattr(fcntl, "F_SETPIPE_SZ", None)
    if op is None:
        return
    try:
        with open("/proc/sys/fs/pipe-max-size") as f:
            size = min(_PIPE_BYTES, int(f.read()))
    except (OSError, ValueError):
        size = 1 << 20
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, op, size)


# --- the writer process -----------------------------------------------------------------------------------
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


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while the writer process starts, so that it is born ignoring it (an ignored signal stays
    ignored across exec, and Python then installs no KeyboardInterrupt handler). Ctrl-C on a terminal reaches the
    whole process group: the parent decides what happens (it stops the writer once what is queued is written); a
    KeyboardInterrupt in the writer would lose those attempts and print a traceback over the parent's output.
    Only the main thread may set a handler: from another, the writer ignores SIGINT once its own code runs."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def _child_main(
    data: Any, acks: Any, url: str, sqlite_synchronous: str, retention: AttemptRetention, kube_version: str | None
) -> None:
    """The writer process: read batches, encode, insert (one transaction while more batches are waiting)."""
    from kss_sim.db import make_engine, make_session_factory, session_scope

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # see _sigint_ignored (a writer started from another thread)

    engine = make_engine(url, sqlite_synchronous=sqlite_synchronous)
    factory = make_session_factory(engine)

    def scope() -> AbstractContextManager[Session]:
        return session_scope(factory)

    names: dict[int, list[str]] = {}
    errors: list[str] = []
    rows: list[dict[str, Any]] = []
    body_buf = bytearray(_BATCH_BYTES * 2)
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
            head = _read_exact(f, _FRAME.size)
            if head is None:
                break
            meta_len, body_len = _FRAME.unpack(head)
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
                        while len(names) > 2 * _NAME_LISTS:
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
    for i, value in zip(_OWN_DETAILS, own, strict=True):
        details[i] = value
    details[SELECTED] = selected
    for i, value in zip(_SHARED_DETAILS, shared, strict=False):  # the last shared value is the score matrix's
        details[i] = value
    filter_plugins, score_plugins, same = shared[_FILTER_PLUGINS], shared[_SCORE_PLUGINS], shared[-1]
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

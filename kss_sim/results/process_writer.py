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

The child and the wire format both sides share are ``writer_process.py``'s; this module is the scheduling side.
"""

from __future__ import annotations

import collections
import contextlib
import fcntl
import multiprocessing
import operator
import os
import pickle
import select
import signal
import threading
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from kss_sim.results.rows import (
    DETAILS,
    AttemptRetention,
    attempt_row,
    row_values,
)
from kss_sim.results.writer_process import (
    BATCH_BYTES,
    FILTER_PLUGINS,
    FRAME,
    NAME_LISTS,
    OWN_DETAILS,
    SCORE_PLUGINS,
    SHARED_DETAILS,
    AnyArray,
    writer_main,
)
from kss_sim.scheduler.record import Attempt

_PIPE_BYTES = 4 << 20  # the pipe buffer we ask for (Linux allows /proc/sys/fs/pipe-max-size, 1 MB by default)
# Bytes the scheduling side keeps queued (in memory) when the pipe is full before it waits for the writer.
_MAX_PENDING_BYTES = 256 << 20
_BATCH_ATTEMPTS = 32
_IOV_MAX = os.sysconf("SC_IOV_MAX") if "SC_IOV_MAX" in os.sysconf_names else 1024  # buffers one writev takes
_get_shared_details = operator.attrgetter(*(DETAILS[i][1] for i in SHARED_DETAILS))
_get_own_details = operator.attrgetter(*(DETAILS[i][1] for i in OWN_DETAILS))


# --- the scheduling side ------------------------------------------------------------------------------------


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
            target=writer_main,
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
            if len(self._metas) >= _BATCH_ATTEMPTS or self._bytes >= BATCH_BYTES:
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
            fm_plugins = shared[FILTER_PLUGINS] if fm.plugins is att.filter_plugins else fm.plugins
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
            sm_plugins = shared[SCORE_PLUGINS] if sm.plugins is att.score_plugins else sm.plugins
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
        if len(self._names) >= NAME_LISTS:
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
        buffers: list[Any] = [FRAME.pack(len(meta), body), meta, *arrays]
        size = FRAME.size + len(meta) + body
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

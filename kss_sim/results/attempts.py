"""Recording scheduling attempts and reading them back.

The scheduler hands each finished :class:`Attempt` to :meth:`ResultsService.submit`; a writer
thread encodes and inserts them in batches, so recording costs the scheduling loop almost nothing. Given a
``writer_url`` the service writes through a child process instead (``process_writer.ProcessWriter``:
encoding and inserting then run on another core, without the GIL of the scheduling process), which is what
``kss simulate --record-db`` uses. Given a ``shared_commit`` (``kss serve``: the cluster store), the writer thread
still builds the rows but hands their insert to the store's committer, so the database file has one writer.
Reads decode the compact matrices and page, sort and filter them for the API and the web UI.
"""

from __future__ import annotations

import json
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kss_sim.results.codec import decode_matrices
from kss_sim.results.models import SchedulingAttempt
from kss_sim.results.process_writer import ProcessWriter
from kss_sim.results.repository import ResultsRepository
from kss_sim.results.rows import (
    AttemptRetention,
    SessionFactory,
    attempt_row,
    resolve_selected,
    stamp_version,
    write_rows,
    write_rows_on,
)
from kss_sim.results.shared_commit import SharedCommit
from kss_sim.scheduler.record import Attempt
from kss_sim.web.ports import ATTEMPT_SORTS, AttemptDetail, AttemptQuery, AttemptSummary, MatrixRow, ShadowRow


def _summary(row: SchedulingAttempt) -> AttemptSummary:
    details = json.loads(row.details)
    return {
        "attempt": row.attempt,
        "cycle": row.cycle,
        "profile": row.profile,
        "startedAt": row.started_at,
        "durationSeconds": row.duration_seconds,
        "queuedSeconds": row.queued_seconds,
        "result": row.result,
        "boundTo": row.bound_to,
        "boundBy": details.get("boundBy") if row.bound_to else None,
        "nominatedNode": row.nominated_node,
        "message": row.message,
        "nodes": row.node_count,
        "feasibleNodes": row.feasible_count,
        "rejections": details.get("rejections") or {},
        "kubeVersion": row.kube_version,
        "scheduledBy": row.scheduled_by,
        "shadowAgrees": row.shadow_agrees,
        # Already decoded: the gang page reads a gang's preemptions from its members' lists without their matrices.
        "victims": details.get("victims") or [],
        "podGroup": details.get("podGroup"),
    }


@dataclass(frozen=True, slots=True)
class _Tie:
    """selectHost's choice in an attempt: the nodes that shared the best total and the one it picked."""

    nodes: list[str] | None  # every node with the best total, by name (None: no node was selected)
    winner: str | None
    rule: str | None  # how a tie was broken: "random" (kube-scheduler's reservoir sampling) or "name"
    best_total: int | None

    @property
    def selected(self) -> list[str] | None:
        """The API's ``selected``: the picked node alone (empty when an older record does not say which)."""
        if self.nodes is None and self.winner is None:
            return None
        return [self.winner] if self.winner else []

    @property
    def shared(self) -> frozenset[str]:
        """The nodes that tied with others for the best total (none when one node had it alone)."""
        return frozenset(self.nodes) if self.nodes and len(self.nodes) > 1 else frozenset()


def _tie(details: dict[str, Any], totals: dict[str, int], bound_to: str | None) -> _Tie:
    nodes = resolve_selected(details.get("selected"), totals)
    # Records from before suggestedHost was kept name the pick only where it was bound or held in Permit.
    winner = details.get("suggestedHost") or bound_to or (details.get("permitWait") or {}).get("node")
    if winner is None and nodes is not None and len(nodes) == 1:
        winner = nodes[0]
    # kss serve always draws at random; older records did not say (kss simulate breaks ties by name).
    rule = (details.get("tieBreak") or "random") if nodes and len(nodes) > 1 else None
    return _Tie(nodes, winner, rule, totals.get(nodes[0]) if nodes else None)


DECODED_ATTEMPTS_KEPT = 8  # decoded attempts kept for pages that read one attempt more than once
# Pods whose attempt count is kept in memory, the most recently scheduled; an older one's is read back from the
# database when it is scheduled again (a server churning pods would otherwise keep a count per pod ever seen).
ATTEMPT_COUNTS_KEPT = 50_000


def _counter_key(namespace: str, pod_name: str) -> str:
    return f"{namespace}/{pod_name}"


class ResultsService:
    """Records attempts off the scheduling thread and serves them back."""

    def __init__(
        self,
        session_scope: SessionFactory,
        *,
        retention: AttemptRetention = AttemptRetention(),
        batch_size: int = 256,
        writer_url: str | None = None,
        sqlite_synchronous: str = "FULL",
        shared_commit: SharedCommit | None = None,
        kube_version: str | None = None,
    ) -> None:
        """``writer_url``: write through a child process connected to this database (the one ``session_scope``
        opens, already migrated) instead of a thread. ``shared_commit``: insert each batch in the transactions of
        this committer, which writes to the same database as ``session_scope`` (the thread still builds the rows).
        ``kube_version``: the Kubernetes version every attempt recorded was scheduled at (``1.35``)."""
        self._session_scope = session_scope
        self.kube_version = kube_version
        self._shared_commit = shared_commit
        self.retention = retention
        self.batch_size = batch_size
        self._process = (
            ProcessWriter(
                writer_url, sqlite_synchronous=sqlite_synchronous, retention=retention, kube_version=kube_version
            )
            if writer_url is not None
            else None
        )
        self._queue: queue.Queue[tuple[Attempt, str, str, str, float, int | None] | None] = queue.Queue()
        self._thread: threading.Thread | None = None
        # "namespace/name" -> attempts, least recently numbered first. One string a pod (neither part holds a "/"):
        # a tuple and the name beside it were ~0.2 kB a pod, this ~0.14 kB (tracemalloc).
        self._counters: OrderedDict[str, int] | None = None
        self._counters_complete = True  # every pod with recorded attempts has its count above: a miss means none
        self._counter_lock = threading.Lock()
        # row id -> (matrices bytes, details text, decoded details, decoded matrices), least recently used first
        self._decoded_cache: OrderedDict[int, tuple[bytes | None, str, dict[str, Any], dict[str, Any]]] = OrderedDict()
        self._decoded_lock = threading.Lock()
        self._errors: list[str] = []
        # Called by ``flush`` first: attempts made elsewhere (the scheduler's own process) recorded before it returns.
        self.before_flush: Callable[[], None] | None = None

    def memory_counts(self) -> dict[str, int]:
        """The attempts waiting to be written, the pods counted, the decoded rows cached: for a memory census."""
        return {
            "results_queued": self._queue.qsize(),
            "results_counters": len(self._counters or ()),
            "results_decoded_cache": len(self._decoded_cache),
        }

    # --- writing --------------------------------------------------------------------------------
    @property
    def errors(self) -> list[str]:
        """Errors of the writer (an attempt that could not be recorded), oldest first."""
        if self._process is not None:
            return self._errors + self._process.errors
        return self._errors

    def start(self) -> None:
        if self._process is not None:
            self._process.start()
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._writer, name="results-writer", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop()
            return
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(timeout=30)
            self._thread = None

    def next_attempt_number(self, namespace: str, pod_name: str) -> int:
        """Attempts are numbered per pod, continuing across restarts."""
        with self._counter_lock:
            counters = self._counters
            if counters is None:
                with self._session_scope() as session:
                    counts = ResultsRepository(session).attempt_counts()
                    counters = self._counters = OrderedDict((_counter_key(*key), n) for key, n in counts.items())
                self._trim_counters(counters)
            key = _counter_key(namespace, pod_name)
            known = counters.pop(key, None)
            if known is None and not self._counters_complete:
                with self._session_scope() as session:
                    known = ResultsRepository(session).max_attempt(namespace, pod_name)
            n = (known or 0) + 1
            counters[key] = n
            self._trim_counters(counters)
            return n

    def number_rows(self, rows: list[dict[str, Any]]) -> None:
        """Number rows built elsewhere without their attempt number (the scheduler's own process sends them in the
        order its attempts were made): each pod's next, as ``next_attempt_number`` numbers them."""
        for row in rows:
            row["attempt"] = self.next_attempt_number(row["namespace"], row["pod_name"])

    def _trim_counters(self, counters: OrderedDict[str, int]) -> None:
        while len(counters) > ATTEMPT_COUNTS_KEPT:
            counters.popitem(last=False)
            self._counters_complete = False

    def submit(
        self,
        att: Attempt,
        *,
        namespace: str,
        pod_name: str,
        pod_uid: str,
        queued_seconds: float = 0.0,
        run_id: int | None = None,
    ) -> None:
        """Queue an attempt for recording (returns at once); ``run_id``: the replay run it belongs to (None: the
        live cluster)."""
        if self._process is not None:
            self._process.submit(att, namespace, pod_name, pod_uid, queued_seconds, run_id)
            return
        self._queue.put((att, namespace, pod_name, pod_uid, queued_seconds, run_id))
        if self._thread is None:
            self.start()

    def flush(self) -> None:
        """Block until everything submitted so far is written."""
        if self.before_flush is not None:
            self.before_flush()
        if self._process is not None:
            self._process.flush()
            return
        self._queue.join()

    def _writer(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                self._queue.task_done()
                return
            batch = [item]
            while len(batch) < self.batch_size:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)
                    self._queue.task_done()
                    break
                batch.append(nxt)
            try:
                self._write(batch)
            except Exception as exc:  # keep recording alive; the error is visible via .errors and logs
                self._errors.append(f"{type(exc).__name__}: {exc}")
            finally:
                for _ in batch:
                    self._queue.task_done()

    def _write(self, batch: list[tuple[Attempt, str, str, str, float, int | None]]) -> None:
        rows = [
            attempt_row(att, namespace=ns, pod_name=name, pod_uid=uid, queued_seconds=queued, run_id=run_id)
            for att, ns, name, uid, queued, run_id in batch
        ]
        self.commit_rows(rows)

    def commit_rows(self, rows: list[dict[str, Any]]) -> None:
        """Insert attempt rows built elsewhere (``attempt_row``; the scheduler's own process encodes them), stamped
        with this service's Kubernetes version, as the writer inserts its own; blocks until they are committed."""
        stamp_version(rows, self.kube_version)
        if self._shared_commit is not None:
            retention = self.retention
            handed = self._shared_commit.write_alongside(lambda conn: write_rows_on(conn, rows, retention))
            if handed is not None:
                # Waiting before taking the next batch keeps batches large while the committer is busy.
                handed.wait()
                return
        write_rows(self._session_scope, rows, self.retention)

    # --- reading --------------------------------------------------------------------------------
    def list_attempts(self, namespace: str, pod_name: str, *, run_id: int | None = None) -> list[AttemptSummary]:
        """A pod's attempts (in the live cluster, or in replay run ``run_id``), newest first, with outcome and
        summary."""
        with self._session_scope() as session:
            rows = ResultsRepository(session).list_for_pod(namespace, pod_name, run_id=run_id)
            return [_summary(r) for r in rows]

    def attempt_counts(self, *, run_id: int | None = None) -> dict[tuple[str, str], int]:
        with self._session_scope() as session:
            return ResultsRepository(session).attempt_counts(run_id=run_id)

    def get_attempt(
        self,
        namespace: str,
        pod_name: str,
        attempt: int,
        query: AttemptQuery = AttemptQuery(),
        *,
        run_id: int | None = None,
    ) -> AttemptDetail | None:
        """One attempt in full (of the live cluster, or of replay run ``run_id``); the node rows of its matrices
        paged, sorted and filtered as ``query`` asks."""
        with self._session_scope() as session:
            row = ResultsRepository(session).get(namespace, pod_name, attempt, run_id=run_id)
            if row is None:
                return None
            summary = _summary(row)
            details, matrices = self._decoded(row)
        sort, node, plugin = query.sort, query.node, query.plugin
        if sort not in ATTEMPT_SORTS:
            raise ValueError(f"sort must be one of {', '.join(ATTEMPT_SORTS)}")
        nodes = sorted(set(matrices["filter"]) | set(matrices["total"]))
        if node:
            nodes = [n for n in nodes if node in n]
        if plugin:
            nodes = [
                n
                for n in nodes
                if matrices["stoppedAt"].get(n) == plugin
                or (matrices["filter"].get(n, {}).get(plugin, "passed") not in ("passed", "skip"))
            ]
        totals = matrices["total"]
        if sort == "total":
            nodes.sort(key=lambda n: (-(totals.get(n, -1)), n))
        elif sort == "failing":
            nodes.sort(key=lambda n: (matrices["stoppedAt"].get(n) is None, matrices["stoppedAt"].get(n, ""), n))
        tie = _tie(details, totals, row.bound_to)
        shared = tie.shared
        page = max(query.page, 1)
        page_size = max(1, min(query.page_size, 1000))
        window = nodes[(page - 1) * page_size : page * page_size]
        rows: list[MatrixRow] = [
            {
                "node": n,
                "filter": matrices["filter"].get(n, {}),
                "stoppedAt": matrices["stoppedAt"].get(n),
                "unresolvable": matrices["unresolvable"].get(n, []),
                "score": matrices["score"].get(n),
                "normalizedScore": matrices["normalizedscore"].get(n),
                "finalScore": matrices["finalscore"].get(n),
                "total": totals.get(n),
                "selected": n == tie.winner,
                "tied": n in shared,
            }
            for n in window
        ]
        ranked = sorted(totals, key=lambda n: (-totals[n], n))[: query.top]
        return {
            **summary,
            "pod": f"{namespace}/{pod_name}",
            "prefilter": details.get("prefilter"),
            "prefilterStatus": details.get("prefilterStatus"),
            "prefilterNodes": details.get("prefilterNodes"),
            "prescore": details.get("prescore"),
            "postfilter": details.get("postfilter"),
            "reserve": details.get("reserve"),
            "permit": details.get("permit"),
            "permitTimeout": details.get("permitTimeout"),
            "permitWait": details.get("permitWait"),
            "prebind": details.get("prebind"),
            "bind": details.get("bind"),
            "extenders": details.get("extenders") or {},
            "selected": tie.selected,
            "tiedNodes": tie.nodes,
            "tiedCount": len(tie.nodes or ()),
            "tieBreak": tie.rule,
            "bestTotal": tie.best_total,
            "filterPlugins": matrices["filterPlugins"] or details.get("filterPlugins") or [],
            "scorePlugins": matrices["scorePlugins"] or details.get("scorePlugins") or [],
            "weights": matrices["weights"] or details.get("weights") or {},
            "topNodes": [{"node": n, "total": totals[n], "finalScore": matrices["finalscore"][n]} for n in ranked],
            "matrix": {"page": page, "pageSize": page_size, "totalRows": len(nodes), "sort": sort, "rows": rows},
            "external": details.get("external"),
            "shadow": details.get("shadow"),
        }

    def shadow_judgements(self, *, differing_only: bool = True, limit: int = 200) -> list[ShadowRow]:
        """The live cluster's judged bindings by other schedulers, newest first (``differing_only``: where kss would
        have chosen another node)."""
        self.flush()
        with self._session_scope() as session:
            rows = ResultsRepository(session).shadow_judged(differing_only=differing_only, limit=limit)
            return [
                {
                    "pod": f"{r.namespace}/{r.pod_name}",
                    "attempt": r.attempt,
                    "startedAt": r.started_at,
                    "scheduledBy": r.scheduled_by,
                    "boundTo": r.bound_to,
                    "shadow": json.loads(r.details).get("shadow") or {},
                }
                for r in rows
            ]

    def shadow_counts(self) -> dict[str, int]:
        """The live cluster's judged bindings: ``agree`` and ``differ``."""
        self.flush()
        with self._session_scope() as session:
            return ResultsRepository(session).shadow_counts()

    def _decoded(self, row: SchedulingAttempt) -> tuple[dict[str, Any], dict[str, Any]]:
        """The attempt's details and matrices decoded, from the last few decoded when the same bytes come again:
        a pod page reads its attempt twice (filter page, score page), and at 5,000 nodes each decode of the
        matrices is most of the page's time. Keyed by row id and checked against the stored bytes (ids may be
        reused after deletions). Callers only read what they are given."""
        with self._decoded_lock:
            hit = self._decoded_cache.get(row.id)
            if hit is not None and hit[0] == row.matrices and hit[1] == row.details:
                self._decoded_cache.move_to_end(row.id)
                return hit[2], hit[3]
        details: dict[str, Any] = json.loads(row.details)
        matrices = decode_matrices(row.matrices)
        with self._decoded_lock:
            self._decoded_cache[row.id] = (row.matrices, row.details, details, matrices)
            while len(self._decoded_cache) > DECODED_ATTEMPTS_KEPT:
                self._decoded_cache.popitem(last=False)
        return details, matrices

    # --- clearing -------------------------------------------------------------------------------
    def clear_pod(self, namespace: str, pod_name: str) -> int:
        self.flush()
        with self._session_scope() as session:
            n = ResultsRepository(session).delete_for_pod(namespace, pod_name)
        with self._counter_lock:
            if self._counters is not None:
                self._counters.pop(_counter_key(namespace, pod_name), None)
        return n

    def clear_all(self) -> None:
        self.flush()
        with self._session_scope() as session:
            ResultsRepository(session).delete_all()
        with self._counter_lock:
            self._counters = OrderedDict()
            self._counters_complete = True

    def count(self, *, run_id: int | None = None) -> int:
        """Attempts recorded for the live cluster (or for replay run ``run_id``)."""
        with self._session_scope() as session:
            return ResultsRepository(session).count(run_id=run_id)

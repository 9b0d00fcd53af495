"""The one-shot import: copy a cluster into the simulator once, kind by kind, with paging and parallel writes.

It applies the same rules as the syncer's first list (``Sink`` with ``initial`` events): pods already
scheduled in the source arrive bound to the same node, the rest arrive unscheduled for the simulator's
scheduler, after every other pod (so it places them against the whole running load, as the source's scheduler
sees it). Kinds follow the apply order, each one finished before the next starts.

Each page of a list goes to the simulator as one request to its bulk create (``TargetApi.create_many``): a pod
bound in the source is one write there (created with its status) instead of a create and a status patch, and the
simulator commits the page at once. Two pages are in flight at a time, so the next one is translated and sent while
the simulator writes the last; the progress bar counts a page's objects once the simulator answered for them. What
the bulk create cannot take goes object by object through ``Sink.apply`` with a pool of workers, as before: objects
that exist already (adopted by the update rules), a simulator without the bulk create (404: every later page too),
a page it could not answer.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
import time
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from syncer.backoff import Backoff
from syncer.discovery import available_kinds, source_custom_kinds
from syncer.kinds import CRD, DEFAULT, NAMESPACE, POD, Kind, with_custom_kinds
from syncer.kube import ApiProblem, NotFound, Page, SourceApi, TargetApi, Unavailable
from syncer.metrics import Metrics
from syncer.objects import Obj
from syncer.ordering import running_first
from syncer.progress import Progress
from syncer.sink import ADDED, Event, Sink

log = logging.getLogger("kss.syncer")

# Pages sent and not yet answered: one being written by the simulator, the next one waiting behind it.
PAGES_IN_FLIGHT = 2


@dataclass
class ImportReport:
    """How many objects of each kind were read, and how long the whole import took."""

    objects: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def total(self) -> int:
        """Objects read over every kind."""
        return sum(self.objects.values())


def run_import(
    source: SourceApi,
    target: TargetApi,
    *,
    kinds: tuple[Kind, ...] = DEFAULT,
    namespaces: tuple[str, ...] = (),
    label_selector: str | None = None,
    page_size: int = 500,
    workers: int = 8,
    progress: Progress | None = None,
    metrics: Metrics | None = None,
    backoff: Backoff | None = None,
) -> ImportReport:
    """Copy every object of ``kinds`` from the source into the simulator once (optional kinds only where both
    ends serve them); returns the counts."""
    kinds = available_kinds(source, target, kinds)
    if CRD in kinds:
        kinds = with_custom_kinds(kinds, source_custom_kinds(source, page_size=page_size))
    metrics = metrics or Metrics()
    sink = Sink(target, metrics=metrics, backoff=backoff or Backoff())
    sink.mirrored_kinds = frozenset(k.name for k in kinds)
    report = ImportReport()
    started = time.perf_counter()
    failures_before = metrics.total("failed")
    writer = _PageWriter(target, sink)
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="import") as pool, _frozen_garbage():
        for kind in kinds:
            count = 0
            if progress is not None:
                progress.start(kind.name)
            # Pods the source has not scheduled yet go in last, after every scope (``syncer.ordering``).
            pending: list[Event] | None = [] if kind is POD else None
            scopes: tuple[str | None, ...] = namespaces if (kind.namespaced and namespaces) else (None,)
            for namespace in scopes:
                selector = label_selector if kind is POD else None
                wanted = set(namespaces) if (kind is NAMESPACE and namespaces) else None
                count += _import_scope(
                    source, sink, writer, pool, kind, namespace, selector, wanted, page_size, progress, pending
                )
            if pending:
                for start in range(0, len(pending), page_size):
                    writer.write(pool, kind, pending[start : start + page_size], progress)
            report.objects[kind.name] = count
            if progress is not None:
                progress.finish()
            log.info("imported %s: %d objects", kind.name, count)
    report.seconds = time.perf_counter() - started
    failed = int(metrics.total("failed") - failures_before)
    if failed:
        log.warning("%d objects were rejected by the simulator (see the log above)", failed)
    return report


@contextlib.contextmanager
def _frozen_garbage() -> Iterator[None]:
    """Inside, ``gc.freeze()`` (after each page) keeps what the import holds out of full collections; after it,
    those objects are collectable again."""
    try:
        yield
    finally:
        gc.unfreeze()


class _PageWriter:
    """Writes a page through the simulator's bulk create, falling back to ``Sink.apply`` object by object."""

    def __init__(self, target: TargetApi, sink: Sink) -> None:
        self.target = target
        self.sink = sink
        self.bulk = True  # until the simulator says it has no bulk create

    def write(self, pool: ThreadPoolExecutor, kind: Kind, events: list[Event], progress: Progress | None) -> None:
        """Write ``events`` (one page of ``kind``); returns once every one of them is done."""
        bodies: list[tuple[Event, Obj]] = []
        singles: list[Event] = []
        for event in events:
            body = self.sink.bulk_body(event) if self.bulk else None
            if body is None:
                singles.append(event)
            else:
                bodies.append((event, body))
        if bodies:
            singles += self._write_bulk(kind, bodies, progress)
        self._write_singles(pool, singles, progress)

    def _write_bulk(self, kind: Kind, bodies: list[tuple[Event, Obj]], progress: Progress | None) -> list[Event]:
        """One request for the page; returns the events left to ``apply`` when the request itself failed."""
        try:
            answers = self.target.create_many(kind, [body for _, body in bodies])
        except NotFound:
            if self.bulk:
                log.warning("the target has no bulk create (404): writing object by object")
            self.bulk = False
            return [event for event, _ in bodies]
        except ApiProblem as exc:
            # Too large (413), unreadable (422) or not answered: each object alone (``apply`` retries while the
            # simulator is unavailable, and adopts what the page created before it failed).
            level = logging.WARNING if isinstance(exc, Unavailable) else logging.ERROR
            log.log(
                level, "bulk create of %d %s objects failed (%s): writing them one by one", len(bodies), kind.name, exc
            )
            return [event for event, _ in bodies]
        for (event, body), answer in zip(bodies, answers, strict=True):
            self.sink.bulk_created(event, body, answer)
        if progress is not None:
            progress.advance(len(bodies))
        return []

    def _write_singles(self, pool: ThreadPoolExecutor, events: list[Event], progress: Progress | None) -> None:
        lock = threading.Lock()

        def done(_future: Future[None]) -> None:
            if progress is not None:
                with lock:
                    progress.advance()

        futures = []
        for event in events:
            future = pool.submit(self.sink.apply, event)
            future.add_done_callback(done)
            futures.append(future)
        for future in futures:
            future.result()


def _import_scope(
    source: SourceApi,
    sink: Sink,
    writer: _PageWriter,
    pool: ThreadPoolExecutor,
    kind: Kind,
    namespace: str | None,
    label_selector: str | None,
    names: set[str] | None,
    page_size: int,
    progress: Progress | None,
    pending: list[Event] | None = None,
) -> int:
    """Write every object of one list (all its pages); pods not scheduled in the source are appended to ``pending``
    (when given) instead, for the caller to write after the rest. Returns how many objects were listed."""
    count = 0

    def list_page(token: str | None) -> Page:
        return source.list(kind, namespace, label_selector=label_selector, limit=page_size, continue_token=token)

    in_flight: deque[Future[None]] = deque()
    # The next page is listed while this one is written, so the source's list time is off the writers' path; pages
    # are written by their own threads (``PAGES_IN_FLIGHT`` at once), objects one by one by ``pool``.
    with (
        ThreadPoolExecutor(max_workers=1, thread_name_prefix="import-list") as lister,
        ThreadPoolExecutor(max_workers=PAGES_IN_FLIGHT, thread_name_prefix="import-page") as pages,
    ):
        page = list_page(None)
        while True:
            # What the import keeps (each object's mirror) lives until it ends: out of the collector's full passes,
            # which would otherwise walk all of it again every few pages (most of the client's CPU at 10,000 pods).
            gc.freeze()
            upcoming = lister.submit(list_page, page.continue_token) if page.continue_token else None
            if progress is not None and page.remaining is not None:
                progress.expect(count + len(page.items) + page.remaining)
            items = [o for o in page.items if names is None or (o.get("metadata") or {}).get("name") in names]
            events = [Event(ADDED, kind, obj, initial=True) for obj in items]
            if pending is not None:
                events, waiting = running_first(events)
                pending += waiting
            if events:
                in_flight.append(pages.submit(writer.write, pool, kind, events, progress))
            while len(in_flight) >= PAGES_IN_FLIGHT:
                in_flight.popleft().result()
            count += len(items)
            if upcoming is None:
                break
            page = upcoming.result()
        while in_flight:
            in_flight.popleft().result()
        return count

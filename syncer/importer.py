"""The one-shot import: copy a cluster into the simulator once, kind by kind, with paging and parallel writes.

It applies the same rules as the syncer's first list (``Sink`` with ``initial`` events): pods already
scheduled in the source arrive bound to the same node, the rest arrive unscheduled for the simulator's
scheduler. Objects of one kind are written by a pool of workers; kinds follow the apply order, each one
finished before the next starts.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field

from syncer.backoff import Backoff
from syncer.discovery import available_kinds
from syncer.kinds import DEFAULT, NAMESPACE, POD, Kind
from syncer.kube import Page, SourceApi, TargetApi
from syncer.metrics import Metrics
from syncer.progress import Progress
from syncer.sink import ADDED, Event, Sink

log = logging.getLogger("kss.syncer")


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
    metrics = metrics or Metrics()
    sink = Sink(target, metrics=metrics, backoff=backoff or Backoff())
    sink.mirrored_kinds = frozenset(k.name for k in kinds)
    report = ImportReport()
    started = time.perf_counter()
    failures_before = metrics.total("failed")
    with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="import") as pool:
        for kind in kinds:
            count = 0
            if progress is not None:
                progress.start(kind.name)
            scopes: tuple[str | None, ...] = namespaces if (kind.namespaced and namespaces) else (None,)
            for namespace in scopes:
                selector = label_selector if kind is POD else None
                wanted = set(namespaces) if (kind is NAMESPACE and namespaces) else None
                count += _import_scope(source, sink, pool, kind, namespace, selector, wanted, page_size, progress)
            report.objects[kind.name] = count
            if progress is not None:
                progress.finish()
            log.info("imported %s: %d objects", kind.name, count)
    report.seconds = time.perf_counter() - started
    failed = int(metrics.total("failed") - failures_before)
    if failed:
        log.warning("%d objects were rejected by the simulator (see the log above)", failed)
    return report


def _import_scope(
    source: SourceApi,
    sink: Sink,
    pool: ThreadPoolExecutor,
    kind: Kind,
    namespace: str | None,
    label_selector: str | None,
    names: set[str] | None,
    page_size: int,
    progress: Progress | None,
) -> int:
    count = 0
    lock = threading.Lock()

    def done(_future: Future[None]) -> None:
        if progress is not None:
            with lock:
                progress.advance()

    def list_page(token: str | None) -> Page:
        return source.list(kind, namespace, label_selector=label_selector, limit=page_size, continue_token=token)

    # The next page is listed while this one is written, so the source's list time is off the writers' path.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="import-list") as lister:
        page = list_page(None)
        while True:
            upcoming = lister.submit(list_page, page.continue_token) if page.continue_token else None
            if progress is not None and page.remaining is not None:
                progress.expect(count + len(page.items) + page.remaining)
            items = [o for o in page.items if names is None or (o.get("metadata") or {}).get("name") in names]
            futures = []
            for obj in items:
                future = pool.submit(sink.apply, Event(ADDED, kind, obj, initial=True))
                future.add_done_callback(done)
                futures.append(future)
            for future in futures:
                future.result()
            count += len(items)
            if upcoming is None:
                return count
            page = upcoming.result()

"""Watch loops over the source cluster, in two layers (as nolar/kopf and client-go's reflector do).

- Inner: list (paged), then watch from the list's resourceVersion with bookmarks, a server-side
  ``timeoutSeconds`` and a client-side inactivity timeout, moving the version forward on every event.
  A watch that ends (timeout) or goes silent is simply started again from the last version.
- Outer: on ``410 Gone`` list again at once and diff against what was seen, so objects that vanished
  during the gap become deletions (the ``SYNCED`` event); on any other error reconnect with capped
  exponential backoff, resuming from the last version (a 410 then forces the re-list).

Loops take an injectable ``sleep`` and an optional iteration limit, so tests drive them deterministically.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from syncer import translate
from syncer.backoff import Backoff
from syncer.kinds import Kind
from syncer.kube import ApiProblem, Gone, Inactive, SourceApi, Unavailable
from syncer.metrics import Metrics
from syncer.objects import Obj
from syncer.ordering import waits_for_running_pods
from syncer.sink import ADDED, DELETED, MODIFIED, SYNCED, Event

log = logging.getLogger("kss.syncer")


class Watcher:
    """Follows one kind (in one namespace, or all) of the source and emits ``Event``s in the order seen."""

    def __init__(
        self,
        source: SourceApi,
        kind: Kind,
        emit: Callable[[Event], None],
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        accept: Callable[[Obj], bool] | None = None,
        page_size: int = 500,
        watch_timeout: int = 300,
        inactivity_timeout: float = 75.0,
        backoff: Backoff | None = None,
        sleep: Callable[[float], None] = time.sleep,
        stop: threading.Event | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.source = source
        self.kind = kind
        self.emit = emit
        self.namespace = namespace if kind.namespaced else None
        self.label_selector = label_selector
        self.accept = accept
        self.page_size = page_size
        self.watch_timeout = watch_timeout
        self.inactivity_timeout = inactivity_timeout
        self.backoff = backoff or Backoff()
        self._sleep = sleep
        self.stop = stop or threading.Event()
        self.metrics = metrics or Metrics()
        # The version to watch from; None means "list first".
        self.resource_version: str | None = None
        # uid -> resourceVersion of every object seen, to diff a re-list against.
        self.known: dict[str, str] = {}
        self.listed_once = False
        # Set whenever the source answered (a list, an event): backoff starts over after that.
        self._answered = False

    @property
    def scope(self) -> str:
        """``Pod`` or ``Pod in ns`` for log lines."""
        return f"{self.kind.name}" + (f" in {self.namespace}" if self.namespace else "")

    def _accepts(self, obj: Obj) -> bool:
        return self.accept is None or self.accept(obj)

    def relist(self, held: list[Event] | None = None) -> None:
        """List every page; emit what is new or changed since the last list, then ``SYNCED`` with what exists.

        Pods the source has not scheduled are emitted after the rest of the list (``syncer.ordering``); with
        ``held`` they are appended to it instead, for the caller to emit once its other scopes are listed too.
        A list that fails part way leaves them unknown, so the next one emits them again.
        """
        initial = not self.listed_once
        seen: set[str] = set()
        version = ""
        token: str | None = None
        changed = 0
        waiting: list[tuple[str, str, Event]] = []
        while True:
            page = self.source.list(
                self.kind,
                self.namespace,
                label_selector=self.label_selector,
                limit=self.page_size,
                continue_token=token,
            )
            # Pages after the first come from the first one's snapshot; its version is the list's.
            version = version or page.resource_version
            for obj in page.items:
                if not self._accepts(obj):
                    continue
                uid = translate.source_uid(obj)
                rv = str(translate.meta(obj).get("resourceVersion") or "")
                seen.add(uid)
                before = self.known.get(uid)
                if before == rv:
                    continue
                changed += 1
                event = Event(ADDED if before is None else MODIFIED, self.kind, obj, initial=initial)
                if waits_for_running_pods(event):
                    waiting.append((uid, rv, event))
                    continue
                self.known[uid] = rv
                self.emit(event)
            token = page.continue_token
            if not token:
                break
        for uid, rv, event in waiting:
            self.known[uid] = rv
            if held is None:
                self.emit(event)
            else:
                held.append(event)
        for uid in set(self.known) - seen:
            del self.known[uid]
        self.emit(Event(SYNCED, self.kind, namespace=self.namespace, present=frozenset(seen)))
        self.resource_version = version
        self.listed_once = True
        self._answered = True
        self.metrics.count(self.kind.name, "listed")
        log.info(
            "listed %s: %d objects, %d new or changed, at resourceVersion %s", self.scope, len(seen), changed, version
        )

    def watch_once(self) -> None:
        """One watch request from ``resource_version``; returns when the server ends it or the loop stops."""
        assert self.resource_version is not None
        for event in self.source.watch(
            self.kind,
            self.namespace,
            resource_version=self.resource_version,
            label_selector=self.label_selector,
            timeout_seconds=self.watch_timeout,
            inactivity_timeout=self.inactivity_timeout,
        ):
            kind = event.get("type")
            obj = event.get("object")
            if not isinstance(obj, dict):
                continue
            self._answered = True
            rv = str(translate.meta(obj).get("resourceVersion") or "")
            if kind == "BOOKMARK":
                self.metrics.count(self.kind.name, "bookmarks")
            elif kind in (ADDED, MODIFIED, DELETED) and self._accepts(obj):
                obj.setdefault("kind", self.kind.name)
                obj.setdefault("apiVersion", self.kind.api_version)
                uid = translate.source_uid(obj)
                if kind == DELETED:
                    self.known.pop(uid, None)
                else:
                    self.known[uid] = rv
                self.metrics.count(self.kind.name, "events")
                self.emit(Event(str(kind), self.kind, obj))
            if rv:
                self.resource_version = rv
            if self.stop.is_set():
                return

    def run(self, *, max_iterations: int | None = None) -> None:
        """The outer loop: (re)list when needed, watch, and recover from every error until stopped."""
        failures = 0
        iterations = 0
        while not self.stop.is_set() and (max_iterations is None or iterations < max_iterations):
            iterations += 1
            try:
                if self.resource_version is None:
                    self.relist()
                self.watch_once()
                failures = 0
            except Gone as exc:
                self.metrics.count(self.kind.name, "relisted_gone")
                log.info("watch of %s expired (%s); listing again", self.scope, exc)
                self.resource_version = None
            except Inactive:
                # Silent longer than the bookmark interval allows: the connection may be dead; watch again.
                log.debug("watch of %s went silent; watching again", self.scope)
                failures = 0
            except ApiProblem as exc:
                failures = 1 if self._answered else failures + 1
                self._answered = False
                delay = self.backoff.delay(failures)
                self.metrics.count(self.kind.name, "reconnected")
                level = logging.WARNING if isinstance(exc, Unavailable) else logging.ERROR
                log.log(level, "source error on %s (%s); reconnecting in %.1fs", self.scope, exc, delay)
                self._sleep(delay)


def start_thread(watcher: Watcher) -> threading.Thread:
    """Run a watcher's outer loop on a daemon thread."""
    thread = threading.Thread(target=watcher.run, name=f"watch-{watcher.scope}", daemon=True)
    thread.start()
    return thread

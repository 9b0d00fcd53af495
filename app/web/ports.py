"""What the web layer needs from the other rooms, as structural types.

``app.web`` reads the services from ``app.state`` and types them with these protocols instead of importing
``app.cluster.store``, ``app.results.service`` or ``app.engine_host.service``: those modules pull in SQLAlchemy,
and the import contract keeps the web layer free of it even indirectly. The real classes satisfy these
protocols (tests/web checks it against the running app).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from app.scheduler.cache import SchedulerCache

Obj = dict[str, Any]


class StoredEntry(Protocol):
    """``app.cluster.store.StoredObject``: a stored object, read-only."""

    @property
    def obj(self) -> Obj: ...

    @property
    def namespace(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def resource_version(self) -> int: ...


class Listing(Protocol):
    """``app.cluster.store.ListResult``."""

    @property
    def items(self) -> Sequence[StoredEntry]: ...

    @property
    def resource_version(self) -> int: ...


class Change(Protocol):
    """``app.cluster.store.WatchEvent``: one committed change."""

    @property
    def type(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def resource_version(self) -> int: ...

    @property
    def obj(self) -> Obj: ...

    @property
    def old(self) -> Obj | None: ...


class Store(Protocol):
    """``app.cluster.store.ClusterStore``: reads, writes with the API's validation, and the change log."""

    @property
    def resource_version(self) -> int: ...

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None: ...

    def read(self, kind: str, namespace: str | None, name: str) -> StoredEntry: ...

    def select(self, kind: str, namespace: str | None = None) -> Listing: ...

    def create(self, kind: str, obj: Obj, namespace: str | None = None) -> Obj: ...

    def update(self, kind: str, obj: Obj) -> Obj: ...

    def delete(self, kind: str, namespace: str | None, name: str) -> Obj: ...

    def events_since(self, resource_version: int) -> Sequence[Change]: ...

    def add_waker(self, wake: Callable[[], None]) -> None: ...

    def remove_waker(self, wake: Callable[[], None]) -> None: ...


class Results(Protocol):
    """``app.results.service.ResultsService``: recorded attempts."""

    def flush(self) -> None: ...

    def list_attempts(self, namespace: str, pod_name: str) -> list[Obj]: ...

    def attempt_counts(self) -> dict[tuple[str, str], int]: ...

    def get_attempt(
        self,
        namespace: str,
        pod_name: str,
        attempt: int,
        *,
        page: int = 1,
        page_size: int = 100,
        sort: str = "total",
        node: str | None = None,
        plugin: str | None = None,
        top: int = 10,
    ) -> Obj | None: ...


class Queue(Protocol):
    """The scheduling queue's counters."""

    def pending_counts(self) -> dict[str, int]: ...


class Scheduler(Protocol):
    """``app.engine_host.service.SchedulerService``: configuration, queue and cache."""

    @property
    def cache(self) -> SchedulerCache: ...

    @property
    def queue(self) -> Queue: ...

    def config_document(self) -> Obj: ...

    def defaulted_config_document(self) -> Obj: ...

    def plugins_in_effect(self) -> list[tuple[str, list[tuple[str, list[tuple[str, int | None]]]]]]: ...

    def update_config(self, source: str | Obj) -> Any: ...


class Operations(Protocol):
    """``app.operations.service.OperationsService``: export, import and reset."""

    def export(self, fmt: str = "json") -> str: ...

    def import_text(self, text: str, *, replace: bool = False, unbind: bool = False) -> Obj: ...

    def reset(self) -> Obj: ...

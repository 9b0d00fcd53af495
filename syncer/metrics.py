"""Counters of what the syncer did, per kind and action, exported with prometheus_client.

Actions of the sink: created, adopted (AlreadyExists handed to the update rules), updated, status_updated,
unchanged, deleted, ignored_scheduled (update of a pod the source already scheduled),
ignored_deleted_in_simulator, tombstoned (found deleted on the simulator side), failed (rejected by the
simulator), retried (simulator unreachable). Actions of the watchers: listed, relisted_gone (410),
reconnected (after an error), events (received), bookmarks.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, start_http_server


class Metrics:
    """One registry per syncer, so several can live in one process (tests)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._actions = Counter(
            "kss_syncer_actions",
            "Actions of the syncer, by kind and action.",
            ["kind", "action"],
            registry=self.registry,
        )
        self.queue_depth = Gauge(
            "kss_syncer_queue_depth", "Source events waiting to be applied to the simulator.", registry=self.registry
        )

    def count(self, kind: str, action: str, amount: float = 1) -> None:
        """Add ``amount`` to the counter of (kind, action)."""
        self._actions.labels(kind=kind, action=action).inc(amount)

    def value(self, kind: str, action: str) -> float:
        """The current count of (kind, action) (0 if never counted)."""
        sample = self.registry.get_sample_value("kss_syncer_actions_total", {"kind": kind, "action": action})
        return sample or 0.0

    def total(self, action: str) -> float:
        """The count of ``action`` over every kind."""
        total = 0.0
        for metric in self.registry.collect():
            for sample in metric.samples:
                if sample.name == "kss_syncer_actions_total" and sample.labels.get("action") == action:
                    total += sample.value
        return total

    def serve(self, port: int, addr: str = "0.0.0.0") -> None:
        """Expose ``/metrics`` on ``port`` from a background thread."""
        start_http_server(port, addr=addr, registry=self.registry)

"""Prometheus metrics with kube-scheduler's and kube-apiserver's names, one registry per application.

Scheduler metrics are fed by ``SchedulerService``'s hooks (``on_attempt``, ``on_plugin``); the pending-pod
gauge is read from the queue at scrape time; request metrics come from :class:`RequestMetricsMiddleware`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any
from urllib.parse import parse_qs

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, disable_created_metrics, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from kss_sim.cluster.kinds.registry import KINDS
from kss_sim.scheduler.record import Attempt
from kss_sim.scheduler.watchdog import PluginTimeoutReport

# kube-scheduler exposes no *_created series; leaving them out keeps the output comparable.
disable_created_metrics()  # type: ignore[no-untyped-call]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def _exponential(start: float, factor: float, count: int) -> list[float]:
    return [start * factor**i for i in range(count)]


class _PendingPods(Collector):
    """``scheduler_pending_pods{queue}`` read from the scheduling queue when scraped."""

    def __init__(self, counts: Callable[[], dict[str, int]]) -> None:
        self._counts = counts

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means "
            "number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods that the "
            "scheduler attempted to schedule and failed; 'gated' is the number of unschedulable pods that the "
            "scheduler never attempted to schedule because they are gated.",
            labels=["queue"],
        )
        for queue, n in sorted(self._counts().items()):
            family.add_metric([queue], n)
        yield family


class _WaitingPods(Collector):
    """``kss_permit_waiting_pods``: pods held in Permit now (kube-scheduler has no gauge for them)."""

    def __init__(self, count: Callable[[], int]) -> None:
        self._count = count

    def collect(self) -> Iterator[Metric]:
        family = GaugeMetricFamily(
            "kss_permit_waiting_pods",
            "Number of pods waiting in Permit, holding their reservation (a gang waiting for its quorum).",
        )
        family.add_metric([], self._count())
        yield family


# kubernetes_build_info's labels -> /version's fields (component-base's version metric).
_BUILD_INFO_LABELS = {
    "build_date": "buildDate",
    "compiler": "compiler",
    "git_commit": "gitCommit",
    "git_tree_state": "gitTreeState",
    "git_version": "gitVersion",
    "go_version": "goVersion",
    "major": "major",
    "minor": "minor",
    "platform": "platform",
}


# What the metrics count of an attempt: result, profile, duration, its wait in Permit (outcome, seconds), whether
# PostFilter ran, how many victims it chose (the scheduler's own process sends exactly this).
AttemptParts = tuple[str, str, float, tuple[str, float] | None, bool, int]


def attempt_parts(att: Attempt) -> AttemptParts:
    """The parts of ``att`` that ``Metrics.observe_attempt_parts`` counts."""
    wait = att.permit_wait
    return (
        att.result,
        att.profile,
        att.duration,
        None if wait is None else (str(wait.get("outcome")), float(wait.get("waitedSeconds") or 0.0)),
        att.postfilter is not None,
        len(att.victims or ()),
    )


class Metrics:
    """The application's metrics; ``observe_*`` are the hooks, :meth:`render` the ``/metrics`` body."""

    def __init__(self, version_info: Mapping[str, str] | None = None) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        if version_info is not None:
            # Every Kubernetes component's build-info gauge: which release the numbers below come from.
            build_info = Gauge(
                "kubernetes_build_info",
                "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, "
                "build date, Go version, and compiler from which Kubernetes was built, and platform on which it is "
                "running.",
                list(_BUILD_INFO_LABELS),
                registry=r,
            )
            build_info.labels(*(version_info[key] for key in _BUILD_INFO_LABELS.values())).set(1)
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be "
            "scheduled, while 'error' means an internal scheduler problem.",
            ["result", "profile"],
            registry=r,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding)",
            ["result", "profile"],
            buckets=_exponential(0.001, 2, 15),
            registry=r,
        )
        self.plugin_duration = Histogram(
            "scheduler_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["plugin", "extension_point", "status"],
            buckets=_exponential(0.00001, 1.5, 20),
            registry=r,
        )
        # The histogram's child per (plugin, extension point, status): ``labels()`` validates and locks on every call.
        self._plugin_children: dict[tuple[str, str, str], Any] = {}
        self.permit_wait_duration = Histogram(
            "scheduler_permit_wait_duration_seconds",
            "Duration of waiting on permit.",
            ["result"],
            buckets=_exponential(0.001, 2, 15),
            registry=r,
        )
        self.preemption_victims = Histogram(
            "scheduler_preemption_victims",
            "Number of selected preemption victims",
            buckets=_exponential(1, 2, 7),
            registry=r,
        )
        self.plugin_timeouts = Counter(
            "kss_plugin_timeouts",
            "Calls of users' plugins that ran past KSS_PLUGIN_TIMEOUT and were interrupted, by plugin and extension "
            "point (kube-scheduler has no such metric: its plugins are Go).",
            ["plugin", "extension_point"],
            registry=r,
        )
        self.shadow_judgements = Counter(
            "kss_shadow_judgements",
            "Bindings by other schedulers judged by kss's own scheduler (--shadow), by verdict: agree (the bound node "
            "is one of kss's best) or differ.",
            ["verdict"],
            registry=r,
        )
        self.preemption_attempts = Counter(
            "scheduler_preemption_attempts", "Total preemption attempts in the cluster till now", registry=r
        )
        self.requests = Counter(
            "apiserver_request",
            "Counter of apiserver requests broken out for each verb, resource and HTTP response code.",
            ["verb", "resource", "code"],
            registry=r,
        )
        self.request_duration = Histogram(
            "apiserver_request_duration_seconds",
            "Response latency distribution in seconds for each verb and resource (watches excluded).",
            ["verb", "resource"],
            buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.5, 2, 3, 5, 10, 30, 60),
            registry=r,
        )

    def watch_queue(self, counts: Callable[[], dict[str, int]]) -> None:
        """Report ``scheduler_pending_pods`` from ``counts()`` at every scrape."""
        self.registry.register(_PendingPods(counts))

    def watch_waiting(self, count: Callable[[], int]) -> None:
        """Report ``kss_permit_waiting_pods`` from ``count()`` at every scrape."""
        self.registry.register(_WaitingPods(count))

    def observe_attempt(self, att: Attempt) -> None:
        """``SchedulerService.on_attempt``: count and time one scheduling attempt (and its wait in Permit)."""
        self.observe_attempt_parts(*attempt_parts(att))

    def observe_attempt_parts(
        self,
        result: str,
        profile: str,
        duration: float,
        permit_wait: tuple[str, float] | None,
        preemption_ran: bool,
        victims: int,
    ) -> None:
        """``observe_attempt`` from what the scheduler's own process sends of an attempt (``KSS_SCHEDULER_PROCESS``):
        its result and profile, its duration, its wait in Permit (outcome, seconds), whether PostFilter ran, how
        many victims it chose."""
        self.schedule_attempts.labels(result, profile).inc()
        self.attempt_duration.labels(result, profile).observe(duration)
        if permit_wait is not None:
            outcome, waited = permit_wait
            self.permit_wait_duration.labels("Success" if outcome == "allowed" else "Unschedulable").observe(waited)
        if preemption_ran and result != "scheduled":
            self.preemption_attempts.inc()
            if victims:
                self.preemption_victims.observe(victims)

    def observe_plugin(self, plugin: str, point: str, status: str, seconds: float) -> None:
        """``SchedulerService.on_plugin``: one plugin's run at one extension point."""
        key = (plugin, point, status)
        child = self._plugin_children.get(key)
        if child is None:
            child = self._plugin_children[key] = self.plugin_duration.labels(plugin, point, status)
        child.observe(seconds)

    def observe_shadow(self, agrees: bool) -> None:
        """``SchedulerService.on_shadow``: one binding by another scheduler, judged."""
        self.shadow_judgements.labels("agree" if agrees else "differ").inc()

    def observe_plugin_timeout(self, report: PluginTimeoutReport) -> None:
        """``SchedulerService.on_plugin_timeout``: a plugin call past its timeout."""
        self.plugin_timeouts.labels(report.plugin, report.extension_point).inc()

    def render(self) -> bytes:
        """The Prometheus text exposition of every metric."""
        return generate_latest(self.registry)


_CORE = {k.plural for k in KINDS}
_SIMULATOR_SECTIONS = frozenset({"export", "import", "reset", "schedulerconfiguration", "openapi.json", "docs"})


def _resource_and_verb(method: str, path: str, query: bytes) -> tuple[str, str]:
    """kube-apiserver's ``resource`` and ``verb`` labels for a request (bounded label values)."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        rest = parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        rest = parts[3:]
    else:
        rest = []
    verb = method.upper()
    if rest:
        if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] in _CORE:
            rest = rest[2:]
        resource = rest[0] if rest[0] in _CORE else "unknown"
        if len(rest) >= 3:
            resource = f"{resource}/{rest[2]}"
        named = len(rest) >= 2
        if verb == "GET":
            watch = parse_qs(query.decode("latin-1")).get("watch", [""])[0] in ("true", "1")
            verb = "WATCH" if watch else ("GET" if named else "LIST")
        elif verb == "DELETE" and not named:
            verb = "DELETECOLLECTION"
        return resource, verb
    if parts[:2] == ["simulator", "v1"]:
        section = parts[2] if len(parts) > 2 else ""
        if section == "namespaces":
            return "simulator/results", verb
        return (f"simulator/{section}" if section in _SIMULATOR_SECTIONS else "simulator/other"), verb
    if parts and parts[0] in ("api", "apis", "openapi", "version", "healthz", "readyz", "livez", "metrics"):
        return parts[0], verb
    return "other", verb


class RequestMetricsMiddleware:
    """Counts every request by verb, resource and code, and times the ones that are not watches."""

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        resource, verb = _resource_and_verb(scope["method"], scope["path"], scope.get("query_string", b""))
        started = time.perf_counter()
        code: dict[str, Any] = {"status": 500}

        async def send_wrapper(message: Message) -> None:
            if message["type"] == "http.response.start":
                code["status"] = message["status"]
                if verb != "WATCH":
                    self.metrics.request_duration.labels(verb, resource).observe(time.perf_counter() - started)
            await send(message)

        try:
            await self.app(scope, receive, send_wrapper)
        finally:
            self.metrics.requests.labels(verb, resource, str(code["status"])).inc()

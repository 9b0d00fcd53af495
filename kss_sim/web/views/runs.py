"""The Runs pages: recorded replay runs (``kss replay --record-db``), one run, a pod's attempts in a run, and runs
compared side by side.

Everything comes from the ``Runs`` port (``kss_sim.results.runs.RunsService``): the summary (summary.json's document),
the samples (timeseries.csv's rows, drawn by ``static/replay-charts.js``) and the pods (pods.csv's rows). Times in a run
are virtual seconds from the workload's start.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from kss_sim import figures
from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import version_label
from kss_sim.web.formatting import Page, paginate
from kss_sim.web.ports import AttemptDetail, AttemptQuery, AttemptSummary, Runs
from kss_sim.web.views.pod import AttemptView, attempt_view

RUN_PODS_PAGE_SIZE = 50
# kss_sim.replay.model's PodRecord.outcome
OUTCOMES = ("pending", "running", "succeeded", "deleted", "preempted", "evicted")


def number(value: Any) -> float | None:
    """A cell of a stored row as a number (rows written from CSV carry "" for nothing)."""
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def virtual_time(seconds: float | None) -> str:
    """Virtual seconds as a clock reading: ``day 3 04:12:05`` (``04:12:05`` on the first day); "" for none."""
    if seconds is None:
        return ""
    s = round(seconds)
    day, rest = divmod(s, 86400)
    clock = f"{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"
    return f"day {day} {clock}" if day else clock


def wait_text(seconds: float | None) -> str:
    """A wait, as every view of a run tells it (``kss_sim.figures.duration``): ``0 s``, ``4 min 10 s``, ``2 d 3 h``."""
    return figures.duration(seconds)


def percent(ratio: float | None) -> str:
    """A share, as every view of a run tells it (``kss_sim.figures.percent``): ``35.0 %``."""
    return figures.percent(ratio)


def _dig(doc: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(key)
    return doc


def split_key(key: str) -> tuple[str, str]:
    """``namespace/name`` (a bare name is in ``default``)."""
    namespace, _, name = key.partition("/")
    return (namespace, name) if name else ("default", namespace)


# ---------------------------------------------------------------------------------------------- the list


@dataclass(slots=True)
class RunRow:
    """One run in the list (and at the head of its pages)."""

    id: int
    name: str
    workload: str
    created: str  # when it was recorded (wall clock, UTC)
    seed: int
    status: str
    message: str
    group: str | None
    pods: int | None
    scheduled: int | None
    never: int | None
    wait_p95: float | None
    peak_gpu: float | None  # peak requested/allocatable of GPUs (None: the cluster has none)
    virtual_seconds: float | None

    @property
    def url(self) -> str:
        return f"/ui/runs/{self.id}"


def run_row(run: Obj) -> RunRow:
    summary = run.get("summary") or {}
    created = datetime.fromtimestamp(float(run.get("createdAt") or 0.0), UTC).strftime("%Y-%m-%d %H:%M:%S")

    def count(key: str) -> int | None:
        value = number(summary.get(key))
        return None if value is None else int(value)

    return RunRow(
        id=int(run["id"]),
        name=str(run.get("name") or ""),
        workload=str(run.get("workload") or ""),
        created=created,
        seed=int(run.get("seed") or 0),
        status=str(run.get("status") or ""),
        message=str(run.get("message") or ""),
        group=run.get("compareGroup"),
        pods=count("pods"),
        scheduled=count("scheduled"),
        never=count("neverScheduled"),
        wait_p95=number(_dig(summary, "waitSeconds", "p95")),
        peak_gpu=number(_dig(summary, "allocation", "gpu", "peak")),
        virtual_seconds=number(summary.get("virtualSeconds")),
    )


@dataclass(slots=True)
class RunsView:
    runs: list[RunRow]

    @property
    def running(self) -> bool:
        """Some run is still going: the list refreshes itself."""
        return any(r.status == "running" for r in self.runs)


def runs_view(runs: Runs) -> RunsView:
    return RunsView([run_row(r) for r in runs.list_runs()])


# ---------------------------------------------------------------------------------------------- one run


@dataclass(slots=True)
class Fact:
    label: str
    value: str


@dataclass(slots=True)
class PodLine:
    """One pod of a run, as the tables show it."""

    key: str
    namespace: str
    name: str
    owner: str
    priority: str
    arrival: str
    wait: float | None
    node: str
    attempts: int
    preemptions: int
    outcome: str
    message: str
    reason: str = ""  # an evicted pod's: taint, drain, nodeFailure
    evicted: str = ""  # when (virtual), for an evicted pod


def pod_line(row: Obj) -> PodLine:
    namespace, name = split_key(str(row.get("pod") or ""))
    attempts = number(row.get("attempts"))
    preemptions = number(row.get("preemptions"))
    return PodLine(
        key=f"{namespace}/{name}",
        namespace=namespace,
        name=name,
        owner=str(row.get("owner") or ""),
        priority=str(row.get("priority") if row.get("priority") not in (None, "") else ""),
        arrival=virtual_time(number(row.get("arrival"))),
        wait=number(row.get("wait")),
        node=str(row.get("node") or ""),
        attempts=int(attempts or 0),
        preemptions=int(preemptions or 0),
        outcome=str(row.get("outcome") or ""),
        message=str(row.get("lastMessage") or ""),
        reason=str(row.get("reason") or ""),
        evicted="" if row.get("evicted") in (None, "") else virtual_time(number(row.get("evicted"))),
    )


def summary_facts(summary: Obj) -> list[Fact]:
    """The summary's headline figures in words."""
    facts: list[Fact] = []

    def add(label: str, value: Any) -> None:
        if value not in (None, ""):
            facts.append(Fact(label, str(value)))

    add("Kubernetes version", version_label(summary.get("kubeVersion"), summary.get("kubeVersionMeasured")))
    add("Pods", summary.get("pods"))
    add("Scheduled", summary.get("scheduled"))
    add("Never scheduled", summary.get("neverScheduled"))
    add("Attempts", summary.get("attempts"))
    add("Preemptions", summary.get("preemptions"))
    evictions = summary.get("evictions") or {}
    if evictions.get("total"):
        by_reason = ", ".join(f"{r} {n}" for r, n in evictions.items() if r != "total" and n)
        add("Evictions", f"{evictions['total']} ({by_reason})")
    waits = summary.get("waitSeconds") or {}
    for key in ("p50", "p95", "p99", "max", "mean"):
        wait = number(waits.get(key))
        add(f"Wait {key}", None if wait is None else wait_text(wait))
    # A span, as report.html and compare.html tell it; a pod's arrival is a clock reading (virtual_time).
    virtual = number(summary.get("virtualSeconds"))
    add("Virtual time", None if virtual is None else figures.duration(virtual))
    wall = number(summary.get("wallSeconds"))
    add("Wall time", None if wall is None else figures.duration(wall))
    frag = summary.get("fragmentation") or {}
    for key in ("peak", "mean", "end"):
        value = number(frag.get(key))
        add(f"GPU fragmentation {key}", None if value is None else figures.number(value))
    return facts


def allocation_rows(summary: Obj) -> list[tuple[str, str, str, str, str]]:
    """(resource, peak %, mean %, peak requested, allocatable) from the summary's ``allocation``."""
    allocation = summary.get("allocation") or {}
    first = ["cpu", "memory", "gpu", "pods", "ephemeral-storage"]
    names = [r for r in first if r in allocation] + sorted(r for r in allocation if r not in first)
    return [
        (
            r,
            percent(number(_dig(allocation, r, "peak"))),
            percent(number(_dig(allocation, r, "mean"))),
            figures.run_quantity(r, number(_dig(allocation, r, "peakRequested"))),
            figures.run_quantity(r, number(_dig(allocation, r, "allocatable"))),
        )
        for r in names
    ]


def chart_run(run: Obj, pods: list[PodLine]) -> Obj:
    """What ``kssReplayCharts.render`` draws for one run: its samples and its bound pods' waits."""
    return {
        "name": f"#{run['id']} {run.get('name') or ''}".strip(),
        "timeseries": run.get("timeseries") or [],
        "waits": [p.wait for p in pods if p.wait is not None],
    }


@dataclass(slots=True)
class RunView:
    run: RunRow
    facts: list[Fact]
    allocation: list[tuple[str, str, str, str, str]]
    config: Obj
    chart: Obj  # kssReplayCharts' data
    pods: Page[PodLine]
    outcome: str  # the filter ("" for all)
    q: str
    outcomes: list[tuple[str, int]]  # outcomes present, with their counts
    samples: int
    notes: list[str] = field(default_factory=list)  # resource names explained (``gpu`` beside ``nvidia.com/gpu``)


def run_view(runs: Runs, run_id: int, *, outcome: str = "", q: str = "", page: int = 1) -> RunView | None:
    run = runs.get_run(run_id)
    if run is None:
        return None
    lines = [pod_line(r) for r in run.get("pods") or []]
    counts: dict[str, int] = {}
    for line in lines:
        counts[line.outcome] = counts.get(line.outcome, 0) + 1
    order = [o for o in OUTCOMES if o in counts] + sorted(o for o in counts if o not in OUTCOMES)
    shown = [p for p in lines if (not outcome or p.outcome == outcome) and (not q or q in p.key)]
    summary = run.get("summary") or {}
    return RunView(
        run=run_row(run),
        facts=summary_facts(summary),
        allocation=allocation_rows(summary),
        config=run.get("config") or {},
        chart={"runs": [chart_run(run, lines)]},
        pods=paginate(shown, page, RUN_PODS_PAGE_SIZE),
        outcome=outcome,
        q=q,
        outcomes=[(o, counts[o]) for o in order],
        samples=len(run.get("timeseries") or []),
        notes=figures.resource_notes((summary.get("allocation") or {}).keys()),
    )


# ---------------------------------------------------------------------------------------------- a pod in a run


class RunAttempts:
    """One run's attempts read as the live cluster's are (``ports.Results``), so the pod page's attempt partials
    render them unchanged."""

    def __init__(self, runs: Runs, run_id: int) -> None:
        self.runs = runs
        self.run_id = run_id

    def flush(self) -> None:
        return None  # written by the replay's own writer, complete once the run is

    def list_attempts(self, namespace: str, pod_name: str) -> list[AttemptSummary]:
        return self.runs.list_attempts(self.run_id, namespace, pod_name)

    def attempt_counts(self) -> dict[tuple[str, str], int]:
        return self.runs.attempt_counts(self.run_id)

    def get_attempt(
        self, namespace: str, pod_name: str, attempt: int, query: AttemptQuery = AttemptQuery()
    ) -> AttemptDetail | None:
        return self.runs.get_attempt(self.run_id, namespace, pod_name, attempt, query)


@dataclass(slots=True)
class RunPodView:
    """A pod's life in a run and its attempts (the attempt partial reads ``attempt``)."""

    run: RunRow
    line: PodLine | None  # its pods.csv row (None: the run has attempts but no rows yet)
    attempts: list[AttemptSummary]
    attempt: AttemptView | None
    base_url: str


def run_pod_view(
    runs: Runs,
    run_id: int,
    namespace: str,
    name: str,
    *,
    attempt: int | None = None,
    fpage: int = 1,
    fsort: str = "failing",
    fnode: str = "",
    fplugin: str = "",
    spage: int = 1,
) -> RunPodView | None:
    run = runs.get_run(run_id)
    if run is None:
        return None
    key = f"{namespace}/{name}"
    line = next((pod_line(r) for r in run.get("pods") or [] if pod_line(r).key == key), None)
    attempts = runs.list_attempts(run_id, namespace, name)
    if line is None and not attempts:
        return None
    chosen = attempt if attempt is not None else (attempts[0]["attempt"] if attempts else None)
    view = None
    if chosen is not None:
        source = RunAttempts(runs, run_id)
        view = attempt_view(
            source, namespace, name, chosen, fpage=fpage, fsort=fsort, fnode=fnode, fplugin=fplugin, spage=spage
        )
    return RunPodView(run_row(run), line, attempts, view, f"/ui/runs/{run_id}/pods/{namespace}/{name}")


# ---------------------------------------------------------------------------------------------- compare


@dataclass(slots=True)
class CompareLine:
    """One summary figure across the runs."""

    label: str
    values: list[str]
    differs: bool


@dataclass(slots=True)
class PodSide:
    run_id: int
    node: str
    outcome: str
    wait: float | None
    attempts: int
    url: str
    message: str = ""  # the last reason the pod was refused with


@dataclass(slots=True)
class PodDifference:
    key: str
    sides: list[PodSide | None]  # one per run (None: the pod is not in that run)
    differs: list[str] = field(default_factory=list)  # node, wait, reason (kss_sim.whatif.compare's aspects)


@dataclass(slots=True)
class CompareView:
    runs: list[RunRow]
    lines: list[CompareLine]
    chart: Obj
    differences: Page[PodDifference]
    compared: int  # pods in every run
    missing: list[int] = field(default_factory=list)  # asked-for runs that do not exist
    across_versions: bool = False  # one workload at several Kubernetes versions: waits and reasons compared too
    notes: list[str] = field(default_factory=list)  # resource names explained (``gpu`` beside ``nvidia.com/gpu``)


def _compare_lines(summaries: list[Obj]) -> list[CompareLine]:
    def line(label: str, values: list[str]) -> CompareLine:
        return CompareLine(label, values, len(set(values)) > 1)

    lines = [
        line(label, [str(s.get(key, "")) for s in summaries])
        for label, key in (
            ("Pods", "pods"),
            ("Scheduled", "scheduled"),
            ("Never scheduled", "neverScheduled"),
            ("Attempts", "attempts"),
            ("Preemptions", "preemptions"),
        )
    ]
    for key in ("p50", "p95", "p99", "max", "mean"):
        lines.append(line(f"Wait {key}", [wait_text(number(_dig(s, "waitSeconds", key))) for s in summaries]))
    lines.append(line("Virtual time", [figures.duration(number(s.get("virtualSeconds"))) for s in summaries]))
    resources: list[str] = []
    for s in summaries:
        resources += [r for r in (s.get("allocation") or {}) if r not in resources]
    for r in resources:
        for stat in ("peak", "mean"):
            values = [percent(number(_dig(s, "allocation", r, stat))) for s in summaries]
            lines.append(line(f"{r} allocation {stat}", values))
        for key, label in (("peakRequested", "requested peak"), ("allocatable", "allocatable")):
            quantities = [figures.run_quantity(r, number(_dig(s, "allocation", r, key))) for s in summaries]
            lines.append(line(f"{r} {label}", quantities))
    for stat in ("peak", "mean", "end"):
        amounts = [number(_dig(s, "fragmentation", stat)) for s in summaries]
        lines.append(line(f"GPU fragmentation {stat}", [figures.number(v) for v in amounts]))
    if any(s.get("kubeVersion") for s in summaries):
        shown = [version_label(s.get("kubeVersion"), s.get("kubeVersionMeasured")) for s in summaries]
        lines.append(line("Kubernetes version", [str(v or figures.MISSING) for v in shown]))
    return lines


def versions_differ(runs: list[Obj]) -> bool:
    """Whether the runs compared are one workload at several Kubernetes versions (``kss compare --kube-version 1.34
    --kube-version 1.36``): then waits and reasons are compared pod by pod too, not only placements."""
    return len({str((r.get("summary") or {}).get("kubeVersion") or "") for r in runs}) > 1


def _pod_differs(sides: list[PodSide | None], across_versions: bool) -> list[str]:
    present = [s for s in sides if s is not None]
    aspects = ["node", "wait", "reason"] if across_versions else ["node"]
    if len(present) < len(sides):
        return aspects
    values: dict[str, set[Any]] = {
        "node": {(s.node, s.outcome) for s in present},
        "wait": {s.wait for s in present},
        "reason": {s.message for s in present},
    }
    return [a for a in aspects if len(values[a]) > 1]


def compare_view(runs: Runs, run_ids: list[int], *, page: int = 1) -> CompareView:
    """Runs side by side, in the order asked: summaries, overlaid samples, and the pods placed differently."""
    found = {int(r["id"]): r for r in (runs.get_run(i) for i in dict.fromkeys(run_ids)) if r is not None}
    ordered = [found[i] for i in dict.fromkeys(run_ids) if i in found]
    missing = [i for i in dict.fromkeys(run_ids) if i not in found]
    per_run = [{p.key: p for p in (pod_line(r) for r in run.get("pods") or [])} for run in ordered]
    keys: list[str] = []
    seen: set[str] = set()
    for pods in per_run:
        for key in pods:
            if key not in seen:
                seen.add(key)
                keys.append(key)
    across_versions = versions_differ(ordered)
    differences: list[PodDifference] = []
    for key in keys:
        sides: list[PodSide | None] = []
        for run, pods in zip(ordered, per_run, strict=True):
            p = pods.get(key)
            url = f"/ui/runs/{run['id']}/pods/{key}"
            sides.append(
                None if p is None else PodSide(int(run["id"]), p.node, p.outcome, p.wait, p.attempts, url, p.message)
            )
        differs = _pod_differs(sides, across_versions)
        if differs:
            differences.append(PodDifference(key, sides, differs))
    compared = sum(1 for key in keys if all(key in pods for pods in per_run))
    return CompareView(
        runs=[run_row(r) for r in ordered],
        lines=_compare_lines([r.get("summary") or {} for r in ordered]),
        chart={"runs": [chart_run(r, list(pods.values())) for r, pods in zip(ordered, per_run, strict=True)]},
        differences=paginate(differences, page, RUN_PODS_PAGE_SIZE),
        compared=compared,
        missing=missing,
        across_versions=across_versions,
        notes=figures.resource_notes(
            {name: None for r in ordered for name in ((r.get("summary") or {}).get("allocation") or {})}
        ),
    )


def parse_run_ids(values: list[str]) -> list[int]:
    """``?runs=1,2&runs=3`` as run ids (the list's checkboxes send one value each, links a comma-separated list)."""
    out: list[int] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if part.isdigit():
                out.append(int(part))
    return out

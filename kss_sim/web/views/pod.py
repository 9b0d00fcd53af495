"""A pod's page: its YAML, the attempts timeline and the chosen attempt's statuses, filter matrix and scores."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kss_sim.cluster.errors import ApiError
from kss_sim.kube.objects import Obj, metadata_of
from kss_sim.web.formatting import duration_text, to_yaml
from kss_sim.web.page_sources import WebService
from kss_sim.web.pod_index import PodRow, pod_row
from kss_sim.web.ports import (
    ATTEMPT_SORTS,
    AttemptDetail,
    AttemptMatrix,
    AttemptQuery,
    AttemptSummary,
    Results,
    WaitingPodRow,
)
from kss_sim.web.views.dra import (
    DraRejection,
    DraRejectionGroup,
    PodClaimRow,
    dra_rejections,
    group_rejections,
    pod_claims,
)
from kss_sim.web.views.events import events_for
from kss_sim.web.views.gang_preemption import PreemptedBy, preempted_by
from kss_sim.web.views.pending import PendingDiagnosis, why_pending

MATRIX_PAGE_SIZE = 50
# Annotation values longer than this are elided on the pod page (the per-node result annotations of a
# 5,000-node attempt are megabytes); the editor and the API always show them in full.
ANNOTATION_PREVIEW_CHARS = 300


@dataclass(slots=True)
class Stage:
    """One extension point's outcome for the attempt panel."""

    name: str
    statuses: dict[str, str]
    note: str = ""

    @property
    def failed(self) -> bool:
        """Some plugin did not succeed (and did not skip)."""
        return any(not status_ok(v) for v in self.statuses.values())


def status_ok(status: Any) -> bool:
    """A plugin status that is not a failure (success, skip, passed)."""
    text = str(status).lower()
    return text in ("success", "skip", "passed", "") or text.startswith("success")


@dataclass(slots=True)
class HeatCell:
    """One cell of the final-score heat map."""

    plugin: str
    final: int
    normalized: int
    alpha: float  # 0..1, the colour's strength


@dataclass(slots=True)
class PluginBars:
    """One plugin's final scores for the top nodes."""

    plugin: str
    weight: int
    bars: list[tuple[str, int, float, bool]]  # node, final score, width percent, selected


@dataclass(slots=True)
class AttemptView:
    """The chosen attempt: statuses per extension point, the filter matrix and the scores."""

    number: int
    summary: AttemptDetail
    filter_page: AttemptDetail  # results' detail with the filter matrix page
    score_page: AttemptDetail  # the same attempt, scored nodes sorted by total
    stages: list[Stage]
    postfilter: Obj | None
    victims: list[str]
    heat: list[tuple[str, bool, list[HeatCell], int]]  # node, selected, cells, total
    plugin_bars: list[PluginBars]
    fsort: str
    fnode: str
    fplugin: str
    selection: str = ""  # how selectHost chose the node (``selection_text``)
    # Nodes of the matrix page DynamicResources refused, with the simulator's explanation beneath its message.
    dra: list[DraRejection] = field(default_factory=list)

    @property
    def dra_groups(self) -> list[DraRejectionGroup]:
        """The refused nodes grouped by the same message and explanation."""
        return group_rejections(self.dra)

    @property
    def filter_plugins(self) -> list[str]:
        """Filter plugins in the order they ran."""
        plugins: list[str] = self.filter_page.get("filterPlugins") or []
        return plugins

    @property
    def filter_columns(self) -> list[str]:
        """The filter matrix's columns: the plugins that ran on some node of the page, in order. Those that ran on
        none (PreFilter said Skip) share one narrow column, so the matrix fits beside its sticky columns and a
        user's plugins and extenders are never the ones pushed out of view."""
        rows = self.filter_page["matrix"]["rows"]
        return [p for p in self.filter_plugins if any((r.get("filter") or {}).get(p, "skip") != "skip" for r in rows)]

    @property
    def idle_filter_plugins(self) -> list[str]:
        """The filter plugins that ran on no node of the page (all "·")."""
        shown = set(self.filter_columns)
        return [p for p in self.filter_plugins if p not in shown]

    @property
    def score_plugins(self) -> list[str]:
        """Score plugins in profile order."""
        plugins: list[str] = self.score_page.get("scorePlugins") or []
        return plugins

    @property
    def weights(self) -> dict[str, int]:
        """Plugin weights of the profile."""
        weights: dict[str, int] = self.score_page.get("weights") or {}
        return weights


@dataclass(slots=True)
class PodDetail:
    """The pod page."""

    row: PodRow
    yaml: str
    elided: int
    attempts: list[AttemptSummary]
    attempt: AttemptView | None
    events: list[Obj]
    waiting: bool  # the scheduler runs and nothing is recorded yet: poll
    resource_version: int
    permit: WaitingPodRow | None = None  # held in Permit now: the node it holds, the plugins, how long
    pending: PendingDiagnosis | None = None  # not placed after an attempt: its requests and obstacles in amounts
    claims: list[PodClaimRow] = field(default_factory=list)  # its ResourceClaims (spec.resourceClaims)
    preempted: PreemptedBy | None = None  # a victim of kube-scheduler's preemption: by whom, its grace period left


def _elide_annotations(pod: Obj) -> tuple[Obj, int]:
    meta = metadata_of(pod)
    annotations = meta.get("annotations") or {}
    elided = 0
    short: dict[str, Any] = {}
    for key, value in annotations.items():
        if isinstance(value, str) and len(value) > ANNOTATION_PREVIEW_CHARS:
            short[key] = f"{value[:ANNOTATION_PREVIEW_CHARS]}… ({len(value):,} characters, elided)"
            elided += 1
        else:
            short[key] = value
    if not elided:
        return pod, 0
    copy = dict(pod)
    copy["metadata"] = {**meta, "annotations": short}
    return copy, elided


def _heat_and_bars(score_page: AttemptDetail) -> tuple[list[tuple[str, bool, list[HeatCell], int]], list[PluginBars]]:
    plugins: list[str] = score_page.get("scorePlugins") or []
    weights: dict[str, int] = score_page.get("weights") or {}
    selected = (score_page.get("selected") or [""])[0]
    heat: list[tuple[str, bool, list[HeatCell], int]] = []
    for row in score_page["matrix"]["rows"]:
        final = row.get("finalScore")
        if final is None:
            continue
        norm = row.get("normalizedScore") or {}
        cells = []
        for p in plugins:
            top = 100 * max(weights.get(p, 1), 1)
            value = int(final.get(p, 0))
            cells.append(HeatCell(p, value, int(norm.get(p, 0)), max(0.0, min(1.0, value / top)) if top else 0.0))
        heat.append((row["node"], bool(row.get("selected")), cells, int(row.get("total") or 0)))
    bars: list[PluginBars] = []
    top_nodes = score_page.get("topNodes") or []
    for p in plugins:
        scale = 100 * max(weights.get(p, 1), 1)
        entries = []
        for t in top_nodes:
            value = int((t.get("finalScore") or {}).get(p, 0))
            entries.append((str(t["node"]), value, max(0.0, min(100.0, value * 100.0 / scale)), t["node"] == selected))
        bars.append(PluginBars(p, weights.get(p, 1), entries))
    return heat, bars


def _stages(detail: AttemptDetail) -> list[Stage]:
    stages: list[Stage] = []
    prefilter = detail.get("prefilter") or {}
    note = ""
    nodes = detail.get("prefilterNodes")
    if nodes is not None:
        shown = ", ".join(nodes[:10]) + (f" … (+{len(nodes) - 10})" if len(nodes) > 10 else "")
        note = f"PreFilterResult narrowed the nodes to: {shown or 'none'}"
    status = detail.get("prefilterStatus")
    if status and status != "success":
        note = f"{note}; status: {status}" if note else f"status: {status}"
    stages.append(Stage("PreFilter", dict(prefilter), note))
    statuses_by_point = (
        ("PreScore", detail.get("prescore")),
        ("Reserve", detail.get("reserve")),
        ("Permit", detail.get("permit")),
    )
    for name, found in statuses_by_point:
        statuses = found or {}
        extra = ""
        if name == "Permit" and detail.get("permitTimeout"):
            extra = "waiting: " + ", ".join(f"{p} {t:g}s" for p, t in (detail.get("permitTimeout") or {}).items())
            wait = detail.get("permitWait")
            if wait:
                extra += "; " + permit_wait_text(wait)
        stages.append(Stage(name, dict(statuses), extra))
    stages.append(Stage("PreBind", dict(detail.get("prebind") or {})))
    stages.append(Stage("Bind", dict(detail.get("bind") or {})))
    return stages


def permit_wait_text(wait: Obj) -> str:
    """How a wait in Permit ended: ``waited 10 s on node-a, rejected by Coscheduling: <message>``."""
    text = f"waited {duration_text(float(wait.get('waitedSeconds') or 0.0))} on {wait.get('node') or '?'}, "
    if wait.get("outcome") == "allowed":
        return text + "allowed"
    plugin = f" by {wait['plugin']}" if wait.get("plugin") else ""
    message = f": {wait['message']}" if wait.get("message") else ""
    return f"{text}rejected{plugin}{message}"


def pod_view(
    web: WebService,
    namespace: str,
    name: str,
    *,
    attempt: int | None = None,
    fpage: int = 1,
    fsort: str = "failing",
    fnode: str = "",
    fplugin: str = "",
    spage: int = 1,
) -> PodDetail | None:
    """A pod: its YAML, attempts timeline and the chosen (default: latest) attempt in full."""
    store, results = web.store, web.results
    rv = store.resource_version
    try:
        entry = store.read("Pod", namespace, name)
    except ApiError:
        return None
    row = pod_row(entry.obj, web.scheduler.pod_requests)
    shown, elided = _elide_annotations(entry.obj)
    results.flush()  # attempts are written off-thread: show what was submitted before this request
    attempts = results.list_attempts(namespace, name)
    chosen = attempt if attempt is not None else (attempts[0]["attempt"] if attempts else None)
    view = (
        attempt_view(
            results, namespace, name, chosen, fpage=fpage, fsort=fsort, fnode=fnode, fplugin=fplugin, spage=spage
        )
        if chosen is not None
        else None
    )
    events = events_for(store, "Pod", namespace, name)
    permit = None if row.bound else next((w for w in web.scheduler.waiting_pods() if w.pod == row.key), None)
    # Held in Permit: the stream says when the wait ends (the binding, or the pod back to pending); no poll.
    waiting = web.scheduler_running and not attempts and not row.bound and not row.terminal and permit is None
    pending = None
    if attempts and not row.bound and not row.terminal and permit is None and attempts[0]["result"] != "scheduled":
        pending = why_pending(entry.obj, row.requests, store.select("Node").items, web.allocations().totals)
        if web.scheduler_running and (entry.obj.get("spec") or {}).get("resourceClaims"):
            pending.claims = web.scheduler.summarize_dra(entry.obj)
    if view is not None and not row.bound:
        rows = view.filter_page["matrix"]["rows"]
        view.dra = dra_rejections(web.scheduler, entry.obj, rows, running=web.scheduler_running)
    claims = pod_claims(store, entry.obj)
    preempted = preempted_by(web, row, events)
    return PodDetail(
        row, to_yaml(shown), elided, attempts, view, events, waiting, rv, permit, pending, claims, preempted
    )


def selection_text(detail: AttemptDetail) -> str:
    """How selectHost chose the node: ``drawn at random among 4 nodes tied at total 187``, ``the only feasible
    node``, ``its nominated node``, ``the best total, 187``."""
    by = detail.get("boundBy")
    if by == "external":
        return f"chosen by {detail.get('scheduledBy') or 'another scheduler'}"
    if by == "nominated-node":
        return "its nominated node"
    if by == "single-feasible":
        return "the only feasible node"
    tied = int(detail.get("tiedCount") or 0)
    best = detail.get("bestTotal")
    at = f" at total {best}" if best is not None else ""
    if tied > 1:
        how = "the first by name" if detail.get("tieBreak") == "name" else "drawn at random"
        return f"{how} among {tied} nodes tied{at}"
    return f"the best total, {best}" if best is not None else "the only feasible node"


def _unscored(filter_page: AttemptDetail) -> AttemptDetail:
    """The scores page of an attempt that scored no node: ``filter_page`` with an empty matrix."""
    matrix = filter_page["matrix"]
    empty: AttemptMatrix = {**matrix, "rows": [], "totalRows": 0, "sort": "total", "page": 1}
    return {**filter_page, "topNodes": [], "matrix": empty}


def attempt_view(
    results: Results,
    namespace: str,
    name: str,
    number: int,
    *,
    fpage: int = 1,
    fsort: str = "failing",
    fnode: str = "",
    fplugin: str = "",
    spage: int = 1,
) -> AttemptView | None:
    """One attempt: the filter matrix page (sorted/filtered) and the scores page (sorted by total)."""
    fsort = fsort if fsort in ATTEMPT_SORTS else "failing"
    filter_query = AttemptQuery(
        page=fpage, page_size=MATRIX_PAGE_SIZE, sort=fsort, node=fnode or None, plugin=fplugin or None, top=0
    )
    filter_page = results.get_attempt(namespace, name, number, filter_query)
    if filter_page is None:
        return None
    if filter_page.get("feasibleNodes") or filter_page.get("bestTotal") is not None:
        score_query = AttemptQuery(page=spage, page_size=MATRIX_PAGE_SIZE, sort="total", node=fnode or None, top=8)
        score_page = results.get_attempt(namespace, name, number, score_query)
        assert score_page is not None
    else:
        # No node passed the filters, so none was scored: reading the matrices again (all 5,000 rows of a failed
        # attempt at 5,000 nodes) would only find that out.
        score_page = _unscored(filter_page)
    # Nodes that were never scored (filtered out) sort last by total; the score table skips them.
    score_page["matrix"]["rows"] = [r for r in score_page["matrix"]["rows"] if r.get("total") is not None]
    heat, bars = _heat_and_bars(score_page)
    postfilter = filter_page.get("postfilter")
    return AttemptView(
        number=number,
        summary=filter_page,
        filter_page=filter_page,
        score_page=score_page,
        stages=_stages(filter_page),
        postfilter=postfilter,
        victims=list(filter_page.get("victims") or []),
        heat=heat,
        plugin_bars=bars,
        fsort=fsort,
        fnode=fnode,
        fplugin=fplugin,
        selection=selection_text(filter_page),
    )

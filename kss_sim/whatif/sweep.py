"""``kss sweep``: a grid of replays (configurations x workloads x node shapes x seeds), each cell one replay on Dask.

The spec (YAML, paths relative to it)::

    configs:                      # KubeSchedulerConfigurations; neither file nor inline: the version's defaults
    - {name: default}
    - {name: packed, file: most-allocated.yaml}
    - {name: inline, inline: {apiVersion: kubescheduler.config.k8s.io/v1, kind: KubeSchedulerConfiguration, ...}}
    workloads:                    # a workload file (or several), or the Alibaba trace
    - {name: small, file: small.yaml}
    - {name: trace, trace: {dir: alibaba-gpu-trace-v2023, pods: default, limit: 2000, form: extended}}
    nodeShapes:                   # optional; none: the workloads' own nodes
    - {name: own}                 # no node: the workload as it is
    - {name: a100x8, node: {<Node manifest>}, count: 40, replace: true}  # replace: instead of the workload's nodes
    seeds: [0, 1]                 # optional, default [0]
    interval: 1h                  # optional, the samples' interval
    until: 30d                    # optional, stop each replay there
    featureGates: {GenericWorkload: true}  # optional
    kubeVersion: "1.35"           # optional (--kube-version, else KSS_KUBE_VERSION, else the default version)

Workloads are read (and every spec problem reported) before anything runs. Configurations are checked where they
run: a configuration naming a plugin the workers do not have fails its cells, each reported with its error, and
the sweep goes on. Cells run on a Dask cluster (:func:`run_cells`): an embedded ``LocalCluster`` of worker
processes by default, or any existing one by its scheduler address; workloads are scattered to the workers once.
"""

from __future__ import annotations

import copy
import re
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import DEFAULT_KUBE_VERSION, kube_version
from kss_sim.replay.workload import Event, TimedWorkload, WorkloadError, parse_duration
from kss_sim.whatif.capacity import added_nodes, read_node_template
from kss_sim.whatif.inputs import read_yaml

DONE = "done"
FAILED = "failed"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_NODE_EVENTS = ("create", "update", "delete", "cordon", "uncordon", "taint", "untaint")


@dataclass(frozen=True)
class WorkloadSource:
    """How a workload is read: files, or a trace directory with its pod list, form and limit."""

    name: str
    files: tuple[Path, ...] = ()
    trace_dir: Path | None = None
    pods: str | None = None
    form: str = "extended"
    limit: int | None = None

    def load(self) -> TimedWorkload:
        from kss_sim.replay.sources import load_source

        if self.trace_dir is not None:
            return load_source([self.trace_dir], pods=self.pods, form=self.form, limit=self.limit)
        return load_source(list(self.files), limit=self.limit)


@dataclass(frozen=True)
class NodeShape:
    """Nodes of one shape added to (or, with ``replace``, put instead of) a workload's nodes; no node: as it is."""

    name: str
    node: Obj | None = None
    count: int = 0
    replace: bool = False

    def apply(self, workload: TimedWorkload) -> TimedWorkload:
        if self.node is None:
            return workload
        start = list(workload.start)
        events = list(workload.events)
        if self.replace:
            start = [o for o in start if o.get("kind") != "Node"]
            events = [e for e in events if not _about_a_node(e)]
        return TimedWorkload(
            name=workload.name,
            start=[*start, *added_nodes(self.node, self.count)],
            events=events,
            scheduler_config=workload.scheduler_config,
            epoch=workload.epoch,
            source=workload.source,
        )


def _about_a_node(event: Event) -> bool:
    return event.action in _NODE_EVENTS and event.kind == "Node"


@dataclass(frozen=True)
class Cell:
    """One replay of the grid."""

    config_name: str
    config: Obj | None
    workload: str
    shape: NodeShape
    seed: int
    interval: float
    until: float | None
    feature_gates: dict[str, bool] = field(default_factory=dict)
    plugin_modules: tuple[str, ...] = ()
    kube_version: str = DEFAULT_KUBE_VERSION

    @property
    def id(self) -> str:
        return f"{self.config_name}/{self.workload}/{self.shape.name}/seed-{self.seed}"


@dataclass
class SweepSpec:
    name: str
    configs: list[tuple[str, Obj | None]]
    workloads: list[WorkloadSource]
    shapes: list[NodeShape]
    seeds: list[int]
    interval: float = 3600.0
    until: float | None = None
    feature_gates: dict[str, bool] = field(default_factory=dict)
    kube_version: str = DEFAULT_KUBE_VERSION

    def cells(self, plugin_modules: tuple[str, ...] = ()) -> list[Cell]:
        """The grid, configurations outermost, seeds innermost."""
        version = self.kube_version
        return [
            Cell(
                cname,
                config,
                w.name,
                shape,
                seed,
                self.interval,
                self.until,
                dict(self.feature_gates),
                plugin_modules,
                version,
            )
            for cname, config in self.configs
            for w in self.workloads
            for shape in self.shapes
            for seed in self.seeds
        ]


def _named_list(spec: Obj, key: str, problems: list[str], *, required: bool) -> list[tuple[str, str, Obj]]:
    """The entries of a list of ``{name, ...}`` objects: (path, name, entry), names checked and unique."""
    raw = spec.get(key)
    if raw is None:
        if required:
            problems.append(f"{key}: Required value: a list of {{name, ...}}")
        return []
    if not isinstance(raw, list) or not raw:
        problems.append(f"{key}: must be a non-empty list")
        return []
    out = []
    seen: set[str] = set()
    for i, entry in enumerate(raw):
        path = f"{key}[{i}]"
        if not isinstance(entry, dict):
            problems.append(f"{path}: must be an object with a name")
            continue
        name = entry.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            problems.append(f"{path}.name: Invalid value: {name!r}: letters, digits, '-', '_', '.'")
            continue
        if name in seen:
            problems.append(f"{path}.name: Duplicate value: {name!r}")
            continue
        seen.add(name)
        out.append((path, name, entry))
    return out


def _unknown(entry: Obj, allowed: set[str], path: str, problems: list[str]) -> None:
    extra = sorted(set(entry) - allowed)
    if extra:
        problems.append(f"{path}: unknown field(s) {', '.join(extra)}")


def parse_spec(doc: Any, *, base: Path, name: str = "sweep", version: str | None = None) -> SweepSpec:
    """A sweep spec from its document; every problem (path: message) in one :class:`WorkloadError`. ``version``
    (``--kube-version``) wins over the spec's kubeVersion; without either, KSS_KUBE_VERSION's or the default."""
    if not isinstance(doc, dict):
        raise WorkloadError(["the sweep spec must be an object with configs and workloads"])
    problems: list[str] = []
    _unknown(doc, {"apiVersion", "kind", "metadata", "configs", "workloads", "nodeShapes", "seeds", "interval",
                   "until", "featureGates", "kubeVersion"}, "spec", problems)  # fmt: skip
    configs: list[tuple[str, Obj | None]] = []
    for path, cname, entry in _named_list(doc, "configs", problems, required=True):
        _unknown(entry, {"name", "file", "inline"}, path, problems)
        if "file" in entry and "inline" in entry:
            problems.append(f"{path}: give file or inline, not both")
            continue
        config: Any = None
        if "file" in entry:
            try:
                config = read_yaml(base / str(entry["file"]))
            except WorkloadError as exc:
                problems += [f"{path}.file: {p}" for p in exc.problems]
                continue
        elif "inline" in entry:
            config = entry["inline"]
        if config is not None and not isinstance(config, dict):
            problems.append(f"{path}: must be a KubeSchedulerConfiguration object")
            continue
        configs.append((cname, config))
    workloads = [w for p, n, e in _named_list(doc, "workloads", problems, required=True)
                 if (w := _workload(p, n, e, base, problems)) is not None]  # fmt: skip
    shapes = [s for p, n, e in _named_list(doc, "nodeShapes", problems, required=False)
              if (s := _shape(p, n, e, problems)) is not None] or [NodeShape("own")]  # fmt: skip
    seeds = doc.get("seeds", [0])
    integers = isinstance(seeds, list) and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)
    if not seeds or not integers:
        problems.append("seeds: must be a non-empty list of integers")
        seeds = [0]
    spec = SweepSpec(name, configs, workloads, shapes, list(dict.fromkeys(seeds)))
    for key, attr in (("interval", "interval"), ("until", "until")):
        if doc.get(key) is not None:
            try:
                setattr(spec, attr, parse_duration(doc[key], key))
            except ValueError as exc:
                problems.append(str(exc))
    if spec.interval <= 0:
        problems.append("interval: must be more than 0")
    if version is not None:
        spec.kube_version = version
    elif doc.get("kubeVersion") is not None:
        try:
            spec.kube_version = kube_version(str(doc["kubeVersion"])).name
        except ValueError as exc:
            problems.append(f"kubeVersion: {exc}")
    else:
        from kss_sim.config import Settings

        spec.kube_version = Settings().kube_version
    gates = doc.get("featureGates") or {}
    if not isinstance(gates, dict) or not all(isinstance(v, bool) for v in gates.values()):
        problems.append("featureGates: must map gate names to true or false")
    else:
        try:
            kube_version(spec.kube_version).check_gates(gates)
            spec.feature_gates = dict(gates)
        except ValueError as exc:
            problems.append(f"featureGates: {exc}")
    if problems:
        raise WorkloadError(problems)
    return spec


def _workload(path: str, name: str, entry: Obj, base: Path, problems: list[str]) -> WorkloadSource | None:
    _unknown(entry, {"name", "file", "files", "trace", "limit"}, path, problems)
    limit = entry.get("limit")
    if limit is not None and (not isinstance(limit, int) or limit < 0):
        problems.append(f"{path}.limit: must be an integer of 0 or more")
        return None
    trace = entry.get("trace")
    files = entry.get("files") or ([entry["file"]] if "file" in entry else [])
    if bool(trace) == bool(files):
        problems.append(f"{path}: needs file (or files) or trace")
        return None
    if trace:
        if not isinstance(trace, dict) or not trace.get("dir"):
            problems.append(f"{path}.trace: needs dir (and optionally pods, limit, form)")
            return None
        _unknown(trace, {"dir", "pods", "limit", "form"}, f"{path}.trace", problems)
        limit = trace.get("limit", limit)
        if limit is not None and (not isinstance(limit, int) or limit < 0):
            problems.append(f"{path}.trace.limit: must be an integer of 0 or more")
            return None
        form = str(trace.get("form") or "extended")
        if form not in ("extended", "dra"):
            problems.append(f"{path}.trace.form: Unsupported value: {form!r}: supported values: extended, dra")
            return None
        pods = str(trace["pods"]) if trace.get("pods") else None
        return WorkloadSource(name, trace_dir=base / str(trace["dir"]), pods=pods, form=form, limit=limit)
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        problems.append(f"{path}.files: must be a list of file names")
        return None
    return WorkloadSource(name, files=tuple(base / f for f in files), limit=limit)


def _shape(path: str, name: str, entry: Obj, problems: list[str]) -> NodeShape | None:
    _unknown(entry, {"name", "node", "count", "replace"}, path, problems)
    if entry.get("node") is None:
        if entry.get("count") or entry.get("replace"):
            problems.append(f"{path}.node: Required value: count and replace need a node")
            return None
        return NodeShape(name)
    try:
        node = read_node_template(entry["node"])
    except WorkloadError as exc:
        problems += [f"{path}.node: {p}" for p in exc.problems]
        return None
    count = entry.get("count", 1)
    if not isinstance(count, int) or isinstance(count, bool) or count < 0:
        problems.append(f"{path}.count: must be an integer of 0 or more")
        return None
    replace = entry.get("replace", False)
    if not isinstance(replace, bool):
        problems.append(f"{path}.replace: must be true or false")
        return None
    return NodeShape(name, node, count, replace)


def load_spec(path: Path, version: str | None = None) -> tuple[SweepSpec, dict[str, TimedWorkload]]:
    """The spec at ``path`` and its workloads, read now (so a bad file stops the sweep before it starts); ``version``
    overrides the spec's kubeVersion."""
    spec = parse_spec(read_yaml(path), base=path.parent, name=path.stem, version=version)
    workloads: dict[str, TimedWorkload] = {}
    problems: list[str] = []
    for source in spec.workloads:
        try:
            workloads[source.name] = source.load()
        except WorkloadError as exc:
            problems += [f"workloads {source.name}: {p}" for p in exc.problems]
    if problems:
        raise WorkloadError(problems)
    return spec, workloads


# ---- one cell, on a worker ---------------------------------------------------------------------------------


def run_cell(cell: Cell, workload: TimedWorkload) -> Obj:
    """Replay one cell: its result row (never raises: a failure is a row with status failed and the error)."""
    row: Obj = {"cell": cell.id, "config": cell.config_name, "workload": cell.workload, "nodeShape": cell.shape.name,
                "seed": cell.seed, "status": DONE, "error": ""}  # fmt: skip
    t0 = time.perf_counter()
    try:
        from kss_sim.whatif.replays import replay_once

        if cell.plugin_modules:
            from kss_sim.scheduler.plugins import load_plugin_modules

            load_plugin_modules(cell.plugin_modules)
        version = kube_version(cell.kube_version)
        outcome = replay_once(
            cell.shape.apply(workload), config=copy.deepcopy(cell.config),
            feature_gates=version.effective_gates(cell.feature_gates), seed=cell.seed, interval=cell.interval,
            until=cell.until, name=cell.id, kube_version=version,
        )  # fmt: skip
        row.update(summary=outcome.summary, timeseries=outcome.timeseries, pods=outcome.pods)
    except Exception as exc:  # one cell's failure is its row, not the sweep's end
        row.update(status=FAILED, error=f"{type(exc).__name__}: {exc}", trace=traceback.format_exc(limit=8))
    row["cellSeconds"] = round(time.perf_counter() - t0, 3)
    return row


# ---- the grid on Dask --------------------------------------------------------------------------------------


def run_cells(
    cells: list[Cell],
    workloads: dict[str, TimedWorkload],
    *,
    scheduler_address: str | None = None,
    workers: int | None = None,
    on_row: Callable[[Obj, int, int], None] | None = None,
) -> list[Obj]:
    """Run every cell on Dask and return their rows in grid order; ``on_row(row, done, total)`` as each ends.

    Without ``scheduler_address`` an embedded ``LocalCluster`` of ``workers`` single-threaded worker processes
    (default: the machine's cores) is started and closed again."""
    from distributed import Client, LocalCluster, as_completed

    with _client(Client, LocalCluster, scheduler_address, workers) as client:
        # Each workload goes to the workers once; the cells refer to it.
        scattered = {name: client.scatter(w, hash=False) for name, w in workloads.items()}
        futures = [client.submit(run_cell, cell, scattered[cell.workload], key=f"kss-cell-{i}-{cell.id}", pure=False)
                   for i, cell in enumerate(cells)]  # fmt: skip
        index = {f.key: i for i, f in enumerate(futures)}
        rows: list[Obj | None] = [None] * len(cells)
        for done, future in enumerate(as_completed(futures), start=1):  # type: ignore[no-untyped-call]
            i = index[future.key]
            try:
                row = future.result()
            except Exception as exc:  # the worker itself died (or the cluster went away) under this cell
                cell = cells[i]
                row = {"cell": cell.id, "config": cell.config_name, "workload": cell.workload,
                       "nodeShape": cell.shape.name, "seed": cell.seed, "status": FAILED,
                       "error": f"{type(exc).__name__}: {exc}"}  # fmt: skip
            rows[i] = row
            if on_row is not None:
                on_row(row, done, len(cells))
        return [r for r in rows if r is not None]


class _client:
    """A Dask client on the given scheduler, or on an embedded LocalCluster closed with it."""

    def __init__(self, client_cls: Any, cluster_cls: Any, address: str | None, workers: int | None) -> None:
        self._client_cls, self._cluster_cls, self._address, self._workers = client_cls, cluster_cls, address, workers
        self._cluster: Any = None
        self._client: Any = None

    def __enter__(self) -> Any:
        if self._address:
            self._client = self._client_cls(self._address, timeout="30s")
        else:
            import os

            n = self._workers or os.cpu_count() or 1
            self._cluster = self._cluster_cls(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
            )
            self._client = self._client_cls(self._cluster)
        return self._client

    def __exit__(self, *exc: object) -> None:
        try:
            self._client.close()
        finally:
            if self._cluster is not None:
                self._cluster.close()

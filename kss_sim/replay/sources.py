"""What ``kss replay WORKLOAD...`` (and compare, capacity, sweep) accept as a workload, read into a TimedWorkload.

- one or more workload files (``.yaml``/``.yml``/``.json``: a TimedWorkload or annotated manifests; ``.jsonl``: an
  event stream such as ``kss sync --record`` writes); several files are merged (starts concatenated, events in
  time order, the earlier file first among equal times);
- a directory of the Alibaba 2023 GPU trace, with ``pods`` naming the pod list (``default``, ``gpuspec33``,
  ``multigpu50``);
- a node-list CSV and a pod-list CSV of that trace (told apart by their columns, in either order).

``start`` (a ``kss export`` snapshot) is the cluster at time 0: it replaces a workload file's ``spec.start``;
with the trace, the trace's nodes join the snapshot's objects. ``limit`` keeps the first N pod arrivals (and
leaves out later events about the pods left out).
"""

from __future__ import annotations

import csv
from pathlib import Path

import orjson
import yaml

from kss_sim.replay.alibaba import load_trace_dir, load_trace_workload
from kss_sim.replay.workload import Event, TimedWorkload, WorkloadError, load_workload, read_snapshot, to_document
from kss_sim.replay.workload import to_event_stream as _to_event_stream

WORKLOAD_SUFFIXES = (".yaml", ".yml", ".json", ".jsonl")
_NODE_COLUMNS = {"sn", "gpu", "model"}
_POD_COLUMNS = {"name", "num_gpu", "gpu_milli"}


def load_source(
    paths: list[Path],
    *,
    pods: str | None = None,
    form: str = "extended",
    start: Path | None = None,
    limit: int | None = None,
) -> TimedWorkload:
    """Read ``paths`` as one workload (see the module docstring); every problem raises :class:`WorkloadError`."""
    if not paths:
        raise WorkloadError(["no workload given: a workload file, a trace directory, or a node CSV and a pod CSV"])
    if limit is not None and limit < 0:
        raise WorkloadError([f"--limit must be 0 or more, not {limit}"])
    missing = [p for p in paths if not p.exists()]
    if missing:
        raise WorkloadError([f"{p}: No such file or directory" for p in missing])
    csvs = [p for p in paths if p.is_file() and p.suffix.lower() == ".csv"]
    dirs = [p for p in paths if p.is_dir()]
    if dirs:
        if len(paths) != 1:
            raise WorkloadError([f"{dirs[0]}: a trace directory is the only workload argument"])
        workload = load_trace_dir(dirs[0], pods=pods or "default", form=form, limit=limit)
        return _with_start(workload, start)
    if pods is not None:
        raise WorkloadError([f"--pods {pods}: names a pod list of a trace directory; give the directory"])
    if csvs:
        if len(csvs) != 2 or len(paths) != 2:
            raise WorkloadError(["the trace's CSVs come in twos: the node list and a pod list"])
        nodes_csv, pods_csv = _node_and_pod_csv(csvs[0], csvs[1])
        workload = load_trace_workload(nodes_csv, pods_csv, form=form, limit=limit)
        return _with_start(workload, start)
    unknown = [p for p in paths if p.suffix.lower() not in WORKLOAD_SUFFIXES]
    if unknown:
        raise WorkloadError(
            [f"{p}: not a workload (.yaml, .yml, .json, .jsonl), a trace directory or a trace CSV" for p in unknown]
        )
    loaded = [load_workload(p) for p in paths]
    workload = loaded[0] if len(loaded) == 1 else merge(loaded)
    if start is not None:
        workload.start, config = read_snapshot(start)
        workload.scheduler_config = config or workload.scheduler_config
    if limit is not None:
        limit_pods(workload, limit)
    return workload


def merge(workloads: list[TimedWorkload]) -> TimedWorkload:
    """One workload of several: starts concatenated, events in time order (earlier files first at equal times);
    the first file's epoch and the first configuration found."""
    first = workloads[0]
    merged = TimedWorkload(
        name="+".join(w.name for w in workloads),
        epoch=first.epoch,
        scheduler_config=next((w.scheduler_config for w in workloads if w.scheduler_config is not None), None),
        source=" ".join(w.source for w in workloads),
    )
    seq = 0
    for w in workloads:
        merged.start.extend(w.start)
        for e in sorted(w.events, key=lambda e: e.seq):
            merged.events.append(_renumbered(e, seq))
            seq += 1
    merged.sort()
    return merged


def _renumbered(e: Event, seq: int) -> Event:
    return Event(e.at, seq, e.action, e.obj, e.kind, e.namespace, e.name, e.run_for, e.end_at, e.taint)


def limit_pods(workload: TimedWorkload, limit: int) -> None:
    """Keep the first ``limit`` pod creations (time order); events about pods left out go too."""
    kept = 0
    dropped: set[tuple[str, str]] = set()
    events: list[Event] = []
    for e in workload.events:
        if e.kind == "Pod":
            key = (e.namespace or "default", e.name)
            if e.action == "create":
                if kept >= limit:
                    dropped.add(key)
                    continue
                kept += 1
            elif key in dropped:
                continue
        events.append(e)
    workload.events = events


def _with_start(workload: TimedWorkload, start: Path | None) -> TimedWorkload:
    if start is not None:
        objects, config = read_snapshot(start)
        workload.start = [*objects, *workload.start]
        workload.scheduler_config = config or workload.scheduler_config
    return workload


def _columns(path: Path) -> set[str]:
    try:
        with path.open(newline="") as f:
            header = next(csv.reader(f), [])
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise WorkloadError([f"{path}: cannot read the CSV header ({exc})"]) from None
    return {c.strip() for c in header}


def _node_and_pod_csv(a: Path, b: Path) -> tuple[Path, Path]:
    """(node list, pod list), told apart by their columns."""
    kinds = {}
    for path in (a, b):
        columns = _columns(path)
        if columns >= _NODE_COLUMNS:
            kinds[path] = "nodes"
        elif columns >= _POD_COLUMNS:
            kinds[path] = "pods"
        else:
            raise WorkloadError(
                [
                    f"{path}:1: neither a node list (sn, cpu_milli, memory_mib, gpu, model) nor a pod list "
                    "(name, cpu_milli, memory_mib, num_gpu, gpu_milli, ...)"
                ]
            )
    if kinds[a] == kinds[b]:
        raise WorkloadError([f"{a} and {b} are both {kinds[a]} lists: give the node list and a pod list"])
    return (a, b) if kinds[a] == "nodes" else (b, a)


class _NoAliasDumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):  # type: ignore[misc]
    """Objects shared between events are written out each time (no ``&id001`` anchors in a workload file)."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def write_workload(workload: TimedWorkload, path: Path) -> None:
    """Write ``workload`` to ``path``: ``.jsonl`` an event stream, ``.json`` a JSON document, else YAML."""
    suffix = path.suffix.lower()
    with path.open("wb") as f:
        if suffix == ".jsonl":
            for line in _to_event_stream(workload):
                f.write(line)
        elif suffix == ".json":
            f.write(orjson.dumps(to_document(workload), option=orjson.OPT_INDENT_2) + b"\n")
        else:
            f.write(yaml.dump(to_document(workload), Dumper=_NoAliasDumper, sort_keys=False).encode())

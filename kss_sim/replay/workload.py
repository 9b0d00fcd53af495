"""Timed workloads: what arrives in the cluster when, how long pods run, and what happens to the cluster meanwhile.

The format (docs/replay.md) is ours: a ``TimedWorkload`` document whose ``spec.events`` each carry a time ``at``
(seconds from the start, a number or a duration such as ``90s``, ``5m``, ``1h30m``, ``2d``) and one action:

- ``create: <manifest>`` any kind the cluster serves; for pods (and the pods of a Job, Deployment, ...) ``runFor``
  (how long a pod runs once bound, then it succeeds and leaves) or ``endAt`` (when it is deleted, bound or not);
- ``usage: {RESOURCE: [[at, quantity], ...]}`` beside the create or update of a Deployment, ReplicaSet,
  StatefulSet, DaemonSet, Job or CronJob: its pods' usage (what a HorizontalPodAutoscaler reads) as a step curve on
  the replay's clock, each value from its ``at`` (a time like the event's) until the next;
- ``update: <manifest>`` replaces the object of that kind, namespace and name (scale a Deployment, change a node);
- ``delete: {kind, name, namespace, gracePeriodSeconds}`` (the last as ``kubectl delete --grace-period``);
- ``cordon: NODE`` / ``uncordon: NODE``; ``drain: NODE`` (``kubectl drain``: cordon, then evictions that respect
  PodDisruptionBudgets, retried every 5 s; DaemonSet pods stay);
- ``taint: {node, key, value, effect}`` / ``untaint: {node, key, effect}`` (``effect`` optional: every effect);
- ``failNode: NODE`` / ``healNode: NODE``: the node stops (its kubelet no longer renews its Lease: the node
  lifecycle controller marks it Unknown after ``--node-monitor-grace-period``) or is back (Ready True at once);
  ``failNode: {node, notReady: true}``: its kubelet goes on reporting, Ready False at once (``kss node fail``);
- ``applyConfig: <KubeSchedulerConfiguration>`` from that moment on.

``spec.start`` is the cluster at time 0: a ``kss export`` snapshot file (path relative to the workload file) or a
list of objects; bound pods in it are running, the others pending. A plain stream of Kubernetes manifests is a
workload too: each object arrives at its ``replay.kss.sigs.k8s.io/at`` annotation (0 without one) and a pod runs for
``replay.kss.sigs.k8s.io/run-for`` / ends at ``replay.kss.sigs.k8s.io/end-at``. A ``.jsonl`` file is an event
stream (what ``kss sync --record`` appends to): its first line the TimedWorkload document without events, every
further line one event.

Nothing here runs anything: :func:`load_workload` checks a document and returns :class:`TimedWorkload`, with
every problem reported as a path and a message (:class:`WorkloadError`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from kss_sim.cluster.errors import BadRequest
from kss_sim.kube.objects import Obj
from kss_sim.kube.quantity import QuantityError, milli_value
from kss_sim.operations.snapshot import SNAPSHOT_KINDS, load_documents

API_VERSION = "kss.sigs.k8s.io/v1alpha1"
KIND = "TimedWorkload"
ANNOTATION_PREFIX = "replay.kss.sigs.k8s.io/"
AT_ANNOTATION = ANNOTATION_PREFIX + "at"
RUN_FOR_ANNOTATION = ANNOTATION_PREFIX + "run-for"
END_AT_ANNOTATION = ANNOTATION_PREFIX + "end-at"
# The kinds whose pods a usage curve sets (world.KINDS less the autoscaler); a pod's usage of a resource is its
# kss.sigs.k8s.io/<resource>-usage annotation (kss_sim/controllers/replica_calculator.py).
USAGE_KINDS = ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob")
_RESOURCE = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?(/[a-z0-9]([-a-z0-9._]*[a-z0-9])?)?")
# kubectl drain's pause before it asks again for an eviction a PodDisruptionBudget refused (a drain event's retry).
DRAIN_RETRY_SECONDS = 5.0
# Virtual time 0 as a wall-clock time, for creationTimestamp/startTime (the golden runs' epoch).
DEFAULT_EPOCH = datetime(2025, 1, 12, 13, 46, 40, tzinfo=UTC)

ACTIONS = (
    "create",
    "update",
    "delete",
    "cordon",
    "uncordon",
    "taint",
    "untaint",
    "failNode",
    "healNode",
    "drain",
    "applyConfig",
)
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")

_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d)")


class WorkloadError(ValueError):
    """A workload that cannot be replayed: every problem, each as ``path: message``."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(slots=True)
class Event:
    """One timed event. ``seq`` is its place in the file: events at the same time happen in file order."""

    at: float
    seq: int
    action: str
    obj: Obj | None = None  # create / update: the manifest; applyConfig: the configuration
    kind: str = ""  # delete / cordon / uncordon / taint / untaint / failNode / healNode: what it is done to
    namespace: str = ""
    name: str = ""
    run_for: float | None = None  # create of a pod or pod-making workload: seconds a pod runs once bound
    end_at: float | None = None  # create of a pod: when it is deleted, bound or not
    taint: Obj | None = None  # taint / untaint: {key, value, effect}
    # failNode / healNode: a key of kube.node_ready.NODE_REPORTS: "unreachable" (the node stopped: its Lease lapses),
    # "fail" (its kubelet reports NotReady), "heal"
    report: str = ""
    # create / update of a pod-making workload: resource -> its pods' usage as (virtual time, quantity) steps
    usage: dict[str, list[tuple[float, str]]] | None = None
    grace: float | None = None  # delete of a pod: its gracePeriodSeconds (None: the pod's own, as kubectl delete)

    @property
    def sort_key(self) -> tuple[float, int]:
        return (self.at, self.seq)


@dataclass
class TimedWorkload:
    """A workload ready to replay: the starting objects and the events, sorted by time (file order among equal)."""

    name: str
    start: list[Obj] = field(default_factory=list)
    events: list[Event] = field(default_factory=list)
    scheduler_config: Obj | None = None  # a snapshot's or the document's own configuration (a CLI flag wins)
    epoch: datetime = DEFAULT_EPOCH
    source: str = ""

    def sort(self) -> None:
        self.events.sort(key=lambda e: e.sort_key)

    @property
    def end(self) -> float:
        """The time of the last event (0 for a workload of starting objects only)."""
        return self.events[-1].at if self.events else 0.0


def parse_duration(value: Any, path: str) -> float:
    """Seconds from a number or a duration string (``1h30m``, ``90s``, ``2.5d``, ``500ms``); ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{path}: {value!r} is not a duration")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        try:
            seconds = float(text)
        except ValueError:
            parts = _DURATION.findall(text)
            if not parts or "".join(n + u for n, u in parts) != text:
                raise ValueError(f"{path}: {value!r} is not a duration (seconds, or e.g. 90s, 5m, 1h30m, 2d)") from None
            seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    else:
        raise ValueError(f"{path}: {value!r} is not a duration")
    if seconds < 0 or seconds != seconds or seconds == float("inf"):
        raise ValueError(f"{path}: {value!r} must be a finite duration of 0 or more")
    return seconds


def _load_documents(text: str) -> list[Any]:
    try:
        return load_documents(text, "the workload")
    except BadRequest as exc:
        raise WorkloadError([exc.message]) from None


def load_workload(path: Path | str, *, start: Path | str | None = None) -> TimedWorkload:
    """Read a workload file (TimedWorkload, a ``.jsonl`` event stream, or a stream of annotated manifests);
    ``start`` (a ``kss export`` snapshot) replaces the document's own ``spec.start``."""
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise WorkloadError([f"{path}: {exc.strerror or exc}"]) from None
    if path.suffix == ".jsonl":
        workload = parse_event_stream(text, name=path.stem, base=path.parent)
    else:
        workload = parse_workload(text, name=path.stem, base=path.parent)
    workload.source = str(path)
    if start is not None:
        workload.start, config = read_snapshot(Path(start))
        workload.scheduler_config = config or workload.scheduler_config
    return workload


def parse_workload(text: str, *, name: str = "workload", base: Path | None = None) -> TimedWorkload:
    """A workload from text: a TimedWorkload document, or manifests (timed by their annotations)."""
    docs = _load_documents(text)
    if len(docs) == 1 and isinstance(docs[0], list):
        docs = docs[0]
    if not docs:
        raise WorkloadError(["the workload is empty"])
    if len(docs) == 1 and isinstance(docs[0], dict) and docs[0].get("kind") == KIND:
        return _from_document(docs[0], name, base)
    return _from_manifests(docs, name)


def _from_document(doc: Obj, default_name: str, base: Path | None) -> TimedWorkload:
    problems: list[str] = []
    if doc.get("apiVersion") not in (API_VERSION, None):
        problems.append(f"apiVersion: {doc.get('apiVersion')!r} is not supported; use {API_VERSION}")
    meta = doc.get("metadata") or {}
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise WorkloadError([*problems, "spec: Required value: a TimedWorkload needs a spec"])
    workload = TimedWorkload(name=str(meta.get("name") or default_name) if isinstance(meta, dict) else default_name)
    epoch = spec.get("epoch")
    if epoch is not None:
        try:
            workload.epoch = datetime.fromisoformat(str(epoch).replace("Z", "+00:00"))
            if workload.epoch.tzinfo is None:
                workload.epoch = workload.epoch.replace(tzinfo=UTC)
        except ValueError:
            problems.append(f"spec.epoch: {epoch!r} is not an RFC 3339 time")
    config = spec.get("schedulerConfig")
    if config is not None:
        if isinstance(config, dict):
            workload.scheduler_config = config
        else:
            problems.append("spec.schedulerConfig: must be a KubeSchedulerConfiguration object")
    start = spec.get("start")
    if isinstance(start, str):
        target = (base or Path.cwd()) / start
        try:
            workload.start, snap_config = read_snapshot(target)
            workload.scheduler_config = workload.scheduler_config or snap_config
        except WorkloadError as exc:
            problems += [f"spec.start: {p}" for p in exc.problems]
    elif isinstance(start, list):
        for i, obj in enumerate(start):
            if _is_object(obj, f"spec.start[{i}]", problems):
                workload.start.append(obj)
    elif start is not None:
        problems.append("spec.start: must be a snapshot file name or a list of objects")
    events = spec.get("events") or []
    if not isinstance(events, list):
        problems.append("spec.events: must be a list")
        events = []
    for i, raw in enumerate(events):
        event = _event(raw, i, f"spec.events[{i}]", problems)
        if event is not None:
            workload.events.append(event)
    if problems:
        raise WorkloadError(problems)
    workload.sort()
    return workload


def _is_object(obj: Any, path: str, problems: list[str]) -> bool:
    if not isinstance(obj, dict):
        problems.append(f"{path}: must be a Kubernetes object")
        return False
    if not isinstance(obj.get("kind"), str) or not obj.get("kind"):
        problems.append(f"{path}.kind: Required value")
        return False
    meta = obj.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        problems.append(f"{path}.metadata.name: Required value")
        return False
    return True


def _event(raw: Any, seq: int, path: str, problems: list[str]) -> Event | None:
    if not isinstance(raw, dict):
        problems.append(f"{path}: must be an object with 'at' and one action")
        return None
    actions = [a for a in ACTIONS if a in raw]
    unknown = sorted(set(raw) - {*ACTIONS, "at", "runFor", "endAt", "usage"})
    if unknown:
        problems.append(f"{path}: unknown field(s) {', '.join(unknown)}")
    if len(actions) != 1:
        problems.append(f"{path}: needs exactly one of {', '.join(ACTIONS)} (has {len(actions)})")
        return None
    action = actions[0]
    try:
        at = parse_duration(raw.get("at", 0), f"{path}.at")
    except ValueError as exc:
        problems.append(str(exc))
        return None
    event = Event(at=at, seq=seq, action=action)
    body = raw[action]
    where = f"{path}.{action}"
    if action in ("create", "update"):
        if not _is_object(body, where, problems):
            return None
        event.obj = body
        event.kind = body["kind"]
        meta = body["metadata"]
        event.namespace = str(meta.get("namespace") or "")
        event.name = str(meta.get("name") or "")
    elif action == "applyConfig":
        if not isinstance(body, dict):
            problems.append(f"{where}: must be a KubeSchedulerConfiguration object")
            return None
        event.obj = body
    elif action == "delete":
        if not isinstance(body, dict) or not body.get("kind") or not body.get("name"):
            problems.append(f"{where}: needs kind and name (and namespace for namespaced kinds)")
            return None
        event.kind, event.name = str(body["kind"]), str(body["name"])
        event.namespace = str(body.get("namespace") or "")
        grace = body.get("gracePeriodSeconds")
        if grace is not None:
            if isinstance(grace, bool) or not isinstance(grace, int | float) or grace < 0:
                problems.append(f"{where}: gracePeriodSeconds must be a number of seconds >= 0")
                return None
            event.grace = float(grace)
    elif action in ("cordon", "uncordon", "drain"):
        if not isinstance(body, str) or not body:
            problems.append(f"{where}: must be a node name")
            return None
        event.kind, event.name = "Node", body
    elif action in ("failNode", "healNode"):
        if isinstance(body, dict) and action == "failNode":
            unknown = sorted(set(body) - {"node", "unreachable", "notReady"})
            flags = [body.get(f) for f in ("unreachable", "notReady") if f in body]
            not_ready = bool(body.get("notReady")) or body.get("unreachable") is False
            if (
                unknown
                or not isinstance(body.get("node"), str)
                or not all(isinstance(f, bool) for f in flags)
                or (body.get("notReady") and body.get("unreachable"))
            ):
                problems.append(
                    f"{where}: must be a node name or {{node, notReady: true}} (or unreachable: true|false)"
                )
                return None
            node, report = str(body["node"]), "fail" if not_ready else "unreachable"
        else:
            node, report = body, "unreachable" if action == "failNode" else "heal"
        if not isinstance(node, str) or not node:
            problems.append(f"{where}: must be a node name")
            return None
        event.kind, event.name, event.report = "Node", node, report
    else:  # taint / untaint
        if not isinstance(body, dict) or not body.get("node") or not body.get("key"):
            problems.append(f"{where}: needs node and key")
            return None
        effect = body.get("effect")
        if action == "taint" and effect not in TAINT_EFFECTS:
            problems.append(f"{where}.effect: Unsupported value: {effect!r}: supported values: {TAINT_EFFECTS}")
            return None
        if action == "untaint" and effect is not None and effect not in TAINT_EFFECTS:
            problems.append(f"{where}.effect: Unsupported value: {effect!r}: supported values: {TAINT_EFFECTS}")
            return None
        event.kind, event.name = "Node", str(body["node"])
        event.taint = {k: body[k] for k in ("key", "value", "effect") if body.get(k) is not None}
    for key, attr in (("runFor", "run_for"), ("endAt", "end_at")):
        if key in raw and raw[key] is not None:
            if action != "create":
                problems.append(f"{path}.{key}: only a create has {key}")
                continue
            try:
                setattr(event, attr, parse_duration(raw[key], f"{path}.{key}"))
            except ValueError as exc:
                problems.append(str(exc))
    if event.end_at is not None and event.end_at < at:
        problems.append(f"{path}.endAt: {event.end_at:g} s is before the object arrives ({at:g} s)")
    if raw.get("usage") is not None:
        if action not in ("create", "update") or event.kind not in USAGE_KINDS:
            problems.append(f"{path}.usage: only the create or update of a {', '.join(USAGE_KINDS)} has usage")
        else:
            event.usage = _usage_curve(raw["usage"], f"{path}.usage", problems)
    return event


def _is_quantity(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return False
    try:
        milli_value(str(value))
    except QuantityError:
        return False
    return True


def _usage_curve(raw: Any, path: str, problems: list[str]) -> dict[str, list[tuple[float, str]]] | None:
    """``usage``: resource -> a list of ``[at, quantity]`` (or ``{at, value}``) points, in time order."""
    if not isinstance(raw, dict) or not raw:
        problems.append(f"{path}: must map a resource (cpu, memory, ...) to a list of [at, quantity] points")
        return None
    curve: dict[str, list[tuple[float, str]]] = {}
    for resource, points in raw.items():
        where = f"{path}.{resource}"
        if not isinstance(resource, str) or not _RESOURCE.fullmatch(resource):
            problems.append(f"{where}: not a resource name")
            continue
        if not isinstance(points, list) or not points:
            problems.append(f"{where}: must be a list of [at, quantity] points")
            continue
        steps: list[tuple[float, str]] = []
        for i, point in enumerate(points):
            at, value = (point.get("at"), point.get("value")) if isinstance(point, dict) else (point, None)
            if isinstance(point, list) and len(point) == 2:
                at, value = point
            try:
                when = parse_duration(at, f"{where}[{i}].at")
            except ValueError as exc:
                problems.append(str(exc))
                continue
            if not _is_quantity(value):
                problems.append(f"{where}[{i}]: {value!r} is not a quantity (as in [at, quantity])")
                continue
            if steps and when < steps[-1][0]:
                problems.append(f"{where}[{i}].at: {when:g} s is before the point before it ({steps[-1][0]:g} s)")
                continue
            steps.append((when, str(value)))
        curve[resource] = steps
    return curve


def _from_manifests(docs: Iterable[Any], name: str) -> TimedWorkload:
    """Annotated manifests (``kubectl``-style YAML stream or a List): each object arrives at its ``at``."""
    problems: list[str] = []
    workload = TimedWorkload(name=name)
    seq = 0
    for i, doc in enumerate(_flatten(docs)):
        path = f"[{i}]"
        if isinstance(doc, dict) and doc.get("kind") == "KubeSchedulerConfiguration":
            workload.scheduler_config = doc
            continue
        if not _is_object(doc, path, problems):
            continue
        annotations = (doc.get("metadata") or {}).get("annotations") or {}
        raw: Obj = {"create": doc}
        for key, annotation in (("at", AT_ANNOTATION), ("runFor", RUN_FOR_ANNOTATION), ("endAt", END_AT_ANNOTATION)):
            if annotation in annotations:
                raw[key] = annotations[annotation]
        event = _event(raw, seq, path, problems)
        if event is not None:
            workload.events.append(event)
            seq += 1
    if problems:
        raise WorkloadError(problems)
    workload.sort()
    return workload


def _flatten(docs: Iterable[Any]) -> Iterable[Any]:
    for doc in docs:
        if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
            yield from doc["items"]
        else:
            yield doc


def read_snapshot(path: Path) -> tuple[list[Obj], Obj | None]:
    """The objects and scheduler configuration of a ``kss export`` snapshot (or any manifests file)."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise WorkloadError([f"{path}: {exc.strerror or exc}"]) from None
    docs = _load_documents(text)
    if len(docs) == 1 and isinstance(docs[0], list):
        docs = docs[0]
    objects: list[Obj] = []
    config: Obj | None = None
    problems: list[str] = []
    for i, doc in enumerate(docs):
        if isinstance(doc, dict) and "kind" not in doc:  # kube-scheduler-simulator's snapshot shape
            for key, value in doc.items():
                if key == "schedulerConfig":
                    config = value if isinstance(value, dict) else config
                    continue
                for j, obj in enumerate(value or []):
                    if isinstance(obj, dict) and "kind" not in obj:
                        kind = SNAPSHOT_KINDS.get(key)
                        obj = {"kind": kind, **obj} if kind else obj
                    if _is_object(obj, f"{path}: {key}[{j}]", problems):
                        objects.append(obj)
            continue
        for j, obj in enumerate(_flatten([doc])):
            if isinstance(obj, dict) and obj.get("kind") == "KubeSchedulerConfiguration":
                config = obj
            elif _is_object(obj, f"{path}: [{i}.{j}]", problems):
                objects.append(obj)
    if problems:
        raise WorkloadError(problems)
    return objects, config


def event_document(e: Event) -> Obj:
    """One event as the document's ``spec.events`` entry (and a ``.jsonl`` line) holds it."""
    entry: Obj = {"at": e.at}
    if e.action in ("create", "update", "applyConfig"):
        entry[e.action] = e.obj
    elif e.action == "delete":
        target: Obj = {"kind": e.kind, "name": e.name}
        if e.namespace:
            target["namespace"] = e.namespace
        if e.grace is not None:
            target["gracePeriodSeconds"] = int(e.grace) if e.grace == int(e.grace) else e.grace
        entry["delete"] = target
    elif e.action in ("cordon", "uncordon", "drain", "healNode"):
        entry[e.action] = e.name
    elif e.action == "failNode":
        entry[e.action] = {"node": e.name, "notReady": True} if e.report == "fail" else e.name
    else:
        entry[e.action] = {"node": e.name, **(e.taint or {})}
    if e.run_for is not None:
        entry["runFor"] = e.run_for
    if e.end_at is not None:
        entry["endAt"] = e.end_at
    if e.usage is not None:
        entry["usage"] = {resource: [[at, value] for at, value in steps] for resource, steps in e.usage.items()}
    return entry


def header_document(workload: TimedWorkload) -> Obj:
    """The TimedWorkload document of ``workload`` without its events (a ``.jsonl`` stream's first line)."""
    spec: Obj = {"epoch": workload.epoch.isoformat().replace("+00:00", "Z")}
    if workload.scheduler_config is not None:
        spec["schedulerConfig"] = workload.scheduler_config
    if workload.start:
        spec["start"] = workload.start
    return {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"name": workload.name}, "spec": spec}


def to_document(workload: TimedWorkload) -> Obj:
    """The TimedWorkload document of ``workload`` (what importers write and :func:`parse_workload` reads back)."""
    doc = header_document(workload)
    doc["spec"]["events"] = [event_document(e) for e in workload.events]
    return doc


def to_event_stream(workload: TimedWorkload) -> Iterator[bytes]:
    """``workload`` as ``.jsonl`` lines (each ending in a newline): the header, then one event a line."""
    yield orjson.dumps(header_document(workload)) + b"\n"
    for e in workload.events:
        yield orjson.dumps(event_document(e)) + b"\n"


def parse_event_stream(text: str, *, name: str = "workload", base: Path | None = None) -> TimedWorkload:
    """A ``.jsonl`` event stream: the first line a TimedWorkload document without events (its ``spec.start``,
    ``epoch``, ``schedulerConfig``), every further line one event object, in time order or not (file order breaks
    ties). Blank lines are skipped; problems name the line."""
    problems: list[str] = []
    workload: TimedWorkload | None = None
    seq = 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            problems.append(f"line {number}: not a JSON object ({exc})")
            continue
        if workload is None:
            if not isinstance(raw, dict) or raw.get("kind") != KIND:
                raise WorkloadError([f"line {number}: the first line must be a {KIND} document (the header)"])
            if (raw.get("spec") or {}).get("events"):
                problems.append(f"line {number}: spec.events: the header holds no events (one event a line)")
            try:
                workload = _from_document({**raw, "spec": {**(raw.get("spec") or {}), "events": []}}, name, base)
            except WorkloadError as exc:
                problems += [f"line {number}: {p}" for p in exc.problems]
                workload = TimedWorkload(name=name)
            continue
        event = _event(raw, seq, f"line {number}", problems)
        if event is not None:
            workload.events.append(event)
            seq += 1
    if workload is None:
        raise WorkloadError(["the event stream is empty (its first line is the TimedWorkload header)"])
    if problems:
        raise WorkloadError(problems)
    workload.sort()
    return workload

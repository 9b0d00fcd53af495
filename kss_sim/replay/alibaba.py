"""Alibaba's 2023 GPU trace with its times, as a :class:`TimedWorkload` (docs/replay.md, "The GPU trace").

The objects are those of ``kss convert`` (``kss_sim.simulation.alibaba_v2023``, either form); this module adds the
clock:

- at time 0 (``start``): the Namespace, the DeviceClass (``dra``), every node, their ResourceSlices (``dra``) and
  the ResourceClaimTemplates (``dra``; the engine makes each pod's claim from its template);
- each pod is created at its ``creation_time`` (seconds from the trace's start);
- a pod that ran in production (``scheduled_time`` set) runs for ``deletion_time - scheduled_time`` once bound,
  whatever its final phase (Running, Succeeded, Failed): that is how long it held its node there. A ``Running`` pod
  whose ``deletion_time`` is the trace's last time was still running when the trace was cut: no ``runFor``, it
  runs until the replay ends;
- a pod that never ran (``Pending``, no ``scheduled_time``) is deleted at its ``deletion_time`` (``endAt``), bound
  in the replay or not: production withdrew it then;
- a list without times (``multigpu50``) arrives one pod a second in file order (0, 1, 2, ... s), every pod
  running until the end: the FGD paper's experiment, where pods only arrive.
"""

from __future__ import annotations

import csv
from pathlib import Path

from kss_sim.replay.workload import Event, TimedWorkload, WorkloadError
from kss_sim.simulation.alibaba_v2023 import (
    FORMS,
    NODE_LIST,
    POD_LISTS,
    Trace,
    TraceError,
    TracePod,
    convert,
    read_nodes,
    read_pods,
)

RUNNING_PHASE = "Running"


def trace_times(pods: list[TracePod]) -> list[tuple[float, float | None, float | None]]:
    """(arrival, runFor, endAt) of each pod, in the list's order (creation order; see the module docstring)."""
    cut = max((p.deletion_time for p in pods if p.deletion_time is not None), default=None)
    timed = any(p.creation_time is not None for p in pods)
    times: list[tuple[float, float | None, float | None]] = []
    previous = -1.0
    for pod in pods:
        if timed and pod.creation_time is not None:
            arrival = float(pod.creation_time)
        else:
            arrival = previous + 1.0  # untimed: one a second after the one before
        previous = arrival
        run_for: float | None = None
        end_at: float | None = None
        if pod.scheduled_time is not None and pod.deletion_time is not None:
            still_running = pod.pod_phase == RUNNING_PHASE and pod.deletion_time == cut
            if not still_running:
                run_for = float(max(pod.deletion_time - pod.scheduled_time, 0))
        elif pod.scheduled_time is None and pod.deletion_time is not None:
            end_at = float(max(pod.deletion_time, arrival))
        times.append((arrival, run_for, end_at))
    return times


def trace_workload(
    trace: Trace, form: str, pod_list: str = "default", *, limit: int | None = None, source: str = ""
) -> TimedWorkload:
    """The trace as a timed workload in ``form`` (``extended`` or ``dra``): every node, and the first ``limit``
    pods in creation order (each pod's times decided over the whole list: the trace's last time is the list's)."""
    if form not in FORMS:
        raise WorkloadError([f"unknown form {form!r}: choose one of {', '.join(sorted(FORMS))}"])
    if limit is not None and limit < 0:
        raise WorkloadError([f"the pod limit must be 0 or more, not {limit}"])
    times = trace_times(trace.pods)
    pods = trace.pods if limit is None else trace.pods[:limit]
    objects = convert(Trace(nodes=trace.nodes, pods=pods), form, pod_list)
    workload = TimedWorkload(name=f"alibaba-v2023-{pod_list}-{form}", source=source)
    workload.start = [
        objects.namespace,
        *objects.device_classes,
        *objects.nodes,
        *objects.resource_slices,
        *objects.claim_templates,
    ]
    for seq, (manifest, (arrival, run_for, end_at)) in enumerate(zip(objects.pods, times, strict=False)):
        meta = manifest["metadata"]
        workload.events.append(
            Event(
                at=arrival,
                seq=seq,
                action="create",
                obj=manifest,
                kind="Pod",
                namespace=meta["namespace"],
                name=meta["name"],
                run_for=run_for,
                end_at=end_at,
            )
        )
    workload.sort()
    return workload


def read_trace(nodes_csv: Path, pods_csv: Path) -> Trace:
    """Every node and every pod (creation order); a bad row raises :class:`WorkloadError` naming file and line."""
    try:
        return Trace(nodes=read_nodes(nodes_csv), pods=read_pods(pods_csv))
    except TraceError as exc:
        raise WorkloadError([str(exc)]) from None
    except OSError as exc:
        raise WorkloadError([f"{exc.filename}: {exc.strerror or exc}"]) from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise WorkloadError([f"{nodes_csv} / {pods_csv}: not CSV text ({exc})"]) from None


def load_trace_workload(
    nodes_csv: Path, pods_csv: Path, *, form: str = "extended", pod_list: str | None = None, limit: int | None = None
) -> TimedWorkload:
    """The timed workload of a node CSV and a pod CSV (``pod_list`` names it; default: the list the pod CSV is,
    else its file name)."""
    if form not in FORMS:  # before reading thousands of rows
        raise WorkloadError([f"unknown form {form!r}: choose one of {', '.join(sorted(FORMS))}"])
    trace = read_trace(nodes_csv, pods_csv)
    label = pod_list or _pod_list_name(pods_csv)
    return trace_workload(trace, form, label, limit=limit, source=f"{nodes_csv} {pods_csv}")


def load_trace_dir(
    trace_dir: Path, *, pods: str = "default", form: str = "extended", limit: int | None = None
) -> TimedWorkload:
    """The timed workload of a trace directory and one of its pod lists (``default``, ``gpuspec33``,
    ``multigpu50``)."""
    if pods not in POD_LISTS:
        raise WorkloadError([f"unknown pod list {pods!r}: choose one of {', '.join(POD_LISTS)}"])
    return load_trace_workload(
        trace_dir / NODE_LIST, trace_dir / POD_LISTS[pods], form=form, pod_list=pods, limit=limit
    )


def _pod_list_name(pods_csv: Path) -> str:
    for name, file_name in POD_LISTS.items():
        if pods_csv.name == file_name:
            return name
    return pods_csv.stem

"""The pod status a kubelet writes, as pure functions of the pod (``pkg/kubelet/kubelet_pods.go``
``generateAPIPodStatus`` and ``pkg/kubelet/status/generate.go``, in the shape KWOK's ``pod-ready`` and
``pod-complete`` stages give): a started pod, a finished one, a container that exited and was restarted.

Conditions follow the status manager's merge: the conditions the kubelet does not own come first as they were,
then its own in its order (PodReadyToStartContainers, Initialized, Ready, ContainersReady, PodScheduled), each
keeping its ``lastTransitionTime`` while its status does not change and carrying the pod's generation as
``observedGeneration`` (v1.35's PodObservedGenerationTracking).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from kss_sim.cluster.admission.defaults.core import qos_class
from kss_sim.kube.objects import Obj

RUN_DURATION_ANNOTATION = "kss.sigs.k8s.io/run-duration"
EXIT_CODE_ANNOTATION = "kss.sigs.k8s.io/exit-code"

KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")

# status/generate.go's reasons
POD_COMPLETED = "PodCompleted"
POD_FAILED = "PodFailed"
READINESS_GATES_NOT_READY = "ReadinessGatesNotReady"

_UNITS = {
    "ns": timedelta(microseconds=0.001),
    "us": timedelta(microseconds=1),
    "µs": timedelta(microseconds=1),  # U+00B5
    "μs": timedelta(microseconds=1),  # U+03BC
    "ms": timedelta(milliseconds=1),
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
}
_PART = re.compile(r"(\d*\.?\d*)([^\d.]*)")


def parse_go_duration(text: str) -> timedelta:
    """Go's ``time.ParseDuration`` (``30s``, ``1h30m``, ``1.5h``, ``300ms``; ``0`` alone needs no unit), with its
    error wording; negative durations are refused (a run cannot end before it starts)."""
    original = text
    if text.startswith(("-", "+")):
        if text[0] == "-" and text[1:] not in ("0", ""):
            raise ValueError(f'negative duration "{original}": a run cannot end before it starts')
        text = text[1:]
    if text == "0":
        return timedelta(0)
    if not text:
        raise ValueError(f'time: invalid duration "{original}"')
    total = timedelta(0)
    pos = 0
    while pos < len(text):
        match = _PART.match(text, pos)
        assert match is not None  # the pattern matches the empty string
        number, unit = match.group(1), match.group(2)
        if number in ("", "."):
            raise ValueError(f'time: invalid duration "{original}"')
        if not unit:
            raise ValueError(f'time: missing unit in duration "{original}"')
        if unit not in _UNITS:
            raise ValueError(f'time: unknown unit "{unit}" in duration "{original}"')
        total += _UNITS[unit] * float(number)
        pos = match.end()
    return total


def run_duration(pod: Mapping[str, Any]) -> tuple[timedelta | None, str | None]:
    """The pod's run duration from its annotation (None: runs until deleted) and, when the annotation is there
    but unreadable, why."""
    value = _annotations(pod).get(RUN_DURATION_ANNOTATION)
    if value is None:
        return None, None
    try:
        return parse_go_duration(str(value).strip()), None
    except ValueError as exc:
        return None, f"annotation {RUN_DURATION_ANNOTATION}: {exc}; the pod runs until it is deleted"


def exit_code(pod: Mapping[str, Any]) -> tuple[int, str | None]:
    """The containers' exit code at the end of a run (0 unless the annotation says otherwise) and, when the
    annotation is unreadable, why."""
    value = _annotations(pod).get(EXIT_CODE_ANNOTATION)
    if value is None:
        return 0, None
    text = str(value).strip()
    if re.fullmatch(r"[+-]?\d+", text) and -(2**31) <= int(text) < 2**31:
        return int(text), None
    return 0, f'annotation {EXIT_CODE_ANNOTATION}: "{value}" is not a 32-bit integer; the containers exit with 0'


def _annotations(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    annotations = (pod.get("metadata") or {}).get("annotations")
    return annotations if isinstance(annotations, Mapping) else {}


# ------------------------------------------------------------------------------------------ images and ids


def image_name(image: str) -> str:
    """The image as the container runtime reports it: docker.io's defaults filled in (``nginx`` ->
    ``docker.io/library/nginx:latest``), as containerd normalizes a reference."""
    name, at, digest = image.partition("@")
    first, slash, _ = name.partition("/")
    if not slash or ("." not in first and ":" not in first and first != "localhost"):
        name = f"docker.io/{name}" if slash else f"docker.io/library/{name}"
    if at:
        return f"{name}@{digest}"
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else f"{name}:latest"


def image_id(image: str) -> str:
    """A repository digest for the image (``docker.io/library/nginx@sha256:...``): the one in the reference,
    else a stable made-up one."""
    name = image_name(image)
    if "@" in name:
        return name
    repository = name.rsplit(":", 1)[0] if ":" in name.rsplit("/", 1)[-1] else name
    return f"{repository}@sha256:{hashlib.sha256(name.encode()).hexdigest()}"


def container_id(pod_uid: str, container: str, restart_count: int) -> str:
    """A containerd container id, new for each (re)start of a container."""
    digest = hashlib.sha256(f"{pod_uid}/{container}/{restart_count}".encode()).hexdigest()
    return f"containerd://{digest}"


# ------------------------------------------------------------------------------------------ container statuses


def _containers(pod: Mapping[str, Any], field: str) -> list[Obj]:
    return [c for c in (pod.get("spec") or {}).get(field) or [] if isinstance(c, dict)]


def is_sidecar(container: Mapping[str, Any]) -> bool:
    """A restartable init container (``restartPolicy: Always``): it runs beside the pod's containers."""
    return container.get("restartPolicy") == "Always"


def _container_status(
    pod: Mapping[str, Any], container: Mapping[str, Any], *, restart_count: int, state: Obj, ready: bool
) -> Obj:
    name = str(container.get("name") or "")
    image = str(container.get("image") or "")
    status: Obj = {
        "name": name,
        "image": image_name(image) if image else "",
        "imageID": image_id(image) if image else "",
        "containerID": container_id(str((pod.get("metadata") or {}).get("uid") or ""), name, restart_count),
        "ready": ready,
        "started": "running" in state,
        "restartCount": restart_count,
        "state": state,
        "lastState": {},
    }
    resources = container.get("resources") or {}
    if resources.get("requests") or resources.get("limits"):
        # InPlacePodVerticalScaling (GA): what the kubelet allocated and what the container runs with.
        if resources.get("requests"):
            status["allocatedResources"] = dict(resources["requests"])
        status["resources"] = {k: dict(v) for k, v in resources.items() if k in ("requests", "limits") and v}
    mounts = [
        {
            "name": m.get("name"),
            "mountPath": m.get("mountPath"),
            **({"readOnly": True, "recursiveReadOnly": "Disabled"} if m.get("readOnly") else {}),
        }
        for m in container.get("volumeMounts") or []
        if isinstance(m, dict)
    ]
    if mounts:
        status["volumeMounts"] = mounts
    return status


def _terminated(code: int, started_at: str, finished_at: str, cid: str) -> Obj:
    return {
        "terminated": {
            "exitCode": code,
            "reason": "Completed" if code == 0 else "Error",
            "startedAt": started_at,
            "finishedAt": finished_at,
            "containerID": cid,
        }
    }


# ------------------------------------------------------------------------------------------ conditions


def _condition(kind: str, status: bool, generation: int, reason: str = "", message: str = "") -> Obj:
    condition: Obj = {
        "type": kind,
        "status": "True" if status else "False",
        "observedGeneration": generation,
        "lastProbeTime": None,
    }
    if reason:
        condition["reason"] = reason
    if message:
        condition["message"] = message
    return condition


def _readiness_gates_message(pod: Mapping[str, Any], conditions: Sequence[Mapping[str, Any]]) -> str:
    """``GeneratePodReadyCondition``'s message for readiness gates whose condition is missing or not True."""
    by_type = {c.get("type"): c for c in conditions}
    messages: list[str] = []
    for gate in (pod.get("spec") or {}).get("readinessGates") or []:
        kind = str((gate or {}).get("conditionType") or "")
        condition = by_type.get(kind)
        if condition is None:
            messages.append(f'corresponding condition of pod readiness gate "{kind}" does not exist.')
        elif condition.get("status") != "True":
            messages.append(f'the status of pod readiness gate "{kind}" is not "True", but {condition.get("status")}')
    return ", ".join(messages)


def merge_conditions(pod: Mapping[str, Any], generated: Sequence[Obj], now: str) -> list[Obj]:
    """The status manager's merge: others' conditions as they were, then the kubelet's (``generated``), each
    keeping its old ``lastTransitionTime`` while its status is unchanged."""
    old = [c for c in (pod.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]
    before = {c.get("type"): c for c in old}
    merged = [dict(c) for c in old if c.get("type") not in KUBELET_CONDITIONS]
    for condition in generated:
        previous = before.get(condition["type"])
        same = previous is not None and previous.get("status") == condition["status"]
        condition = dict(condition)
        condition["lastTransitionTime"] = previous.get("lastTransitionTime") if same and previous else now
        merged.append(condition)
    return merged


def kubelet_conditions(
    pod: Mapping[str, Any], *, phase: str, sandbox: bool, containers_ready: bool, others: Sequence[Obj]
) -> list[Obj]:
    """The kubelet's own conditions for ``phase``; ``others``: the conditions it does not own (readiness gates)."""
    generation = int((pod.get("metadata") or {}).get("generation") or 1)
    ready_to_start = _condition("PodReadyToStartContainers", sandbox, generation)
    if phase == "Succeeded":
        initialized = _condition("Initialized", True, generation, POD_COMPLETED)
        ready = _condition("Ready", False, generation, POD_COMPLETED)
        ready_containers = _condition("ContainersReady", False, generation, POD_COMPLETED)
    elif phase == "Failed":
        initialized = _condition("Initialized", True, generation)
        ready = _condition("Ready", False, generation, POD_FAILED)
        ready_containers = _condition("ContainersReady", False, generation, POD_FAILED)
    else:
        initialized = _condition("Initialized", True, generation)
        ready_containers = _condition("ContainersReady", containers_ready, generation)
        gates = _readiness_gates_message(pod, others) if containers_ready else ""
        if gates:
            ready = _condition("Ready", False, generation, READINESS_GATES_NOT_READY, gates)
        else:
            ready = _condition("Ready", containers_ready, generation)
    scheduled = _condition("PodScheduled", True, generation)
    return [ready_to_start, initialized, ready, ready_containers, scheduled]


def _others(pod: Mapping[str, Any]) -> list[Obj]:
    return [
        c
        for c in (pod.get("status") or {}).get("conditions") or []
        if isinstance(c, dict) and c.get("type") not in KUBELET_CONDITIONS
    ]


def ready_conditions(pod: Mapping[str, Any], now: str) -> list[Obj]:
    """A running pod's conditions as they are now (its readiness gates may have changed since it started)."""
    generated = kubelet_conditions(pod, phase="Running", sandbox=True, containers_ready=True, others=_others(pod))
    return merge_conditions(pod, generated, now)


# ------------------------------------------------------------------------------------------ whole statuses


def running_status(pod: Mapping[str, Any], *, now: str, host_ips: Sequence[str], pod_ips: Sequence[str]) -> Obj:
    """The status of a pod whose containers all started at ``now``: phase Running, ready, init containers done."""
    old = pod.get("status") or {}
    init_statuses = []
    for container in _containers(pod, "initContainers"):
        if is_sidecar(container):
            init_statuses.append(
                _container_status(pod, container, restart_count=0, state={"running": {"startedAt": now}}, ready=True)
            )
        else:
            done = _container_status(pod, container, restart_count=0, state={}, ready=True)
            done["state"] = _terminated(0, now, now, done["containerID"])
            init_statuses.append(done)
    statuses = [
        _container_status(pod, c, restart_count=0, state={"running": {"startedAt": now}}, ready=True)
        for c in _containers(pod, "containers")
    ]
    generated = kubelet_conditions(pod, phase="Running", sandbox=True, containers_ready=True, others=_others(pod))
    status: Obj = {
        **{k: v for k, v in old.items() if k not in ("reason", "message")},
        "phase": "Running",
        "observedGeneration": int((pod.get("metadata") or {}).get("generation") or 1),
        "conditions": merge_conditions(pod, generated, now),
        "hostIP": host_ips[0],
        "hostIPs": [{"ip": ip} for ip in host_ips],
        "podIP": pod_ips[0],
        "podIPs": [{"ip": ip} for ip in pod_ips],
        "startTime": now,
        "containerStatuses": statuses,
        "qosClass": old.get("qosClass") or qos_class(dict(pod)),
    }
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    else:
        status.pop("initContainerStatuses", None)
    return status


def run_started_at(pod: Mapping[str, Any]) -> str | None:
    """When the pod's current run began: the latest (re)start of its containers, else its start time."""
    starts = [
        str(s["state"]["running"]["startedAt"])
        for s in (pod.get("status") or {}).get("containerStatuses") or []
        if isinstance(s, dict) and (s.get("state") or {}).get("running", {}).get("startedAt")
    ]
    if starts:
        return max(starts)
    start = (pod.get("status") or {}).get("startTime")
    return str(start) if start else None


def ends_with(restart_policy: str, code: int) -> str | None:
    """The pod's phase once its containers exited with ``code`` (``getPhase``): None when the kubelet restarts
    them (Always; OnFailure after a failure) and the pod stays Running."""
    if restart_policy == "Always" or (restart_policy == "OnFailure" and code != 0):
        return None
    return "Succeeded" if code == 0 else "Failed"


def _exited(previous: Mapping[str, Any], code: int, now: str) -> Obj:
    started = ((previous.get("state") or {}).get("running") or {}).get("startedAt") or now
    return _terminated(code, str(started), now, str(previous.get("containerID") or ""))


def finished_status(pod: Mapping[str, Any], *, phase: str, code: int, now: str) -> Obj:
    """The status once every container exited with ``code`` at ``now`` and the pod reached ``phase``
    (Succeeded or Failed): containers terminated, not ready, the sandbox gone."""
    old = pod.get("status") or {}
    by_name = {s.get("name"): s for s in old.get("containerStatuses") or [] if isinstance(s, dict)}
    statuses = []
    for container in _containers(pod, "containers"):
        previous = by_name.get(container.get("name")) or {}
        status = _container_status(
            pod, container, restart_count=int(previous.get("restartCount") or 0), state={}, ready=False
        )
        status["containerID"] = previous.get("containerID") or status["containerID"]
        status["state"] = _exited(previous, code, now)
        status["lastState"] = previous.get("lastState") or {}
        statuses.append(status)
    init_statuses = []
    for previous in old.get("initContainerStatuses") or []:
        entry = dict(previous)
        if "running" in (entry.get("state") or {}):  # a sidecar stops with the pod
            entry.update(ready=False, started=False, state=_exited(previous, 0, now))
        init_statuses.append(entry)
    generated = kubelet_conditions(pod, phase=phase, sandbox=False, containers_ready=False, others=_others(pod))
    status = {**old, "phase": phase, "conditions": merge_conditions(pod, generated, now), "containerStatuses": statuses}
    if init_statuses:
        status["initContainerStatuses"] = init_statuses
    return status


def restarted_status(pod: Mapping[str, Any], *, code: int, now: str) -> Obj:
    """The status once every container exited with ``code`` and the kubelet started it again at ``now``:
    ``restartCount`` + 1, the exit in ``lastState``, a new container id; the pod stays Running and ready."""
    old = pod.get("status") or {}
    by_name = {s.get("name"): s for s in old.get("containerStatuses") or [] if isinstance(s, dict)}
    statuses = []
    for container in _containers(pod, "containers"):
        previous = by_name.get(container.get("name")) or {}
        restarts = int(previous.get("restartCount") or 0) + 1
        status = _container_status(
            pod, container, restart_count=restarts, state={"running": {"startedAt": now}}, ready=True
        )
        status["lastState"] = _exited(previous, code, now)
        statuses.append(status)
    return {**old, "containerStatuses": statuses, "conditions": ready_conditions(pod, now)}

"""The Deployment controller's arithmetic: kube-controller-manager's ``pkg/controller/deployment/util`` in small.

Pure functions over plain objects (a Deployment and its ReplicaSets as the API returns them): the pod template
hash, the revision and replicas annotations, maxSurge/maxUnavailable, which ReplicaSet is new, proportions when a
rollout is scaled, the status and its conditions. The controller (``deployment.py``) does the writes.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from kss_sim.controllers.owned import meta
from kss_sim.controllers.pod_ranking import parse_time
from kss_sim.kube.objects import Obj

POD_TEMPLATE_HASH = "pod-template-hash"  # apps.DefaultDeploymentUniqueLabelKey
REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
ROLLBACK_TO = "deprecated.deployment.rollback.to"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
ANNOTATIONS_NOT_COPIED = frozenset(
    {LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS, ROLLBACK_TO}
)
MAX_REVISION_HISTORY_CHARS = 2000

# Condition reasons (deployment_util.go).
NEW_RS_CREATED = "NewReplicaSetCreated"
FOUND_NEW_RS = "FoundNewReplicaSet"
RS_UPDATED = "ReplicaSetUpdated"
NEW_RS_AVAILABLE = "NewReplicaSetAvailable"
TIMED_OUT = "ProgressDeadlineExceeded"
PAUSED = "DeploymentPaused"
RESUMED = "DeploymentResumed"
MIN_AVAILABLE = "MinimumReplicasAvailable"
MIN_UNAVAILABLE = "MinimumReplicasUnavailable"
FAILED_RS_CREATE = "ReplicaSetCreateError"

INT32_MAX = 2**31 - 1
_SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # utilrand.SafeEncodeString


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


# --- spec, with the API's defaults for what is absent ---------------------------------------------------------
def replicas(obj: Mapping[str, Any]) -> int:
    """``spec.replicas`` (default 1)."""
    return _int((obj.get("spec") or {}).get("replicas"), 1)


def strategy_type(d: Mapping[str, Any]) -> str:
    """``spec.strategy.type`` (default RollingUpdate)."""
    return str(((d.get("spec") or {}).get("strategy") or {}).get("type") or "RollingUpdate")


def is_rolling_update(d: Mapping[str, Any]) -> bool:
    """Whether the strategy is RollingUpdate."""
    return strategy_type(d) == "RollingUpdate"


def _rolling_params(d: Mapping[str, Any]) -> tuple[int | str, int | str]:
    rolling = ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate")
    if not isinstance(rolling, dict):
        return "25%", "25%"  # the API defaults rollingUpdate whole
    return rolling.get("maxSurge", "25%"), rolling.get("maxUnavailable", "25%")


def scaled_value(value: int | str | None, total: int, round_up: bool) -> int:
    """``intstr.GetScaledValueFromIntOrPercent``: an int as is, ``"N%"`` of ``total`` rounded up or down. What
    it refuses counts as 0, as ``MaxSurge``/``MaxUnavailable`` ignore its error (validation keeps it out)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value or "")
    if not text.endswith("%") or not text[:-1].isdigit():
        return 0
    exact = int(text[:-1]) * total / 100
    return math.ceil(exact) if round_up else math.floor(exact)


def resolve_fenceposts(d: Mapping[str, Any]) -> tuple[int, int]:
    """``ResolveFenceposts``: (maxSurge rounded up, maxUnavailable rounded down); both 0 makes unavailable 1."""
    surge_value, unavailable_value = _rolling_params(d)
    desired = replicas(d)
    surge = scaled_value(surge_value, desired, True)
    unavailable = scaled_value(unavailable_value, desired, False)
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return surge, unavailable


def max_surge(d: Mapping[str, Any]) -> int:
    """``MaxSurge``: 0 unless RollingUpdate."""
    return resolve_fenceposts(d)[0] if is_rolling_update(d) else 0


def max_unavailable(d: Mapping[str, Any]) -> int:
    """``MaxUnavailable``: 0 unless RollingUpdate with replicas, at most the replicas."""
    if not is_rolling_update(d) or replicas(d) == 0:
        return 0
    return min(resolve_fenceposts(d)[1], replicas(d))


def progress_deadline(d: Mapping[str, Any]) -> int | None:
    """``spec.progressDeadlineSeconds`` (default 600); None when there is none (``MaxInt32``)."""
    value = _int((d.get("spec") or {}).get("progressDeadlineSeconds"), 600)
    return None if value == INT32_MAX else value


def revision_history_limit(d: Mapping[str, Any]) -> int | None:
    """``spec.revisionHistoryLimit`` (default 10); None for no limit (``MaxInt32``)."""
    value = _int((d.get("spec") or {}).get("revisionHistoryLimit"), 10)
    return None if value == INT32_MAX else value


def min_ready_seconds(obj: Mapping[str, Any]) -> int:
    """``spec.minReadySeconds`` (default 0)."""
    return _int((obj.get("spec") or {}).get("minReadySeconds"), 0)


def is_paused(d: Mapping[str, Any]) -> bool:
    """``spec.paused``."""
    return bool((d.get("spec") or {}).get("paused"))


# --- the pod template hash ------------------------------------------------------------------------------------
def _fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def _stored(value: Any) -> Any:
    if isinstance(value, dict):
        kept = {key: _stored(item) for key, item in value.items()}
        return {key: item for key, item in kept.items() if item is not None and item != {} and item != []}
    if isinstance(value, list):
        return [_stored(item) for item in value]
    return value


def stored_template(template: Mapping[str, Any] | None) -> dict[str, Any]:
    """The template as kube-apiserver's types see it: a field that is null, ``{}`` or ``[]`` is the field absent
    (Go's zero value; ``Semantic.DeepEqual`` takes an empty map or slice for a nil one). ``kubectl rollout undo``
    sends the old ReplicaSet's template as Go marshals it, with ``"creationTimestamp": null`` and
    ``"resources": {}``; it must hash and compare as that ReplicaSet's, so the rollback scales it up again
    instead of creating a copy. (Only a pointer to an empty struct, such as ``emptyDir: {}``, differs from its
    absence, and in a valid template never where it could be the only difference.)"""
    return dict(_stored(dict(template or {})))


def compute_hash(template: Mapping[str, Any], collision_count: int | None) -> str:
    """``controller.ComputeHash``: FNV-32a of the template (plus the collision count, little-endian, when set),
    its decimal digits encoded in SafeEncodeString's alphabet.

    Upstream hashes Go's ``spew`` dump of the typed PodTemplateSpec, which Python cannot reproduce byte for byte;
    this hashes the stored template's canonical JSON instead: stable across runs and restarts, of the same shape
    and alphabet, but not the value a real cluster would give the same template.
    """
    data = json.dumps(stored_template(template), sort_keys=True, separators=(",", ":")).encode()
    if collision_count is not None:
        data += (collision_count & 0xFFFFFFFF).to_bytes(8, "little")
    return "".join(_SAFE_ALPHABET[ord(ch) % len(_SAFE_ALPHABET)] for ch in str(_fnv32a(data)))


def _without_hash(template: Mapping[str, Any] | None) -> dict[str, Any]:
    t = stored_template(template)
    labels = (t.get("metadata") or {}).get("labels")
    if isinstance(labels, dict):
        labels.pop(POD_TEMPLATE_HASH, None)
        if not labels:
            t["metadata"].pop("labels")
    if isinstance(t.get("metadata"), dict) and not t["metadata"]:
        t.pop("metadata")
    return t


def equal_ignore_hash(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> bool:
    """``EqualIgnoreHash``: the templates are equal but for the pod-template-hash label."""
    return _without_hash(a) == _without_hash(b)


def template_of(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``spec.template``."""
    value = (obj.get("spec") or {}).get("template")
    return value if isinstance(value, dict) else {}


# --- ReplicaSets ----------------------------------------------------------------------------------------------
def _created(obj: Mapping[str, Any]) -> tuple[datetime, str]:
    stamp = parse_time(meta(obj).get("creationTimestamp")) or datetime.min.replace(tzinfo=None)
    return (stamp.replace(tzinfo=None), str(meta(obj).get("name") or ""))


def by_creation(sets: Iterable[Obj]) -> list[Obj]:
    """``ReplicaSetsByCreationTimestamp``: oldest first, then by name."""
    return sorted(sets, key=_created)


def revision(obj: Mapping[str, Any]) -> int:
    """The revision annotation as a number (0 when absent or unreadable)."""
    try:
        return int((meta(obj).get("annotations") or {}).get(REVISION, ""))
    except ValueError:
        return 0


def by_revision(sets: Iterable[Obj]) -> list[Obj]:
    """``ReplicaSetsByRevision``: lowest revision first, then by creation."""
    return sorted(sets, key=lambda rs: (revision(rs), _created(rs)))


def find_new(d: Mapping[str, Any], sets: Sequence[Obj]) -> Obj | None:
    """``FindNewReplicaSet``: the oldest ReplicaSet whose template is the Deployment's (hash aside)."""
    for rs in by_creation(sets):
        if equal_ignore_hash(template_of(rs), template_of(d)):
            return rs
    return None


def active(sets: Iterable[Obj | None]) -> list[Obj]:
    """``FilterActiveReplicaSets``: those with replicas."""
    return [rs for rs in sets if rs is not None and replicas(rs) > 0]


def _status_int(rs: Mapping[str, Any] | None, field: str) -> int:
    return _int(((rs or {}).get("status") or {}).get(field), 0)


def spec_replicas(sets: Iterable[Obj | None]) -> int:
    """``GetReplicaCountForReplicaSets``."""
    return sum(replicas(rs) for rs in sets if rs is not None)


def actual_replicas(sets: Iterable[Obj | None]) -> int:
    """``GetActualReplicaCountForReplicaSets``."""
    return sum(_status_int(rs, "replicas") for rs in sets)


def ready_replicas(sets: Iterable[Obj | None]) -> int:
    """``GetReadyReplicaCountForReplicaSets``."""
    return sum(_status_int(rs, "readyReplicas") for rs in sets)


def available_replicas(sets: Iterable[Obj | None]) -> int:
    """``GetAvailableReplicaCountForReplicaSets``."""
    return sum(_status_int(rs, "availableReplicas") for rs in sets)


def terminating_replicas(sets: Iterable[Obj | None]) -> int | None:
    """``GetTerminatingReplicaCountForReplicaSets``: None as soon as one ReplicaSet does not report it."""
    total = 0
    for rs in sets:
        if rs is None:
            continue
        value = (rs.get("status") or {}).get("terminatingReplicas")
        if not isinstance(value, int):
            return None
        total += value
    return total


def find_active_or_latest(new_rs: Obj | None, old: Sequence[Obj]) -> Obj | None:
    """``FindActiveOrLatest``: the only active ReplicaSet, else the newest when none is, else None."""
    if new_rs is None and not old:
        return None
    newest_first = list(reversed(by_creation(old)))
    live = active([*newest_first, new_rs])
    if not live:
        return new_rs if new_rs is not None else newest_first[0]
    return live[0] if len(live) == 1 else None


def annotation_int(rs: Mapping[str, Any], key: str) -> int | None:
    """An integer annotation, None when absent or unreadable."""
    try:
        return int((meta(rs).get("annotations") or {}).get(key, ""))
    except ValueError:
        return None


def is_saturated(d: Mapping[str, Any], rs: Mapping[str, Any] | None) -> bool:
    """``IsSaturated``: the new ReplicaSet has the Deployment's replicas, all available."""
    if rs is None:
        return False
    desired = annotation_int(rs, DESIRED_REPLICAS)
    return (
        desired is not None
        and replicas(rs) == replicas(d)
        and desired == replicas(d)
        and _status_int(rs, "availableReplicas") == replicas(d)
    )


def replicas_annotations_need_update(rs: Mapping[str, Any], desired: int, maximum: int) -> bool:
    """``ReplicasAnnotationsNeedUpdate``."""
    annotations = meta(rs).get("annotations") or {}
    return annotations.get(DESIRED_REPLICAS) != str(desired) or annotations.get(MAX_REPLICAS) != str(maximum)


def set_replicas_annotations(rs: Obj, desired: int, maximum: int) -> bool:
    """``SetReplicasAnnotations``: returns whether they changed."""
    annotations = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(maximum))):
        if annotations.get(key) != value:
            annotations[key] = value
            changed = True
    return changed


def set_new_replica_set_annotations(d: Mapping[str, Any], rs: Obj, new_revision: str, exists: bool) -> bool:
    """``SetNewReplicaSetAnnotations``: the Deployment's annotations (but the skipped ones), the revision (only
    raised; a raised one remembered in revision-history), and for a new ReplicaSet the replicas annotations."""
    annotations: dict[str, str] = rs.setdefault("metadata", {}).setdefault("annotations", {})
    changed = False
    for key, value in (meta(d).get("annotations") or {}).items():
        if key in ANNOTATIONS_NOT_COPIED or annotations.get(key) == value:
            continue
        annotations[key] = value
        changed = True
    old_text = annotations.get(REVISION)
    try:
        old_revision = int(old_text) if old_text else 0
    except ValueError:
        return False
    new = int(new_revision)
    if old_revision < new:
        annotations[REVISION] = new_revision
        changed = True
        if old_text:
            history = annotations.get(REVISION_HISTORY, "")
            if not history:
                annotations[REVISION_HISTORY] = old_text
            else:
                kept = history.split(",")
                total = len(history) + len(old_text) + 1
                while total > MAX_REVISION_HISTORY_CHARS and kept:
                    total -= len(kept.pop(0)) + 1
                if total <= MAX_REVISION_HISTORY_CHARS:
                    annotations[REVISION_HISTORY] = ",".join([*kept, old_text])
    if not exists and set_replicas_annotations(rs, replicas(d), replicas(d) + max_surge(d)):
        changed = True
    return changed


def new_rs_new_replicas(d: Mapping[str, Any], all_sets: Sequence[Obj | None], new_rs: Mapping[str, Any]) -> int:
    """``NewRSNewReplicas``: how far the new ReplicaSet may grow now."""
    if strategy_type(d) == "Recreate":
        return replicas(d)
    surge = scaled_value(_rolling_params(d)[0], replicas(d), True)
    current = spec_replicas(all_sets)
    max_total = replicas(d) + surge
    if current >= max_total:
        return replicas(new_rs)
    return replicas(new_rs) + min(max_total - current, replicas(d) - replicas(new_rs))


def proportion(rs: Mapping[str, Any], d: Mapping[str, Any], to_add: int, added: int) -> int:
    """``GetProportion``: this ReplicaSet's share of ``to_add`` replicas (``added`` already handed out)."""
    if replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = _fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def _fraction(rs: Mapping[str, Any], d: Mapping[str, Any]) -> int:
    if replicas(d) == 0:
        return -replicas(rs)
    max_now = replicas(d) + max_surge(d)
    before = annotation_int(rs, MAX_REPLICAS)
    if not before:
        before = _int((d.get("status") or {}).get("replicas"), 0) or max_now
    exact = replicas(rs) * max_now / before
    rounded = math.floor(abs(exact) + 0.5) * (1 if exact >= 0 else -1)  # math.Round: half away from zero
    return rounded - replicas(rs)


# --- status and conditions -------------------------------------------------------------------------------------
def condition(status: Mapping[str, Any], kind: str) -> dict[str, Any] | None:
    """``GetDeploymentCondition``."""
    for c in status.get("conditions") or []:
        if isinstance(c, dict) and c.get("type") == kind:
            return c
    return None


def new_condition(kind: str, status: str, reason: str, message: str, now: str) -> dict[str, Any]:
    """``NewDeploymentCondition``."""
    return {
        "type": kind,
        "status": status,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    }


def set_condition(status: Obj, new: dict[str, Any]) -> None:
    """``SetDeploymentCondition``: nothing when status and reason are the same; the transition time kept when
    only the reason changes; the condition moved to the end."""
    current = condition(status, new["type"])
    if current is not None and current.get("status") == new["status"] and current.get("reason") == new["reason"]:
        return
    if current is not None and current.get("status") == new["status"]:
        new["lastTransitionTime"] = current.get("lastTransitionTime")
    remove_condition(status, new["type"])
    status.setdefault("conditions", []).append(new)


def remove_condition(status: Obj, kind: str) -> None:
    """``RemoveDeploymentCondition``."""
    kept = [c for c in status.get("conditions") or [] if c.get("type") != kind]
    if kept:
        status["conditions"] = kept
    else:
        status.pop("conditions", None)


def calculate_status(all_sets: Sequence[Obj | None], new_rs: Obj | None, d: Mapping[str, Any], now: str) -> Obj:
    """``calculateStatus``: counts from the ReplicaSets, the Available condition, the rest kept; ``omitempty``
    as Go writes it."""
    available = available_replicas(all_sets)
    current = d.get("status") or {}
    status: Obj = {}
    generation = meta(d).get("generation")
    fields: list[tuple[str, int]] = [
        ("observedGeneration", _int(generation, 0)),
        ("replicas", actual_replicas(all_sets)),
        ("updatedReplicas", actual_replicas([new_rs])),
        ("readyReplicas", ready_replicas(all_sets)),
        ("availableReplicas", available),
        ("unavailableReplicas", max(0, spec_replicas(all_sets) - available)),
    ]
    for field, value in fields:
        if value:
            status[field] = value
    terminating = terminating_replicas(all_sets)
    if terminating is not None:
        status["terminatingReplicas"] = terminating
    if current.get("conditions"):
        status["conditions"] = copy.deepcopy(current["conditions"])
    if isinstance(current.get("collisionCount"), int):
        status["collisionCount"] = current["collisionCount"]
    if available >= replicas(d) - max_unavailable(d):
        set_condition(
            status, new_condition("Available", "True", MIN_AVAILABLE, "Deployment has minimum availability.", now)
        )
    else:
        set_condition(
            status,
            new_condition("Available", "False", MIN_UNAVAILABLE, "Deployment does not have minimum availability.", now),
        )
    return status


def deployment_complete(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    """``DeploymentComplete``: every replica updated and available, and this generation observed."""
    want = replicas(d)
    return (
        _int(status.get("updatedReplicas"), 0) == want
        and _int(status.get("replicas"), 0) == want
        and _int(status.get("availableReplicas"), 0) == want
        and _int(status.get("observedGeneration"), 0) >= _int(meta(d).get("generation"), 0)
    )


def deployment_progressing(d: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    """``DeploymentProgressing``: more updated, fewer old, more ready or more available replicas than before."""
    old = d.get("status") or {}

    def f(status: Mapping[str, Any], field: str) -> int:
        return _int(status.get(field), 0)

    return (
        f(new, "updatedReplicas") > f(old, "updatedReplicas")
        or f(new, "replicas") - f(new, "updatedReplicas") < f(old, "replicas") - f(old, "updatedReplicas")
        or f(new, "readyReplicas") > f(old, "readyReplicas")
        or f(new, "availableReplicas") > f(old, "availableReplicas")
    )


def progress_deadline_at(d: Mapping[str, Any], status: Mapping[str, Any]) -> datetime | None:
    """When the Progressing condition's last update runs past the deadline (None without either)."""
    deadline = progress_deadline(d)
    progressing = condition(status, "Progressing")
    if deadline is None or progressing is None:
        return None
    since = parse_time(progressing.get("lastUpdateTime"))
    return since + timedelta(seconds=deadline) if since is not None else None


def deployment_timed_out(d: Mapping[str, Any], status: Mapping[str, Any], now: datetime) -> bool:
    """``DeploymentTimedOut``: the Progressing condition was last updated more than the deadline ago."""
    progressing = condition(status, "Progressing")
    if progress_deadline(d) is None or progressing is None or progressing.get("reason") == NEW_RS_AVAILABLE:
        return False
    if progressing.get("reason") == TIMED_OUT:
        return True
    at = progress_deadline_at(d, status)
    return at is not None and at < now

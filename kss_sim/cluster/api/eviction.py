"""The ``pods/eviction`` subresource: a policy/v1 ``Eviction`` deletes a pod unless its PodDisruptionBudget
forbids it, as kube-apiserver's ``EvictionREST`` (pkg/registry/core/pod/storage/eviction.go) does.

- A pod that is Pending, has finished or is being deleted already disrupts nothing: it is deleted without a look
  at PDBs (with its resourceVersion as a precondition unless it has finished or is going).
- Otherwise its PDBs are those of its namespace whose selector (neither missing nor empty) matches it: none, the
  pod is deleted; more than one is a 500 Status; one is checked with the status the disruption controller
  keeps (``kss_sim/controllers/disruption.py``). A pod that is not Ready skips the budget when the PDB's policy
  is ``AlwaysAllow`` or it has its desired healthy pods (the delete then requires the resourceVersion read: a pod
  turned Ready meanwhile is a 429). Else a PDB whose status has not seen its generation is a 429 (retry in 10 s),
  a negative ``disruptionsAllowed`` or more than 2000 ``disruptedPods`` a 403, none allowed a 429 "Cannot evict
  pod as it would violate the pod's disruption budget." with the ``DisruptionBudget`` cause; one allowed is
  taken: ``disruptionsAllowed`` less one (the ``DisruptionAllowed`` condition False at 0) and the pod in
  ``disruptedPods`` (so the controller does not count it healthy until it is gone), written with the PDB's
  resourceVersion (a conflict reads it again and retries).
- The delete writes the pod's ``DisruptionTarget`` condition (``EvictionByEvictionAPI``) first, then deletes it
  with the Eviction's ``deleteOptions``; the answer is a Success Status, 201.

``dryRun`` (the query's or the deleteOptions') checks everything and writes nothing.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from kss_sim.cluster.admission import decode_types, deletion
from kss_sim.cluster.api import protobuf
from kss_sim.cluster.errors import (
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    Timeout,
    TooManyRequests,
    UnsupportedMediaType,
)
from kss_sim.cluster.kinds.registry import kind_info
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.kube.labels import label_selector_matches
from kss_sim.kube.objects import Obj
from kss_sim.kube.pod_conditions import with_disruption_target

MAX_DISRUPTED_PODS = 2000  # MaxDisruptedPodSize: evictions approved but not yet seen by the disruption controller
CONFLICT_RETRIES = 20  # EvictionsRetry's steps
BUDGET_VIOLATED = "Cannot evict pod as it would violate the pod's disruption budget."
DISRUPTION_BUDGET_CAUSE = "DisruptionBudget"
MULTIPLE_BUDGETS = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
_MANAGER = "kube-apiserver"
_API_VERSIONS = ("policy/v1", "policy/v1beta1")  # EvictionREST.AcceptsGroupVersion


@dataclass(frozen=True, slots=True)
class Eviction:
    """What an Eviction body asks: the pod's name and the delete's options (a DeleteOptions as JSON)."""

    name: str
    delete_options: dict[str, Any]


def parse(content_type: str, body: bytes, name: str, *, kube_version: str | None = None) -> Eviction:
    """The Eviction of a request body (JSON, or protobuf as client-go sends it), decoded as ``kube_version``'s
    kube-apiserver does; 400 for anything else, or a name that is not the URL's."""
    if content_type == protobuf.PROTOBUF:
        try:
            obj: Any = protobuf.decode(body)
        except protobuf.ProtobufError as exc:
            raise UnsupportedMediaType(
                f"the body of the request was in an unknown format ({content_type}): {exc}"
            ) from None
    elif content_type in ("application/json", ""):
        if not body.strip():
            raise BadRequest("the request body is empty")
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise BadRequest(
                "the object provided is unrecognized (must be of type Eviction): couldn't get version/kind; "
                f"json parse error: {exc}"
            ) from None
    else:
        raise UnsupportedMediaType(
            f"the body of the request was in an unknown format ({content_type}) - accepted media types include: "
            f"application/json, {protobuf.PROTOBUF}"
        )
    if not isinstance(obj, dict) or obj.get("kind", "Eviction") != "Eviction":
        raise BadRequest("the object provided is unrecognized (must be of type Eviction)")
    decode_types.check_types("Eviction", obj, version="v1", kube_version=kube_version)  # deleteOptions' fields included
    if obj.get("apiVersion", "policy/v1") not in _API_VERSIONS:
        raise BadRequest(
            f"the API version in the data ({obj.get('apiVersion')}) does not match the expected API version"
        )
    meta = obj.get("metadata")
    options = obj.get("deleteOptions")
    if not isinstance(meta, dict) or meta.get("name") != name:
        raise BadRequest("name in URL does not match name in Eviction object")
    if options is not None and not isinstance(options, dict):
        raise BadRequest("the object provided is unrecognized (deleteOptions must be an object)")
    return Eviction(name, dict(options or {}))


def evict(store: ClusterStore, namespace: str, eviction: Eviction, *, dry_run: bool = False) -> Obj:
    """Evict the pod (see the module docstring); the Status to answer with, or an ``ApiError``."""
    options = _with_dry_run(eviction.delete_options, dry_run)
    dry_run = "All" in options.get("dryRun", [])
    delete_options = deletion.parse_delete_options(options, {})  # a bad policy is a 422 before anything is read
    client_rv = (options.get("preconditions") or {}).get("resourceVersion") or None
    pod = _delete_if_no_disruption(store, namespace, eviction.name, options, delete_options, client_rv, dry_run)
    if pod is None:
        return _success()
    budgets = [pdb for pdb in store.select("PodDisruptionBudget", namespace).items if _covers(pdb.obj, pod)]
    if len(budgets) > 1:
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": MULTIPLE_BUDGETS, "code": 500}  # fmt: skip
    enforce_rv = False
    if budgets:
        pdb = _latest(store, "PodDisruptionBudget", namespace, str(budgets[0].obj["metadata"]["name"]))
        if not _ready(pod) and _unhealthy_may_go(pdb):
            enforce_rv = True
        else:
            _take_one_disruption(store, pdb, str(pod["metadata"]["name"]), dry_run=dry_run)
    rv = client_rv or (str(pod["metadata"].get("resourceVersion")) if enforce_rv else None)
    try:
        _delete(store, pod, options, delete_options, rv, dry_run=dry_run)
    except Conflict:
        if enforce_rv and client_rv is None:
            raise _budget_processing(str(budgets[0].obj["metadata"]["name"])) from None
        raise
    return _success()


def _delete_if_no_disruption(
    store: ClusterStore,
    namespace: str,
    name: str,
    options: Mapping[str, Any],
    delete_options: deletion.DeleteOptions,
    client_rv: str | None,
    dry_run: bool,
) -> Obj | None:
    """Delete the pod if its going disrupts nothing (``canIgnorePDB``), retried while it changes under the write
    unless the client named its version; None when it was deleted, else the pod, whose budget must be checked."""
    for _ in range(CONFLICT_RETRIES):
        pod = _latest(store, "Pod", namespace, name)
        if not _can_ignore_budget(pod):
            return pod
        rv = client_rv
        if rv is None and not _terminated(pod) and not _deleting(pod):
            rv = str(pod["metadata"].get("resourceVersion"))  # a Pending pod: not racing it turning Ready
        try:
            _delete(store, pod, options, delete_options, rv, dry_run=dry_run)
            return None
        except Conflict:
            if client_rv is not None:
                raise
    raise Conflict("pods", name, "the pod kept changing while it was evicted")


def _latest(store: ClusterStore, kind: str, namespace: str, name: str) -> Obj:
    """The object with the writes not yet committed (another eviction's, in flight): what a write is checked on."""
    obj = store.get(kind, namespace, name, working=True)
    if obj is None:
        info = kind_info(kind)
        raise NotFound(info.plural, name, group=info.group)
    return obj


def _with_dry_run(options: dict[str, Any], dry_run: bool) -> dict[str, Any]:
    """``propagateDryRun``: the query's ``dryRun`` goes into the options unless they say otherwise."""
    given = options.get("dryRun") or []
    wanted = ["All"] if dry_run else []
    if given and wanted and given != wanted:
        raise ApiError(f"Non-matching dry-run options in request and content: {wanted} and {given}")
    return {**options, "dryRun": given or wanted}


def _success() -> Obj:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _terminated(pod: Obj) -> bool:
    return _phase(pod) in ("Succeeded", "Failed")


def _deleting(pod: Obj) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp"))


def _can_ignore_budget(pod: Obj) -> bool:
    """``canIgnorePDB``: the pod disrupts nothing by going (not running yet, finished, or going already)."""
    return _phase(pod) == "Pending" or _terminated(pod) or _deleting(pod)


def _ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions if isinstance(c, dict))


def _covers(pdb: Obj, pod: Obj) -> bool:
    """A PDB of the pod: a missing or empty selector matches nothing here (unlike a label selector elsewhere)."""
    selector = (pdb.get("spec") or {}).get("selector")
    if not isinstance(selector, dict) or not (selector.get("matchLabels") or selector.get("matchExpressions")):
        return False
    try:
        return label_selector_matches(selector, pod["metadata"].get("labels") or {})
    except (KeyError, TypeError, ValueError):
        return False  # an invalid selector matches no pod


def _unhealthy_may_go(pdb: Obj) -> bool:
    """A pod that is not Ready counts for nothing: it may go under ``AlwaysAllow``, or when the budget has its
    desired healthy pods (``IfHealthyBudget``, the default)."""
    if (pdb.get("spec") or {}).get("unhealthyPodEvictionPolicy") == "AlwaysAllow":
        return True
    status = pdb.get("status") or {}
    desired = int(status.get("desiredHealthy") or 0)
    return int(status.get("currentHealthy") or 0) >= desired > 0


def _budget_processing(pdb_name: str) -> TooManyRequests:
    return TooManyRequests(
        BUDGET_VIOLATED,
        retry_after=10,
        causes=[(DISRUPTION_BUDGET_CAUSE, f"The disruption budget {pdb_name} is still being processed by the server.")],
    )


def _take_one_disruption(store: ClusterStore, pdb: Obj, pod_name: str, *, dry_run: bool) -> None:
    """``checkAndDecrement``, read again and retried on a conflict: one disruption of ``pdb`` for the pod."""
    for _ in range(CONFLICT_RETRIES):
        meta = pdb["metadata"]
        status = copy.deepcopy(pdb.get("status") or {})
        name = str(meta["name"])
        if int(status.get("observedGeneration") or 0) < int(meta.get("generation") or 0):
            raise _budget_processing(name)
        allowed = int(status.get("disruptionsAllowed") or 0)
        if allowed < 0:
            raise Forbidden("poddisruptionbudget", name, "pdb disruptions allowed is negative", group="policy")
        disrupted = status.get("disruptedPods") or {}
        if len(disrupted) > MAX_DISRUPTED_PODS:
            raise Forbidden(
                "poddisruptionbudget",
                name,
                "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
                group="policy",
            )
        if allowed == 0:
            desired, current = int(status.get("desiredHealthy") or 0), int(status.get("currentHealthy") or 0)
            raise TooManyRequests(
                BUDGET_VIOLATED,
                causes=[
                    (
                        DISRUPTION_BUDGET_CAUSE,
                        f"The disruption budget {name} needs {desired} healthy pods and has {current} currently",
                    )
                ],
            )
        if dry_run:
            return
        status["disruptionsAllowed"] = allowed - 1
        if allowed - 1 == 0:
            _insufficient(status, _now(store))
        status["disruptedPods"] = {**disrupted, pod_name: _now(store)}
        try:
            store.update(
                "PodDisruptionBudget", {**copy.deepcopy(pdb), "status": status}, subresource="status", manager=_MANAGER
            )
            return
        except Conflict:
            pdb = _latest(store, "PodDisruptionBudget", str(meta.get("namespace")), name)
    raise Timeout(f'couldn\'t update PodDisruptionBudget "{pdb["metadata"]["name"]}" due to conflicts', retry_after=10)


def _insufficient(status: dict[str, Any], now: str) -> None:
    """``UpdateDisruptionAllowedCondition`` at 0 allowed: DisruptionAllowed False / InsufficientPods."""
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    current = next((c for c in conditions if c.get("type") == "DisruptionAllowed"), None)
    condition = {
        "type": "DisruptionAllowed",
        "status": "False",
        "observedGeneration": int(status.get("observedGeneration") or 0),
        "reason": "InsufficientPods",
        "message": "",
        "lastTransitionTime": now,
    }
    if current is not None and current.get("status") == "False" and current.get("lastTransitionTime"):
        condition["lastTransitionTime"] = current["lastTransitionTime"]
    status["conditions"] = [condition if c is current else c for c in conditions] + ([] if current else [condition])


def _now(store: ClusterStore) -> str:
    return store.clock().strftime("%Y-%m-%dT%H:%M:%SZ")


def _delete(
    store: ClusterStore,
    pod: Obj,
    options: Mapping[str, Any],
    delete_options: deletion.DeleteOptions,
    resource_version: str | None,
    *,
    dry_run: bool,
) -> None:
    """``addConditionAndDeletePod``: the DisruptionTarget condition on the pod as it is now (checked against the
    preconditions), then the delete, whose resourceVersion precondition follows the condition's write."""
    meta = pod["metadata"]
    namespace, name = str(meta.get("namespace") or ""), str(meta["name"])
    uid = (options.get("preconditions") or {}).get("uid") or None
    if not dry_run:
        if uid and uid != meta.get("uid"):
            raise Conflict(
                "pods", name, f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta.get('uid')}"
            )
        patched = _mark_disruption_target(store, pod, resource_version)
        if resource_version is not None:
            resource_version = str(patched["metadata"].get("resourceVersion"))
    store.delete(
        "Pod", namespace, name, uid=uid, resource_version=resource_version, dry_run=dry_run, options=delete_options
    )


def _mark_disruption_target(store: ClusterStore, pod: Obj, resource_version: str | None) -> Obj:
    """``UpdatePodCondition`` of DisruptionTarget True ``EvictionByEvictionAPI`` (its transition time kept when it
    was True already) on the pod as stored now, written through ``status``; with ``resource_version`` only on that
    version (409 else), without it read again when it changes under the write."""
    meta = pod["metadata"]
    namespace, name = str(meta.get("namespace") or ""), str(meta["name"])
    for _ in range(CONFLICT_RETRIES):
        latest = _latest(store, "Pod", namespace, name)
        rv = str(latest["metadata"].get("resourceVersion"))
        if resource_version is not None and resource_version != rv:
            raise Conflict(
                "pods",
                name,
                f"Precondition failed: ResourceVersion in precondition: {resource_version}, "
                f"ResourceVersion in object meta: {rv}",
            )
        conditions = [c for c in (latest.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]
        conditions = with_disruption_target(conditions, "EvictionByEvictionAPI", "Eviction API: evicting", _now(store))
        # The whole list is replaced: written only on the version it was built from.
        patch = {"metadata": {"resourceVersion": rv}, "status": {"conditions": conditions}}
        try:
            return store.patch("Pod", namespace, name, patch, "merge", subresource="status", manager=_MANAGER)
        except Conflict:
            if resource_version is not None:
                raise
    raise Conflict("pods", name, "the pod kept changing while it was evicted")

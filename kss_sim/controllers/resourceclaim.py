"""The resourceclaim controller: kube-controller-manager's ``pkg/controller/resourceclaim`` (v1.35).

Two kinds of work, as upstream keys them (``pod:`` and ``claim:``):

- a pod (not being deleted) whose ``spec.resourceClaims`` name a ResourceClaimTemplate gets one ResourceClaim per
  such entry, made from the template (generateName ``<pod>-<claim>-``, the template's labels, annotations and spec,
  the ``resource.kubernetes.io/pod-claim-name`` annotation, the pod as controller owner), recorded in
  ``status.resourceClaimStatuses`` (server-side apply by ``ResourceClaimController``) before the scheduler, whose
  PreEnqueue waits for the claims, can place the pod. A claim the pod already owns (found by that annotation) is
  reused. A scheduled pod whose allocated claim does not list it yet is added to ``status.reservedFor`` (a pod
  bound without the scheduler). Failures are a Warning ``FailedResourceClaimCreation`` Event on the pod and a
  retry with the work queue's backoff;
- a claim keeps only the ``reservedFor`` pods that may still run (gone, replaced, finished, or deleted before being
  scheduled ones are removed); when its last consumer goes, a claim allocated by the scheduler (the
  ``resource.kubernetes.io/delete-protection`` finalizer) is deallocated and the finalizer removed; an unreserved
  claim generated for a pod that is done (finished, replaced) is deleted. A generated claim whose pod is gone is
  left to the garbage collector (the ownerReference), as upstream does.

Departures, on purpose: a pod that has finished gets no claims made for it (upstream would create one and delete
it at once, over and over) and is never added back to ``reservedFor`` (kubernetes#141274); the pod status lists
every generated claim in each apply (the fix of kubernetes#138407); a template created after its pods wakes them at
once instead of at their next retry.

DRAExtendedResource (on by default from v1.36): the claim kube-scheduler makes for a pod's extended resources (the
``resource.kubernetes.io/extended-resource-claim`` annotation, the pod as controller owner, named in the pod's
``status.extendedResourceClaimStatus``) is never made nor reused here (it is no ``spec.resourceClaims`` entry); it
is released like a generated claim: a finished pod leaves its ``reservedFor`` and the claim is deallocated and
deleted, and a deleted pod's claim is deallocated here and removed by the garbage collector (the ownerReference).
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from kss_sim.cluster.errors import Conflict, NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.owned import OwnedIndex, is_deleting, meta
from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import gate_enabled

log = logging.getLogger(__name__)

Key = tuple[str, str, str]  # ("pod" | "claim", namespace, name)
NamespacedName = tuple[str, str]

COMPONENT = "resource_claim"  # the Event source upstream's recorder names
FIELD_MANAGER = "ResourceClaimController"  # pod.status.resourceClaimStatuses' server-side apply
CLIENT_MANAGER = "kube-controller-manager"  # the client's other writes (its User-Agent)
POD_CLAIM_NAME_ANNOTATION = "resource.kubernetes.io/pod-claim-name"
DELETE_PROTECTION_FINALIZER = "resource.kubernetes.io/delete-protection"
FAILED_CREATION = "FailedResourceClaimCreation"
MAX_GENERATE_NAME_BASE = 57  # 63 characters with the hyphen and the 5 random ones
# client-go's default controller rate limiter: 5 ms doubling up to 1000 s.
RETRY_BASE_SECONDS = 0.005
RETRY_MAX_SECONDS = 1000.0


class ClaimNotCreated(Exception):
    """``resourceclaim.ErrClaimNotFound``: the template's claim is not recorded in the pod status yet."""


class ClaimUnsupported(Exception):
    """``resourceclaim.ErrAPIUnsupported``: neither resourceClaimName nor resourceClaimTemplateName is set."""


class ClaimCreationFailed(Exception):
    """A pod claim could not be handled; the message is upstream's."""


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("spec")
    return value if isinstance(value, Mapping) else {}


def _status(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("status")
    return value if isinstance(value, Mapping) else {}


def pod_claims(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """``pod.spec.resourceClaims``."""
    return [c for c in _spec(pod).get("resourceClaims") or [] if isinstance(c, Mapping)]


def extended_resource_claim_name(pod: Mapping[str, Any]) -> str | None:
    """The claim kube-scheduler made for the pod's extended resources backed by DRA (DRAExtendedResource), as the
    pod's ``status.extendedResourceClaimStatus`` names it."""
    status = _status(pod).get("extendedResourceClaimStatus")
    name = status.get("resourceClaimName") if isinstance(status, Mapping) else None
    return str(name) if name else None


def claim_name(pod: Mapping[str, Any], pod_claim: Mapping[str, Any]) -> tuple[str | None, bool]:
    """``resourceclaim.Name``: the ResourceClaim a pod claim stands for and whether the pod must own it; None when
    the pod status says no claim is needed. Raises ``ClaimNotCreated`` or ``ClaimUnsupported``."""
    m = meta(pod)
    if pod_claim.get("resourceClaimName"):
        return str(pod_claim["resourceClaimName"]), False
    if pod_claim.get("resourceClaimTemplateName"):
        for status in _status(pod).get("resourceClaimStatuses") or []:
            if isinstance(status, Mapping) and status.get("name") == pod_claim.get("name"):
                name = status.get("resourceClaimName")
                return (str(name) if name is not None else None), True
        raise ClaimNotCreated(f'pod "{m.get("namespace")}/{m.get("name")}": ResourceClaim not created yet')
    raise ClaimUnsupported(
        f'pod "{m.get("namespace")}/{m.get("name")}", spec.resourceClaim "{pod_claim.get("name")}": '
        "none of the supported fields are set"
    )


def claim_name_or_none(pod: Mapping[str, Any], pod_claim: Mapping[str, Any]) -> str | None:
    """``claim_name`` with its errors read as "no claim" (what the indexes and the release path do)."""
    try:
        return claim_name(pod, pod_claim)[0]
    except (ClaimNotCreated, ClaimUnsupported):
        return None


def owning_pod(claim: Mapping[str, Any]) -> tuple[str, str]:
    """``owningPod``: name and uid of the pod that controls the claim ("" when none)."""
    for ref in meta(claim).get("ownerReferences") or []:
        if (
            isinstance(ref, Mapping)
            and ref.get("controller") is True
            and ref.get("apiVersion") == "v1"
            and ref.get("kind") == "Pod"
        ):
            return str(ref.get("name") or ""), str(ref.get("uid") or "")
    return "", ""


def is_for_pod(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """``resourceclaim.IsForPod``: same namespace and the pod is the claim's controller."""
    pod_meta, claim_meta = meta(pod), meta(claim)
    if claim_meta.get("namespace") != pod_meta.get("namespace"):
        return False
    return any(
        isinstance(ref, Mapping) and ref.get("controller") is True and ref.get("uid") == pod_meta.get("uid")
        for ref in claim_meta.get("ownerReferences") or []
    )


def not_for_pod_message(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> str:
    """``IsForPod``'s error text."""
    p, c = meta(pod), meta(claim)
    return (
        f"ResourceClaim {c.get('namespace')}/{c.get('name')} was not created for pod "
        f"{p.get('namespace')}/{p.get('name')} (pod is not owner)"
    )


def is_reserved_for_pod(pod: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    """``resourceclaim.IsReservedForPod``: the pod's uid is in ``status.reservedFor``."""
    uid = meta(pod).get("uid")
    return any(isinstance(r, Mapping) and r.get("uid") == uid for r in _status(claim).get("reservedFor") or [])


def is_terminal(pod: Mapping[str, Any]) -> bool:
    """``podutil.IsPodTerminal``: the pod has finished (``Succeeded`` or ``Failed``)."""
    return _status(pod).get("phase") in ("Succeeded", "Failed")


def is_pod_done(pod: Mapping[str, Any]) -> bool:
    """``isPodDone``: finished, or deleted before it was scheduled — it will not run (again)."""
    return is_terminal(pod) or (is_deleting(pod) and not _spec(pod).get("nodeName"))


def pod_needs_claims(pod: Mapping[str, Any], deleted: bool) -> bool:
    """``podNeedsClaims``: whether the pod might still run and so keeps its reservations."""
    return not (deleted or is_terminal(pod) or (is_deleting(pod) and not _spec(pod).get("nodeName")))


def _requests(template: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    devices = _spec(_spec(template)).get("devices")
    requests = devices.get("requests") if isinstance(devices, Mapping) else None
    return [r for r in requests or [] if isinstance(r, Mapping)]


def needs_admin_access(template: Mapping[str, Any]) -> bool:
    """``needsAdminAccess``: some request of the template asks for admin access."""
    for request in _requests(template):
        exactly = request.get("exactly")
        if isinstance(exactly, Mapping) and exactly.get("adminAccess") is True:
            return True
    return False


def has_prioritized_list(template: Mapping[str, Any]) -> bool:
    """``hasPrioritizedList``: some request of the template has ``firstAvailable`` subrequests."""
    return any(request.get("firstAvailable") for request in _requests(template))


def generate_name(pod_name: str, pod_claim_name: str) -> str:
    """The claim's generateName: ``<pod>-<claim>-``, both parts cut in proportion when longer than 57 characters
    (as upstream cuts them, without the trailing hyphen then)."""
    base = f"{pod_name}-{pod_claim_name}-"
    if len(base) <= MAX_GENERATE_NAME_BASE:
        return base
    return (
        pod_name[: len(pod_name) * MAX_GENERATE_NAME_BASE // len(base)]
        + "-"
        + pod_claim_name[: len(pod_claim_name) * MAX_GENERATE_NAME_BASE // len(base)]
    )


def claim_from_template(pod: Mapping[str, Any], pod_claim_name: str, template: Mapping[str, Any]) -> Obj:
    """The ResourceClaim the controller creates for one pod claim from its template."""
    template_spec = _spec(template)
    template_meta = meta(template_spec)
    annotations = dict(template_meta.get("annotations") or {})
    annotations[POD_CLAIM_NAME_ANNOTATION] = pod_claim_name
    pod_meta = meta(pod)
    claim_meta: dict[str, Any] = {
        "generateName": generate_name(str(pod_meta.get("name") or ""), pod_claim_name),
        "namespace": pod_meta.get("namespace"),
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod_meta.get("name"),
                "uid": pod_meta.get("uid"),
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "annotations": annotations,
    }
    if template_meta.get("labels"):
        claim_meta["labels"] = dict(template_meta["labels"])
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": claim_meta,
        "spec": copy.deepcopy(dict(template_spec.get("spec") or {})),
    }


class _ManyIndex:
    """Which owners (pods) name each target (claim or template) and back, kept from ``observe``."""

    def __init__(self) -> None:
        self._owners: dict[NamespacedName, set[str]] = {}
        self._targets: dict[NamespacedName, set[str]] = {}

    def clear(self) -> None:
        self._owners.clear()
        self._targets.clear()

    def assign(self, owner: NamespacedName, targets: Iterable[str]) -> None:
        namespace, name = owner
        new = set(targets)
        old = self._targets.pop(owner, set())
        for target in old - new:
            names = self._owners.get((namespace, target))
            if names is not None:
                names.discard(name)
                if not names:
                    del self._owners[(namespace, target)]
        for target in new - old:
            self._owners.setdefault((namespace, target), set()).add(name)
        if new:
            self._targets[owner] = new

    def owners_of(self, target: NamespacedName) -> list[str]:
        return sorted(self._owners.get(target, ()))


class ResourceClaimController(ReconcileLoop[Key]):
    """Creates pods' ResourceClaims from templates and keeps claims' ``reservedFor`` clean (module docstring)."""

    name = "resource-claim-controller"
    watched_kinds = ("Pod", "ResourceClaim", "ResourceClaimTemplate")

    def __init__(self, store: ClusterPort, *, clock: Clock = utc_now) -> None:
        """A stopped controller over ``store``; ``clock`` times the retries of pods whose claims failed."""
        super().__init__(store, clock=clock)
        gates = store.feature_gates
        self.extended_resource_enabled = gate_enabled(gates, "DRAExtendedResource")
        self.admin_access_enabled = gate_enabled(gates, "DRAAdminAccess")
        self.prioritized_list_enabled = gate_enabled(gates, "DRAPrioritizedList")
        self._pods_by_claim = _ManyIndex()  # upstream's pod-resource-claim-index
        self._pods_by_template = _ManyIndex()  # pods to wake when a template appears
        self._claims_by_owner = OwnedIndex()  # claim-pod-owner-index
        self._retries: dict[Key, int] = {}

    # --- indexes and keys ---------------------------------------------------------------------------------
    def reset(self) -> None:
        self._pods_by_claim.clear()
        self._pods_by_template.clear()
        self._claims_by_owner.clear()
        self._retries.clear()

    def _claim_names(self, pod: Mapping[str, Any]) -> list[str]:
        """The claims the pod uses, once they exist: its ``spec.resourceClaims`` and, with DRAExtendedResource, the
        one kube-scheduler made for its extended resources."""
        names = [n for c in pod_claims(pod) if (n := claim_name_or_none(pod, c))]
        extended = extended_resource_claim_name(pod) if self.extended_resource_enabled else None
        return [*names, extended] if extended else names

    def _index_pod(self, pod: Mapping[str, Any], deleted: bool) -> None:
        key = (str(meta(pod).get("namespace") or ""), str(meta(pod).get("name") or ""))
        claims = [] if deleted else pod_claims(pod)
        self._pods_by_claim.assign(key, [] if deleted else self._claim_names(pod))
        self._pods_by_template.assign(
            key, (str(c["resourceClaimTemplateName"]) for c in claims if c.get("resourceClaimTemplateName"))
        )

    def _index_claim(self, claim: Mapping[str, Any], deleted: bool) -> None:
        key = (str(meta(claim).get("namespace") or ""), str(meta(claim).get("name") or ""))
        self._claims_by_owner.update(key, None if deleted else (owning_pod(claim)[1] or None))

    def _pod_keys(self, pod: Mapping[str, Any], deleted: bool) -> list[Key]:
        """``enqueuePod``: the claims a pod that will not run releases (the scheduler's claim for its extended
        resources among them), and the pod itself while it may need work (only its ``spec.resourceClaims`` can)."""
        claims = pod_claims(pod)
        names = self._claim_names(pod)
        if not claims and not names:
            return []
        namespace, name = str(meta(pod).get("namespace") or ""), str(meta(pod).get("name") or "")
        keys: list[Key] = []
        if not pod_needs_claims(pod, deleted):
            keys += [("claim", namespace, n) for n in names]
        if claims and not deleted and not is_deleting(pod):
            keys.append(("pod", namespace, name))
        return keys

    def observe(self, event_type: str, kind: str, obj: Obj) -> list[Key]:
        deleted = event_type == DELETED
        namespace, name = str(meta(obj).get("namespace") or ""), str(meta(obj).get("name") or "")
        if kind == "Pod":
            self._index_pod(obj, deleted)
            if deleted:
                self._retries.pop(("pod", namespace, name), None)
            return self._pod_keys(obj, deleted)
        if kind == "ResourceClaim":
            self._index_claim(obj, deleted)
            keys: list[Key] = [] if deleted else [("claim", namespace, name)]
            for pod_name in self._pods_by_claim.owners_of((namespace, name)):
                pod = self.store.get("Pod", namespace, pod_name)
                if pod is not None:
                    keys += self._pod_keys(pod, False)
            return keys
        if kind == "ResourceClaimTemplate" and not deleted:
            return [("pod", namespace, p) for p in self._pods_by_template.owners_of((namespace, name))]
        return []

    def resync(self) -> list[Key]:
        keys: list[Key] = []
        if not self.store.serves("ResourceClaim"):
            return keys
        for entry in self.store.select("ResourceClaim").items:
            self._index_claim(entry.obj, False)
            keys.append(("claim", entry.namespace, entry.name))
        for entry in self.store.select("Pod").items:
            if pod_claims(entry.obj) or self._claim_names(entry.obj):
                self._index_pod(entry.obj, False)
                keys += self._pod_keys(entry.obj, False)
        return keys

    # --- reconcile ------------------------------------------------------------------------------------------
    def reconcile(self, key: Key) -> None:
        work, namespace, name = key
        try:
            if work == "pod":
                self._sync_pod(namespace, name)
            else:
                self._sync_claim(namespace, name)
        except (ClaimCreationFailed, ClaimUnsupported) as exc:
            self._retry_later(key, str(exc))
        except NotFound:
            self._retries.pop(key, None)  # the claim went while it was being written: nothing left to do
        else:
            self._retries.pop(key, None)

    def _retry_later(self, key: Key, reason: str) -> None:
        # The work queue's AddRateLimited, on the controller's clock (no traceback for an expected wait).
        failures = self._retries.get(key, 0) + 1
        self._retries[key] = failures
        delay = min(RETRY_BASE_SECONDS * 2 ** min(failures - 1, 40), RETRY_MAX_SECONDS)
        log.info("%s %s/%s failed with: %s (retried in %.3fs)", key[0], key[1], key[2], reason, delay)
        self.requeue_at(key, self.now() + timedelta(seconds=delay))

    def _sync_pod(self, namespace: str, name: str) -> None:
        pod = self.store.get("Pod", namespace, name)
        if pod is None or is_deleting(pod):
            return
        claims = pod_claims(pod)
        if not claims:
            return
        new_claims: dict[str, str] = {}
        if not is_terminal(pod):
            for pod_claim in claims:
                try:
                    self._handle_claim(pod, pod_claim, new_claims)
                except (ClaimCreationFailed, ClaimUnsupported) as exc:
                    self.store.create_event(
                        pod,
                        FAILED_CREATION,
                        f"PodResourceClaim {pod_claim.get('name')}: {exc}",
                        type="Warning",
                        component=COMPONENT,
                    )
                    raise ClaimCreationFailed(
                        f"pod {namespace}/{name}, PodResourceClaim {pod_claim.get('name')}: {exc}"
                    ) from None
        if new_claims:
            pod = self._record_claims(pod, new_claims)
        if not _spec(pod).get("nodeName") or is_terminal(pod):
            return  # the scheduler reserves; a finished pod is never reserved again
        for pod_claim in claims:
            name_, check_owner = claim_name(pod, pod_claim)
            if name_ is None:
                continue
            claim = self.store.get("ResourceClaim", namespace, name_)
            if claim is None:
                return
            if check_owner and not is_for_pod(pod, claim):
                raise ClaimCreationFailed(not_for_pod_message(pod, claim))
            if _status(claim).get("allocation") is not None and not is_reserved_for_pod(pod, claim):
                self._reserve_for_pod(pod, claim)

    def _handle_claim(self, pod: Obj, pod_claim: Mapping[str, Any], new_claims: dict[str, str]) -> None:
        """``handleClaim``: the pod claim's ResourceClaim exists, or is created from its template now."""
        namespace = str(meta(pod).get("namespace") or "")
        try:
            name, must_check_owner = claim_name(pod, pod_claim)
        except ClaimNotCreated:
            pass
        except ClaimUnsupported as exc:
            raise ClaimCreationFailed(f"checking for claim before creating it: {exc}") from None
        else:
            if name is None:
                return  # no claim needed
            if name:
                existing = self.store.get("ResourceClaim", namespace, name)
                if existing is not None:
                    if not must_check_owner or is_for_pod(pod, existing):
                        return
                    # Recorded in the pod status but no longer the pod's: make a new one, as upstream does.
                    log.warning("%s; creating a new one", not_for_pod_message(pod, existing))
        template_name = pod_claim.get("resourceClaimTemplateName")
        if not template_name:
            return
        pod_claim_name = str(pod_claim.get("name") or "")
        claim = self._find_pod_claim(pod, pod_claim_name)
        if claim is None:
            template = self.store.get("ResourceClaimTemplate", namespace, str(template_name))
            if template is None:
                raise ClaimCreationFailed(
                    f'resource claim template "{template_name}": '
                    f'resourceclaimtemplate.resource.k8s.io "{template_name}" not found'
                )
            if not self.admin_access_enabled and needs_admin_access(template):
                raise ClaimCreationFailed("admin access is requested, but the feature is disabled")
            if not self.prioritized_list_enabled and has_prioritized_list(template):
                raise ClaimCreationFailed(
                    "template includes a prioritized list of subrequests, but the feature is disabled"
                )
            body = claim_from_template(pod, pod_claim_name, template)
            try:
                claim = self.store.create("ResourceClaim", body, namespace, manager=CLIENT_MANAGER)
            except Exception as exc:
                raise ClaimCreationFailed(f"create ResourceClaim {meta(body).get('name') or ''}: {exc}") from None
            log.info(
                "Created ResourceClaim %s/%s for pod %s", namespace, meta(claim).get("name"), meta(pod).get("name")
            )
        new_claims[pod_claim_name] = str(meta(claim).get("name") or "")

    def _find_pod_claim(self, pod: Mapping[str, Any], pod_claim_name: str) -> Obj | None:
        """``findPodResourceClaim``: a claim the pod controls, generated for this pod claim (by its annotation)."""
        uid = str(meta(pod).get("uid") or "")
        for namespace, name in self._claims_by_owner.owned_by(uid):
            claim = self.store.get("ResourceClaim", namespace, name)
            if claim is None:
                continue
            annotations = meta(claim).get("annotations") or {}
            if annotations.get(POD_CLAIM_NAME_ANNOTATION) == pod_claim_name:
                return claim
        return None

    def _record_claims(self, pod: Obj, new_claims: Mapping[str, str]) -> Obj:
        """Apply ``status.resourceClaimStatuses`` with every generated claim (the new ones and those recorded)."""
        entries: dict[str, Any] = {}
        for status in _status(pod).get("resourceClaimStatuses") or []:
            if isinstance(status, Mapping) and status.get("name"):
                entries[str(status["name"])] = status.get("resourceClaimName")
        entries.update(new_claims)
        statuses = [
            {"name": n, **({"resourceClaimName": c} if c is not None else {})} for n, c in sorted(entries.items())
        ]
        m = meta(pod)
        configuration = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": m.get("name"), "namespace": m.get("namespace")},
            "status": {"resourceClaimStatuses": statuses},
        }
        try:
            result, _ = self.store.apply(
                "Pod",
                str(m.get("namespace") or ""),
                str(m.get("name") or ""),
                configuration,
                manager=FIELD_MANAGER,
                force=True,
                subresource="status",
            )
        except NotFound:
            return pod
        except Exception as exc:
            raise ClaimCreationFailed(
                f"update pod {m.get('namespace')}/{m.get('name')} ResourceClaimStatuses: {exc}"
            ) from None
        return result

    def _reserve_for_pod(self, pod: Mapping[str, Any], claim: Obj) -> None:
        """``reserveForPod``: add a pod bound without the scheduler to its allocated claim's ``reservedFor``."""
        status = dict(_status(claim))
        m = meta(pod)
        status["reservedFor"] = [
            *(status.get("reservedFor") or []),
            {"resource": "pods", "name": m.get("name"), "uid": m.get("uid")},
        ]
        cm = meta(claim)
        try:
            self._update_claim_status(claim, status)
        except (Conflict, NotFound) as exc:
            raise ClaimCreationFailed(f"reserve claim {cm.get('namespace')}/{cm.get('name')} for pod: {exc}") from None

    def _update_claim_status(self, claim: Mapping[str, Any], status: Mapping[str, Any]) -> Obj:
        # An UpdateStatus, not a patch: it fails when the claim changed since it was read.
        body = copy.deepcopy(dict(claim))
        body["status"] = dict(status)
        return self.store.update("ResourceClaim", body, subresource="status", manager=CLIENT_MANAGER)

    def _remove_finalizer(self, claim: Mapping[str, Any]) -> None:
        body = copy.deepcopy(dict(claim))
        finalizers = list(meta(body).get("finalizers") or [])
        finalizers.remove(DELETE_PROTECTION_FINALIZER)
        body["metadata"]["finalizers"] = finalizers
        self.store.update("ResourceClaim", body, manager=CLIENT_MANAGER)

    def _sync_claim(self, namespace: str, name: str) -> None:
        """``syncClaim``: drop stale ``reservedFor`` pods, deallocate an unused claim, delete a done pod's claim."""
        claim = self.store.get("ResourceClaim", namespace, name)
        if claim is None:
            return
        reserved = [r for r in _status(claim).get("reservedFor") or [] if isinstance(r, Mapping)]
        valid: list[Mapping[str, Any]] = []
        for entry in reserved:
            if entry.get("apiGroup") or entry.get("resource") != "pods":
                raise ClaimUnsupported(f"unsupported ReservedFor entry: {dict(entry)}")
            pod = self.store.get("Pod", namespace, str(entry.get("name") or ""))
            if pod is None or meta(pod).get("uid") != entry.get("uid") or is_pod_done(pod):
                log.debug("claim %s/%s: reservation for pod %s removed", namespace, name, entry.get("name"))
                continue
            valid.append(entry)
        protected = DELETE_PROTECTION_FINALIZER in (meta(claim).get("finalizers") or [])
        if len(valid) < len(reserved):
            status = dict(_status(claim))
            status["reservedFor"] = [dict(v) for v in valid]
            if not status["reservedFor"]:
                del status["reservedFor"]
                if protected:
                    # Allocated by the scheduler: the last consumer gone, the devices are free again.
                    status.pop("allocation", None)
            updated = self._update_claim_status(claim, status)
            if DELETE_PROTECTION_FINALIZER in (meta(updated).get("finalizers") or []) and not _status(updated).get(
                "allocation"
            ):
                self._remove_finalizer(updated)
        elif protected and is_deleting(claim) and not valid:
            current = claim
            if _status(claim).get("allocation") is not None:
                status = dict(_status(claim))
                del status["allocation"]
                current = self._update_claim_status(claim, status)
            self._remove_finalizer(current)
        if valid:
            return
        pod_name, pod_uid = owning_pod(claim)
        if not pod_name:
            return
        pod = self.store.get("Pod", namespace, pod_name)
        if pod is None:
            return  # the garbage collector removes a claim whose pod is gone
        if meta(pod).get("uid") != pod_uid or is_pod_done(pod):
            log.info("deleting unused generated claim %s/%s (pod %s)", namespace, name, pod_name)
            try:
                self.store.delete("ResourceClaim", namespace, name)
            except NotFound:
                return

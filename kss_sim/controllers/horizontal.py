"""The horizontal pod autoscaler: kube-controller-manager's ``pkg/controller/podautoscaler`` (v1.35) over the
virtual cluster, with per-pod usage the user sets instead of metrics-server's.

The metric: a pod's usage of a resource is its ``kss.sigs.k8s.io/<resource>-usage`` annotation (``cpu-usage:
450m``, ``memory-usage: 300Mi``), the pod's total over its containers, or per container as a JSON object
(``cpu-usage: '{"app": "450m", "sidecar": "50m"}'``: the total is their sum). Set it on a workload's pod template
and every pod gets it; set it on a pod to make that one hotter. A pod without it has no metric (upstream's missing
pod).

Every sync period (15 s, ``--horizontal-pod-autoscaler-sync-period``) each HorizontalPodAutoscaler is reconciled
as ``reconcileAutoscaler`` does: the target's scale (Deployment, ReplicaSet, StatefulSet: ``spec.replicas`` and its
selector); outside ``minReplicas``..``maxReplicas`` it is brought back inside; else each Resource metric gives a
replica count (``GetResourceReplicas`` / ``GetRawResourceReplicas``: usage over requests or the average usage
against the target, a 0.1 tolerance, Failed and deleting pods ignored, Pending and not-Ready pods counted at 0 on
a scale-up, pods without a metric counted at the target's edge) and the largest wins. The recommendation is then
stabilized and rate-limited by ``spec.behavior`` (its scale-up and scale-down windows and policies) or, without a
behavior, by the controller's 5-minute downscale window and its scale-up limit (double or 4, whichever is more).
A change is written through the target's ``spec.replicas`` with the resourceVersion read (its scale subresource's
meaning), with the ``SuccessfulRescale`` Event. The status says currentReplicas, desiredReplicas, currentMetrics,
lastScaleTime and the AbleToScale, ScalingActive and ScalingLimited conditions with upstream's reasons.
Pods, Object and External metrics read values the user sets the same way, ``kss.sigs.k8s.io/<metric>-metric``
(a quantity): a Pods metric on each pod (GetMetricReplicas: their average against the target, the readiness rules
of a non-cpu resource), an Object metric on the described object (the autoscaler itself for a kind kss does not
store; GetObjectMetricReplicas against a value, GetObjectPerPodMetricReplicas against an average value), an
External metric on the autoscaler (the total of its series; GetExternalMetricReplicas and its per-pod form).
A ContainerResource metric is a Resource metric over one container: its usage (the annotation's per-container
form; a plain quantity is a single-container pod's) against its own request. The metrics themselves are read in
``horizontal_metrics.py``. Metric label selectors select nothing here: one value per object.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kss_sim.cluster.admission.quantities import canonical_quantity
from kss_sim.cluster.errors import Conflict, NotFound
from kss_sim.cluster.storage.change_log import DELETED
from kss_sim.controllers.cluster_port import ClusterPort
from kss_sim.controllers.horizontal_metrics import replicas_for_metric
from kss_sim.controllers.loop import Clock, ReconcileLoop, utc_now
from kss_sim.controllers.owned import Key, key_of, meta
from kss_sim.controllers.replica_calculator import (
    TOLERANCE,
    MetricError,
)
from kss_sim.kube.labels import label_selector_matches
from kss_sim.kube.objects import Obj

log = logging.getLogger(__name__)

SYNC_PERIOD = 15.0  # --horizontal-pod-autoscaler-sync-period
DOWNSCALE_STABILIZATION = 300.0  # --horizontal-pod-autoscaler-downscale-stabilization, for HPAs without behavior
COMPONENT = "horizontal-pod-autoscaler"
# The kinds whose scale subresource the controller writes, by the scaleTargetRef's group and kind.
SCALABLE = {("apps", "Deployment"), ("apps", "ReplicaSet"), ("apps", "StatefulSet")}


class InvalidMetrics(Exception):
    """Metrics that give no recommendation: how many of how many failed, the first error, every status."""

    def __init__(self, failed: int, total: int, first: MetricError, statuses: list[Obj]) -> None:
        super().__init__(f"invalid metrics ({failed} invalid out of {total}), first error is: {first}")
        self.first = first
        self.statuses = statuses


@dataclass(frozen=True, slots=True)
class Recommendation:
    replicas: int
    at: datetime


@dataclass(frozen=True, slots=True)
class ScaleEvent:
    change: int
    at: datetime


def _dict(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _quantity(thousandths: int) -> str:
    return canonical_quantity(f"{thousandths}m")


def _condition(status: Obj, kind: str, value: str, reason: str, message: str, now: str) -> None:
    """setCondition: the transition time moves only when the status does."""
    conditions: list[Obj] = status.setdefault("conditions", [])
    for condition in conditions:
        if condition.get("type") == kind:
            if condition.get("status") != value:
                condition["lastTransitionTime"] = now
            condition.update(status=value, reason=reason, message=message)
            return
    conditions.append({"type": kind, "status": value, "lastTransitionTime": now, "reason": reason, "message": message})


def _set_counts(status: Obj, current: int, desired: int, metrics: list[Obj]) -> None:
    """setStatus: the replicas seen and wanted and the metrics read (Go leaves out a zero currentReplicas and
    empty currentMetrics; desiredReplicas is always there)."""
    status.pop("currentReplicas", None)
    status.pop("currentMetrics", None)
    if current:
        status["currentReplicas"] = current
    status["desiredReplicas"] = desired
    if metrics:
        status["currentMetrics"] = metrics


def _int(value: Any, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


class HorizontalController(ReconcileLoop[Key]):
    """Scales each HorizontalPodAutoscaler's target (see the module docstring)."""

    name = "horizontal-pod-autoscaler"
    watched_kinds = ("HorizontalPodAutoscaler",)

    def __init__(
        self,
        store: ClusterPort,
        *,
        clock: Clock = utc_now,
        sync_period: float = SYNC_PERIOD,
        tolerance: float = TOLERANCE,
        downscale_stabilization: float = DOWNSCALE_STABILIZATION,
    ) -> None:
        """A stopped controller over ``store``; ``clock`` times the syncs, windows and scaling periods."""
        super().__init__(store, clock=clock)
        self.sync_period = timedelta(seconds=sync_period)
        self.tolerance = tolerance
        self.downscale_stabilization = timedelta(seconds=downscale_stabilization)
        self._next_sync: dict[Key, datetime] = {}
        self._recommendations: dict[Key, list[Recommendation]] = {}
        self._scale_ups: dict[Key, list[ScaleEvent]] = {}
        self._scale_downs: dict[Key, list[ScaleEvent]] = {}

    def reset(self) -> None:
        self._next_sync.clear()
        self._recommendations.clear()
        self._scale_ups.clear()
        self._scale_downs.clear()

    def observe(self, event_type: str, kind: str, obj: Obj) -> list[Key]:
        key = key_of(obj)
        if event_type == DELETED:
            for state in (self._next_sync, self._recommendations, self._scale_ups, self._scale_downs):
                state.pop(key, None)
            return []
        return [key]

    def resync(self) -> list[Key]:
        return [(entry.namespace, entry.name) for entry in self.store.select("HorizontalPodAutoscaler").items]

    def reconcile(self, key: Key) -> None:
        # Once per sync period, whatever woke the key (upstream's queue is rate-limited to the period too).
        now = self.now()
        due = self._next_sync.get(key)
        if due is not None and now < due:
            self.requeue_at(key, due)
            return
        try:
            entry = self.store.read("HorizontalPodAutoscaler", key[0], key[1])
        except NotFound:
            return
        self._next_sync[key] = now + self.sync_period
        self.requeue_at(key, now + self.sync_period)
        try:
            self._reconcile_autoscaler(key, entry.obj)
        except (NotFound, Conflict) as exc:
            log.debug("HorizontalPodAutoscaler %s/%s: %s, retried at the next sync", *key, exc)

    # --- one sync -----------------------------------------------------------------------------------------
    def _reconcile_autoscaler(self, key: Key, hpa: Obj) -> None:
        spec = _dict(hpa.get("spec"))
        old_status = _dict(hpa.get("status"))
        status: Obj = {k: v for k, v in old_status.items() if k != "conditions"}
        status["conditions"] = [dict(c) for c in old_status.get("conditions") or [] if isinstance(c, dict)]
        stamp = self.timestamp()
        ref = _dict(spec.get("scaleTargetRef"))
        group = str(ref.get("apiVersion") or "").rpartition("/")[0]
        target_kind, target_name = str(ref.get("kind") or ""), str(ref.get("name") or "")
        target = self.store.get(target_kind, key[0], target_name) if (group, target_kind) in SCALABLE else None
        if target is None:
            message = f'{target_kind.lower()}s.{group or "core"} "{target_name}" not found'
            if (group, target_kind) not in SCALABLE:
                message = f'no matches for kind "{target_kind}" in group "{group}"'
            _condition(
                status,
                "AbleToScale",
                "False",
                "FailedGetScale",
                f"the HPA controller was unable to get the target's current scale: {message}",
                stamp,
            )
            self._event(hpa, "FailedGetScale", message, warning=True)
            self._write_status(key, hpa, status)
            return
        _condition(
            status,
            "AbleToScale",
            "True",
            "SucceededGetScale",
            "the HPA controller was able to get the target's current scale",
            stamp,
        )
        current = _int(_dict(target.get("spec")).get("replicas"), 1)
        # recordInitialRecommendation: the first sync remembers the current size, so a new HPA (or a restarted
        # controller) does not scale down before a stabilization window has seen the load.
        self._recommendations.setdefault(key, [Recommendation(current, self.now())])
        minimum, maximum = _int(spec.get("minReplicas"), 1), _int(spec.get("maxReplicas"), 1)
        metric_statuses: list[Obj] = []  # none unless the metrics are read (setStatus)
        reason = ""
        if current == 0 and minimum != 0:
            desired = 0
            _condition(
                status,
                "ScalingActive",
                "False",
                "ScalingDisabled",
                "scaling is disabled since the replica count of the target is zero",
                stamp,
            )
        elif current > maximum:
            desired, reason = maximum, "Current number of replicas above Spec.MaxReplicas"
        elif current < minimum:
            desired, reason = minimum, "Current number of replicas below Spec.MinReplicas"
        else:
            selector = _dict(_dict(target.get("spec")).get("selector"))
            pods = [
                e.obj
                for e in self.store.select("Pod", key[0]).items
                if selector and label_selector_matches(selector, _dict(meta(e.obj).get("labels")))
            ]
            try:
                proposal, metric_name, metric_statuses = self._replicas_for_metrics(hpa, spec, current, pods, target)
            except InvalidMetrics as exc:
                _condition(
                    status,
                    "ScalingActive",
                    "False",
                    exc.first.reason,
                    f"the HPA was unable to compute the replica count: {exc.first}",
                    stamp,
                )
                self._event(hpa, "FailedComputeMetricsReplicas", str(exc), warning=True)
                _set_counts(status, current, _int(old_status.get("desiredReplicas"), 0), exc.statuses)
                self._write_status(key, hpa, status)
                return
            _condition(
                status,
                "ScalingActive",
                "True",
                "ValidMetricFound",
                f"the HPA was able to successfully calculate a replica count from {metric_name}",
                stamp,
            )
            desired = proposal
            if desired > current:
                reason = f"{metric_name} above target"
            elif desired < current:
                reason = "All metrics below target"
            if isinstance(spec.get("behavior"), dict):
                desired = self._normalize_with_behaviors(key, spec, status, current, desired, minimum, maximum, stamp)
            else:
                desired = self._normalize(key, status, current, desired, minimum, maximum, stamp)
        rescale = desired != current
        if rescale:
            try:
                self.store.patch(
                    target_kind,
                    key[0],
                    target_name,
                    {
                        "metadata": {"resourceVersion": meta(target).get("resourceVersion")},
                        "spec": {"replicas": desired},
                    },
                    subresource="scale",
                    manager="kube-controller-manager",
                )
            except (Conflict, NotFound) as exc:
                _condition(
                    status,
                    "AbleToScale",
                    "False",
                    "FailedUpdateScale",
                    f"the HPA controller was unable to update the target scale: {exc}",
                    stamp,
                )
                self._event(hpa, "FailedRescale", f"New size: {desired}; reason: {reason}; error: {exc}", warning=True)
                self._write_status(key, hpa, status)
                return
            _condition(
                status,
                "AbleToScale",
                "True",
                "SucceededRescale",
                f"the HPA controller was able to update the target scale to {desired}",
                stamp,
            )
            self._event(hpa, "SuccessfulRescale", f"New size: {desired}; reason: {reason}")
            self._store_scale_event(key, spec, current, desired)
            log.info("HorizontalPodAutoscaler %s/%s: %s to %d (%s)", *key, target_kind, desired, reason)
            status["lastScaleTime"] = stamp
        _set_counts(status, current, desired, metric_statuses)
        self._write_status(key, hpa, status)

    def _replicas_for_metrics(
        self, hpa: Obj, spec: Obj, current: int, pods: list[Obj], target: Obj
    ) -> tuple[int, str, list[Obj]]:
        """computeReplicasForMetrics: the largest count any metric asks for, its name and every metric's status
        (a failed one's left empty, with its Warning); InvalidMetrics when all fail, or some do and the others
        would scale down (upstream then scales up only)."""
        best, best_name, statuses, first_error, failed = 0, "", [], None, 0
        metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
        for metric in metrics:
            try:
                replicas, name, metric_status = replicas_for_metric(
                    self.store, hpa, metric, current, pods, spec, target, self.tolerance
                )
            except MetricError as exc:
                self._event(hpa, exc.reason, str(exc), warning=True)
                failed += 1
                first_error = first_error or exc
                statuses.append({"type": ""})
                continue
            statuses.append(metric_status)
            if best == 0 or replicas > best:
                best, best_name = replicas, name
        if first_error is not None and (failed >= len(metrics) or best < current):
            raise InvalidMetrics(failed, len(metrics), first_error, statuses)
        return best, best_name, statuses

    # --- normalization ------------------------------------------------------------------------------------
    def _normalize(
        self, key: Key, status: Obj, current: int, proposal: int, minimum: int, maximum: int, stamp: str
    ) -> int:
        """normalizeDesiredReplicas: the controller's downscale window, then min, max and the scale-up limit."""
        now = self.now()
        kept = [r for r in self._recommendations.get(key, []) if r.at > now - self.downscale_stabilization]
        stabilized = max([proposal, *(r.replicas for r in kept)])
        self._recommendations[key] = [*kept, Recommendation(proposal, now)]
        if stabilized != proposal:
            _condition(
                status,
                "AbleToScale",
                "True",
                "ScaleDownStabilized",
                "recent recommendations were higher than current one, applying the highest recent recommendation",
                stamp,
            )
        else:
            _condition(
                status, "AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size", stamp
            )
        scale_up_limit = max(2 * current, 4)
        if maximum > scale_up_limit:
            allowed, reason, message = (
                scale_up_limit,
                "ScaleUpLimit",
                "the desired replica count is increasing faster than the maximum scale rate",
            )
        else:
            allowed, reason, message = (
                maximum,
                "TooManyReplicas",
                "the desired replica count is more than the maximum replica count",
            )
        desired = stabilized
        if stabilized < minimum:
            desired, reason, message = (
                minimum,
                "TooFewReplicas",
                "the desired replica count is less than the minimum replica count",
            )
        elif stabilized > allowed:
            desired = allowed
        else:
            reason, message = "DesiredWithinRange", "the desired count is within the acceptable range"
        _condition(status, "ScalingLimited", "True" if desired != stabilized else "False", reason, message, stamp)
        return desired

    def _normalize_with_behaviors(
        self, key: Key, spec: Obj, status: Obj, current: int, proposal: int, minimum: int, maximum: int, stamp: str
    ) -> int:
        """normalizeDesiredReplicasWithBehaviors: the behavior's stabilization windows, then its rate policies."""
        behavior = _dict(spec.get("behavior"))
        up, down = _dict(behavior.get("scaleUp")), _dict(behavior.get("scaleDown"))
        now = self.now()
        up_cutoff = now - timedelta(seconds=_int(up.get("stabilizationWindowSeconds"), 0))
        # maybeInitScaleDownStabilizationWindow: a scale-down rule without a window takes the controller's.
        down_window = down.get("stabilizationWindowSeconds")
        down_cutoff = now - (
            timedelta(seconds=down_window) if isinstance(down_window, int) else self.downscale_stabilization
        )
        recommendations = self._recommendations.setdefault(key, [])
        up_recommendation = down_recommendation = proposal
        for rec in recommendations:
            if rec.at > up_cutoff:
                up_recommendation = min(rec.replicas, up_recommendation)
            if rec.at > down_cutoff:
                down_recommendation = max(rec.replicas, down_recommendation)
        stabilized = min(max(current, up_recommendation), down_recommendation)
        # Samples older than both windows are of no more use (upstream reuses one slot; dropping them is the same).
        recommendations[:] = [r for r in recommendations if r.at >= up_cutoff or r.at >= down_cutoff]
        recommendations.append(Recommendation(proposal, now))
        if stabilized != proposal:
            if proposal >= current:
                reason, message = (
                    "ScaleUpStabilized",
                    "recent recommendations were lower than current one, applying the lowest recent recommendation",
                )
            else:
                reason, message = (
                    "ScaleDownStabilized",
                    "recent recommendations were higher than current one, applying the highest recent recommendation",
                )
            _condition(status, "AbleToScale", "True", reason, message, stamp)
        else:
            _condition(
                status, "AbleToScale", "True", "ReadyForNewScale", "recommended size matches current size", stamp
            )
        desired, reason, message = stabilized, "DesiredWithinRange", "the desired count is within the acceptable range"
        if stabilized > current:
            limit = max(self._scale_limit(key, up, current, up=True), current)
            if maximum > limit:
                allowed, why, text = (
                    limit,
                    "ScaleUpLimit",
                    "the desired replica count is increasing faster than the maximum scale rate",
                )
            else:
                allowed, why, text = (
                    maximum,
                    "TooManyReplicas",
                    "the desired replica count is more than the maximum replica count",
                )
            if stabilized > allowed:
                desired, reason, message = allowed, why, text
        elif stabilized < current:
            limit = min(self._scale_limit(key, down, current, up=False), current)
            if minimum < limit:
                allowed, why, text = (
                    limit,
                    "ScaleDownLimit",
                    "the desired replica count is decreasing faster than the maximum scale rate",
                )
            else:
                allowed, why, text = (
                    minimum,
                    "TooFewReplicas",
                    "the desired replica count is less than the minimum replica count",
                )
            if stabilized < allowed:
                desired, reason, message = allowed, why, text
        _condition(status, "ScalingLimited", "True" if desired != stabilized else "False", reason, message, stamp)
        return desired

    def _scale_limit(self, key: Key, rules: Obj, current: int, *, up: bool) -> int:
        """calculateScaleUpLimitWithScalingRules / calculateScaleDownLimitWithBehaviors: each policy's bound from
        the replicas at the start of its period; ``Max`` takes the largest change, ``Min`` the smallest."""
        select = rules.get("selectPolicy") or "Max"
        if select == "Disabled":
            return current
        now = self.now()
        proposals: list[int] = []
        for policy in rules.get("policies") or []:
            period = timedelta(seconds=_int(_dict(policy).get("periodSeconds"), 15))
            added = sum(e.change for e in self._scale_ups.get(key, []) if e.at > now - period)
            removed = sum(e.change for e in self._scale_downs.get(key, []) if e.at > now - period)
            start = current - added + removed
            value = _int(_dict(policy).get("value"), 0)
            if _dict(policy).get("type") == "Pods":
                proposals.append(start + value if up else start - value)
            elif up:
                proposals.append(math.ceil(start * (1 + value / 100)))
            else:
                proposals.append(int(start * (1 - value / 100)))
        if not proposals:
            return current
        largest_change = max if up else min
        return largest_change(proposals) if select == "Max" else (min if up else max)(proposals)

    def _store_scale_event(self, key: Key, spec: Obj, previous: int, new: int) -> None:
        """storeScaleEvent: the change, kept while the longest policy period may count it."""
        behavior = _dict(spec.get("behavior"))
        if not behavior:
            return
        now = self.now()
        periods = [
            _int(_dict(p).get("periodSeconds"), 15)
            for rules in (behavior.get("scaleUp"), behavior.get("scaleDown"))
            for p in _dict(rules).get("policies") or []
        ]
        horizon = now - timedelta(seconds=max(periods, default=15))
        for events in (self._scale_ups, self._scale_downs):
            events[key] = [e for e in events.get(key, []) if e.at > horizon]
        if new > previous:
            self._scale_ups[key].append(ScaleEvent(new - previous, now))
        else:
            self._scale_downs[key].append(ScaleEvent(previous - new, now))

    # --- writes -------------------------------------------------------------------------------------------
    def _event(self, hpa: Obj, reason: str, message: str, *, warning: bool = False) -> None:
        self.store.create_event(hpa, reason, message, type="Warning" if warning else "Normal", component=COMPONENT)

    def _write_status(self, key: Key, hpa: Obj, status: Obj) -> None:
        """updateStatusIfNeeded: written only when it changed, with the resourceVersion read."""
        if status == hpa.get("status"):
            return
        self.store.update_status(
            "HorizontalPodAutoscaler", key[0], key[1], status, resource_version=meta(hpa).get("resourceVersion")
        )

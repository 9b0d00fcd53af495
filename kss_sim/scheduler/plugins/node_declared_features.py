"""NodeDeclaredFeatures: a pod whose spec needs a node feature goes only to nodes that declare it in
``status.declaredFeatures`` (``nodedeclaredfeatures``, with component-helpers' ``nodedeclaredfeatures`` registry).

The plugin runs when the NodeDeclaredFeatures gate is on (alpha and off in v1.35, beta and on from v1.36); otherwise
PreFilter skips it, as upstream's plugin built with the gate off does. Of the registry's features only two can be
required by scheduling: RestartAllContainersOnContainerExits (a container's restart rule restarts all containers)
and, from v1.36, UserNamespacesHostNetworkSupport (a host-network pod in a user namespace); the others are about
updates of a running pod.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, ClassVar

from kss_sim.scheduler.framework import (
    SKIP,
    CycleState,
    FilterPlugin,
    Handle,
    PreFilterPlugin,
    PreFilterResult,
    Status,
    error,
    success,
    unresolvable,
)
from kss_sim.scheduler.nodeinfo import NodeInfo, PodInfo

NAME = "NodeDeclaredFeatures"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
ERR_REASON_UNSATISFIED = "node(s) didn't match Pod's required features"
# v1.35 names the features missing on the node instead.
ERR_REASON_UNSATISFIED_V1_35 = "node declared features check failed - unsatisfied requirements: "

RESTART_ALL_CONTAINERS = "RestartAllContainersOnContainerExits"
USER_NAMESPACES_HOST_NETWORK = "UserNamespacesHostNetworkSupport"


def _restarts_all_containers(spec: dict[str, Any]) -> bool:
    """A container or init container has a restart rule whose action is RestartAllContainers."""
    for group in ("containers", "initContainers"):
        for container in spec.get(group) or []:
            for rule in container.get("restartPolicyRules") or []:
                if isinstance(rule, dict) and rule.get("action") == "RestartAllContainers":
                    return True
    return False


def _user_namespace_on_host_network(spec: dict[str, Any]) -> bool:
    """The pod uses the host's network from a user namespace (``hostUsers`` false, not merely unset)."""
    return spec.get("hostNetwork") is True and spec.get("hostUsers") is False


# Per release, the registry's features in name order (``features.AllFeatures``, sorted as the framework sorts them)
# with how a pod's spec requires each one for scheduling (None: never, only its updates may).
_SchedulingNeed = Callable[[dict[str, Any]], bool] | None
_REGISTRY: dict[int, tuple[tuple[str, _SchedulingNeed], ...]] = {
    35: (
        ("GuaranteedQoSPodCPUResize", None),
        ("InPlacePodLevelResourcesVerticalScaling", None),
        (RESTART_ALL_CONTAINERS, _restarts_all_containers),
    ),
    36: (
        ("ExtendWebSocketsToKubelet", None),
        ("InPlacePodLevelResourcesVerticalScaling", None),
        ("InPlacePodVerticalScalingInitContainers", None),
        (RESTART_ALL_CONTAINERS, _restarts_all_containers),
        (USER_NAMESPACES_HOST_NETWORK, _user_namespace_on_host_network),
    ),
}


def registry(minor: int) -> tuple[tuple[str, _SchedulingNeed], ...]:
    """The feature registry of release 1.``minor`` (the nearest earlier one kss knows)."""
    return _REGISTRY[max(m for m in _REGISTRY if m <= minor)] if minor >= min(_REGISTRY) else ()


@cache
def _scheduling_needs(minor: int) -> tuple[tuple[str, Callable[[dict[str, Any]], bool]], ...]:
    # The registry's features a pod can require, looked up once per release (PreFilter asks for every pod).
    return tuple((name, needs) for name, needs in registry(minor) if needs is not None)


def required_features(spec: dict[str, Any], minor: int) -> tuple[str, ...]:
    """``InferForPodScheduling``: the features (sorted) a pod with this spec needs of its node at release 1.``minor``.
    No registered feature has a maximum version, so the scheduler's own version drops none."""
    return _required_of(spec, _scheduling_needs(minor))


def _required_of(
    spec: dict[str, Any], needs: tuple[tuple[str, Callable[[dict[str, Any]], bool]], ...]
) -> tuple[str, ...]:
    # A plain loop: PreFilter asks for every pod, and most need nothing (no generator, no tuple() call).
    required: tuple[str, ...] = ()
    for name, need in needs:
        if need(spec):
            required += (name,)
    return required


def declared_features(node: dict[str, Any], minor: int) -> frozenset[str]:
    """The node's ``status.declaredFeatures`` as the scheduler's NodeInfo holds them.

    From v1.36 they are mapped onto the registry by one merge walk over both lists, which assumes the node's list
    sorted (the API validates it so): unknown names are ignored, and in an unsorted list a feature met after a
    greater name is missed, as upstream's ``TryMap`` misses it. v1.35 keeps every name."""
    listed = [f for f in ((node.get("status") or {}).get("declaredFeatures") or []) if isinstance(f, str)]
    if minor < 36:
        return frozenset(listed)
    known = [name for name, _ in registry(minor)]
    found: set[str] = set()
    i = j = 0
    while i < len(listed) and j < len(known):
        if listed[i] == known[j]:
            found.add(known[j])
            i += 1
            j += 1
        elif listed[i] < known[j]:
            i += 1
        else:
            j += 1
    return frozenset(found)


@dataclass(frozen=True, slots=True)
class _PreFilterState:
    required: tuple[str, ...]

    def clone(self) -> _PreFilterState:
        return self


class NodeDeclaredFeatures(PreFilterPlugin, FilterPlugin):
    """Rejects, as unresolvable, nodes that do not declare every feature the pod's spec requires."""

    name: ClassVar[str] = NAME
    filter_reads_pods: ClassVar[bool] = False  # the node object and the pod only

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        # Gates not given take the run's version's default (on from v1.36).
        self.enabled = handle.kube_version.effective_gates(handle.feature_gates)[NAME]
        self.minor = handle.kube_version.minor
        self._needs = _scheduling_needs(self.minor)

    def events_to_register(self) -> list[str] | None:
        """A node added or its declared features changed; the pod's own update requeues it anyway."""
        return ["Node/Add", "Node/UpdateNodeDeclaredFeature"] if self.enabled else []

    def pre_filter(
        self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not self.enabled:
            return None, SKIP
        # Not memoised on the pod: the two checks of its spec cost less than a memo's miss (most pods are tried once).
        required = _required_of(pod.spec, self._needs)
        if not required:
            return None, SKIP
        state.write(PRE_FILTER_STATE_KEY, _PreFilterState(required))
        return None, success()

    def filter(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> Status:
        if not self.enabled:
            return success()
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, _PreFilterState):
            return error(f'error reading "{PRE_FILTER_STATE_KEY}" from cycle-state: not found')
        declared = declared_features(node_info.node, self.minor)
        missing = [name for name in s.required if name not in declared]
        if not missing:
            return success()
        if self.minor < 36:
            return unresolvable(ERR_REASON_UNSATISFIED_V1_35 + ", ".join(missing))
        return unresolvable(ERR_REASON_UNSATISFIED)

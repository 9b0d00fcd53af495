"""The Kubernetes versions kss simulates, defined once: a run is at one of them (``--kube-version``,
``KSS_KUBE_VERSION``), which fixes ``/version``, every feature gate's default and the default scheduler plugins.

Each measured version is the patch release the reference programs are built from (the vendored trees of issue #32).
v1.37 has no reference program (no vendored v1.37 tree can be fetched): it is ported from reading upstream's files and
labelled "ported, not measured against kube-scheduler" wherever a version is shown (``KubeVersion.measured``) until
one is measured. Gate histories are upstream's ``defaultVersionedKubernetesFeatureGates`` (pkg/features/
kube_features.go) for the gates kss knows; the default plugins are ``getDefaultPlugins``/``applyFeatureGates`` of
pkg/scheduler/apis/config/v1.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# The version a run takes when none is given: the newest one measured against its kube-scheduler.
DEFAULT_KUBE_VERSION = "1.36"
# Said of every version kss has no reference program for, wherever the version is shown.
NOT_MEASURED = "ported, not measured against kube-scheduler"


@dataclass(frozen=True)
class GateSpec:
    """One entry of a gate's ``VersionedSpecs``: from this minor version on, the gate defaults to ``default``;
    ``locked`` gates cannot be set to anything else (``LockToDefault``)."""

    since: int
    default: bool
    stage: str
    locked: bool = False


# Every gate kss knows, with upstream's history (minor versions of 1.x), oldest first. The v1.37 entries are read from
# kubernetes/kubernetes at commit ead35706ec68f83822a56d53b1577fa8a185ca14 (v1.38 development, after v1.37.0; its
# specs for 1.37 are v1.37's): staging/src/k8s.io/kube-scheduler/pkg/features/kube_features.go (the scheduler's gates,
# moved there) and pkg/features/kube_features.go (ClearingNominatedNodeNameAfterBinding, unchanged; it still lists
# k8s.io/apiserver's AggregatedDiscoveryRemoveBetaType, whose 1.37 spec was not read: v1.35's lock is kept).
GATE_HISTORY: dict[str, tuple[GateSpec, ...]] = {
    # Beta but off in v1.37: the Workload API it serves (scheduling.k8s.io/v1beta1) is an off-by-default beta API.
    "GenericWorkload": (GateSpec(35, False, "ALPHA"), GateSpec(37, False, "BETA")),
    "GangScheduling": (GateSpec(35, False, "ALPHA"),),
    # v1.36's workload scheduling: topology-aware placement of a PodGroup, workload-aware preemption.
    "TopologyAwareWorkloadScheduling": (GateSpec(36, False, "ALPHA"),),
    "WorkloadAwarePreemption": (GateSpec(36, False, "ALPHA"),),
    "DynamicResourceAllocation": (
        GateSpec(26, False, "ALPHA"),
        GateSpec(32, False, "BETA"),
        GateSpec(34, True, "GA"),
        GateSpec(35, True, "GA", locked=True),
    ),
    "DRAAdminAccess": (GateSpec(32, False, "ALPHA"), GateSpec(34, True, "BETA"), GateSpec(36, True, "GA", locked=True)),
    "DRAPrioritizedList": (
        GateSpec(33, False, "ALPHA"),
        GateSpec(34, True, "BETA"),
        GateSpec(36, True, "GA"),
        GateSpec(37, True, "GA", locked=True),
    ),
    "DRAResourceClaimDeviceStatus": (
        GateSpec(32, False, "ALPHA"),
        GateSpec(33, True, "BETA"),
        GateSpec(37, True, "GA", locked=True),
    ),
    "DRASchedulerFilterTimeout": (GateSpec(34, True, "BETA"),),
    "DRAPartitionableDevices": (GateSpec(33, False, "ALPHA"), GateSpec(36, True, "BETA")),
    "DRADeviceTaints": (GateSpec(33, False, "ALPHA"), GateSpec(36, True, "BETA"), GateSpec(37, True, "GA")),
    "DRADeviceTaintRules": (GateSpec(35, False, "ALPHA"), GateSpec(36, False, "BETA"), GateSpec(37, True, "GA")),
    "DRAConsumableCapacity": (GateSpec(34, False, "ALPHA"), GateSpec(36, True, "BETA")),
    "DRAExtendedResource": (
        GateSpec(34, False, "ALPHA"),
        GateSpec(36, True, "BETA"),
        GateSpec(37, True, "GA", locked=True),
    ),
    "DRADeviceBindingConditions": (GateSpec(34, False, "ALPHA"), GateSpec(36, True, "BETA")),
    # The scheduling queue pops backoffQ when activeQ is empty: `kss serve` and `kss replay`.
    "SchedulerPopFromBackoffQ": (GateSpec(33, True, "BETA"),),
    # kube-apiserver's binding clears status.nominatedNodeName.
    "ClearingNominatedNodeNameAfterBinding": (GateSpec(34, False, "ALPHA"), GateSpec(35, True, "BETA")),
    # The binding cycle nominates the pod to its node while PreBind has work or a Permit plugin holds it (and, at
    # v1.34 only, a failed attempt keeps its nomination).
    "NominatedNodeNameForExpectation": (GateSpec(34, False, "ALPHA"), GateSpec(35, True, "BETA")),
    # Pod-level spec.resources count as the pod's requests (NodeResourcesFit, BalancedAllocation, NodeInfo).
    "PodLevelResources": (GateSpec(32, False, "ALPHA"), GateSpec(34, True, "BETA")),
    # Adds kube-scheduler's NodeDeclaredFeatures plugin to the defaults and turns it on.
    "NodeDeclaredFeatures": (
        GateSpec(35, False, "ALPHA"),
        GateSpec(36, True, "BETA"),
        GateSpec(37, True, "GA", locked=True),
    ),
    # kube-apiserver's: on, aggregated discovery is served as apidiscovery.k8s.io/v2 only (v2beta1 dropped).
    "AggregatedDiscoveryRemoveBetaType": (
        GateSpec(33, True, "DEPRECATED"),
        GateSpec(35, True, "DEPRECATED", locked=True),
    ),
}

# A gate that needs others on (upstream's defaultKubernetesFeatureGateDependencies, for the gates above).
GATE_DEPENDENCIES: dict[str, tuple[str, ...]] = {
    "GangScheduling": ("GenericWorkload",),
    "TopologyAwareWorkloadScheduling": ("GenericWorkload",),
    "WorkloadAwarePreemption": ("GangScheduling",),
}

# Gates upstream folded into another from a release on (kubernetes/kubernetes#139520, v1.37: "GenericWorkload is used
# instead to enable all core workload-aware scheduling functionalities altogether"): from that minor version the gate
# is unknown (refused if named) and its feature follows the gate it went into.
GATES_MERGED: dict[str, tuple[int, str]] = {
    "GangScheduling": (37, "GenericWorkload"),
    "WorkloadAwarePreemption": (37, "GenericWorkload"),
}

# Gates whose feature kss does not simulate yet: turning one on is refused rather than silently ignored.
UNPORTED_GATES: frozenset[str] = frozenset()

# Upstream's in-tree plugins of every version (pkg/scheduler/framework/plugins/registry.go of v1.33).
_BASE_PLUGINS = (
    "SchedulingGates", "PrioritySort", "NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
    "NodePorts", "NodeResourcesFit", "NodeResourcesBalancedAllocation", "ImageLocality", "VolumeRestrictions",
    "NodeVolumeLimits", "VolumeBinding", "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources",
    "DefaultPreemption", "DefaultBinder",
)  # fmt: skip

# In-tree plugins of a version that kss has no port of: named in a configuration, they are refused; in the
# version's default set, they are left out (ported_default_multi_point) and the run says so.
UNPORTED_PLUGINS: frozenset[str] = frozenset()

# getDefaultPlugins()'s multiPoint before applyFeatureGates (the same list in v1.33 to v1.36).
_DEFAULT_MULTI_POINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", None),
)


@dataclass(frozen=True)
class KubeVersion:
    """One supported Kubernetes minor version, at the patch release kss is measured against."""

    minor: int
    patch: int
    # The Go release the tree declares (its go.mod's ``go`` line): what ``/version``'s goVersion says.
    go_version: str
    # In-tree plugin names beyond _BASE_PLUGINS that this version's registry has.
    added_plugins: tuple[str, ...] = field(default=())
    # Whether kss has been measured against this release's own kube-scheduler (a golden corpus from a reference
    # program built from its tree); False: ported from reading upstream, said wherever the version is shown.
    measured: bool = True
    # Gates of this release whose feature, as this release has it, kss does not simulate: turning one on is refused.
    unported_gates: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        """``1.35``: what ``--kube-version`` takes."""
        return f"1.{self.minor}"

    @property
    def git_version(self) -> str:
        """``v1.35.4``: the reference patch release, as ``/version`` says it."""
        return f"v1.{self.minor}.{self.patch}"

    @property
    def fidelity(self) -> str:
        """How far kss's scheduler at this version can be trusted, in the words every surface shows it with."""
        return "measured against kube-scheduler" if self.measured else NOT_MEASURED

    def unmeasured_note(self) -> str | None:
        """One line for a run at a version kss is not measured at (said as it starts); None when measured."""
        if self.measured:
            return None
        return (
            f"note: Kubernetes v{self.name} is {NOT_MEASURED}: no reference program of it exists yet, so its "
            "placements may differ from its kube-scheduler's (docs/versions.md lists what is not ported)"
        )

    def version_info(self) -> dict[str, str]:
        """``/version``'s body (apimachinery's version.Info) for this release; kss is no build of it, so the commit
        and build date stay placeholders."""
        return {
            "major": "1",
            "minor": str(self.minor),
            "gitVersion": self.git_version,
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "1970-01-01T00:00:00Z",
            "goVersion": self.go_version,
            "compiler": "gc",
            "platform": "linux/amd64",
        }

    # --- feature gates ------------------------------------------------------------------------------
    def _spec(self, gate: str) -> GateSpec | None:
        merged = GATES_MERGED.get(gate)
        if merged is not None and merged[0] <= self.minor:
            return None
        current = None
        for spec in GATE_HISTORY.get(gate, ()):
            if spec.since <= self.minor:
                current = spec
        return current

    def gate_defaults(self) -> dict[str, bool]:
        """Every gate this version has (of those kss knows), with its default."""
        out: dict[str, bool] = {}
        for gate in GATE_HISTORY:
            spec = self._spec(gate)
            if spec is not None:
                out[gate] = spec.default
        return out

    def check_gates(self, gates: Mapping[str, bool]) -> None:
        """ValueError, in kube's words, for a gate the version does not have, a locked gate set otherwise, a gate
        on without the gates it depends on, or a gate kss has not ported turned on."""
        for name, value in gates.items():
            spec = self._spec(name)
            if spec is None:
                known = ", ".join(sorted(self.gate_defaults()))
                raise ValueError(f"unrecognized feature gate: {name} (Kubernetes v{self.name} knows: {known})")
            if spec.locked and value != spec.default:
                raise ValueError(
                    f"cannot set feature gate {name} to {str(value).lower()}, feature is locked to "
                    f"{str(spec.default).lower()}"
                )
        effective = self.effective_gates(gates)
        for name, needs in GATE_DEPENDENCIES.items():
            if effective.get(name):
                off = [n for n in needs if not effective.get(n)]
                if off:
                    raise ValueError(f"feature gate {name} requires {', '.join(f'{n}=true' for n in off)}")
        for name in sorted(UNPORTED_GATES | self.unported_gates):
            if effective.get(name):
                raise ValueError(f"feature gate {name} (Kubernetes v{self.name}) is not simulated by kss yet")

    def effective_gates(self, overrides: Mapping[str, bool] | None = None) -> dict[str, bool]:
        """Every gate kss knows as a run at this version has it: ``overrides`` (checked by ``check_gates``), else
        the version's default; a gate the version does not have is off."""
        defaults = self.gate_defaults()
        out = {gate: bool((overrides or {}).get(gate, defaults.get(gate, False))) for gate in GATE_HISTORY}
        for gate, (since, into) in GATES_MERGED.items():
            if since <= self.minor:
                out[gate] = out[into]
        return out

    # --- the scheduler's plugins --------------------------------------------------------------------
    def in_tree_plugins(self) -> frozenset[str]:
        """The plugin names this version's kube-scheduler registers in-tree (ported by kss or not)."""
        return frozenset((*_BASE_PLUGINS, *self.added_plugins))

    def default_multi_point(self, gates: Mapping[str, bool]) -> list[dict[str, Any]]:
        """``getDefaultPlugins``' multiPoint with ``applyFeatureGates`` under ``gates`` (gates not given take this
        version's default), as this version's kube-scheduler defaults it; unported plugins included."""
        on = self.effective_gates(gates)
        plugins: list[dict[str, Any]] = [
            {"name": name} if weight is None else {"name": name, "weight": weight}
            for name, weight in _DEFAULT_MULTI_POINT
        ]
        if on["NodeDeclaredFeatures"]:
            plugins.append({"name": "NodeDeclaredFeatures"})
        if on["DynamicResourceAllocation"]:
            # Before DefaultPreemption: an idle claim is deallocated before a pod is evicted. Weighted from v1.34.
            dra: dict[str, Any] = (
                {"name": "DynamicResources"} if self.minor < 34 else {"name": "DynamicResources", "weight": 2}
            )
            at = next(i for i, p in enumerate(plugins) if p["name"] == "DefaultPreemption")
            plugins.insert(at, dra)
        if on["GangScheduling"]:
            plugins.append({"name": "GangScheduling"})
        if on["TopologyAwareWorkloadScheduling"]:
            plugins.append({"name": "TopologyPlacementGenerator"})
            plugins.append({"name": "PodGroupPodsCount", "weight": 1})
        return copy.deepcopy(plugins)


_V1_36_PLUGINS = ("NodeDeclaredFeatures", "GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount")

VERSIONS: dict[str, KubeVersion] = {
    v.name: v
    for v in (
        KubeVersion(33, 3, "go1.24.0"),
        KubeVersion(34, 7, "go1.24.0"),
        KubeVersion(35, 4, "go1.25.0", ("NodeDeclaredFeatures", "GangScheduling")),
        KubeVersion(36, 2, "go1.26.0", _V1_36_PLUGINS),
        # v1.37.0: CHANGELOG-1.38.md's "Changelog since v1.37.0" is the only release of 1.37 the stored upstream
        # files establish (no patch release found); built with Go 1.26.4 (CHANGELOG-1.37.md). Not measured: its
        # Workload API is served in v1beta1 and scheduled as v1.36 schedules it, with v1.37's condition name
        # (docs/versions.md lists what v1.37 changes that kss does not port).
        KubeVersion(37, 0, "go1.26.4", _V1_36_PLUGINS, measured=False),
    )
}


def versions_help() -> str:
    """The versions ``--kube-version`` takes, as ``--help`` lists them: each one kss is not measured at says so."""
    names = ", ".join(VERSIONS)
    unmeasured = [v.name for v in VERSIONS.values() if not v.measured]
    return f"{names} ({', '.join(unmeasured)}: {NOT_MEASURED})" if unmeasured else names


def version_label(name: str | None, measured: object) -> str | None:
    """A version as a run's results show it: ``1.37 (ported, not measured against kube-scheduler)`` when the run
    recorded ``measured`` false (``kubeVersionMeasured`` in summary.json), else ``name`` as it is."""
    return f"{name} ({NOT_MEASURED})" if name and measured is False else name


def kube_version(name: str | None = None) -> KubeVersion:
    """The version named ``1.35`` (a leading ``v`` and a patch are accepted: ``v1.35.4``); ValueError naming the
    supported ones for any other. None gives the default."""
    if name is None:
        return VERSIONS[DEFAULT_KUBE_VERSION]
    exact = VERSIONS.get(name)  # the common case (``Settings.version``, asked on every request)
    if exact is not None:
        return exact
    text = name.strip().removeprefix("v")
    parts = text.split(".")
    key = ".".join(parts[:2]) if len(parts) in (2, 3) and all(p.isdigit() for p in parts) else text
    found = VERSIONS.get(key)
    if found is None:
        raise ValueError(f"unsupported Kubernetes version {name!r} (supported: {', '.join(VERSIONS)})")
    return found


def gate_enabled(gates: Mapping[str, bool], name: str) -> bool:
    """A gate's value in ``gates``; the default version's default when not given (a gate it lacks is off)."""
    if name in gates:
        return gates[name]
    return VERSIONS[DEFAULT_KUBE_VERSION].gate_defaults().get(name, False)

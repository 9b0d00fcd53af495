"""The allocator's optional behaviours (``structured/internal.Features``) and the feature gates that set them.

Upstream keeps three allocator implementations and picks the most stable one whose supported features cover the
enabled ones: ``stable`` (no feature), ``incubating`` (admin access, prioritized list, partitionable devices,
device taints; the one v1.35's defaults select) and ``experimental`` (all). kss has one port of ``experimental``;
:func:`allocator_variant` names the implementation upstream would run, for the few places where they differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from kss_sim.kube.versions import DEFAULT_KUBE_VERSION, VERSIONS, gate_enabled

Variant = Literal["stable", "incubating", "experimental"]


@dataclass(frozen=True, slots=True)
class Features:
    """``internal.Features``: each field switches one control-flow change of the allocator."""

    admin_access: bool = False
    consumable_capacity: bool = False
    device_binding: bool = False  # DRADeviceBindingConditions and DRAResourceClaimDeviceStatus
    # v1.34's own DeviceStatus feature (DRAResourceClaimDeviceStatus alone, on by default): only ``experimental``
    # supports it, so v1.34's defaults run that implementation. v1.35 folds it into device_binding.
    device_status: bool = False
    device_taints: bool = False
    partitionable_devices: bool = False
    prioritized_list: bool = False
    # The Kubernetes minor release whose allocator code runs: the few places where its code differs switch on it.
    release: int = VERSIONS[DEFAULT_KUBE_VERSION].minor


def features_from_gates(gates: Mapping[str, bool], release: int = VERSIONS[DEFAULT_KUBE_VERSION].minor) -> Features:
    """``dynamicresources.AllocatorFeatures``: the allocator's features from feature gates (absent = the default
    version's default) for the allocator of minor release ``release``."""

    def on(name: str) -> bool:
        return gate_enabled(gates, name)

    return Features(
        admin_access=on("DRAAdminAccess"),
        consumable_capacity=on("DRAConsumableCapacity"),
        device_binding=on("DRADeviceBindingConditions") and on("DRAResourceClaimDeviceStatus"),
        device_taints=on("DRADeviceTaints"),
        partitionable_devices=on("DRAPartitionableDevices"),
        prioritized_list=on("DRAPrioritizedList"),
        device_status=release < 35 and on("DRAResourceClaimDeviceStatus"),
        release=release,
    )


def allocator_variant(features: Features) -> Variant:
    """Which of upstream's implementations ``structured.NewAllocator`` picks for these features."""
    if features.consumable_capacity or features.device_binding or features.device_status:
        return "experimental"
    if features.admin_access or features.prioritized_list or features.partitionable_devices or features.device_taints:
        return "incubating"
    return "stable"

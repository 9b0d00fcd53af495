"""In-tree plugins, one module per plugin, named after the upstream plugin."""

from __future__ import annotations

import importlib

from app.scheduler.framework import Plugin

# Plugin name -> "module:Class"; imported lazily so a broken plugin cannot break the others.
REGISTRY: dict[str, str] = {
    "PrioritySort": "priority_sort:PrioritySort",
    "SchedulingGates": "scheduling_gates:SchedulingGates",
    "NodeUnschedulable": "node_unschedulable:NodeUnschedulable",
    "NodeName": "node_name:NodeName",
    "TaintToleration": "taint_toleration:TaintToleration",
    "NodeAffinity": "node_affinity:NodeAffinity",
    "NodePorts": "node_ports:NodePorts",
    "NodeResourcesFit": "node_resources_fit:NodeResourcesFit",
    "NodeResourcesBalancedAllocation": "node_resources_balanced_allocation:NodeResourcesBalancedAllocation",
    "ImageLocality": "image_locality:ImageLocality",
    "VolumeRestrictions": "volume_restrictions:VolumeRestrictions",
    "NodeVolumeLimits": "node_volume_limits:NodeVolumeLimits",
    "VolumeBinding": "volume_binding:VolumeBinding",
    "VolumeZone": "volume_zone:VolumeZone",
    "PodTopologySpread": "pod_topology_spread:PodTopologySpread",
    "InterPodAffinity": "inter_pod_affinity:InterPodAffinity",
    "DynamicResources": "dynamic_resources:DynamicResources",
    "DefaultPreemption": "default_preemption:DefaultPreemption",
    "DefaultBinder": "default_binder:DefaultBinder",
}

_extra: dict[str, type[Plugin]] = {}


def register(cls: type[Plugin]) -> type[Plugin]:
    """Register an out-of-tree plugin class under its ``name`` (usable as a decorator)."""
    _extra[cls.name] = cls
    return cls


def plugin_class(name: str) -> type[Plugin]:
    """The class implementing plugin ``name``; KeyError when unknown."""
    if name in _extra:
        return _extra[name]
    target = REGISTRY[name]
    module_name, _, class_name = target.partition(":")
    module = importlib.import_module(f"{__name__}.{module_name}")
    cls: type[Plugin] = getattr(module, class_name)
    return cls


def known_plugins() -> list[str]:
    return [*REGISTRY, *_extra]

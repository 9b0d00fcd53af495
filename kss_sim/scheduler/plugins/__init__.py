"""In-tree plugins, one module per plugin, named after the upstream plugin."""

from __future__ import annotations

import importlib

from kss_sim.scheduler.framework import Plugin
from kss_sim.scheduler.plugins import out_of_tree
from kss_sim.scheduler.plugins.out_of_tree import (
    PluginLoadError,
    load_plugin_modules,
    register,
    reload_plugin_modules,
)

__all__ = [
    "REGISTRY",
    "PluginLoadError",
    "known_plugins",
    "load_plugin_modules",
    "plugin_class",
    "register",
    "reload_plugin_modules",
]

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
    # Registered whatever the feature gates say, as upstream's NewInTreeRegistry does; the GangScheduling gate
    # only adds it to the default plugins (config.default_multi_point).
    "GangScheduling": "gang_scheduling:GangScheduling",
    # Likewise: the NodeDeclaredFeatures gate adds it to the defaults and turns it on (off, it skips every pod).
    "NodeDeclaredFeatures": "node_declared_features:NodeDeclaredFeatures",
    # v1.36's placement plugins of the PodGroup cycle; the TopologyAwareWorkloadScheduling gate adds them to the
    # defaults (registered whatever the gates say).
    "TopologyPlacementGenerator": "topology_placement:TopologyPlacement",
    "PodGroupPodsCount": "podgroup_pods_count:PodGroupPodsCount",
}


def plugin_class(name: str) -> type[Plugin]:
    """The class implementing plugin ``name``: in-tree, else out-of-tree (``out_of_tree``); KeyError when unknown,
    ``PluginLoadError`` when an entry point of that name fails to load."""
    target = REGISTRY.get(name)
    if target is None:
        return out_of_tree.plugin_class(name)
    module_name, _, class_name = target.partition(":")
    module = importlib.import_module(f"{__name__}.{module_name}")
    cls: type[Plugin] = getattr(module, class_name)
    return cls


def known_plugins() -> list[str]:
    """Every plugin name a configuration may use: in-tree, registered, and installed entry points'."""
    return [*REGISTRY, *(name for name in out_of_tree.known_plugins() if name not in REGISTRY)]

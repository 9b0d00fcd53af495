"""Each profile of a parsed configuration built into its ``Framework`` (upstream's ``profile.NewMap`` and
``runtime.NewFramework``): the plugins instantiated with their args, multiPoint expanded per extension point, the
score weights, and the checks that need the plugin classes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from kss_sim.kube.versions import KubeVersion, kube_version
from kss_sim.scheduler import plugins as plugin_registry
from kss_sim.scheduler.cluster_objects import ClusterObjects
from kss_sim.scheduler.filter_timing import PluginObserver
from kss_sim.scheduler.framework import (
    Handle,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
    Plugin,
    PodActions,
    ScorePlugin,
)
from kss_sim.scheduler.kube_scheduler_configuration import (
    EXTENSION_POINTS,
    PLACEMENT_MINOR,
    PLACEMENT_POINTS,
    ConfigError,
    Profile,
    SchedulerConfig,
    defaulted_args,
    parse_config,
)
from kss_sim.scheduler.nodeinfo import PodInfo
from kss_sim.scheduler.runtime import Framework


def plugin_class_at(name: str, version: KubeVersion) -> type[Plugin]:
    """The class of plugin ``name`` as ``version``'s kube-scheduler has it: a plugin whose extension points changed
    between releases names its older form through an ``at_version`` class method."""
    cls = plugin_registry.plugin_class(name)
    at_version: Callable[[KubeVersion], type[Plugin]] | None = getattr(cls, "at_version", None)
    return at_version(version) if at_version is not None else cls


def _needed_plugins(plugins: dict[str, dict[str, list[dict[str, Any]]]]) -> list[str]:
    names: list[str] = []
    placement = [p for p, _ in PLACEMENT_POINTS if p in plugins]
    for point in [p for p, _ in EXTENSION_POINTS] + ["multiPoint"] + placement:
        for p in plugins[point]["enabled"]:
            if p["name"] not in names:
                names.append(p["name"])
    return names


def _without(plugins: dict[str, dict[str, list[dict[str, Any]]]], missing: set[str]) -> dict[str, Any]:
    return {
        point: {"enabled": [p for p in pset["enabled"] if p["name"] not in missing], "disabled": pset["disabled"]}
        for point, pset in plugins.items()
    }


def expand_points(
    plugins: dict[str, dict[str, list[dict[str, Any]]]],
    classes: dict[str, type[Plugin]] | None = None,
    version: KubeVersion | None = None,
) -> dict[str, list[str]]:
    """The plugins each extension point runs, in order, with multiPoint expanded as ``NewFramework`` does:
    a point's own enabled plugins that multiPoint also lists first, then multiPoint's, then the point's others
    (v1.36's placement points too, when ``plugins`` has them).

    ``classes`` maps names to plugin classes (looked up in the registry, at ``version``, when not given).
    """
    if classes is None:
        at = version or kube_version()
        classes = {name: plugin_class_at(name, at) for name in _needed_plugins(plugins)}
    points: dict[str, list[str]] = {}
    for point, iface in [*EXTENSION_POINTS, *((p, i) for p, i in PLACEMENT_POINTS if p in plugins)]:
        pset = plugins[point]
        enabled = [p["name"] for p in pset["enabled"]]
        for n in enabled:
            if not issubclass(classes[n], iface):
                raise ConfigError(f"plugins.{point}", f"plugin {n!r} does not extend {point} plugin")
        ordered = list(dict.fromkeys(enabled))
        disabled = {d["name"] for d in pset["disabled"]}
        if "*" not in disabled:
            overrides: list[str] = []
            multi: list[str] = []
            for p in plugins["multiPoint"]["enabled"]:
                n = p["name"]
                if not issubclass(classes[n], iface) or n in disabled:
                    continue
                if n in enabled:
                    overrides.append(n)
                    continue
                if n in multi:
                    raise ConfigError("plugins.multiPoint", f"plugin {n!r} already registered as {point!r}")
                multi.append(n)
            ordered = list(dict.fromkeys([*overrides, *multi, *enabled]))
        points[point] = ordered
    return points


def score_weights(
    plugins: dict[str, dict[str, list[dict[str, Any]]]],
    classes: dict[str, type[Plugin]] | None = None,
    version: KubeVersion | None = None,
    *,
    point: str = "score",
) -> dict[str, int]:
    """Each score plugin's weight (``getValidScoreWeights``): the point's own entry first, then multiPoint's;
    unset or 0 means 1. ``point="placementScore"``: the PlacementScore plugins' (v1.36)."""
    if classes is None:
        at = version or kube_version()
        classes = {name: plugin_class_at(name, at) for name in _needed_plugins(plugins)}
    iface = PlacementScorePlugin if point == "placementScore" else ScorePlugin
    weights: dict[str, int] = {}
    for p in [*(plugins.get(point) or {}).get("enabled", []), *plugins["multiPoint"]["enabled"]]:
        if not issubclass(classes[p["name"]], iface) or p["name"] in weights:
            continue
        weights[p["name"]] = int(p.get("weight") or 0) or 1
    return weights


def build_profiles(
    config: SchedulerConfig,
    cluster: ClusterObjects,
    actions: PodActions,
    *,
    nominated: dict[str, list[PodInfo]],
    activator: Callable[[list[PodInfo]], None],
    feature_gates: Mapping[str, bool],
    plugin_observer: PluginObserver | None = None,
    allow_missing: bool = False,
) -> tuple[list[Handle], dict[str, Framework]]:
    """A scheduler host's frameworks, one per profile of ``config``, each on its own handle over the host's cluster
    listers, pod actions, nominated pods and activator: the handles, and the frameworks by scheduler name
    (``allow_missing``: as :func:`build_framework`)."""
    handles: list[Handle] = []
    frameworks: dict[str, Framework] = {}
    for profile in config.profiles:
        handle = Handle(cluster, actions)
        handle.nominated_pods = nominated
        handle.activator = activator
        handle.feature_gates = dict(feature_gates)
        handle.kube_version = config.kube_version
        handles.append(handle)
        frameworks[profile.scheduler_name] = build_framework(
            profile, handle, allow_missing=allow_missing, plugin_observer=plugin_observer
        )
    return handles, frameworks


def build_framework(
    profile: Profile,
    handle: Handle,
    *,
    allow_missing: bool = False,
    plugin_observer: PluginObserver | None = None,
) -> Framework:
    """``NewFramework``: instantiate the profile's plugins and expand multiPoint as kube-scheduler does.

    ``allow_missing`` drops plugins whose module cannot be imported (development only); ``plugin_observer``
    is told of each plugin's run at the per-cycle extension points (``Framework.plugin_observer``).
    """
    plugins = profile.plugins
    if handle.kube_version.minor >= PLACEMENT_MINOR:  # a profile made by hand may lack the placement sets
        empty: dict[str, list[dict[str, Any]]] = {"enabled": [], "disabled": []}
        plugins = {**{point: empty for point, _ in PLACEMENT_POINTS}, **plugins}
    if allow_missing:
        missing: set[str] = set()
        for name in _needed_plugins(plugins):
            try:
                plugin_registry.plugin_class(name)
            except (ImportError, AttributeError):
                missing.add(name)
        plugins = _without(plugins, missing)
    instances: dict[str, Plugin] = {}
    for name in _needed_plugins(plugins):
        cls = plugin_class_at(name, handle.kube_version)
        args = profile.plugin_config.get(name)
        if args is None:
            args = defaulted_args(cls, {}, handle.feature_gates)
        instances[name] = cls(handle, args)
    classes = {name: type(plugin) for name, plugin in instances.items()}
    points = {point: [instances[n] for n in names] for point, names in expand_points(plugins, classes).items()}
    # v1.36's PodGroup placement points, expanded as the others (multiPoint's, the point's own enabled and
    # disabled): set on the framework beside the pod's points, whose output every version shares.
    placement = {point: points.pop(point, []) for point, _ in PLACEMENT_POINTS}
    if len(placement["placementGenerate"]) > 1 and not allow_missing:
        raise ConfigError(
            "plugins.placementGenerate",
            "at most one placement generate plugin is allowed for profile with scheduler name "
            f"{profile.scheduler_name!r}",
        )
    if len(points["queueSort"]) != 1 and not allow_missing:
        raise ConfigError(
            "plugins.queueSort",
            f"only one queue sort plugin required for profile with scheduler name {profile.scheduler_name!r}, "
            f"but got {len(points['queueSort'])}",
        )
    if not points["bind"] and not allow_missing:
        raise ConfigError("plugins.bind", f"at least one bind plugin is needed for profile {profile.scheduler_name!r}")
    weights = score_weights(plugins, classes)
    for name, weight in score_weights(plugins, classes, point="placementScore").items():
        weights.setdefault(name, weight)
    fwk = Framework(
        profile.scheduler_name, handle, points, weights, profile.percentage_of_nodes_to_score, plugin_observer
    )
    fwk.placement_generate = [p for p in placement["placementGenerate"] if isinstance(p, PlacementGeneratePlugin)]
    fwk.placement_score = [p for p in placement["placementScore"] if isinstance(p, PlacementScorePlugin)]
    return fwk


def plugins_in_effect(
    profile: Profile, version: KubeVersion | None = None
) -> list[tuple[str, list[tuple[str, int | None]]]]:
    """Each extension point with the plugins it runs at ``version``, in order (score plugins with their weight;
    from v1.36 the placement points too, PlacementScore plugins with theirs)."""
    points = expand_points(profile.plugins, version=version)
    weights = {
        "score": score_weights(profile.plugins, version=version),
        "placementScore": score_weights(profile.plugins, version=version, point="placementScore"),
    }
    names = [point for point, _ in EXTENSION_POINTS] + [point for point, _ in PLACEMENT_POINTS if point in points]
    return [(point, [(name, weights[point][name] if point in weights else None) for name in points[point]])
            for point in names]  # fmt: skip


def checked_config(
    source: str | dict[str, Any], gates: Mapping[str, bool] | None, kube_version: KubeVersion
) -> SchedulerConfig:
    """Parse and validate a KubeSchedulerConfiguration without applying it; ``ConfigError`` names the field.
    Instantiating every profile catches what only the framework can see (e.g. two queue sorts)."""
    config = parse_config(source, gates, kube_version)
    for profile in config.profiles:
        build_framework(profile, Handle(ClusterObjects()))
    return config


def plugins_by_profile(config: SchedulerConfig) -> list[tuple[str, list[tuple[str, list[tuple[str, int | None]]]]]]:
    """Per profile (scheduler name): each extension point's plugins in the order they run, with weights."""
    return [(profile.scheduler_name, plugins_in_effect(profile, config.kube_version)) for profile in config.profiles]

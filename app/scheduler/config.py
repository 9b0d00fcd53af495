"""``KubeSchedulerConfiguration`` (kubescheduler.config.k8s.io/v1): defaults, merging, validation.

Defaults equal kube-scheduler v1.35's: the multiPoint plugin list and weights below, plugin args
defaulted by each plugin class, percentageOfNodesToScore 0 (adaptive), backoff 1 s to 10 s.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import yaml

from app.scheduler import plugins as plugin_registry
from app.scheduler.framework import (
    BindPlugin,
    FilterPlugin,
    Handle,
    PermitPlugin,
    Plugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)
from app.scheduler.runtime import Framework

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "default-scheduler"

# getDefaultPlugins() with the DynamicResourceAllocation gate on (DynamicResources before DefaultPreemption).
DEFAULT_MULTI_POINT: list[dict[str, Any]] = [
    {"name": "SchedulingGates"},
    {"name": "PrioritySort"},
    {"name": "NodeUnschedulable"},
    {"name": "NodeName"},
    {"name": "TaintToleration", "weight": 3},
    {"name": "NodeAffinity", "weight": 2},
    {"name": "NodePorts"},
    {"name": "NodeResourcesFit", "weight": 1},
    {"name": "VolumeRestrictions"},
    {"name": "NodeVolumeLimits"},
    {"name": "VolumeBinding"},
    {"name": "VolumeZone"},
    {"name": "PodTopologySpread", "weight": 2},
    {"name": "InterPodAffinity", "weight": 2},
    {"name": "DynamicResources", "weight": 2},
    {"name": "DefaultPreemption"},
    {"name": "NodeResourcesBalancedAllocation", "weight": 1},
    {"name": "ImageLocality", "weight": 1},
    {"name": "DefaultBinder"},
]

# Extension points in config order, with the interface a plugin needs to take part.
EXTENSION_POINTS: list[tuple[str, type[Plugin]]] = [
    ("preEnqueue", PreEnqueuePlugin),
    ("queueSort", QueueSortPlugin),
    ("preFilter", PreFilterPlugin),
    ("filter", FilterPlugin),
    ("postFilter", PostFilterPlugin),
    ("preScore", PreScorePlugin),
    ("score", ScorePlugin),
    ("reserve", ReservePlugin),
    ("permit", PermitPlugin),
    ("preBind", PreBindPlugin),
    ("bind", BindPlugin),
    ("postBind", PostBindPlugin),
]
ALL_POINTS = ["multiPoint", *[p for p, _ in EXTENSION_POINTS]]


class ConfigError(ValueError):
    """An invalid configuration; ``field`` names the offending field path."""

    def __init__(self, field_path: str, message: str) -> None:
        super().__init__(f"{field_path}: {message}")
        self.field = field_path
        self.detail = message


@dataclass
class Profile:
    scheduler_name: str
    plugins: dict[str, dict[str, list[dict[str, Any]]]]
    plugin_config: dict[str, dict[str, Any]]
    percentage_of_nodes_to_score: int | None = None


@dataclass
class SchedulerConfig:
    """A validated, defaulted configuration."""

    profiles: list[Profile]
    percentage_of_nodes_to_score: int = 0
    pod_initial_backoff_seconds: float = 1.0
    pod_max_backoff_seconds: float = 10.0
    pod_max_in_unschedulable_pods_duration: float = 300.0
    parallelism: int = 16
    raw: dict[str, Any] = field(default_factory=dict)

    def profile(self, scheduler_name: str) -> Profile | None:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None


def _merge_plugin_set(
    default: dict[str, list[dict[str, Any]]], custom: dict[str, Any]
) -> dict[str, list[dict[str, Any]]]:
    """``mergePluginSet``: custom disables drop defaults ("*" all), custom enables replace in place or append."""
    disabled = [{"name": d["name"]} for d in custom.get("disabled") or []]
    disabled_names = {d["name"] for d in disabled}
    custom_enabled = list(custom.get("enabled") or [])
    index_by_name = {p["name"]: i for i, p in enumerate(custom_enabled)}
    replaced: set[int] = set()
    enabled: list[dict[str, Any]] = []
    if "*" not in disabled_names:
        for plugin in default.get("enabled", []):
            if plugin["name"] in disabled_names:
                continue
            if plugin["name"] in index_by_name:
                idx = index_by_name[plugin["name"]]
                plugin = custom_enabled[idx]
                replaced.add(idx)
            enabled.append(plugin)
    for i, plugin in enumerate(custom_enabled):
        if i not in replaced:
            enabled.append(plugin)
    return {"enabled": enabled, "disabled": disabled}


def merge_plugins(custom: dict[str, Any] | None) -> dict[str, dict[str, list[dict[str, Any]]]]:
    defaults: dict[str, dict[str, list[dict[str, Any]]]] = {p: {"enabled": [], "disabled": []} for p in ALL_POINTS}
    defaults["multiPoint"]["enabled"] = copy.deepcopy(DEFAULT_MULTI_POINT)
    if custom is None:
        return defaults
    return {p: _merge_plugin_set(defaults[p], custom.get(p) or {}) for p in ALL_POINTS}


def _check_int(value: Any, path: str, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, f"Invalid value: {value!r}: must be an integer")
    if lo is not None and value < lo:
        raise ConfigError(path, f"Invalid value: {value}: must be greater than or equal to {lo}")
    if hi is not None and value > hi:
        raise ConfigError(path, f"Invalid value: {value}: must be less than or equal to {hi}")
    return value


def parse_config(source: str | dict[str, Any] | None) -> SchedulerConfig:
    """Parse, default and validate a configuration (YAML text or a dict); ``None`` gives the defaults."""
    if source is None:
        raw: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
    elif isinstance(source, str):
        try:
            loaded = yaml.safe_load(source)
        except yaml.YAMLError as exc:
            raise ConfigError("<document>", f"invalid YAML: {exc}") from exc
        if loaded is None:
            loaded = {"apiVersion": API_VERSION, "kind": KIND}
        if not isinstance(loaded, dict):
            raise ConfigError("<document>", "must be a KubeSchedulerConfiguration object")
        raw = loaded
    else:
        raw = copy.deepcopy(source)
    if raw.get("apiVersion", API_VERSION) != API_VERSION:
        raise ConfigError(
            "apiVersion", f"Unsupported value: {raw.get('apiVersion')!r}: supported values: {API_VERSION!r}"
        )
    if raw.get("kind", KIND) != KIND:
        raise ConfigError("kind", f"Unsupported value: {raw.get('kind')!r}: supported values: {KIND!r}")
    known_top = {
        "apiVersion", "kind", "profiles", "percentageOfNodesToScore", "podInitialBackoffSeconds",
        "podMaxBackoffSeconds", "parallelism", "extenders", "leaderElection", "clientConnection",
        "healthzBindAddress", "metricsBindAddress", "enableProfiling", "enableContentionProfiling",
        "delayCacheUntilActive",
    }  # fmt: skip
    for key in raw:
        if key not in known_top:
            raise ConfigError(key, "unknown field")
    pct = _check_int(raw.get("percentageOfNodesToScore", 0), "percentageOfNodesToScore", 0, 100)
    initial = _check_int(raw.get("podInitialBackoffSeconds", 1), "podInitialBackoffSeconds", 1)
    maximum = _check_int(raw.get("podMaxBackoffSeconds", 10), "podMaxBackoffSeconds", 1)
    if maximum < initial:
        raise ConfigError(
            "podMaxBackoffSeconds",
            f"Invalid value: {maximum}: must be greater than or equal to podInitialBackoffSeconds",
        )
    parallelism = _check_int(raw.get("parallelism", 16), "parallelism", 1)
    raw_profiles = raw.get("profiles") or [{"schedulerName": DEFAULT_SCHEDULER_NAME}]
    if not isinstance(raw_profiles, list):
        raise ConfigError("profiles", "must be a list")
    profiles: list[Profile] = []
    seen: set[str] = set()
    known = set(plugin_registry.known_plugins())
    for i, rp in enumerate(raw_profiles):
        base = f"profiles[{i}]"
        if not isinstance(rp, dict):
            raise ConfigError(base, "must be an object")
        name = rp.get("schedulerName", DEFAULT_SCHEDULER_NAME)
        if not name:
            raise ConfigError(f"{base}.schedulerName", "Required value")
        if name in seen:
            raise ConfigError(f"{base}.schedulerName", f"Duplicate value: {name!r}")
        seen.add(name)
        custom = rp.get("plugins")
        if custom is not None and not isinstance(custom, dict):
            raise ConfigError(f"{base}.plugins", "must be an object")
        for point, pset in (custom or {}).items():
            if point not in ALL_POINTS:
                raise ConfigError(f"{base}.plugins.{point}", "unknown extension point")
            for kind in ("enabled", "disabled"):
                for j, p in enumerate((pset or {}).get(kind) or []):
                    path = f"{base}.plugins.{point}.{kind}[{j}]"
                    if not isinstance(p, dict) or not p.get("name"):
                        raise ConfigError(f"{path}.name", "Required value")
                    if kind == "enabled" and p["name"] not in known:
                        raise ConfigError(f"{path}.name", f"Invalid value: {p['name']!r}: plugin does not exist")
                    if "weight" in p and p["weight"] is not None:
                        _check_int(p["weight"], f"{path}.weight", 0)
        plugins = merge_plugins(custom)
        plugin_config: dict[str, dict[str, Any]] = {}
        for j, pc in enumerate(rp.get("pluginConfig") or []):
            path = f"{base}.pluginConfig[{j}]"
            if not isinstance(pc, dict) or not pc.get("name"):
                raise ConfigError(f"{path}.name", "Required value")
            if pc["name"] in plugin_config:
                raise ConfigError(f"{path}.name", f"Duplicate value: {pc['name']!r}")
            if pc["name"] not in known:
                raise ConfigError(f"{path}.name", f"Invalid value: {pc['name']!r}: plugin does not exist")
            args = pc.get("args") or {}
            if not isinstance(args, dict):
                raise ConfigError(f"{path}.args", "must be an object")
            cls = plugin_registry.plugin_class(pc["name"])
            args = cls.defaulted_args(args) if hasattr(cls, "defaulted_args") else dict(args)
            errors = cls.validate_args(args) if hasattr(cls, "validate_args") else []
            if errors:
                field_path, msg = errors[0]
                raise ConfigError(f"{path}.args.{field_path}", msg)
            plugin_config[pc["name"]] = args
        prof_pct = rp.get("percentageOfNodesToScore")
        if prof_pct is not None:
            _check_int(prof_pct, f"{base}.percentageOfNodesToScore", 0, 100)
        profiles.append(Profile(name, plugins, plugin_config, prof_pct))
    return SchedulerConfig(
        profiles=profiles,
        percentage_of_nodes_to_score=pct,
        pod_initial_backoff_seconds=float(initial),
        pod_max_backoff_seconds=float(maximum),
        parallelism=parallelism,
        raw=raw,
    )


def _needed_plugins(plugins: dict[str, dict[str, list[dict[str, Any]]]]) -> list[str]:
    names: list[str] = []
    for point in [p for p, _ in EXTENSION_POINTS] + ["multiPoint"]:
        for p in plugins[point]["enabled"]:
            if p["name"] not in names:
                names.append(p["name"])
    return names


def _without(plugins: dict[str, dict[str, list[dict[str, Any]]]], missing: set[str]) -> dict[str, Any]:
    return {
        point: {"enabled": [p for p in pset["enabled"] if p["name"] not in missing], "disabled": pset["disabled"]}
        for point, pset in plugins.items()
    }


def build_framework(profile: Profile, handle: Handle, *, allow_missing: bool = False) -> Framework:
    """``NewFramework``: instantiate the profile's plugins and expand multiPoint as kube-scheduler does.

    ``allow_missing`` drops plugins whose module cannot be imported (development only).
    """
    plugins = profile.plugins
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
        cls = plugin_registry.plugin_class(name)
        args = profile.plugin_config.get(name)
        if args is None:
            args = cls.defaulted_args({}) if hasattr(cls, "defaulted_args") else {}
        instances[name] = cls(handle, args)
    points: dict[str, list[Plugin]] = {}
    for point, iface in EXTENSION_POINTS:
        pset = plugins[point]
        enabled = [p["name"] for p in pset["enabled"]]
        for n in enabled:
            if not isinstance(instances[n], iface):
                raise ConfigError(f"plugins.{point}", f"plugin {n!r} does not extend {point} plugin")
        ordered = list(dict.fromkeys(enabled))
        disabled = {d["name"] for d in pset["disabled"]}
        if "*" not in disabled:
            overrides: list[str] = []
            multi: list[str] = []
            for p in plugins["multiPoint"]["enabled"]:
                n = p["name"]
                if not isinstance(instances[n], iface) or n in disabled:
                    continue
                if n in enabled:
                    overrides.append(n)
                    continue
                if n in multi:
                    raise ConfigError("plugins.multiPoint", f"plugin {n!r} already registered as {point!r}")
                multi.append(n)
            ordered = list(dict.fromkeys([*overrides, *multi, *enabled]))
        points[point] = [instances[n] for n in ordered]
    if len(points["queueSort"]) != 1 and not allow_missing:
        raise ConfigError(
            "plugins.queueSort",
            f"only one queue sort plugin required for profile with scheduler name {profile.scheduler_name!r}, "
            f"but got {len(points['queueSort'])}",
        )
    if not points["bind"] and not allow_missing:
        raise ConfigError("plugins.bind", f"at least one bind plugin is needed for profile {profile.scheduler_name!r}")
    weights: dict[str, int] = {}
    for p in [*plugins["score"]["enabled"], *plugins["multiPoint"]["enabled"]]:
        if not isinstance(instances[p["name"]], ScorePlugin) or p["name"] in weights:
            continue
        weights[p["name"]] = int(p.get("weight") or 0) or 1
    return Framework(profile.scheduler_name, handle, points, weights, profile.percentage_of_nodes_to_score)


def default_config_yaml() -> str:
    """The default configuration, as a user would write it."""
    return yaml.safe_dump(
        {"apiVersion": API_VERSION, "kind": KIND, "profiles": [{"schedulerName": DEFAULT_SCHEDULER_NAME}]},
        sort_keys=False,
    )

"""``KubeSchedulerConfiguration`` (kubescheduler.config.k8s.io/v1): defaults, merging, validation.

Defaults equal kube-scheduler's of the run's Kubernetes version (``kss_sim.kube.versions``): its multiPoint plugin
list and weights, plugin args defaulted by each plugin class, percentageOfNodesToScore 0 (adaptive), backoff 1 s to
10 s.

Feature gates reach this module as a plain ``{name: enabled}`` dict (the host's ``--feature-gates``); they change
the defaults as upstream's ``getDefaultPlugins`` does (GangScheduling joins multiPoint), not which plugins exist. The
version decides which in-tree plugins exist (GangScheduling only from v1.35); one kss has not ported is refused when
a configuration names it and left out of the default set (``SchedulerConfig.left_out``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from kss_sim.kube import go_yaml
from kss_sim.kube.versions import UNPORTED_PLUGINS, KubeVersion, kube_version
from kss_sim.scheduler import plugins as plugin_registry
from kss_sim.scheduler.extender import ExtenderConfig
from kss_sim.scheduler.extender_config import ExtenderConfigError, parse_extenders
from kss_sim.scheduler.framework import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
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

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
_GROUP = API_VERSION.rpartition("/")[0]
DEFAULT_SCHEDULER_NAME = "default-scheduler"


def default_multi_point(
    feature_gates: Mapping[str, bool] | None = None, version: KubeVersion | None = None
) -> list[dict[str, Any]]:
    """``getDefaultPlugins``' multiPoint at ``version`` (default: the default version) under ``feature_gates`` (gates
    not given take the version's default), without the plugins kss has not ported (``left_out_defaults``)."""
    version = version or kube_version()
    return [p for p in version.default_multi_point(feature_gates or {}) if p["name"] not in UNPORTED_PLUGINS]


def left_out_defaults(feature_gates: Mapping[str, bool] | None = None, version: KubeVersion | None = None) -> list[str]:
    """The plugins ``version``'s default set has under ``feature_gates`` that kss has not ported, and so leaves out."""
    version = version or kube_version()
    return [p["name"] for p in version.default_multi_point(feature_gates or {}) if p["name"] in UNPORTED_PLUGINS]


def left_out_note(feature_gates: Mapping[str, bool] | None = None, version: KubeVersion | None = None) -> str | None:
    """One line saying which of the version's default plugins kss leaves out (not ported); None when none is."""
    version = version or kube_version()
    names = left_out_defaults(feature_gates, version)
    if not names:
        return None
    return (
        f"note: Kubernetes v{version.name}'s default plugins {', '.join(names)} are not ported to kss: the default "
        "profile runs without them"
    )


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
# v1.36's PodGroup cycle points (kubescheduler.config.k8s.io/v1 ``placementGenerate``, ``placementScore``): a
# profile names them from v1.36 on; earlier releases' config API has no such fields.
PLACEMENT_POINTS: list[tuple[str, type[Plugin]]] = [
    ("placementGenerate", PlacementGeneratePlugin),
    ("placementScore", PlacementScorePlugin),
]
PLACEMENT_MINOR = 36


def all_points(version: KubeVersion) -> list[str]:
    """The plugin sets a profile has at ``version``: multiPoint, the pod's points and, from v1.36, the placement
    points."""
    placement = [p for p, _ in PLACEMENT_POINTS] if version.minor >= PLACEMENT_MINOR else []
    return [*ALL_POINTS, *placement]


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
    extenders: list[ExtenderConfig] = field(default_factory=list)
    # The feature gates and Kubernetes version the configuration was defaulted under (parse it again with these to
    # get the same plugins).
    feature_gates: dict[str, bool] = field(default_factory=dict)
    kube_version: KubeVersion = field(default_factory=kube_version)
    # Plugins of the version's default set that kss has not ported, left out (the host says so once).
    left_out: list[str] = field(default_factory=list)

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


def merge_plugins(
    custom: dict[str, Any] | None,
    feature_gates: Mapping[str, bool] | None = None,
    version: KubeVersion | None = None,
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """A profile's plugins: the defaults at ``version`` under ``feature_gates`` merged with ``custom``
    (``mergePlugins``)."""
    points = all_points(version or kube_version())
    defaults: dict[str, dict[str, list[dict[str, Any]]]] = {p: {"enabled": [], "disabled": []} for p in points}
    defaults["multiPoint"]["enabled"] = default_multi_point(feature_gates, version)
    if custom is None:
        return defaults
    return {p: _merge_plugin_set(defaults[p], custom.get(p) or {}) for p in points}


def _check_int(value: Any, path: str, lo: int | None = None, hi: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConfigError(path, f"Invalid value: {value!r}: must be an integer")
    if lo is not None and value < lo:
        raise ConfigError(path, f"Invalid value: {value}: must be greater than or equal to {lo}")
    if hi is not None and value > hi:
        raise ConfigError(path, f"Invalid value: {value}: must be less than or equal to {hi}")
    return value


def parse_config(
    source: str | dict[str, Any] | None,
    feature_gates: Mapping[str, bool] | None = None,
    version: KubeVersion | None = None,
) -> SchedulerConfig:
    """Parse, default and validate a configuration (YAML text or a dict); ``None`` gives the defaults.

    ``version`` (the run's Kubernetes version, default: the default one) and ``feature_gates`` (name -> enabled, as
    the host was started with) decide which in-tree plugins exist and the default plugins.
    """
    version = version or kube_version()
    if source is None:
        raw: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
    elif isinstance(source, str):
        try:
            loaded = go_yaml.load(source)
        except (yaml.YAMLError, RecursionError) as exc:
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
    try:
        extenders = parse_extenders(raw.get("extenders"))
    except ExtenderConfigError as exc:
        raise ConfigError(exc.field, exc.detail) from exc
    raw_profiles = raw.get("profiles") or [{"schedulerName": DEFAULT_SCHEDULER_NAME}]
    if not isinstance(raw_profiles, list):
        raise ConfigError("profiles", "must be a list")
    profiles: list[Profile] = []
    seen: set[str] = set()
    known = _known_plugins(version)
    gates_at_version = version.effective_gates(feature_gates or {})  # args defaults and checks follow gates
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
        points = all_points(version)
        for point, pset in (custom or {}).items():
            if point not in points:
                raise ConfigError(f"{base}.plugins.{point}", "unknown extension point")
            for kind in ("enabled", "disabled"):
                for j, p in enumerate((pset or {}).get(kind) or []):
                    path = f"{base}.plugins.{point}.{kind}[{j}]"
                    if not isinstance(p, dict) or not p.get("name"):
                        raise ConfigError(f"{path}.name", "Required value")
                    if kind == "enabled":
                        _check_plugin(p["name"], known, f"{path}.name", version)
                    if "weight" in p and p["weight"] is not None:
                        _check_int(p["weight"], f"{path}.weight", 0)
        plugins = merge_plugins(custom, feature_gates, version)
        plugin_config: dict[str, dict[str, Any]] = {}
        for j, pc in enumerate(rp.get("pluginConfig") or []):
            path = f"{base}.pluginConfig[{j}]"
            if not isinstance(pc, dict) or not pc.get("name"):
                raise ConfigError(f"{path}.name", "Required value")
            if pc["name"] in plugin_config:
                raise ConfigError(f"{path}.name", f"Duplicate value: {pc['name']!r}")
            _check_plugin(pc["name"], known, f"{path}.name", version)
            args = pc.get("args") or {}
            if not isinstance(args, dict):
                raise ConfigError(f"{path}.args", "must be an object")
            args = _untyped_args(pc["name"], args, f"{path}.args")
            cls = plugin_registry.plugin_class(pc["name"])
            args = defaulted_args(cls, args, gates_at_version)
            errors = _validated_args(cls, args, gates_at_version)
            if errors:
                field_path, msg = errors[0]
                raise ConfigError(f"{path}.args.{field_path}", msg)
            plugin_config[pc["name"]] = args
        prof_pct = rp.get("percentageOfNodesToScore")
        if prof_pct is not None:
            _check_int(prof_pct, f"{base}.percentageOfNodesToScore", 0, 100)
        profiles.append(Profile(name, plugins, plugin_config, prof_pct))
    _ignore_extender_resources(profiles, extenders)
    return SchedulerConfig(
        profiles=profiles,
        percentage_of_nodes_to_score=pct,
        pod_initial_backoff_seconds=float(initial),
        pod_max_backoff_seconds=float(maximum),
        parallelism=parallelism,
        raw=raw,
        extenders=extenders,
        feature_gates=dict(feature_gates or {}),
        kube_version=version,
        left_out=left_out_defaults(feature_gates, version),
    )


def _ignore_extender_resources(profiles: list[Profile], extenders: list[ExtenderConfig]) -> None:
    """Extended resources an extender manages with ``ignoredByScheduler`` are left to it: NodeResourcesFit ignores
    them in every profile (kube-scheduler appends them to NodeResourcesFitArgs.ignoredResources when it builds
    the profiles)."""
    ignored = [r.name for e in extenders for r in e.managed_resources if r.ignored_by_scheduler]
    if not ignored:
        return
    cls = plugin_registry.plugin_class("NodeResourcesFit")
    for profile in profiles:
        args = profile.plugin_config.get("NodeResourcesFit")
        args = dict(args) if args is not None else defaulted_args(cls, {}, {})
        given = list(args.get("ignoredResources") or [])
        args["ignoredResources"] = given + [r for r in ignored if r not in given]  # a document read back: once
        profile.plugin_config["NodeResourcesFit"] = args


def _known_plugins(version: KubeVersion) -> set[str]:
    """The plugin names a configuration may use at ``version``: that release's in-tree plugins (ported or not) and
    users' out-of-tree ones; kss's in-tree plugins of later releases are not among them."""
    in_tree = version.in_tree_plugins()
    later = set(plugin_registry.REGISTRY) - in_tree
    return set(in_tree | set(plugin_registry.known_plugins())) - later


def defaulted_args(cls: type[Plugin], args: dict[str, Any], gates: Mapping[str, bool]) -> dict[str, Any]:
    """A plugin's args defaulted as v1 defaulting does under ``gates`` (a plugin whose defaults follow gates has
    ``defaulted_args_under``, as SetDefaults_DynamicResourcesArgs reads them)."""
    under = getattr(cls, "defaulted_args_under", None)
    if under is not None:
        result: dict[str, Any] = under(args, gates)
        return result
    return cls.defaulted_args(args) if hasattr(cls, "defaulted_args") else dict(args)


def _validated_args(cls: type[Plugin], args: dict[str, Any], gates: Mapping[str, bool]) -> list[tuple[str, str]]:
    under = getattr(cls, "validate_args_under", None)
    if under is not None:
        errors: list[tuple[str, str]] = under(args, gates)
        return errors
    return cls.validate_args(args) if hasattr(cls, "validate_args") else []


def _check_plugin(name: Any, known: set[str], path: str, version: KubeVersion) -> None:
    """An enabled or configured plugin must exist at ``version`` and be ported, and an out-of-tree one must load
    (its entry point)."""
    if name not in known:
        raise ConfigError(path, f"Invalid value: {name!r}: plugin does not exist")
    if name in UNPORTED_PLUGINS:
        raise ConfigError(
            path, f"Invalid value: {name!r}: kube-scheduler v{version.name}'s plugin {name} is not ported to kss yet"
        )
    if name in plugin_registry.REGISTRY:
        return
    try:
        plugin_registry.plugin_class(name)
    except plugin_registry.PluginLoadError as exc:
        raise ConfigError(path, f"Invalid value: {name!r}: {exc}") from None


def _untyped_args(name: str, args: dict[str, Any], path: str) -> dict[str, Any]:
    """``args`` without the ``apiVersion``/``kind`` a document may give them (as the defaulted one does), which
    must then name the plugin's own args kind."""
    if "apiVersion" not in args and "kind" not in args:
        return args
    rest = {k: v for k, v in args.items() if k not in ("apiVersion", "kind")}
    group = str(args.get("apiVersion", API_VERSION)).rpartition("/")[0]
    kind = args.get("kind", f"{name}Args")
    if (group, kind) != (_GROUP, f"{name}Args"):
        raise ConfigError(path, f"args for plugin {name} were not of type {name}Args.{_GROUP}, got {kind}.{group}")
    return rest


ARGS_KINDS = frozenset(
    {
        "DefaultPreemption", "DynamicResources", "InterPodAffinity", "NodeAffinity",
        "NodeResourcesBalancedAllocation", "NodeResourcesFit", "PodTopologySpread", "VolumeBinding",
    }
)  # fmt: skip

# SetDefaults_KubeSchedulerConfiguration's values for the fields the simulator takes but does not use.
_COMPONENT_DEFAULTS: dict[str, Any] = {
    "enableProfiling": True,
    "enableContentionProfiling": True,
    "leaderElection": {
        "leaderElect": True,
        "leaseDuration": "15s",
        "renewDeadline": "10s",
        "retryPeriod": "2s",
        "resourceLock": "leases",
        "resourceName": "kube-scheduler",
        "resourceNamespace": "kube-system",
    },
    "clientConnection": {
        "kubeconfig": "",
        "acceptContentTypes": "",
        "contentType": "application/vnd.kubernetes.protobuf",
        "qps": 50,
        "burst": 100,
    },
}


def given_document(config: SchedulerConfig) -> dict[str, Any]:
    """The configuration as the user gave it (defaults not expanded), with its kind, apiVersion and one profile."""
    raw = copy.deepcopy(config.raw)
    raw.setdefault("apiVersion", "kubescheduler.config.k8s.io/v1")
    raw.setdefault("kind", "KubeSchedulerConfiguration")
    raw.setdefault("profiles", [{"schedulerName": "default-scheduler"}])
    return raw


def defaulted_document(config: SchedulerConfig) -> dict[str, Any]:
    """The configuration as kube-scheduler holds it after v1 defaulting (what ``--write-config-to`` prints): every
    profile's plugins merged with the default multiPoint set, args defaulted and appended (by name) for the
    enabled plugins that have an args kind, and the top-level defaults filled in."""
    raw = config.raw
    doc: dict[str, Any] = {"apiVersion": API_VERSION, "kind": KIND}
    doc["parallelism"] = config.parallelism
    doc["percentageOfNodesToScore"] = config.percentage_of_nodes_to_score
    doc["podInitialBackoffSeconds"] = int(config.pod_initial_backoff_seconds)
    doc["podMaxBackoffSeconds"] = int(config.pod_max_backoff_seconds)
    for key, default in _COMPONENT_DEFAULTS.items():
        given = raw.get(key)
        if isinstance(default, dict):
            doc[key] = {**default, **given} if isinstance(given, dict) else dict(default)
        else:
            doc[key] = default if given is None else given
    if doc["enableProfiling"] is False and raw.get("enableContentionProfiling") is None:
        del doc["enableContentionProfiling"]  # defaulted only when profiling is on
    for key in ("healthzBindAddress", "metricsBindAddress", "extenders", "delayCacheUntilActive"):
        if key in raw:
            doc[key] = copy.deepcopy(raw[key])
    gates = config.kube_version.effective_gates(config.feature_gates)
    doc["profiles"] = [_defaulted_profile(profile, gates, config.kube_version) for profile in config.profiles]
    return doc


def _defaulted_profile(profile: Profile, gates: Mapping[str, bool], version: KubeVersion) -> dict[str, Any]:
    plugins = {
        point: {kind: copy.deepcopy(entries) for kind, entries in pset.items() if entries}
        for point, pset in profile.plugins.items()
    }
    out: dict[str, Any] = {"schedulerName": profile.scheduler_name}
    if profile.percentage_of_nodes_to_score is not None:
        out["percentageOfNodesToScore"] = profile.percentage_of_nodes_to_score
    out["plugins"] = {point: pset for point, pset in plugins.items() if pset}
    plugin_config = [{"name": name, "args": _typed_args(name, args)} for name, args in profile.plugin_config.items()]
    enabled = {p["name"] for pset in profile.plugins.values() for p in pset["enabled"]}
    for name in sorted(enabled - profile.plugin_config.keys()):
        if name in ARGS_KINDS and not (name == "DynamicResources" and version.minor < 34):  # no such kind in v1.33
            plugin_config.append(
                {"name": name, "args": _typed_args(name, defaulted_args(plugin_registry.plugin_class(name), {}, gates))}
            )
    out["pluginConfig"] = plugin_config
    return out


def _typed_args(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """Args as the defaulted document shows them: with their kind (known kinds only, as decoding sets it)."""
    if name not in ARGS_KINDS:
        return copy.deepcopy(args)
    return {"apiVersion": API_VERSION, "kind": f"{name}Args", **copy.deepcopy(args)}


def default_config_yaml() -> str:
    """The default configuration, as a user would write it."""
    return yaml.safe_dump(
        {"apiVersion": API_VERSION, "kind": KIND, "profiles": [{"schedulerName": DEFAULT_SCHEDULER_NAME}]},
        sort_keys=False,
    )

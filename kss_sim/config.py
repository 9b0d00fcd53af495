"""Settings for the simulator: one pydantic-settings class, read from ``KSS_*`` environment variables."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from kss_sim.kube.api_enablement import check_runtime_config, parse_runtime_config
from kss_sim.kube.versions import DEFAULT_KUBE_VERSION, KubeVersion, kube_version, versions_help


class Settings(BaseSettings):
    """Everything configurable about ``kss serve``; each field says why it exists."""

    model_config = SettingsConfigDict(env_prefix="KSS_", extra="ignore")

    host: str = Field(
        default="127.0.0.1", description="Interface the API binds to; loopback so nothing is exposed by default."
    )
    port: int = Field(default=8000, description="TCP port of the Kubernetes API (and the web UI).")
    database_url: str = Field(
        default="sqlite:///./kss.db",
        description="SQLAlchemy URL of the durable store (a SQLite file in WAL mode by default, PostgreSQL by URL).",
    )
    sqlite_synchronous: Literal["FULL", "NORMAL"] = Field(
        default="FULL",
        description="SQLite fsync policy: FULL survives power loss; NORMAL (WAL) survives a killed process, faster.",
    )
    scheduler_config: Path | None = Field(
        default=None, description="KubeSchedulerConfiguration file for the scheduler; None runs the default profile."
    )
    plugin_modules: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Python modules of your own scheduler plugins, comma-separated (`--plugin-module`): imported at "
        "start-up with the current directory on the path, each registers its classes (`register` decorator or a "
        "module-level `PLUGINS = [...]`) for a KubeSchedulerConfiguration to enable by name; re-imported when a "
        "configuration is applied at runtime.",
    )
    kube_version: str = Field(
        default=DEFAULT_KUBE_VERSION,
        description=f"The Kubernetes version simulated (`--kube-version`: {versions_help()}): /version, every "
        "feature gate's default and the default scheduler configuration are that release's.",
    )
    feature_gates: Annotated[dict[str, bool], NoDecode] = Field(
        default_factory=dict,
        description="Kubernetes feature gates, as `--feature-gates` takes them (`GenericWorkload=true,"
        "GangScheduling=true`): GenericWorkload serves the Workload API (v1.36: Workload, PodGroup and the pod field "
        "spec.schedulingGroup; v1.35: Workload and spec.workloadRef), "
        "GangScheduling adds kube-scheduler's GangScheduling plugin (it needs GenericWorkload). A gate not given "
        "takes the default of --kube-version's release; one that release does not have is refused.",
    )
    runtime_config: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=dict,
        description="API group versions turned on or off, as kube-apiserver's `--runtime-config` takes them "
        "(`resource.k8s.io/v1beta1=true,api/beta=false`): beta APIs are off by default, so a v1.33 cluster serves DRA "
        "(resource.k8s.io/v1beta1, v1beta2) only when they are enabled here; resource.k8s.io/v1 is on from v1.34. "
        "Alpha APIs are off too: the Workload API needs scheduling.k8s.io/v1alpha1=true (v1.35), v1alpha2=true "
        "(v1.36) or v1beta1=true (v1.37) besides the GenericWorkload gate. An unregistered version of a group the "
        "release has is refused.",
    )
    max_body_bytes: int = Field(
        default=3 * 1024 * 1024,
        description="Largest request body accepted, as kube-apiserver's 3 MiB limit (413 above).",
    )
    import_max_body_bytes: int = Field(
        default=256 * 1024 * 1024,
        description="Largest snapshot POST /simulator/v1/import accepts: a whole cluster is far above one object.",
    )
    watch_window: int = Field(
        default=10000,
        description="Change events kept in memory for watch replay; older resourceVersions answer 410 Gone.",
    )
    event_ttl_seconds: float = Field(
        default=3600.0,
        ge=0,
        description="Events are deleted this long after their last write, as kube-apiserver's --event-ttl (1 h); "
        "0 keeps them forever.",
    )
    event_limit: int = Field(
        default=20_000,
        ge=0,
        description="Most Events kept: past it the oldest go first, as if their TTL had run out (kube-apiserver "
        "leaves Events to etcd; kss holds them in memory). 0: no limit.",
    )
    watch_bookmark_seconds: float = Field(
        default=30.0, description="Interval between BOOKMARK events on watches that asked for them."
    )
    watch_timeout_seconds: int = Field(
        default=1800,
        description="Server-side watch timeout when the client gives none (kube-apiserver's min-request-timeout).",
    )
    api_token: str | None = Field(
        default=None,
        description="Bearer token required on API requests; None leaves the API open (it binds to loopback).",
    )
    tls: bool = Field(
        default=False,
        description="Serve HTTPS with a self-signed certificate: kubectl sends a bearer token only over HTTPS.",
    )
    tls_dir: Path = Field(
        default=Path(".kss-tls"),
        description="Where the generated certificate and key are kept, so kubeconfigs stay valid across restarts.",
    )
    auto_create_namespaces: bool = Field(
        default=True,
        description="Create a missing namespace on first use instead of rejecting (lets bare workload files load).",
    )
    seed: int = Field(default=0, description="Seed for every random choice (tie-breaking), so runs are reproducible.")
    scheduler_enabled: bool = Field(
        default=True, description="Run the scheduler inside kss serve; off leaves pods pending (API-only use, imports)."
    )
    scheduler_process: bool = Field(
        default=True,
        description="Run the scheduler (and the encoding of its results) in a process of its own beside the API "
        "process, as kube-scheduler runs beside kube-apiserver: fed the store's change stream, writing back through "
        "the API process, which still commits everything; restarted if it dies. A second core for the cycle. Off: the "
        "scheduler runs in a thread of the API process.",
    )
    scheduler_memory_census: Path | None = Field(
        default=None,
        description="Debugging: a directory where the scheduler's process writes a census of its memory every "
        "minute (the kernel's, glibc's and pymalloc's figures, objects by type; `bench/soak.py --census-scheduler`), "
        "to tell what grows in it (issue #35). Each census walks every object: not for normal use.",
    )
    api_memory_census: Path | None = Field(
        default=None,
        description="Debugging: a directory where the API process writes a census of its memory every minute (as "
        "the scheduler's, with its own tables' sizes, controllers' backlogs and the objects its garbage-collector "
        "policy froze; `bench/soak.py --census-api`), to tell what grows in it (issue #35). Not for normal use.",
    )
    shadow: bool = Field(
        default=False,
        description="Shadow judgement: for each pod another scheduler binds, kss's own scheduler (this version's, the "
        "configured profile) computes where it would have placed it, on the cluster as it was just before the "
        "binding, placing nothing; recorded beside the binding, listed on the Shadow page, counted in /metrics.",
    )
    controllers: bool = Field(
        default=True,
        description="Run the controllers inside kss serve (the PodGroup controller keeps PodGroup status current, as "
        "scheduler-plugins' controller does on a real cluster); off leaves every status as clients write it.",
    )
    kubelet: bool = Field(
        default=True,
        description="Simulate every node's kubelet inside kss serve: bound pods start Running (ready, with IPs), "
        "end after their kss.sigs.k8s.io/run-duration annotation, and nodes keep heartbeat Leases in "
        "kube-node-lease; off leaves bound pods as they are.",
    )
    node_monitor_grace_period: float = Field(
        default=50.0,
        gt=0,
        description="Seconds a node's heartbeat Lease may go unrenewed before the node lifecycle controller marks "
        "the node Unknown (kube-controller-manager's --node-monitor-grace-period); nodes without a Lease are left "
        "as their status says.",
    )
    terminated_pod_gc_threshold: int = Field(
        default=12500,
        ge=0,
        description="Succeeded and Failed pods kept before pod GC deletes the oldest (kube-controller-manager's "
        "--terminated-pod-gc-threshold); 0 keeps them all.",
    )
    pod_gc_quarantine: float = Field(
        default=40.0,
        ge=0,
        description="Seconds a node must be missing before pod GC deletes the pods bound to it (upstream's fixed "
        "40 s quarantine; shorter for tests and demonstrations).",
    )
    horizontal_pod_autoscaler_sync_period: float = Field(
        default=15.0,
        gt=0,
        description="Seconds between two syncs of a HorizontalPodAutoscaler (kube-controller-manager's "
        "--horizontal-pod-autoscaler-sync-period).",
    )
    horizontal_pod_autoscaler_downscale_stabilization: float = Field(
        default=300.0,
        ge=0,
        description="Seconds of recommendations a HorizontalPodAutoscaler without spec.behavior takes the highest "
        "of before it scales down (--horizontal-pod-autoscaler-downscale-stabilization).",
    )
    plugin_timeout: float = Field(
        default=10.0,
        description="Seconds one call of a user's plugin may run before it is reported (log, "
        "kss_plugin_timeouts_total, a banner in the UI) and interrupted with an Error status for that pod; 0 turns "
        "the watchdog off. kss's own plugins are not watched.",
    )
    plugin_metrics_sample_percent: int = Field(
        default=10,
        ge=0,
        le=100,
        description="Share of scheduling cycles whose plugin runs feed scheduler_plugin_execution_duration_seconds "
        "(kube-scheduler samples 10 %); 100 times every cycle.",
    )
    results_max_attempts_per_pod: int = Field(
        default=100,
        ge=0,
        description="Keep at most this many recorded attempts per live pod: the first results_first_attempts_kept "
        "and the newest (0 keeps every attempt), so a pod retried for days does not grow the database without "
        "bound. The pod page counts the ones dropped.",
    )
    results_first_attempts_kept: int = Field(
        default=10, ge=0, description="How many of a live pod's first attempts stay recorded under the cap above."
    )
    results_node_annotations: bool = Field(
        default=True,
        description="Write the per-node result annotations (filter/score maps); turn off for very large clusters.",
    )
    results_node_annotations_max_nodes: int = Field(
        default=50,
        description="Skip the per-node annotations above this many nodes (they grow with the cluster); 0: no limit.",
    )
    results_annotations: bool = Field(
        default=True,
        description="Mirror results as kube-scheduler-simulator annotations on pods (the database keeps everything).",
    )

    @field_validator("feature_gates", mode="before")
    @classmethod
    def _parse_gates(cls, value: Any) -> Any:
        """``KSS_FEATURE_GATES=GenericWorkload=true,GangScheduling=true`` as kube components parse it."""
        if isinstance(value, str):
            return parse_feature_gates(value)
        return value

    @field_validator("kube_version")
    @classmethod
    def _known_version(cls, value: str) -> str:
        return kube_version(value).name

    @field_validator("feature_gates")
    @classmethod
    def _known_gates(cls, value: dict[str, bool], info: ValidationInfo) -> dict[str, bool]:
        version = info.data.get("kube_version")
        if version is not None:  # else the version failed its own check, which names itself
            check_feature_gates(value, version)
        return value

    @field_validator("runtime_config", mode="before")
    @classmethod
    def _parse_runtime_config(cls, value: Any) -> Any:
        """``KSS_RUNTIME_CONFIG=resource.k8s.io/v1beta1=true`` as kube-apiserver parses its flag."""
        if isinstance(value, str):
            return parse_runtime_config(value)
        return value

    @field_validator("runtime_config")
    @classmethod
    def _known_apis(cls, value: dict[str, str], info: ValidationInfo) -> dict[str, str]:
        version = info.data.get("kube_version")
        if version is not None:  # else the version failed its own check, which names itself
            check_runtime_config(value, kube_version(version).minor)
        return value

    @property
    def version(self) -> KubeVersion:
        """The Kubernetes version simulated."""
        return kube_version(self.kube_version)

    @cached_property
    def effective_feature_gates(self) -> dict[str, bool]:
        """Every gate kss knows as this run has it: the ones given, else the version's defaults."""
        return self.version.effective_gates(self.feature_gates)

    @field_validator("plugin_modules", mode="before")
    @classmethod
    def _split_modules(cls, value: Any) -> Any:
        """``KSS_PLUGIN_MODULES=a.b,c`` is a list of module names."""
        if isinstance(value, str):
            return [name.strip() for name in value.split(",") if name.strip()]
        return value


def parse_feature_gates(text: str) -> dict[str, bool]:
    """``Name=true,Other=false`` -> {Name: True, Other: False}; ValueError naming a malformed pair."""
    gates: dict[str, bool] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, raw = part.partition("=")
        value = raw.strip().lower()
        if not sep or value not in ("true", "false"):
            raise ValueError(f"invalid value of {part}, the form is Name=true|false")
        gates[name.strip()] = value == "true"
    return gates


def check_feature_gates(gates: Mapping[str, bool], version: str | None = None) -> None:
    """ValueError for a gate the Kubernetes ``version`` (default: DEFAULT_KUBE_VERSION) does not have, a locked one
    set otherwise, a gate without those it needs, or one kss does not simulate turned on."""
    kube_version(version).check_gates(gates)


def add_kube_version_argument(parser: argparse.ArgumentParser) -> None:
    """``--kube-version``, the same in every command that runs the scheduler."""
    parser.add_argument(
        "--kube-version",
        default=None,
        metavar="VERSION",
        help=f"the Kubernetes version simulated: {versions_help()} (default {DEFAULT_KUBE_VERSION}; "
        "KSS_KUBE_VERSION): /version, feature gates' defaults and the default scheduler configuration",
    )


class OptionError(ValueError):
    """A command-line option that cannot be used; the message names it (``--kube-version: ...``)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"{option}: {message}")
        self.option = option


def version_and_gates(
    kube_version_option: str | None, feature_gates_option: str | None
) -> tuple[KubeVersion, dict[str, bool]]:
    """A run's Kubernetes version and every gate as the run has it, from ``--kube-version`` / ``--feature-gates``,
    else ``KSS_KUBE_VERSION`` / ``KSS_FEATURE_GATES`` (a bad setting names itself as the settings are read);
    OptionError naming a bad option. The gates are checked against the version they run at."""
    overrides: dict[str, Any] = {}
    if kube_version_option is not None:
        try:
            overrides["kube_version"] = kube_version(kube_version_option).name
        except ValueError as exc:
            raise OptionError("--kube-version", str(exc)) from None
    if feature_gates_option:
        version = kube_version(overrides.get("kube_version") or Settings().kube_version)
        try:
            gates = parse_feature_gates(feature_gates_option)
            version.check_gates(gates)
        except ValueError as exc:
            raise OptionError("--feature-gates", str(exc)) from None
        overrides["feature_gates"] = gates
    settings = Settings(**overrides)
    return settings.version, settings.effective_feature_gates

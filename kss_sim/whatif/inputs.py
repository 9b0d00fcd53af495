"""What the what-if commands read: scheduler configurations, feature gates, plugin modules, manifests.

Every reader raises :class:`~kss_sim.replay.workload.WorkloadError` with the file named in each problem, so a command
prints one line per problem and exits 2 without having run anything.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import yaml

from kss_sim.config import OptionError, Settings, add_kube_version_argument
from kss_sim.config import version_and_gates as config_version_and_gates
from kss_sim.kube import go_yaml
from kss_sim.kube.objects import Obj
from kss_sim.kube.versions import DEFAULT_KUBE_VERSION, KubeVersion, versions_help
from kss_sim.replay.workload import WorkloadError
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError, parse_config
from kss_sim.scheduler.plugins import PluginLoadError, load_plugin_modules


def add_engine_arguments(p: argparse.ArgumentParser, *, config: bool = True, versions: bool = False) -> None:
    """--scheduler-config, --feature-gates, --kube-version, --plugin-module, --seed: how the engine is set up; with
    ``versions``, --kube-version may be repeated (``kss compare``: one side per version) into ``kube_versions``."""
    if config:
        p.add_argument("--scheduler-config", type=Path, metavar="FILE", help="a KubeSchedulerConfiguration (YAML/JSON)")
    p.add_argument("--feature-gates", metavar="GATES", help="e.g. GenericWorkload=true,GangScheduling=true")
    if versions:
        p.add_argument(
            "--kube-version", action="append", dest="kube_versions", default=[], metavar="VERSION",
            help=f"the Kubernetes version simulated: {versions_help()} (default {DEFAULT_KUBE_VERSION}; "
            "KSS_KUBE_VERSION); given twice or more, one side per version, under one configuration",
        )  # fmt: skip
    else:
        add_kube_version_argument(p)
    p.add_argument(
        "--plugin-module",
        action="append",
        dest="plugin_modules",
        metavar="MODULE",
        help="a Python module of your own scheduler plugins, imported first; repeatable (KSS_PLUGIN_MODULES)",
    )
    p.add_argument("--seed", type=int, default=0, help="the run's random seed (ties among equal nodes); default 0")


def version_and_gates(args: argparse.Namespace) -> tuple[KubeVersion, dict[str, bool]]:
    """The run's Kubernetes version and gates: --kube-version and --feature-gates (else KSS_KUBE_VERSION and
    KSS_FEATURE_GATES, checked as the settings are read), the gates checked against the version."""
    try:
        return config_version_and_gates(args.kube_version, args.feature_gates)
    except OptionError as exc:
        raise WorkloadError([str(exc)]) from None


def load_plugins(args: argparse.Namespace) -> None:
    """Import --plugin-module modules (else KSS_PLUGIN_MODULES)."""
    try:
        load_plugin_modules(args.plugin_modules or Settings().plugin_modules)
    except PluginLoadError as exc:
        raise WorkloadError([str(exc)]) from None


def read_yaml(path: Path) -> Any:
    """One YAML/JSON document."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise WorkloadError([f"{path}: {exc.strerror or exc}"]) from None
    try:
        docs = [d for d in go_yaml.load_all(text) if d is not None]
    except (yaml.YAMLError, RecursionError) as exc:
        raise WorkloadError([f"{path}: neither JSON nor YAML: {exc}".replace("\n", " ")]) from None
    if len(docs) != 1:
        raise WorkloadError([f"{path}: expected one document, found {len(docs)}"])
    return docs[0]


def check_config(doc: Any, where: str, gates: dict[str, bool] | None, version: KubeVersion | None = None) -> Obj:
    """A KubeSchedulerConfiguration document, validated now at ``version`` (a bad one is an input error, not a
    failed run)."""
    if not isinstance(doc, dict):
        raise WorkloadError([f"{where}: must be a KubeSchedulerConfiguration object"])
    try:
        parse_config(doc, gates, version)
    except ConfigError as exc:
        raise WorkloadError([f"{where}: {exc}"]) from None
    return doc


def read_config(path: Path, gates: dict[str, bool] | None, version: KubeVersion | None = None) -> Obj:
    """A KubeSchedulerConfiguration file, validated at ``version``."""
    return check_config(read_yaml(path), str(path), gates, version)

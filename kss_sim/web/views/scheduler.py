"""The scheduler page: the running KubeSchedulerConfiguration, what it amounts to, and applying a new one."""

from __future__ import annotations

from dataclasses import dataclass

from kss_sim.web.formatting import to_yaml
from kss_sim.web.ports import ProfilePlugins, SchedulerView


@dataclass(slots=True)
class ConfigOutcome:
    """Submitting a KubeSchedulerConfiguration: applied, or the field that is wrong."""

    ok: bool
    text: str
    field: str = ""
    message: str = ""


@dataclass(slots=True)
class ConfigInEffect:
    """Per profile (scheduler name), each extension point's plugins in run order with score weights; and the
    defaulted document as YAML."""

    profiles: list[ProfilePlugins]
    defaulted_yaml: str


def config_yaml(scheduler: SchedulerView) -> str:
    """The running KubeSchedulerConfiguration as YAML."""
    return to_yaml(scheduler.config_document())


def config_in_effect(scheduler: SchedulerView) -> ConfigInEffect:
    """What the running configuration amounts to: each profile's plugins per extension point, and the
    document after kube-scheduler's defaulting."""
    return ConfigInEffect(scheduler.plugins_in_effect(), to_yaml(scheduler.defaulted_config_document()))


def apply_config(scheduler: SchedulerView, text: str) -> ConfigOutcome:
    """Validate and apply a configuration; on error the running one stays and the field is named."""
    rejected = scheduler.apply_config(text)
    if rejected is not None:
        return ConfigOutcome(False, text, rejected.field, rejected.message)
    return ConfigOutcome(True, config_yaml(scheduler))

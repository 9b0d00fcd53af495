"""The scheduler page: the running KubeSchedulerConfiguration, what it amounts to, and applying a new one."""

from __future__ import annotations

from dataclasses import dataclass


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

    profiles: list[tuple[str, list[tuple[str, list[tuple[str, int | None]]]]]]
    defaulted_yaml: str

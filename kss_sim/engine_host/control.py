"""What ``kss serve``'s operations ask of the scheduler, whichever hosts it: the thread (``SchedulerService``) or the
process of its own (``process_host.SchedulerProcess``, ``KSS_SCHEDULER_PROCESS``)."""

from __future__ import annotations

import contextlib
from typing import Any, Protocol

from kss_sim.scheduler.kube_scheduler_configuration import SchedulerConfig


class SchedulerControl(Protocol):
    """The configuration, holding the loop (import, reset), waiting for it to settle."""

    def update_config(self, source: str | dict[str, Any]) -> SchedulerConfig: ...

    def check_config(self, source: str | dict[str, Any]) -> SchedulerConfig: ...

    def reload_plugin_modules(self) -> None:
        """Import the users' plugin modules again wherever the scheduler and the configuration check run
        (``PluginLoadError`` names the one that failed)."""

    def config_document(self) -> dict[str, Any]: ...

    def defaulted_config_document(self) -> dict[str, Any]: ...

    def held(self) -> contextlib.AbstractContextManager[None]: ...

    def wait_idle(self, timeout: float = 10.0) -> bool: ...

    def results_cleared(self) -> None:
        """The recorded attempts were cleared (reset): attempts are numbered from 1 again."""

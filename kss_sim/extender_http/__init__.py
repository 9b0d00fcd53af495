"""The HTTP transport of scheduler extenders, shared by ``kss serve`` (engine_host) and ``kss simulate``.

The engine (``app/scheduler/extender.py``) holds the extenders' semantics and calls a transport; this room makes
the calls: a synchronous httpx client per extender with its ``httpTimeout`` and TLS settings.
"""

from __future__ import annotations

from collections.abc import Sequence

from kss_sim.scheduler.extender import Extender, ExtenderConfig, build_extenders


def extenders_for(configs: Sequence[ExtenderConfig]) -> list[Extender]:
    """The configured extenders over HTTP; httpx is imported only when there are some (it costs start-up time and
    memory to ``kss simulate`` runs that have none)."""
    if not configs:
        return []
    from kss_sim.extender_http.transport import http_transport

    return build_extenders(configs, http_transport)

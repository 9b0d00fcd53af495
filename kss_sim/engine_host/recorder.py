"""What the scheduler's host needs of the results room: numbering a pod's attempts and recording each one.

``ResultsService`` is it in the API process (the thread host); the scheduler's own process
(``KSS_SCHEDULER_PROCESS``) numbers attempts itself and sends the encoded rows to the API process
(``scheduler_process.RowsForwarder``).
"""

from __future__ import annotations

from typing import Protocol

from kss_sim.scheduler.record import Attempt


class AttemptRecorder(Protocol):
    """Numbers and records scheduling attempts (``kss_sim.results.attempts.ResultsService``)."""

    def next_attempt_number(self, namespace: str, pod_name: str) -> int: ...

    def submit(
        self,
        att: Attempt,
        *,
        namespace: str,
        pod_name: str,
        pod_uid: str,
        queued_seconds: float = 0.0,
        run_id: int | None = None,
    ) -> None: ...

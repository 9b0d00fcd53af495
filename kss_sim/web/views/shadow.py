"""The Shadow page: the pods another scheduler bound where kss's own scheduler would have chosen otherwise.

With ``--shadow`` (``KSS_SHADOW``) every binding another scheduler makes is judged by kss's own scheduler on the
cluster as it was just before (kss_sim/engine_host/external_bindings.py); the judgements are read back through the
``ShadowJudgements`` port, each with kss's filter and score rows of the bound node and of kss's pick.
"""

from __future__ import annotations

from dataclasses import dataclass

from kss_sim.web.ports import ShadowJudgements, ShadowRow

SHADOW_ROWS_SHOWN = 200  # the newest judgements listed


@dataclass(frozen=True, slots=True)
class ShadowView:
    """The judgements listed (newest first), the counts of all of them, and whether the shadow runs."""

    rows: list[ShadowRow]
    agree: int
    differ: int
    everything: bool  # every judgement listed, not only the differing ones
    enabled: bool

    @property
    def judged(self) -> int:
        return self.agree + self.differ


def shadow_view(judgements: ShadowJudgements, *, everything: bool, enabled: bool) -> ShadowView:
    """The Shadow page's model: the differing judgements (``everything``: all of them) and the counts."""
    counts = judgements.shadow_counts()
    rows = judgements.shadow_judgements(differing_only=not everything, limit=SHADOW_ROWS_SHOWN)
    return ShadowView(rows, counts.get("agree", 0), counts.get("differ", 0), everything, enabled)

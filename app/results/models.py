"""ORM model of recorded scheduling attempts."""

from __future__ import annotations

from sqlalchemy import Float, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.db import Base


class SchedulingAttempt(Base):
    """One scheduling attempt of one pod: outcome columns for listing, details as JSON, matrices compressed."""

    __tablename__ = "scheduling_attempts"
    __table_args__ = (Index("ix_scheduling_attempts_pod", "namespace", "pod_name", "attempt"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    namespace: Mapped[str] = mapped_column(String(253))
    pod_name: Mapped[str] = mapped_column(String(253))
    pod_uid: Mapped[str] = mapped_column(String(64))
    attempt: Mapped[int] = mapped_column(Integer)
    cycle: Mapped[int] = mapped_column(Integer)
    profile: Mapped[str] = mapped_column(String(253))
    started_at: Mapped[float] = mapped_column(Float)
    duration_seconds: Mapped[float] = mapped_column(Float)
    queued_seconds: Mapped[float] = mapped_column(Float)
    result: Mapped[str] = mapped_column(String(32))
    bound_to: Mapped[str | None] = mapped_column(String(253), nullable=True)
    nominated_node: Mapped[str | None] = mapped_column(String(253), nullable=True)
    message: Mapped[str] = mapped_column(Text)
    node_count: Mapped[int] = mapped_column(Integer)
    feasible_count: Mapped[int] = mapped_column(Integer)
    # PreFilter, PreScore, PostFilter, Reserve, Permit, PreBind and Bind results, selected nodes (or "bestTotal":
    # the scored nodes with the best total, found again from the matrices), ...
    details: Mapped[str] = mapped_column(Text)
    # Filter verdicts and scores per node and plugin (app.results.codec).
    matrices: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)

"""ORM models of recorded scheduling attempts and of replay runs (``kss replay --record-db``)."""

from __future__ import annotations

from sqlalchemy import Boolean, Float, Index, Integer, LargeBinary, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from kss_sim.db import Base


class SchedulingAttempt(Base):
    """One scheduling attempt of one pod: outcome columns for listing, details as JSON, matrices compressed."""

    __tablename__ = "scheduling_attempts"
    __table_args__ = (
        Index("ix_scheduling_attempts_pod", "namespace", "pod_name", "attempt"),
        Index("ix_scheduling_attempts_run", "run_id", "namespace", "pod_name", "attempt"),
    )

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
    # Filter verdicts and scores per node and plugin (kss_sim.results.codec).
    matrices: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    # The replay run (``replay_runs.id``) the attempt belongs to; NULL for the live cluster's attempts. No foreign
    # key: adding one would make SQLite copy the whole table on upgrade; runs delete their attempts themselves.
    run_id: Mapped[int | None] = mapped_column(Integer, nullable=True)
    # The Kubernetes version the attempt was scheduled at (``1.35``); NULL for attempts recorded before kss had one.
    kube_version: Mapped[str | None] = mapped_column(String(16), nullable=True)
    # Who bound the pod when another scheduler did (the Scheduled Event's reporting controller, else the pod's
    # schedulerName); NULL for kss's own attempts.
    scheduled_by: Mapped[str | None] = mapped_column(String(253), nullable=True)
    # With ``--shadow``: whether kss's own choice at that moment agreed with that binding (NULL: not judged).
    shadow_agrees: Mapped[bool | None] = mapped_column(Boolean, nullable=True)


class ReplayRun(Base):
    """One replay recorded into the results database: what ran, and (once done) its summary, samples and pods."""

    __tablename__ = "replay_runs"
    __table_args__ = (Index("ix_replay_runs_compare_group", "compare_group"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(253))
    workload: Mapped[str] = mapped_column(Text)  # the workload's name or source
    created_at: Mapped[float] = mapped_column(Float)  # wall clock, seconds since the epoch
    seed: Mapped[int] = mapped_column(Integer)
    config: Mapped[str] = mapped_column(Text)  # the KubeSchedulerConfiguration as JSON
    status: Mapped[str] = mapped_column(String(16))  # running, done, failed
    message: Mapped[str] = mapped_column(Text, default="")  # why it failed
    summary: Mapped[str | None] = mapped_column(Text, nullable=True)  # summary.json's document
    # The samples (timeseries.csv's rows) and the per-pod rows (pods.csv's), JSON compressed with zstd.
    timeseries: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    pods: Mapped[bytes | None] = mapped_column(LargeBinary, nullable=True)
    compare_group: Mapped[str | None] = mapped_column(String(253), nullable=True)  # the runs of one kss compare

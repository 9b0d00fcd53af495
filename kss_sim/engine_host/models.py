"""ORM model of the scheduler configuration applied at runtime (it must survive a restart)."""

from __future__ import annotations

from sqlalchemy import Float, Integer, Text
from sqlalchemy.orm import Mapped, mapped_column

from kss_sim.db import Base


class SchedulerConfigurationRecord(Base):
    """The last KubeSchedulerConfiguration a client applied (one row)."""

    __tablename__ = "scheduler_configuration"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    document: Mapped[str] = mapped_column(Text)  # JSON, as config_document() returns it
    updated_at: Mapped[float] = mapped_column(Float)

"""ORM models of the virtual cluster: every object as one JSON row, and the cluster-wide resourceVersion."""

from __future__ import annotations

from sqlalchemy import BigInteger, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from kss_sim.db import Base

KIND_KEY_LENGTH = 63 + 1 + 253


class ClusterObject(Base):
    """One Kubernetes object as acknowledged to a client (its full JSON body)."""

    __tablename__ = "cluster_objects"
    __table_args__ = (UniqueConstraint("kind", "namespace", "name"),)

    uid: Mapped[str] = mapped_column(String(36), primary_key=True)
    # Built-in kinds by name; a custom kind as "Kind.group": a 63-character kind, a dot, a 253-character group.
    kind: Mapped[str] = mapped_column(String(KIND_KEY_LENGTH), index=True)
    # "" for cluster-scoped kinds so the unique constraint also covers them (NULLs never collide).
    namespace: Mapped[str] = mapped_column(String(253))
    name: Mapped[str] = mapped_column(String(253))
    resource_version: Mapped[int] = mapped_column(BigInteger)
    body: Mapped[str] = mapped_column(Text)


class ClusterState(Base):
    """Single row holding the last resourceVersion handed out (deletions leave no row to take a max from)."""

    __tablename__ = "cluster_state"

    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    resource_version: Mapped[int] = mapped_column(BigInteger)

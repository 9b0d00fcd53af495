"""recorded scheduling attempts

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "scheduling_attempts",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("namespace", sa.String(length=253), nullable=False),
        sa.Column("pod_name", sa.String(length=253), nullable=False),
        sa.Column("pod_uid", sa.String(length=64), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("cycle", sa.Integer(), nullable=False),
        sa.Column("profile", sa.String(length=253), nullable=False),
        sa.Column("started_at", sa.Float(), nullable=False),
        sa.Column("duration_seconds", sa.Float(), nullable=False),
        sa.Column("queued_seconds", sa.Float(), nullable=False),
        sa.Column("result", sa.String(length=32), nullable=False),
        sa.Column("bound_to", sa.String(length=253), nullable=True),
        sa.Column("nominated_node", sa.String(length=253), nullable=True),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("node_count", sa.Integer(), nullable=False),
        sa.Column("feasible_count", sa.Integer(), nullable=False),
        sa.Column("details", sa.Text(), nullable=False),
        sa.Column("matrices", sa.LargeBinary(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scheduling_attempts")),
    )
    op.create_index("ix_scheduling_attempts_pod", "scheduling_attempts", ["namespace", "pod_name", "attempt"])


def downgrade() -> None:
    op.drop_index("ix_scheduling_attempts_pod", table_name="scheduling_attempts")
    op.drop_table("scheduling_attempts")

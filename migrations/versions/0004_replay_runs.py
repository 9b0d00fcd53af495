"""replay runs, and the run each recorded attempt belongs to

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-02
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "replay_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("workload", sa.Text(), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("seed", sa.Integer(), nullable=False),
        sa.Column("config", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("timeseries", sa.LargeBinary(), nullable=True),
        sa.Column("pods", sa.LargeBinary(), nullable=True),
        sa.Column("compare_group", sa.String(length=253), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_replay_runs")),
    )
    op.create_index("ix_replay_runs_compare_group", "replay_runs", ["compare_group"])
    # A plain nullable column: SQLite adds it in place (no table copy), PostgreSQL without a rewrite.
    with op.batch_alter_table("scheduling_attempts") as batch:
        batch.add_column(sa.Column("run_id", sa.Integer(), nullable=True))
    op.create_index("ix_scheduling_attempts_run", "scheduling_attempts", ["run_id", "namespace", "pod_name", "attempt"])


def downgrade() -> None:
    op.drop_index("ix_scheduling_attempts_run", table_name="scheduling_attempts")
    op.execute("DELETE FROM scheduling_attempts WHERE run_id IS NOT NULL")
    with op.batch_alter_table("scheduling_attempts") as batch:
        batch.drop_column("run_id")
    op.drop_index("ix_replay_runs_compare_group", table_name="replay_runs")
    op.drop_table("replay_runs")

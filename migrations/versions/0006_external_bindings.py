"""who bound a pod when another scheduler did, and the shadow judgement of that binding

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0006"
down_revision: str | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # Plain nullable columns: SQLite adds them in place (no table copy); kss's own attempts leave them NULL.
    with op.batch_alter_table("scheduling_attempts") as batch:
        batch.add_column(sa.Column("scheduled_by", sa.String(length=253), nullable=True))
        batch.add_column(sa.Column("shadow_agrees", sa.Boolean(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("scheduling_attempts") as batch:
        batch.drop_column("shadow_agrees")
        batch.drop_column("scheduled_by")

"""the Kubernetes version each recorded attempt was scheduled at

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # A plain nullable column: SQLite adds it in place (no table copy); attempts recorded before stay NULL.
    with op.batch_alter_table("scheduling_attempts") as batch:
        batch.add_column(sa.Column("kube_version", sa.String(length=16), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("scheduling_attempts") as batch:
        batch.drop_column("kube_version")

"""the kind column holds a custom kind's "Kind.group" key: 63 + 1 + 253 characters

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0007"
down_revision: str | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    # PostgreSQL widens a varchar in place; SQLite never enforced the width, but batch mode rebuilds the table so
    # that the declared type matches the models (a one-off copy of cluster_objects).
    with op.batch_alter_table("cluster_objects") as batch:
        batch.alter_column("kind", existing_type=sa.String(length=63), type_=sa.String(length=317), existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("cluster_objects") as batch:
        batch.alter_column("kind", existing_type=sa.String(length=317), type_=sa.String(length=63), existing_nullable=False)

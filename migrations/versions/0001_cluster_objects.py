"""cluster objects and the cluster-wide resourceVersion

Revision ID: 0001
Revises:
Create Date: 2025-11-21
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "cluster_objects",
        sa.Column("uid", sa.String(length=36), nullable=False),
        sa.Column("kind", sa.String(length=63), nullable=False),
        sa.Column("namespace", sa.String(length=253), nullable=False),
        sa.Column("name", sa.String(length=253), nullable=False),
        sa.Column("resource_version", sa.BigInteger(), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.PrimaryKeyConstraint("uid", name=op.f("pk_cluster_objects")),
        sa.UniqueConstraint("kind", "namespace", "name", name=op.f("uq_cluster_objects_kind_namespace_name")),
    )
    with op.batch_alter_table("cluster_objects", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_cluster_objects_kind"), ["kind"], unique=False)
    state = op.create_table(
        "cluster_state",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("resource_version", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_cluster_state")),
    )
    op.bulk_insert(state, [{"id": 1, "resource_version": 0}])


def downgrade() -> None:
    op.drop_table("cluster_state")
    with op.batch_alter_table("cluster_objects", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_cluster_objects_kind"))
    op.drop_table("cluster_objects")

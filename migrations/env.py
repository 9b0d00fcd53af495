"""Alembic environment: runs migrations on a given connection or on KSS_DATABASE_URL."""

from __future__ import annotations

import os

from alembic import context
from sqlalchemy import Connection

import kss_sim.cluster.storage.models  # each models import registers its tables on Base.metadata
import kss_sim.engine_host.models
import kss_sim.results.models  # noqa: F401  (registers the results tables)
from kss_sim.db import Base, make_engine

config = context.config
target_metadata = Base.metadata


def _run(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        render_as_batch=True,  # SQLite cannot ALTER most things; batch mode rebuilds tables instead
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_offline() -> None:
    """Emit SQL without a database connection (``alembic upgrade --sql``)."""
    context.configure(
        url=config.get_main_option("sqlalchemy.url"),
        target_metadata=target_metadata,
        literal_binds=True,
        render_as_batch=True,
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Run against the connection handed in by the application, or open one."""
    connection = config.attributes.get("connection")
    if connection is not None:
        _run(connection)
        return
    url = os.environ.get("KSS_DATABASE_URL") or config.get_main_option("sqlalchemy.url") or ""
    engine = make_engine(url)
    try:
        with engine.connect() as conn:
            _run(conn)
            conn.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()

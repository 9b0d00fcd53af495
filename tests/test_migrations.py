"""The Alembic migrations build exactly the schema the ORM models describe."""

from __future__ import annotations

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import Engine, inspect

import kss_sim.cluster.storage.models
import kss_sim.engine_host.models
import kss_sim.results.models  # noqa: F401
from kss_sim.db import Base


def test_models_and_migrations_agree(engine: Engine) -> None:
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), Base.metadata)
    assert diff == []


def test_sqlite_runs_in_wal_mode_with_full_sync(engine: Engine) -> None:
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA synchronous").scalar() == 2  # FULL
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1


def test_migration_seeds_the_resource_version_counter(engine: Engine) -> None:
    assert "cluster_objects" in inspect(engine).get_table_names()
    with engine.connect() as conn:
        assert conn.exec_driver_sql("SELECT id, resource_version FROM cluster_state").all() == [(1, 0)]

"""Database plumbing: the engine (SQLite in WAL mode, or any SQLAlchemy URL), the declarative base, sessions."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, MetaData, create_engine, event
from sqlalchemy.orm import DeclarativeBase, Session, sessionmaker

from kss_sim.package_data import MIGRATIONS_DIR

# Deterministic constraint names so Alembic autogenerate and batch migrations on SQLite can address them.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    """Declarative base for every ORM model in the application."""

    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def make_engine(url: str, *, sqlite_synchronous: str = "FULL") -> Engine:
    """Create an engine for ``url``; SQLite connections get WAL, ``synchronous`` (FULL) and foreign keys."""
    if sqlite_synchronous not in ("FULL", "NORMAL"):
        raise ValueError(f"sqlite_synchronous must be FULL or NORMAL, not {sqlite_synchronous!r}")

    def pragmas(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        # WAL lets readers run beside the writer; FULL makes every commit durable before we answer 2xx.
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={sqlite_synchronous}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA busy_timeout=30000")
        cursor.close()

    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False})
        event.listen(engine, "connect", pragmas)
        return engine
    return create_engine(url, pool_pre_ping=True)


# SQLite's default limit on a statement's parameters (SQLITE_MAX_VARIABLE_NUMBER: 999 before 3.32).
SQLITE_MAX_VARIABLES = 32_766 if sqlite3.sqlite_version_info >= (3, 32, 0) else 999


def sqlite_chunks(count: int, largest: int) -> Iterator[tuple[int, int]]:
    """(start, stop) of runs that cover ``count`` rows, each a power of two no larger than ``largest``.

    A many-row statement is one SQLite step (pysqlite lets go of the GIL around each step of an executemany and must
    win it back); sizes are powers of two so a handful of statement texts serve every run, and pysqlite's cache of
    prepared statements (128) holds them all instead of one large one per row count.
    """
    start = 0
    while start < count:
        size = min(largest, 1 << ((count - start).bit_length() - 1))
        yield start, start + size
        start += size


@functools.cache
def sqlite_insert_statement(table: str, columns: tuple[str, ...], count: int) -> str:
    """``INSERT INTO table (columns) VALUES (?, ...), ...`` for ``count`` rows (sizes from ``sqlite_chunks``)."""
    row = f"({','.join(['?'] * len(columns))})"
    return f"INSERT INTO {table} ({', '.join(columns)}) VALUES {','.join([row] * count)}"


def make_session_factory(engine: Engine) -> sessionmaker[Session]:
    """A session factory bound to ``engine``; objects stay usable after commit."""
    return sessionmaker(bind=engine, expire_on_commit=False)


def alembic_config(url: str) -> Any:
    """An Alembic ``Config`` for the project's migrations pointed at ``url``.

    Built here rather than read from alembic.ini, which serves the ``alembic`` command in a checkout and is not
    shipped: its ``prepend_sys_path = .`` would put the server's working directory at the head of ``sys.path``.
    """
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.set_main_option("path_separator", "os")
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


def upgrade_database(engine: Engine) -> None:
    """Apply every Alembic migration up to ``head`` on ``engine``'s database."""
    from alembic import command

    cfg = alembic_config(engine.url.render_as_string(hide_password=False))
    with engine.begin() as connection:
        cfg.attributes["connection"] = connection
        command.upgrade(cfg, "head")


@contextmanager
def session_scope(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A unit of work: commit on success, roll back on error. The one place background writers commit."""
    session = factory()
    try:
        yield session
        session.commit()
    except BaseException:
        session.rollback()
        raise
    finally:
        session.close()

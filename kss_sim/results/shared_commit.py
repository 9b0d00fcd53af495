"""The port through which recorded attempts share the cluster store's transactions (``kss serve``).

The store's committer is then the only writer of the database file: the results writer thread builds the rows and
hands their insert to it (``ClusterStore.write_alongside`` implements this), instead of committing on its own
connection and racing the committer for SQLite's lock.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from sqlalchemy import Connection


class CommitWait(Protocol):
    """A write handed to the shared committer."""

    def wait(self) -> None:
        """Block until it is committed; raise what it raised (its rows then rolled back alone)."""


class SharedCommit(Protocol):
    """Runs a write in the transaction of the owner's next commit, on the same database as the results."""

    def write_alongside(self, write: Callable[[Connection], None]) -> CommitWait | None:
        """Queue ``write(conn)``; None when there is no database to share (the caller then writes on its own)."""

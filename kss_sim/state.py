"""Typed access to the services the application keeps on ``app.state`` (``kss_sim.main`` puts them there)."""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TypeVar

from starlette.requests import Request

T = TypeVar("T")


def state_accessor(name: str, kind: type[T]) -> Callable[[Request], T]:
    """A function answering ``request.app.state.<name>`` for a request, typed as ``kind`` (not checked)."""
    accessor: Callable[[Request], T] = operator.attrgetter(f"app.state.{name}")
    return accessor

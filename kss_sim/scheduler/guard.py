"""What a plugin that is not kss's own returns is checked before the framework uses it.

kube-scheduler's plugins are Go: the compiler sees to it that Filter returns a ``*Status``. Users' Python plugins
have no such check, so ``guard`` wraps the extension methods of every plugin whose class lives outside
``kss_sim.scheduler.plugins`` (the in-tree plugins are trusted and run unwrapped, at no cost). A wrapped method that
returns a value of the wrong type raises :class:`PluginResultError`; the runtime turns that, like any exception
out of a plugin, into the Error status of that extension point (``runtime.Framework``). Each wrapped call also runs
under the plugin watchdog (``watchdog.py``): past ``KSS_PLUGIN_TIMEOUT`` it is reported and interrupted.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from kss_sim.scheduler.framework import Plugin, PostFilterResult, PreFilterResult, Status
from kss_sim.scheduler.watchdog import WATCHDOG

log = logging.getLogger("kss.scheduler")

IN_TREE = "kss_sim.scheduler.plugins."
_FRAMEWORK = "kss_sim.scheduler.framework"
_GUARDED = "_kss_guarded"


class PluginResultError(Exception):
    """A plugin's extension method returned a value of the wrong type (reported without a traceback)."""


def _is_int(v: Any) -> bool:
    return isinstance(v, int | np.integer) and not isinstance(v, bool)


def _is_status(v: Any, args: tuple[Any, ...]) -> bool:
    return isinstance(v, Status)


def _pair(first: Callable[[Any], bool]) -> Callable[[Any, tuple[Any, ...]], bool]:
    def check(v: Any, args: tuple[Any, ...]) -> bool:
        return isinstance(v, tuple) and len(v) == 2 and first(v[0]) and isinstance(v[1], Status)

    return check


def _is_score_list(v: Any) -> bool:
    return isinstance(v, list | tuple) and all(_is_int(s) for s in v)


def _is_permit(v: Any, args: tuple[Any, ...]) -> bool:
    return (
        isinstance(v, tuple)
        and len(v) == 2
        and isinstance(v[0], Status)
        and isinstance(v[1], int | float)
        and not isinstance(v[1], bool)
    )


def _is_int_array_or_none(v: Any, args: tuple[Any, ...]) -> bool:
    return v is None or (isinstance(v, np.ndarray) and v.ndim == 1 and np.issubdtype(v.dtype, np.integer))


def _is_bool_array_or_none(v: Any, args: tuple[Any, ...]) -> bool:
    return v is None or (isinstance(v, np.ndarray) and v.ndim == 1 and v.dtype == np.bool_)


def _is_normalized(v: Any, args: tuple[Any, ...]) -> bool:
    # normalize_score(state, pod, scores) changes ``scores`` in place: each NodeScore must still hold an int.
    return isinstance(v, Status) and all(_is_int(ns.score) for ns in args[2])


def _is_bool(v: Any, args: tuple[Any, ...]) -> bool:
    return isinstance(v, bool | np.bool_)


def _anything(v: Any, args: tuple[Any, ...]) -> bool:
    return True


_STATUS = "a Status"
# Method -> (check of (returned value, call arguments), what was wanted).
_CHECKS: dict[str, tuple[Callable[[Any, tuple[Any, ...]], bool], str]] = {
    "less": (_is_bool, "a bool"),
    "pre_enqueue": (_is_status, _STATUS),
    "pre_filter": (
        _pair(lambda r: r is None or isinstance(r, PreFilterResult)),
        "a (PreFilterResult | None, Status) pair",
    ),
    "add_pod": (_is_status, _STATUS),
    "remove_pod": (_is_status, _STATUS),
    "filter": (_is_status, _STATUS),
    "filter_nodes": (_is_bool_array_or_none, "a bool array or None"),
    "post_filter": (
        _pair(lambda r: r is None or isinstance(r, PostFilterResult)),
        "a (PostFilterResult | None, Status) pair",
    ),
    "pre_score": (_is_status, _STATUS),
    "score": (_pair(_is_int), "an (int score, Status) pair"),
    "score_nodes": (_pair(_is_score_list), "a (list of int scores, Status) pair"),
    "score_batch": (_is_int_array_or_none, "an int array or None"),
    "normalize_score": (_is_normalized, "a Status, with int scores"),
    "normalize_batch": (_is_int_array_or_none, "an int array or None"),
    "reserve": (_is_status, _STATUS),
    "permit": (_is_permit, "a (Status, timeout in seconds) pair"),
    "pre_bind_pre_flight": (_is_status, _STATUS),
    "pre_bind": (_is_status, _STATUS),
    "bind": (_is_status, _STATUS),
    # What these return is ignored (they cannot fail); wrapped for the watchdog only.
    "unreserve": (_anything, "anything"),
    "post_bind": (_anything, "anything"),
}


def describe(value: Any) -> str:
    """A returned value as an error message names it: its type and a short repr."""
    if value is None:
        return "None"
    text = repr(value)
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{type(value).__name__} {text}"


def _checked(
    plugin: str, fn: Callable[..., Any], method: str, check: Callable[[Any, tuple[Any, ...]], bool], want: str
) -> Callable[..., Any]:
    @functools.wraps(fn)
    def run(*args: Any) -> Any:
        value = WATCHDOG.call(plugin, method, fn, args)
        if not check(value, args):
            raise PluginResultError(f"{method} returned {describe(value)}, want {want}")
        return value

    return run


def is_in_tree(pl: object) -> bool:
    return type(pl).__module__.startswith(IN_TREE)


def guard(pl: Plugin) -> None:
    """Wrap the extension methods ``pl``'s class defines (not the framework's defaults) with checks of what they
    return; once per plugin object, and never for an in-tree plugin."""
    if is_in_tree(pl) or getattr(pl, "__dict__", {}).get(_GUARDED):
        return
    cls = type(pl)
    try:
        for method, (check, want) in _CHECKS.items():
            defined = getattr(cls, method, None)
            if defined is None or getattr(defined, "__module__", None) == _FRAMEWORK:
                continue
            setattr(pl, method, _checked(pl.name, getattr(pl, method), method, check, want))
        setattr(pl, _GUARDED, True)
    except AttributeError:  # __slots__ without __dict__: exceptions are still caught, returns go unchecked
        log.warning("plugin %r: cannot check what its methods return (no instance __dict__)", pl.name)

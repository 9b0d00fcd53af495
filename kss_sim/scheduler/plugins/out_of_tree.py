"""Out-of-tree plugins: users' classes, found by name as kube-scheduler's out-of-tree registry finds them.

A configuration enables a plugin and gives its args by name (``profiles[].plugins.<point>.enabled``,
``multiPoint``, ``pluginConfig[].args``); these are the two ways a name comes to mean a user's class:

- entry points of the group ``kss.plugins`` in installed distributions: the entry point's name is the plugin's
  name, its value the class (``pkg.mod:Class``). They are discovered from the distributions' metadata and
  loaded only when a configuration names the plugin, so a broken package cannot break a run that does not use it;
- plugin modules (``kss serve|simulate --plugin-module pkg.mod``, ``KSS_PLUGIN_MODULES``), imported at start-up
  with the current directory on the path. A module registers its classes with the :func:`register` decorator,
  or lists them in a module-level ``PLUGINS = [Class, ...]``, or both. :func:`reload_plugin_modules` imports
  them again (a configuration applied at runtime picks up an edited file).

In-tree names always mean the in-tree plugins: registering another class under one is refused, and an entry
point with such a name is ignored. A name registered by a plugin module is looked up before entry points.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.metadata
import importlib.util
import logging
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

from kss_sim.scheduler.framework import Plugin

ENTRY_POINT_GROUP = "kss.plugins"

log = logging.getLogger(__name__)


class PluginLoadError(Exception):
    """A plugin module or an entry point could not be loaded, or a class could not be registered; the message
    names the module or package and what went wrong."""


_registered: dict[str, type[Plugin]] = {}
_registered_by: dict[str, set[str]] = {}  # plugin module -> the names it registered
_modules: list[str] = []  # the plugin modules loaded, in order
_loading: list[str] = []  # the plugin module being imported (a stack), whose registrations are its own
_entry_points: dict[str, importlib.metadata.EntryPoint] | None = None
_entry_point_classes: dict[str, type[Plugin]] = {}


def _in_tree() -> dict[str, str]:
    from kss_sim.scheduler.plugins import REGISTRY  # the package imports this module: no import at module level

    return REGISTRY


def _qualified(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def _check_class(obj: Any, origin: str) -> type[Plugin]:
    if not isinstance(obj, type) or not issubclass(obj, Plugin):
        raise PluginLoadError(
            f"{origin}: {obj!r} is not a plugin class (a subclass of kss_sim.scheduler.framework.Plugin)"
        )
    if not obj.name:
        raise PluginLoadError(f"{origin}: plugin class {_qualified(obj)} has no name (set its class attribute `name`)")
    return obj


def register(cls: type[Plugin]) -> type[Plugin]:
    """Register an out-of-tree plugin class under its ``name`` (usable as a decorator).

    Refused (:class:`PluginLoadError`) for a name of an in-tree plugin, or one another class already has.
    """
    cls = _check_class(cls, "register")
    name = cls.name
    if name in _in_tree():
        raise PluginLoadError(
            f"plugin {name!r} ({_qualified(cls)}) has the name of an in-tree plugin: an out-of-tree plugin needs "
            "a name of its own"
        )
    prior = _registered.get(name)
    if prior is not None and _qualified(prior) != _qualified(cls):  # the same class again (a reload) is fine
        raise PluginLoadError(f"plugin {name!r} ({_qualified(cls)}) is already registered by {_qualified(prior)}")
    _registered[name] = cls
    if _loading:
        _registered_by.setdefault(_loading[-1], set()).add(name)
    return cls


def _discovered() -> dict[str, importlib.metadata.EntryPoint]:
    """The ``kss.plugins`` entry points of the installed distributions, by name (read once)."""
    global _entry_points
    if _entry_points is None:
        found: dict[str, importlib.metadata.EntryPoint] = {}
        in_tree = _in_tree()
        for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
            if ep.name in in_tree:
                log.warning(
                    "entry point %r of %s (%s) ignored: it has the name of an in-tree plugin",
                    ep.name,
                    _package(ep),
                    ep.value,
                )
                continue
            found.setdefault(ep.name, ep)
        _entry_points = found
    return _entry_points


def _package(ep: importlib.metadata.EntryPoint) -> str:
    dist = ep.dist
    if dist is None:
        return "an unknown package"
    return f"package {dist.name} {dist.version}"


def _entry_point_class(name: str) -> type[Plugin] | None:
    cls = _entry_point_classes.get(name)
    if cls is not None:
        return cls
    ep = _discovered().get(name)
    if ep is None:
        return None
    origin = f"plugin {name!r} from {_package(ep)} (entry point {ep.value!r} in group {ENTRY_POINT_GROUP!r})"
    try:
        loaded = ep.load()
    except Exception as exc:
        raise PluginLoadError(f"{origin} failed to load: {type(exc).__name__}: {exc}") from exc
    cls = _check_class(loaded, origin)
    if cls.name != name:
        raise PluginLoadError(f"{origin}: class {_qualified(cls)} is named {cls.name!r}, not {name!r}")
    _entry_point_classes[name] = cls
    return cls


def plugin_class(name: str) -> type[Plugin]:
    """The out-of-tree class for ``name``: KeyError when no module or entry point has it, ``PluginLoadError``
    when its entry point fails to load."""
    cls = _registered.get(name) or _entry_point_class(name)
    if cls is None:
        raise KeyError(name)
    return cls


def known_plugins() -> list[str]:
    """The out-of-tree plugin names: registered ones, then those of entry points (not loaded)."""
    return list(dict.fromkeys([*_registered, *_discovered()]))


def is_out_of_tree(name: str) -> bool:
    return name not in _in_tree() and (name in _registered or name in _discovered())


@contextmanager
def _cwd_on_path() -> Iterator[None]:
    """The current directory first on ``sys.path`` while importing, as ``python -m`` has it."""
    cwd = os.getcwd()
    added = cwd not in sys.path and "" not in sys.path
    if added:
        sys.path.insert(0, cwd)
    try:
        yield
    finally:
        if added:
            sys.path.remove(cwd)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


def _register_listed(module: ModuleType) -> None:
    """Register what the module lists in ``PLUGINS``."""
    listed = getattr(module, "PLUGINS", None)
    if listed is None:
        return
    if isinstance(listed, (str, bytes)) or not isinstance(listed, Iterable):
        raise PluginLoadError(f"PLUGINS must be a list of plugin classes, not {type(listed).__name__}")
    for cls in listed:
        register(cls)


def _import(name: str, module: ModuleType | None) -> None:
    """Import (or, given ``module``, import again) plugin module ``name`` and register its plugins."""
    _loading.append(name)
    try:
        with _cwd_on_path():
            importlib.invalidate_caches()
            first = module is None
            if module is None:
                module = importlib.import_module(name)
            else:
                _reexecute(module)
        _register_listed(module)
        if first and not _registered_by.get(name):  # most likely a class defined but never registered
            raise PluginLoadError(
                "it registers no plugin: decorate each plugin class with @register (from kss.framework) "
                "or list the classes in PLUGINS = [...]"
            )
    finally:
        _loading.pop()


class _SourceOnlyLoader(importlib.machinery.SourceFileLoader):
    """Compiles the source, never a cached .pyc: an edit within the second of the last one (the .pyc keeps
    whole-second times) is still seen."""

    def path_stats(self, path: str) -> dict[str, Any]:
        raise OSError("source only")


def _reexecute(module: ModuleType) -> None:
    """``importlib.reload``, reading a plain source file's current text rather than its cached bytecode."""
    path = getattr(module, "__file__", None)
    if not path or not path.endswith(".py"):
        importlib.reload(module)
        return
    loader = _SourceOnlyLoader(module.__name__, path)
    spec = importlib.util.spec_from_file_location(module.__name__, path, loader=loader)
    if spec is None:
        importlib.reload(module)
        return
    module.__spec__ = spec
    module.__loader__ = loader
    loader.exec_module(module)


def load_plugin_modules(names: Iterable[str]) -> None:
    """Import the plugin modules not imported yet, in order; their classes are registered.

    ``PluginLoadError`` names the module that failed and why; what it had registered is dropped.
    """
    for raw in names:
        name = raw.strip()
        if not name or name in _modules:
            continue
        before = dict(_registered)
        try:
            _import(name, None)
        except Exception as exc:
            _restore(before)
            _registered_by.pop(name, None)
            raise PluginLoadError(f"plugin module {name!r} failed to load: {_why(exc)}") from exc
        _modules.append(name)


def reload_plugin_modules() -> None:
    """Import every loaded plugin module again (``importlib.reload``), so edited files take effect, and read the
    installed entry points again (a package installed since is found).

    On a failure (``PluginLoadError`` naming the module) the classes registered before stay registered. Only
    the plugin modules themselves are re-executed, not the modules they import.
    """
    global _entry_points
    _entry_points = None
    _entry_point_classes.clear()
    before = dict(_registered)
    before_by = {module: set(names) for module, names in _registered_by.items()}
    try:
        for name in _modules:
            for plugin in _registered_by.pop(name, set()):
                _registered.pop(plugin, None)  # a class the edited file no longer defines is gone
            try:
                _import(name, sys.modules.get(name))
            except Exception as exc:
                raise PluginLoadError(f"plugin module {name!r} failed to reload: {_why(exc)}") from exc
    except PluginLoadError:
        _restore(before)
        _registered_by.clear()
        _registered_by.update(before_by)
        raise


def _why(exc: BaseException) -> str:
    return str(exc) if isinstance(exc, PluginLoadError) else _describe(exc)


def _restore(registered: dict[str, type[Plugin]]) -> None:
    _registered.clear()
    _registered.update(registered)


def plugin_modules() -> list[str]:
    """The plugin modules loaded, in order."""
    return list(_modules)

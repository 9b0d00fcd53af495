"""CEL device selectors for the allocator, with the work that does not change between calls done once.

Upstream compiles through a small LRU cache and evaluates every (request, device) pair again in each
``Allocate`` call (one per node, per pod). kss keeps, in one :class:`DeviceMatchCache` shared by every allocator
the plugin builds:

- the slice index and, per node, the pools gathered from it, while the same slice objects are handed in;
- each slice parsed once (:class:`~kss_sim.scheduler.dra.devices.SliceInfo`, keyed by the identity of its dict, the
  dict itself held so the identity cannot be reused), and each device's CEL view (``DeviceView``) built once;
- compiled expressions, and compile errors, by expression text;
- each device's verdict per expression: True, False, or the evaluation error to raise again.

Why results cannot change: a selector's verdict depends only on the expression and on the device's driver,
attributes, capacity and allowMultipleAllocations — all read from the slice dict, which is never modified (a new
slice version is a new dict, hence a new entry). Selectors are still consulted in upstream's order (class
selectors, then the request's, stopping at the first false or error), so which error surfaces is unchanged.
"""

from __future__ import annotations

import functools
import importlib
import operator
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from kss_sim.kube.objects import Obj
from kss_sim.scheduler.dra.devices import DeviceInfo, SliceInfo, parse_slice
from kss_sim.scheduler.dra.pools import SliceIndex


class CompiledSelector(Protocol):
    """What ``kss_sim.kube.dra.cel.compile_selector`` returns."""

    def matches(self, device: Any) -> bool: ...


class SelectorCompileError(Exception):
    """A selector that does not compile; ``str`` is cel-go's message (upstream wraps it in ``CEL compile error``)."""


class SelectorRuntimeError(Exception):
    """A selector that fails on a device; ``str`` is upstream's message (wrapped in ``CEL runtime error``)."""


class DeviceMatchCache:
    """Parsed slices, compiled selectors and per-device verdicts, shared by allocators (the ``cel_cache``).

    ``compile_selector`` and ``device_view`` default to :mod:`kss_sim.kube.dra.cel`'s (with the ``device`` of
    DRAConsumableCapacity when ``consumable_capacity``, as the plugin's ``cel.NewCache`` has it); tests may pass
    their own.
    """

    def __init__(
        self,
        *,
        consumable_capacity: bool = False,
        compile_selector: Callable[[str], CompiledSelector] | None = None,
        device_view: Callable[[str, Obj], Any] | None = None,
    ) -> None:
        self.consumable_capacity = consumable_capacity
        self._compile_fn = compile_selector
        self._view_fn = device_view
        self._compile_errors: tuple[type[Exception], ...] = (SelectorCompileError,)
        self._eval_errors: tuple[type[Exception], ...] = (SelectorRuntimeError,)
        self._compiled: dict[str, CompiledSelector | SelectorCompileError] = {}
        self._slices: dict[int, SliceInfo] = {}
        self._index: SliceIndex | None = None
        self._index_objs: list[Obj] = []  # the slices ``_index`` was built from

    def _bind_cel(self) -> None:
        """Resolve the CEL library on first use (the allocator works without it for selector-free requests)."""
        cel = importlib.import_module("kss_sim.kube.dra.cel")
        if self._compile_fn is None:
            self._compile_fn = functools.partial(cel.compile_selector, consumable_capacity=self.consumable_capacity)
        if self._view_fn is None:
            self._view_fn = cel.device_view
        self._compile_errors += (cel.CelCompileError,)
        self._eval_errors += (cel.CelEvaluationError,)

    def slices(self, objs: Sequence[Obj]) -> list[SliceInfo]:
        """The parsed form of each slice, reused for the same dict; entries of slices no longer given are dropped."""
        cache = self._slices
        out: list[SliceInfo] = []
        for obj in objs:
            info = cache.get(id(obj))
            if info is None or info.obj is not obj:
                info = cache[id(obj)] = parse_slice(obj)
            out.append(info)
        if len(cache) > 2 * len(out) + 64:
            self._slices = {id(s.obj): s for s in out}
        return out

    def slice_index(self, objs: Sequence[Obj]) -> SliceIndex:
        """The slices' :class:`SliceIndex`, reused (with the pools it gathered per node) while they stay the same."""
        last = self._index
        if last is not None and len(self._index_objs) == len(objs) and all(map(operator.is_, self._index_objs, objs)):
            return last
        self._index = SliceIndex(self.slices(objs))
        self._index_objs = list(objs)
        return self._index

    def compiled(self, expression: str) -> CompiledSelector:
        """The compiled selector (raises :class:`SelectorCompileError`)."""
        hit = self._compiled.get(expression)
        if hit is None:
            if self._compile_fn is None or self._view_fn is None:
                self._bind_cel()
            assert self._compile_fn is not None
            try:
                hit = self._compile_fn(expression)
            except self._compile_errors as exc:
                hit = SelectorCompileError(str(exc))
            self._compiled[expression] = hit
        if isinstance(hit, SelectorCompileError):
            raise hit
        return hit

    def matches(self, expression: str, driver: str, device: DeviceInfo) -> bool:
        """The selector's verdict on the device (raises compile or :class:`SelectorRuntimeError` errors)."""
        verdict = device.verdicts.get(expression)
        if verdict is None:
            selector = self.compiled(expression)
            if device.view is None:
                assert self._view_fn is not None
                device.view = self._view_fn(driver, device.obj)
            try:
                verdict = bool(selector.matches(device.view))
            except self._eval_errors as exc:
                verdict = SelectorRuntimeError(str(exc))
            device.verdicts[expression] = verdict
        if isinstance(verdict, Exception):
            raise verdict
        return verdict

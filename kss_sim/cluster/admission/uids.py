"""Objects' ``metadata.uid``: random (version 4) UUIDs, as kube-apiserver's ``uuid.NewUUID`` gives, drawn in blocks.

``uuid.uuid4()`` reads 16 bytes with ``os.urandom``, a system call that lets go of the GIL: a thread creating
objects one after another (a page of the bulk create) then waited for another thread to hand the GIL back once per
object (a quarter of the bulk create's wall time at 10,000 pods). One read of ``BLOCK`` uids' worth of bytes serves
the next ``BLOCK`` creates instead; every uid is still 122 random bits from the same source.

A host that must give the same objects the same identities on every run (a replay through a store, with a seed)
draws them from its own ``random.Random`` instead: within ``drawn_from(rng)`` (this thread's context) uids and
``generateName``'s suffixes come from ``rng``.
"""

from __future__ import annotations

import os
import random
import threading
import uuid
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

BLOCK = 256

_ready: deque[str] = deque()
_refill = threading.Lock()


_drawn_from: ContextVar[random.Random | None] = ContextVar("kss_identities_drawn_from", default=None)


@contextmanager
def drawn_from(rng: random.Random) -> Iterator[None]:
    """Within: this thread's uids and ``generateName`` suffixes are drawn from ``rng`` (the same ``rng`` state, the
    same identities), not from the system's randomness."""
    token = _drawn_from.set(rng)
    try:
        yield
    finally:
        _drawn_from.reset(token)


def new_uid() -> str:
    """A new random UUID in its text form (``xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx``). Thread-safe."""
    rng = _drawn_from.get()
    if rng is not None:
        return str(uuid.UUID(int=rng.getrandbits(128), version=4))
    while True:
        try:
            return _ready.popleft()
        except IndexError:
            with _refill:
                if not _ready:
                    raw = os.urandom(16 * BLOCK)
                    _ready.extend(str(uuid.UUID(bytes=raw[i : i + 16], version=4)) for i in range(0, len(raw), 16))


def name_suffix(alphabet: str, length: int) -> str:
    """``length`` random characters of ``alphabet``: what ``generateName`` appends (from ``drawn_from``'s ``rng``
    within it)."""
    return "".join((_drawn_from.get() or random).choices(alphabet, k=length))


def _forget_in_child() -> None:
    # A forked process must not hand out the uids its parent will also hand out.
    _ready.clear()


os.register_at_fork(after_in_child=_forget_in_child)

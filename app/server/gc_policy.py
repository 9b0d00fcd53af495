"""The process-wide garbage-collector policy of ``kss serve`` (installed at its start-up, app.serve_cli)."""

from __future__ import annotations

import gc
import threading
from typing import Any

# Full collections of the cyclic garbage collector stop every thread for as long as it takes to walk every
# tracked object: 100-200 ms once a few thousand pods (and their watch-log versions) are held, the whole of the
# API's p99 while the scheduler runs. What survives a full collection is long-lived (objects, cache, log), so it
# is frozen out of later ones (they then walk only what is new); when the scheduler has been idle for a while it
# unfreezes and collects once (``reclaim_frozen``, the scheduler's ``on_idle``), so cyclic garbage among frozen
# objects is not kept forever.
_gc_lock = threading.Lock()
_gc_installed = False


def _freeze_survivors(phase: str, info: dict[str, Any]) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


def install_gc_policy() -> None:
    """Freeze the survivors of each full collection (once per process; see the comment above)."""
    global _gc_installed
    with _gc_lock:
        if not _gc_installed:
            gc.callbacks.append(_freeze_survivors)
            _gc_installed = True


def reclaim_frozen() -> None:
    """One full collection over everything, frozen objects included, then freeze the survivors again."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()

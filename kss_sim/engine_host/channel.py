"""The pipe between ``kss serve`` and its scheduler process (``KSS_SCHEDULER_PROCESS``): framing and errors.

Both sides send tuples whose first item names the message (pickled by ``multiprocessing.connection``). From the API
process: ``changes`` (the store's committed JSON, resourceVersion order, and the acknowledgements of the scheduler's
batches of writes committed by then), ``synced``, ``answer`` (to a request), ``call`` (an operation: hold, wait_idle,
configuration, the pages' view), ``stop``. From the scheduler process: ``ready``, ``writes`` (attempts' deferred
writes, a batch each), ``request`` (a write whose result the engine needs), ``rows`` (encoded attempt rows, and what
the metrics count of the attempts concluded since, with their sampled plugin runs), ``plugin_timeout`` (a plugin call
past its timeout), ``shadow`` (a judgement), ``answer``, ``bye``.
"""

from __future__ import annotations

import contextlib
import importlib
import pickle
import threading
from typing import Any

from kss_sim.cluster.errors import ApiError
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError

# The writes an attempt may leave staged (their results are not read); every other write is a request/answer.
DEFERRABLE_WRITES = frozenset({"bind_pod", "update_pod_status", "create_event", "delete", "patch"})
# Every store method the scheduler process may call on the API process's store ("select": of a kind the change
# stream does not carry, answered as the entries' JSON).
STORE_WRITES = DEFERRABLE_WRITES | {"update", "create", "take_binder", "select"}


class Channel:
    """One end of the pipe; ``send`` from any thread (a connection's own ``send`` is not thread-safe)."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn
        self._lock = threading.Lock()

    def send(self, message: tuple[Any, ...]) -> bool:
        """Send ``message``; False when the other side is gone."""
        try:
            # Pickled with the plain pickler, outside the lock: the connection's own ``send`` builds a ForkingPickler
            # (its reducers for sockets and connections, which no message holds) per message, 2 us against 0.4 for
            # a small one, and pickled a thread's large message (rows) while the other threads waited for the lock.
            data = pickle.dumps(message, pickle.HIGHEST_PROTOCOL)
            with self._lock:
                self.conn.send_bytes(data)
        except (OSError, ValueError, EOFError):
            return False
        return True

    def recv(self) -> tuple[Any, ...]:
        """The next message (``EOFError`` / ``OSError`` when the other side is gone)."""
        message: tuple[Any, ...] = self.conn.recv()
        return message

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.conn.close()


def encode_error(exc: BaseException) -> tuple[str, str, str]:
    """An exception as (module, class, message): the store's errors take other arguments than their message, so they
    do not survive pickling as they are."""
    return type(exc).__module__, type(exc).__qualname__, str(exc)


def decode_error(encoded: tuple[str, str, str]) -> Exception:
    """The exception ``encode_error`` described, of the same class where it can be rebuilt (a ``Conflict`` stays a
    ``Conflict``: the DRA plugin retries on it), else a ``RuntimeError`` with its text."""
    module, qualname, message = encoded
    try:
        cls = getattr(importlib.import_module(module), qualname)
    except (ImportError, AttributeError):
        cls = None
    if cls is ConfigError:
        # Its text is "field: detail"; the field is what the configuration endpoint answers the 422 on.
        field_path, _, detail = message.partition(": ")
        return ConfigError(field_path, detail)
    if isinstance(cls, type) and issubclass(cls, ApiError):
        api_error: ApiError = cls.__new__(cls)
        ApiError.__init__(api_error, message)
        return api_error
    if isinstance(cls, type) and issubclass(cls, Exception):
        try:
            built: Exception = cls(message)
            return built
        except Exception:
            pass
    return RuntimeError(f"{qualname}: {message}")

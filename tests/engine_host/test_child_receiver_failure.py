"""A message the scheduler process cannot apply ends that process, so that the API process starts one afresh.

Before, the exception ended the receiver thread alone: the mirror stopped following the store, the scheduler waited
for changes that never came, and the API process's shutdown waited on a child that never said goodbye."""

from __future__ import annotations

import multiprocessing
from typing import Any

import pytest

from kss_sim.config import Settings
from kss_sim.engine_host import scheduler_process
from kss_sim.engine_host.channel import Channel
from kss_sim.engine_host.scheduler_process import SchedulerChild


class Ended(Exception):
    def __init__(self, code: int) -> None:
        self.code = code


def _receive(messages: list[tuple[Any, ...]], monkeypatch: pytest.MonkeyPatch) -> tuple[int, SchedulerChild]:
    ours, theirs = multiprocessing.Pipe()
    for message in messages:
        theirs.send(message)
    theirs.close()  # after the messages, the API process is gone

    def end(code: int) -> None:
        raise Ended(code)

    monkeypatch.setattr(scheduler_process.os, "_exit", end)
    child = SchedulerChild(Channel(ours), Settings(), None, 0)
    with pytest.raises(Ended) as ended:
        child._receive()
    return ended.value.code, child


def test_a_message_the_mirror_cannot_apply_ends_the_process_with_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    code, child = _receive([("changes", [(1, "ADDED", "Pod", b"{not json")], 1), ("synced",)], monkeypatch)
    assert code == 1
    assert not child._synced.is_set()  # nothing after the bad message was applied


def test_the_api_process_gone_ends_it_quietly(monkeypatch: pytest.MonkeyPatch) -> None:
    code, child = _receive([("synced",)], monkeypatch)
    assert code == 0
    assert child._synced.is_set()

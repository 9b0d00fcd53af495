"""The errors that cross the scheduler process's pipe keep their class where the receiver acts on it."""

from __future__ import annotations

from kss_sim.cluster.errors import Conflict
from kss_sim.engine_host.channel import decode_error, encode_error
from kss_sim.scheduler.kube_scheduler_configuration import ConfigError


def test_a_configuration_error_keeps_its_field() -> None:
    # The configuration endpoint answers 422 on the field named; a plain error there would be a 500.
    error = decode_error(encode_error(ConfigError("profiles[0].plugins.filter.enabled[0].name", "Invalid value: x")))
    assert isinstance(error, ConfigError)
    assert error.field == "profiles[0].plugins.filter.enabled[0].name"
    assert error.detail == "Invalid value: x"


def test_a_store_conflict_stays_a_conflict_and_an_unknown_class_a_runtime_error() -> None:
    conflict = Conflict("pods", "p0", "the object has been modified")
    assert isinstance(decode_error(encode_error(conflict)), Conflict)
    unknown = decode_error(("no.such.module", "Gone", "text"))
    assert isinstance(unknown, RuntimeError) and str(unknown) == "Gone: text"

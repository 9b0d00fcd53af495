"""What the controllers' tests share: a clock the test moves."""

from __future__ import annotations

import pytest

from tests.controllers.workloads import FakeClock


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()

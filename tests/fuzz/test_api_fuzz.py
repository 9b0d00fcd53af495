"""The API fuzzed within ``make test``'s budget (about 30 s: 300 examples): no 5xx, no stored object that fails the
type check, and a normal pod still schedules afterwards (issue #35). ``bench/fuzz.py`` runs longer, with new examples
each time.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytest.importorskip("hypothesis", reason="the fuzzing suite needs hypothesis (pip install -e '.[dev]')")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.harness import Request, fuzzer, requests

# Requests per run: derandomized, so make test sends the same ones each time (bench/fuzz.py draws new ones).
EXAMPLES = int(os.environ.get("KSS_FUZZ_EXAMPLES", "300"))


def test_fuzzed_requests_answer_no_5xx_store_nothing_undecodable_and_scheduling_goes_on(tmp_path: Path) -> None:
    with fuzzer(tmp_path) as fz:

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(st.lists(requests(), min_size=1, max_size=3))
        def run(batch: list[Request]) -> None:
            for request in batch:
                fz.check_request(request)

        run()
        assert fz.requests_sent >= EXAMPLES
        fz.check_after()

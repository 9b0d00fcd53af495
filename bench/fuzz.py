"""Fuzz a kss server's API for longer than make test does, with new examples each run (issue #35).

    PYTHONPATH=. .venv/bin/python bench/fuzz.py --examples 5000            # a fresh kss serve in a temporary folder
    PYTHONPATH=. .venv/bin/python bench/fuzz.py --url http://127.0.0.1:8000 # a server already running

The requests are those of ``tests/fuzz/harness.py`` (schema-driven: every kind's fields with values of the right type
at their edges and of the wrong types, over every verb). Unlike the test, a 5xx does not stop the run: each distinct
one is printed at the end with a request that caused it, then the stored objects are type-checked and a normal pod
must still schedule. Prints the answers by status code (499: the 500 kube-apiserver itself answers, an apply it
cannot type) and the requests per second; exits 1 when a check failed.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import hypothesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fuzz.harness import Fuzzer, Request, fuzzer, requests  # noqa: E402


def _signature(request: Request) -> str:
    """What tells two 5xx apart: the verb, the path without names, the content type."""
    parts = [p if not p.startswith("fz-") else "NAME" for p in request.path.split("?")[0].split("/")]
    return f"{request.method} {'/'.join(parts)} [{request.content_type}]"


def run(fz: Fuzzer, examples: int, seed: int | None) -> dict[str, str]:
    failures: dict[str, str] = {}

    @settings(max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(requests(), min_size=1, max_size=3))
    def fuzz(batch: list[Request]) -> None:
        for request in batch:
            status = fz.send(request)
            if status >= 500:
                failures.setdefault(f"{status} {_signature(request)}", request.describe())

    if seed is not None:
        fuzz = hypothesis.seed(seed)(fuzz)
    fuzz()
    return failures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=3000, help="Hypothesis examples (1-3 requests each)")
    parser.add_argument("--url", help="fuzz this server instead of starting one")
    parser.add_argument("--seed", type=int, help="Hypothesis' seed, to repeat a run")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="kss-fuzz-") as tmp, fuzzer(Path(tmp), args.url) as fz:
        started = time.perf_counter()
        failures = run(fz, args.examples, args.seed)
        took = time.perf_counter() - started
        print(f"{fz.requests_sent} requests in {took:.1f}s ({fz.requests_sent / took:.0f}/s)")
        print("answers: " + ", ".join(f"{code}: {n}" for code, n in sorted(fz.by_status.items())))
        for signature, example in sorted(failures.items()):
            print(f"FAIL {signature}\n    e.g. {example}")
        ok = not failures
        bad = fz.stored_objects_that_fail_the_type_check()
        for line in bad:
            print(f"FAIL stored: {line}")
        ok = ok and not bad
        try:
            fz.check_after()
            print("a normal pod schedules after the run: yes")
        except AssertionError as exc:
            print(f"FAIL {exc}")
            ok = False
        if not ok and args.url is None:
            log = next(Path(tmp).glob("kss-*.log"), None)
            if log is not None:
                tracebacks = [line for line in log.read_text().splitlines() if "Error" in line][-40:]
                print("server log (errors):\n" + "\n".join(tracebacks))
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""Headless Chromium for the browser tests: Debian's binary driven by Playwright, one page per test, screenshots."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
]
TIMEOUT = 15_000  # ms
MARKS = [
    pytest.mark.browser,
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium: make browser-deps"),
]


@contextmanager
def launched() -> Iterator[Any]:
    """A Chromium browser for a module's tests."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS)
        yield b
        b.close()


@contextmanager
def fresh_page(browser: Any) -> Iterator[Any]:
    """A 1440x900 page of its own; a JavaScript error on it fails the test."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    pg = context.new_page()
    pg.set_default_timeout(TIMEOUT)
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    yield pg
    context.close()
    assert errors == [], errors


def shot(page: Any, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)

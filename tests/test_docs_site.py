"""The docs site's Screenshots page (tools/docs_site.py): each screenshot it shows is one a browser test saves, and is
committed, so that ``make docs`` builds on a fresh clone without Chromium or a test run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mkdocs.exceptions import PluginError

from tools import docs_site

ROOT = Path(__file__).resolve().parents[1]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def _names_the_browser_tests_save() -> set[str]:
    text = "\n".join(p.read_text() for p in (ROOT / "tests" / "web").glob("*.py"))
    return set(re.findall(r"""\bshot\(\s*page,\s*["']([\w.-]+)["']""", text))


def test_every_screenshot_shown_is_one_a_browser_test_saves() -> None:
    saved = _names_the_browser_tests_save()
    assert "pod-columns-filter-1400" in saved  # the pattern still finds the tests' calls
    assert [name for name, _ in docs_site.SCREENSHOTS if name not in saved] == []


def test_every_screenshot_shown_is_committed_and_nothing_else() -> None:
    committed = sorted(p.name for p in docs_site.DOCS_SHOTS.glob("*"))
    assert committed == sorted(f"{name}.png" for name, _ in docs_site.SCREENSHOTS)
    for name in committed:
        assert (docs_site.DOCS_SHOTS / name).read_bytes()[:8] == PNG_SIGNATURE, name


def test_the_page_shows_each_under_its_caption() -> None:
    page = docs_site.screenshots_page()
    for name, caption in docs_site.SCREENSHOTS:
        assert f"{caption}\n\n[![{name}](screenshots/{name}.png)](screenshots/{name}.png)" in page


def test_copying_takes_the_listed_screenshots_and_names_the_missing(tmp_path: Path) -> None:
    source, target = tmp_path / "shots", tmp_path / "docs"
    source.mkdir()
    target.mkdir()
    (target / "old.png").write_bytes(PNG_SIGNATURE)
    assert docs_site.copy_screenshots(source, target) == [name for name, _ in docs_site.SCREENSHOTS]
    for name, _ in docs_site.SCREENSHOTS:
        (source / f"{name}.png").write_bytes(PNG_SIGNATURE + name.encode())
    (source / "unlisted.png").write_bytes(PNG_SIGNATURE)
    assert docs_site.copy_screenshots(source, target) == []
    assert sorted(p.name for p in target.iterdir()) == sorted(f"{n}.png" for n, _ in docs_site.SCREENSHOTS)


def test_a_missing_screenshot_fails_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docs_site, "DOCS_SHOTS", tmp_path)
    with pytest.raises(PluginError, match=r"docs/screenshots/ lacks cluster, .*\(make screenshots\)"):
        docs_site.screenshots_page()

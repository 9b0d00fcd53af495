"""The docs site's Screenshots page (tools/docs_site.py): each screenshot it shows is one a browser test saves, is
committed, so that ``make docs`` builds on a fresh clone without Chromium or a test run, small, and taken since the
sources that draw it last changed."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from mkdocs.exceptions import PluginError

from tools import docs_site

ROOT = Path(__file__).resolve().parents[1]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# Full-page PNGs of the pages at 1024-1440 px measured 90-580 kB; twice that is a screenshot grown by accident.
MAX_SCREENSHOT_BYTES = 1_200_000


def _names_the_browser_tests_save() -> set[str]:
    text = "\n".join(p.read_text() for p in (ROOT / "tests" / "web").glob("*.py"))
    return set(re.findall(r"""\bshot\(\s*page,\s*["']([\w.-]+)["']""", text))


def test_every_screenshot_shown_is_one_a_browser_test_saves() -> None:
    saved = _names_the_browser_tests_save()
    assert "pod-columns-filter-1400" in saved  # the pattern still finds the tests' calls
    assert [name for name, _ in docs_site.SCREENSHOTS if name not in saved] == []


def test_every_screenshot_shown_is_committed_small_and_nothing_else() -> None:
    committed = sorted(p.name for p in docs_site.DOCS_SHOTS.glob("*"))
    assert committed == sorted([f"{name}.png" for name, _ in docs_site.SCREENSHOTS] + [docs_site.SOURCES_FILE])
    for name, _ in docs_site.SCREENSHOTS:
        png = docs_site.DOCS_SHOTS / f"{name}.png"
        assert png.read_bytes()[:8] == PNG_SIGNATURE, name
        assert png.stat().st_size <= MAX_SCREENSHOT_BYTES, name


def test_every_screenshot_shown_was_taken_since_its_sources_last_changed() -> None:
    assert docs_site.stale_screenshots() == [], (
        "docs/screenshots/ is older than the web UI or the browser tests that draw these: make screenshots"
    )


def _tree(root: Path) -> None:
    """A repository in miniature: the web UI, its templates and static files, the formatter, the harness and one
    browser test saving "page"."""
    for entry in docs_site.DRAWN_BY:
        path = root / entry if entry.endswith(".py") else root / entry / "ui.html"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# {entry}\n")
    (root / "tests" / "web" / "test_page.py").write_text('shot(page, "page")\n')


def test_a_screenshot_is_stale_once_what_draws_it_changes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _tree(tmp_path)
    monkeypatch.setattr(docs_site, "SCREENSHOTS", (("page", "A page."),))
    shots = tmp_path / "shots"
    shots.mkdir()
    assert docs_site.taken_by("page", tmp_path) == tmp_path / "tests" / "web" / "test_page.py"
    assert docs_site.stale_screenshots(shots, tmp_path) == ["page"]  # no digest recorded yet
    (shots / docs_site.SOURCES_FILE).write_text(json.dumps({"page": docs_site.sources_digest("page", tmp_path)}))
    assert docs_site.stale_screenshots(shots, tmp_path) == []
    for changed in (
        "kss_sim/web/ui.html",
        "templates/ui.html",
        "static/ui.html",
        "kss_sim/figures.py",
        "tests/web/test_page.py",
    ):
        before = docs_site.sources_digest("page", tmp_path)
        (tmp_path / changed).write_text((tmp_path / changed).read_text() + "# changed\n")
        assert docs_site.sources_digest("page", tmp_path) != before, changed
        assert docs_site.stale_screenshots(shots, tmp_path) == ["page"], changed
    # Another browser test's module is not among what draws "page".
    (tmp_path / "tests" / "web" / "test_other.py").write_text('shot(page, "other")\n')
    assert tmp_path / "tests" / "web" / "test_other.py" not in docs_site.drawn_by("page", tmp_path)


def test_the_page_shows_each_under_its_caption() -> None:
    page = docs_site.screenshots_page()
    for name, caption in docs_site.SCREENSHOTS:
        assert f"{caption}\n\n[![{name}](screenshots/{name}.png)](screenshots/{name}.png)" in page


def test_copying_takes_the_listed_screenshots_with_their_digests_and_names_the_missing(tmp_path: Path) -> None:
    source, target = tmp_path / "shots", tmp_path / "docs"
    source.mkdir()
    target.mkdir()
    (target / "old.png").write_bytes(PNG_SIGNATURE)
    names = [name for name, _ in docs_site.SCREENSHOTS]
    assert docs_site.copy_screenshots(source, target) == names
    for name in names:
        (source / f"{name}.png").write_bytes(PNG_SIGNATURE + name.encode())
    # A screenshot older than what draws it is one a skipped or failed test left behind: nothing is copied.
    os.utime(source / f"{names[0]}.png", (0, 0))
    assert docs_site.copy_screenshots(source, target) == names[:1]
    assert sorted(p.name for p in target.iterdir()) == ["old.png"]
    (source / f"{names[0]}.png").touch()
    (source / "unlisted.png").write_bytes(PNG_SIGNATURE)
    assert docs_site.copy_screenshots(source, target) == []
    assert sorted(p.name for p in target.iterdir()) == sorted([f"{n}.png" for n in names] + [docs_site.SOURCES_FILE])
    assert docs_site.stale_screenshots(target) == []


def test_a_missing_screenshot_fails_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(docs_site, "DOCS_SHOTS", tmp_path)
    with pytest.raises(PluginError, match=r"docs/screenshots/ lacks cluster, .*\(make screenshots\)"):
        docs_site.screenshots_page()

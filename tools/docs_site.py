"""MkDocs hook for the docs site (mkdocs.yml): the README is the site's home page, and the Screenshots page shows
what the browser tests see.

The README lives at the top of the repository, where GitHub and a fresh clone show it; the site takes it as
``index.md`` and rewrites its links into docs/ (``docs/plugins.md`` → ``plugins.md``) and to the rest of the tree
(links to other files of the tree stay as they are).

The screenshots are the browser tests' own (tests/web, ``shot(page, NAME)`` into test-artifacts/screenshots/), a few
of them committed in docs/screenshots/ so that the site builds on a fresh clone without Chromium or a test run;
``make screenshots`` runs the browser tests and copies them again (``python -m tools.docs_site --screenshots``).
With them, docs/screenshots/sources.json keeps a digest of the sources each was drawn from (the web UI, the figures
formatter, the test that takes it): tests/test_docs_site.py fails once a screenshot is older than its sources, since
pixels from two runs never match (times, ports) and so cannot tell a stale screenshot themselves.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
_LINK = re.compile(r"\]\((?!https?://|#|mailto:)([^)\s]+)\)")
TEST_SHOTS = ROOT / "test-artifacts" / "screenshots"
DOCS_SHOTS = ROOT / "docs" / "screenshots"
SOURCES_FILE = "sources.json"
# What draws every screenshot: the web UI (its views, templates, styles and scripts), the one figures formatter, the
# browser tests' harness. The test module that takes a screenshot is added per screenshot.
DRAWN_BY: tuple[str, ...] = (
    "kss_sim/web",
    "kss_sim/figures.py",
    "templates",
    "static",
    "tests/web/chromium.py",
    "tests/web/conftest.py",
)
_SHOT_CALL = r"""\bshot\(\s*page,\s*["']{name}["']"""
# The browser tests' screenshots the site shows (name as the test saves it, what it shows), in the site's order.
SCREENSHOTS: tuple[tuple[str, str], ...] = (
    ("cluster", "The Cluster page: each node's requests against its allocatable, and the cluster's totals."),
    (
        "pod-columns-filter-1400",
        "A pod's page at 1400 px: every filter plugin's and extender's column in view (a custom plugin marked), where "
        "kube-scheduler stopped on each node and why, the scores as raw → normalized × weight = final, the heat map.",
    ),
    (
        "pod-dra-why-pending",
        "A pod whose claim asks for a device no node has: why it is pending, led by the claim and its selector, and "
        "the nodes refused alike grouped.",
    ),
    ("dra-node-devices", "A node's DRA devices from its ResourceSlices, and which claim holds each."),
    ("group-waiting", "A gang waiting for its quorum: members held in Permit, the time left, why it did not fit."),
    (
        "pod-columns-scores-1024",
        "The same kind of pod at 1024 px: the score table and the heat map with every column in view, the user's "
        "plugin and the extender's among them; the per-plugin bars under the heat map when it leaves them no room.",
    ),
    ("run-page", "A replay recorded with `kss replay --record-db`: its figures, charts over virtual time, pods."),
    ("compare", "Two recorded runs compared: figures that differ, charts overlaid, pods placed differently."),
)


def _site_link(match: re.Match[str]) -> str:
    """A README link as the site needs it: docs/ pages by their name, the README itself as the home page; links
    to other files of the tree stay as they are (the site holds only docs/)."""
    target = match.group(1)
    path, hash_, anchor = target.partition("#")
    if path.startswith("docs/") and path.endswith(".md"):
        path = path.removeprefix("docs/")
    elif path == "README.md":
        path = "index.md"
    return f"]({path}{hash_}{anchor})"


def readme_page() -> str:
    """The README with links into docs/ made relative to the site."""
    return _LINK.sub(_site_link, (ROOT / "README.md").read_text())


def screenshots_page() -> str:
    """The Screenshots page: each of SCREENSHOTS under its caption. A screenshot not in docs/screenshots/ fails the
    build (MkDocs does not check a generated page's images)."""
    missing = [name for name, _ in SCREENSHOTS if not (DOCS_SHOTS / f"{name}.png").is_file()]
    if missing:
        raise PluginError(f"docs/screenshots/ lacks {', '.join(missing)} (make screenshots)")
    lines = [
        "# Screenshots",
        "",
        "What the browser tests (`tests/web`, headless Chromium) see, taken on their own small clusters; "
        "`make screenshots` takes them again.",
        "",
    ]
    for name, caption in SCREENSHOTS:
        lines += [caption, "", f"[![{name}](screenshots/{name}.png)](screenshots/{name}.png)", ""]
    return "\n".join(lines)


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, "index.md", content=readme_page()))
    files.append(File.generated(config, "screenshots.md", content=screenshots_page()))
    return files


def taken_by(name: str, root: Path = ROOT) -> Path:
    """The browser test module that saves screenshot ``name`` (``shot(page, NAME)``)."""
    call = re.compile(_SHOT_CALL.format(name=re.escape(name)))
    modules = [p for p in sorted((root / "tests" / "web").glob("*.py")) if call.search(p.read_text())]
    if len(modules) != 1:
        raise LookupError(f"screenshot {name!r} is saved by {len(modules)} browser test modules, not one")
    return modules[0]


def drawn_by(name: str, root: Path = ROOT) -> list[Path]:
    """The files that draw screenshot ``name``: DRAWN_BY and the test module that takes it."""
    files: set[Path] = {taken_by(name, root)}
    for entry in DRAWN_BY:
        path = root / entry
        if path.is_dir():
            files.update(p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts)
        else:
            files.add(path)
    return sorted(files)


def sources_digest(name: str, root: Path = ROOT) -> str:
    """A digest of the files that draw screenshot ``name`` (their paths and contents)."""
    digest = hashlib.sha256()
    for path in drawn_by(name, root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def stale_screenshots(target: Path = DOCS_SHOTS, root: Path = ROOT) -> list[str]:
    """The SCREENSHOTS whose sources changed since they were copied to ``target`` (or that have no digest there)."""
    recorded_file = target / SOURCES_FILE
    recorded = json.loads(recorded_file.read_text()) if recorded_file.is_file() else {}
    return [name for name, _ in SCREENSHOTS if recorded.get(name) != sources_digest(name, root)]


def _taken_since_its_sources(png: Path, name: str) -> bool:
    """Whether ``png`` exists and is newer than every file that draws it (a test skipped or failed leaves the last
    run's screenshot, which the digest copied with it would pass as new)."""
    return png.is_file() and png.stat().st_mtime >= max(p.stat().st_mtime for p in drawn_by(name))


def copy_screenshots(source: Path = TEST_SHOTS, target: Path = DOCS_SHOTS) -> list[str]:
    """Copy SCREENSHOTS from the browser tests' folder into docs/screenshots/ (and drop any other PNG there) with the
    digest of their sources; the names missing from ``source`` or older than their sources, if any (then nothing is
    copied)."""
    missing = [name for name, _ in SCREENSHOTS if not _taken_since_its_sources(source / f"{name}.png", name)]
    if missing:
        return missing
    target.mkdir(parents=True, exist_ok=True)
    wanted = {f"{name}.png" for name, _ in SCREENSHOTS}
    for stale in target.glob("*.png"):
        if stale.name not in wanted:
            stale.unlink()
    for name in sorted(wanted):
        shutil.copyfile(source / name, target / name)
    digests = {name: sources_digest(name) for name, _ in SCREENSHOTS}
    (target / SOURCES_FILE).write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    return []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.docs_site", description=__doc__.splitlines()[0])
    parser.add_argument("--screenshots", action="store_true", help="copy the browser tests' screenshots to docs/")
    parser.add_argument("--from", dest="source", type=Path, default=TEST_SHOTS, help="where the tests saved them")
    args = parser.parse_args(argv)
    if not args.screenshots:
        parser.print_usage(sys.stderr)
        return 2
    missing = copy_screenshots(args.source)
    if missing:
        print(
            f"docs_site: not in {args.source} or older than their sources (run the browser tests first): "
            + ", ".join(missing),
            file=sys.stderr,
        )
        return 1
    print(f"docs_site: {len(SCREENSHOTS)} screenshots copied to {DOCS_SHOTS.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())

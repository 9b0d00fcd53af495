"""MkDocs hook for the docs site (mkdocs.yml): the README is the site's home page, and the Screenshots page shows
what the browser tests see.

The README lives at the top of the repository, where GitHub and a fresh clone show it; the site takes it as
``index.md`` and rewrites its links into docs/ (``docs/plugins.md`` → ``plugins.md``) and to the rest of the tree
(links to other files of the tree stay as they are).

The screenshots are the browser tests' own (tests/web, ``shot(page, NAME)`` into test-artifacts/screenshots/), a few
of them committed in docs/screenshots/ so that the site builds on a fresh clone without Chromium or a test run;
``make screenshots`` runs the browser tests and copies them again (``python -m tools.docs_site --screenshots``).
"""

from __future__ import annotations

import argparse
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


def copy_screenshots(source: Path = TEST_SHOTS, target: Path = DOCS_SHOTS) -> list[str]:
    """Copy SCREENSHOTS from the browser tests' folder into docs/screenshots/ (and drop any other PNG there); the
    names missing from ``source``."""
    missing = [name for name, _ in SCREENSHOTS if not (source / f"{name}.png").is_file()]
    if missing:
        return missing
    target.mkdir(parents=True, exist_ok=True)
    wanted = {f"{name}.png" for name, _ in SCREENSHOTS}
    for stale in target.glob("*.png"):
        if stale.name not in wanted:
            stale.unlink()
    for name in sorted(wanted):
        shutil.copyfile(source / name, target / name)
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
        print(f"docs_site: not in {args.source} (run the browser tests first): {', '.join(missing)}", file=sys.stderr)
        return 1
    print(f"docs_site: {len(SCREENSHOTS)} screenshots copied to {DOCS_SHOTS.relative_to(ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())

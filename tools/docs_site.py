"""MkDocs hook for the docs site (mkdocs.yml): the README is the site's home page.

The README lives at the top of the repository, where GitHub and a fresh clone show it; the site takes it as
``index.md`` and rewrites its links into docs/ (``docs/plugins.md`` → ``plugins.md``) and to the rest of the tree
(links to other files of the tree stay as they are).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
_LINK = re.compile(r"\]\((?!https?://|#|mailto:)([^)\s]+)\)")


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


def on_files(files: Files, config: Any) -> Files:
    files.append(File.generated(config, "index.md", content=readme_page()))
    return files

"""Where the files kss ships beside its code are: templates/, static/ and migrations/ (docs/architecture.md, Packaging).

In a checkout the three folders sit at the top of the repository, beside the package; an installed wheel carries
them inside the package (setup.py copies them there at build time), with the same folders below. An editable
install imports the checkout's package, so it finds them as a checkout does. Every lookup of a shipped file starts
from here, so nothing depends on how deep a module sits or on the working directory.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent


def _resource_root() -> Path:
    """The folder holding templates/, static/ and migrations/: the package itself once installed, else its parent."""
    if (PACKAGE_DIR / "templates").is_dir():
        return PACKAGE_DIR
    return PACKAGE_DIR.parent


RESOURCE_ROOT = _resource_root()
TEMPLATES_DIR = RESOURCE_ROOT / "templates"  # Jinja templates: the web UI's, the reports', the editor's starters
STATIC_DIR = RESOURCE_ROOT / "static"  # served under /static: css, js, pinned vendor files (htmx, uPlot)
MIGRATIONS_DIR = RESOURCE_ROOT / "migrations"  # Alembic's env.py, script.py.mako and versions/

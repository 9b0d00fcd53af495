"""Build step of our own: the wheel carries templates/, static/ and migrations/ inside the ``kss_sim`` package.

Everything else about the distribution is in pyproject.toml. The three folders stay at the top of the repository
(the source layout); ``kss_sim.package_data`` finds them there in a checkout or an editable install, and inside the
package once installed from a wheel (docs/architecture.md, Packaging).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SHIPPED_FOLDERS = ("templates", "static", "migrations")
PACKAGE = "kss_sim"  # the package whose kss_sim.package_data looks for them


class BuildPyWithPackageData(build_py):
    """``build_py``, then a copy of each shipped folder into the built package (bytecode caches left out)."""

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # an editable install reads the checkout's folders where they are
            return
        for folder in SHIPPED_FOLDERS:
            target = Path(self.build_lib, PACKAGE, folder)
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(ROOT / folder, target, ignore=shutil.ignore_patterns("__pycache__", "*.py[co]"))


setup(cmdclass={"build_py": BuildPyWithPackageData})

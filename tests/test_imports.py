"""Every module of the shipped packages imports: mypy runs with ignore_missing_imports, so a module path left
behind by a move (``from kss_sim.cluster.change_log import ...`` after the cluster's rooms) is not a type error,
and a module that no test happens to import would break only when a user reaches it."""

from __future__ import annotations

import importlib
import pkgutil

import pytest

PACKAGES = ("kss_sim", "syncer", "kss")


def _modules() -> list[str]:
    names: list[str] = []
    for root in PACKAGES:
        package = importlib.import_module(root)
        names += [info.name for info in pkgutil.walk_packages(package.__path__, f"{root}.")]
    return names


@pytest.mark.parametrize("root", PACKAGES)
def test_every_module_of_the_package_imports(root: str) -> None:
    failures = []
    for name in [n for n in _modules() if n.startswith(f"{root}.")]:
        try:
            importlib.import_module(name)
        except Exception as exc:  # every failure named at once, not the first alone
            failures.append(f"{name}: {type(exc).__name__}: {exc}")
    assert failures == []

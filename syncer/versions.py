"""The two ends' Kubernetes versions: a simulator at another minor version than the cluster it mirrors schedules
by another release's rules (gates, plugins, defaults), so ``kss sync`` and ``kss import`` compare them first."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from syncer.kube import Unavailable
from syncer.objects import Obj

# Asked when /version could not be read (the problem, how many times so far): True to ask again, False to give up.
Retry = Callable[[Unavailable, int], bool]


def minor_version(info: Obj) -> int | None:
    """The minor version /version answers (``"35"``; managed clusters say ``"35+"``); None when it names none."""
    found = re.match(r"\d+", str(info.get("minor") or ""))
    return int(found.group()) if found else None


def _shown(info: Obj) -> str:
    return str(info.get("gitVersion") or f"v{info.get('major', '?')}.{info.get('minor', '?')}")


@dataclass(frozen=True)
class VersionSkew:
    """The source and the simulator at different minor versions: what each runs, and the version to start the
    simulator at."""

    source: str
    simulator: str
    wanted: str

    def describe(self) -> str:
        return f"the source runs Kubernetes {self.source} and the simulator {self.simulator}"

    def fix(self) -> str:
        return (
            f"start the simulator with `kss serve --kube-version {self.wanted}` "
            "(or mirror anyway with --allow-version-skew)"
        )


def version_skew(source: Obj, simulator: Obj) -> VersionSkew | None:
    """The skew when the source and the simulator answer different minor versions in /version; None when they
    agree (or the source names no minor version to compare)."""
    wanted = minor_version(source)
    if wanted is None or wanted == minor_version(simulator):
        return None
    return VersionSkew(_shown(source), _shown(simulator), f"{source.get('major', '1')}.{wanted}")


def read_version(get: Callable[[], Obj], retry: Retry | None = None) -> Obj:
    """``get()`` (an end's /version), asked again while ``retry`` says so when the end is unreachable."""
    failures = 0
    while True:
        try:
            return get()
        except Unavailable as exc:
            failures += 1
            if retry is None or not retry(exc, failures):
                raise

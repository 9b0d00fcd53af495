"""Which of the kinds asked for both ends serve: optional kinds (a CRD, an alpha kind) are checked in discovery.

A source without the PodGroup CRD, or a simulator without the GenericWorkload gate, is not an error: the kind is
left out of the run, with one log line saying why.

The DRA kinds are mirrored in the newest resource.k8s.io version both ends serve (``DRA_VERSIONS``): a v1.33
cluster has no resource.k8s.io/v1, only v1beta1 and v1beta2 when its ``--runtime-config`` enables them, so its
objects are read and written in a beta version the simulator (at v1.33, enabled the same way) serves too; the
simulator converts them to what it stores.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import replace
from functools import partial

from syncer.kinds import CRD, Kind, custom_kinds
from syncer.kube import Page, SourceApi, TargetApi, Unavailable
from syncer.objects import Obj

log = logging.getLogger("kss.syncer")
# Called when a discovery request could not be answered (the problem, how many times so far): True to ask again
# (after waiting), False to give up and raise it.
Retry = Callable[[Unavailable, int], bool]


def _ask(question: Callable[[], bool], retry: Retry | None) -> bool:
    failures = 0
    while True:
        try:
            return question()
        except Unavailable as exc:
            failures += 1
            if retry is None or not retry(exc, failures):
                raise


# resource.k8s.io's versions, newest first: the DRA kinds are mirrored in the first one both ends serve.
DRA_GROUP = "resource.k8s.io"
DRA_VERSIONS = ("v1", "v1beta2", "v1beta1")


def _dra_version(source: SourceApi, target: TargetApi, kind: Kind, retry: Retry | None) -> Kind | None:
    """``kind`` (a DRA kind) in the newest resource.k8s.io version both ends serve, or None (logged)."""
    source_has: list[str] = []
    for version in DRA_VERSIONS:
        candidate = replace(kind, api_version=f"{DRA_GROUP}/{version}")
        if not _ask(partial(source.serves, candidate), retry):
            continue
        source_has.append(version)
        if _ask(partial(target.serves, candidate), retry):
            return candidate
    if not source_has:
        log.info("the source does not serve %s (%s): not mirroring them", kind.plural, DRA_GROUP)
    else:
        log.warning(
            "the simulator does not serve %s in %s (the source's): not mirroring them (start it with "
            "--runtime-config %s)",
            kind.plural,
            ", ".join(f"{DRA_GROUP}/{v}" for v in source_has),
            f"{DRA_GROUP}/{source_has[0]}=true",
        )
    return None


def available_kinds(
    source: SourceApi, target: TargetApi, kinds: tuple[Kind, ...], *, retry: Retry | None = None
) -> tuple[Kind, ...]:
    """``kinds`` without the optional ones the source or the simulator does not serve, in the same order (a DRA
    kind in the version both serve)."""
    out: list[Kind] = []
    for kind in kinds:
        if kind.api_version.startswith(f"{DRA_GROUP}/") and not kind.custom:
            chosen = _dra_version(source, target, kind, retry)
            if chosen is not None:
                out.append(chosen)
        elif not kind.optional:
            out.append(kind)
        elif not _ask(partial(source.serves, kind), retry):
            log.info("the source does not serve %s (%s): not mirroring them", kind.plural, kind.api_version)
        elif not _ask(partial(target.serves, kind), retry):
            log.warning(
                "the simulator does not serve %s (%s): not mirroring them%s",
                kind.plural,
                kind.api_version,
                _how_to_serve(kind),
            )
        else:
            out.append(kind)
    return tuple(out)


def _how_to_serve(kind: Kind) -> str:
    """How a simulator is started to serve a workload-scheduling kind: its gate and, as kube-apiserver, its group
    version in ``--runtime-config`` (alpha APIs and, from v1.24, new beta ones are off by default)."""
    group_version = kind.api_version
    if not group_version.startswith(("scheduling.k8s.io/v1alpha", "scheduling.k8s.io/v1beta")):
        return ""
    return f" (start it with --feature-gates=GenericWorkload=true --runtime-config={group_version}=true)"


def source_custom_kinds(source: SourceApi, *, page_size: int = 500, retry: Retry | None = None) -> tuple[Kind, ...]:
    """The kinds of the source's established CRDs (``syncer.kinds.custom_kinds``), listed once at the start."""
    crds: list[Obj] = []
    token: str | None = None
    while True:
        page = _list(source, token, page_size, retry)
        crds += page.items
        token = page.continue_token
        if not token:
            return custom_kinds(crds)


def _list(source: SourceApi, token: str | None, page_size: int, retry: Retry | None) -> Page:
    failures = 0
    while True:
        try:
            return source.list(CRD, None, label_selector=None, limit=page_size, continue_token=token)
        except Unavailable as exc:
            failures += 1
            if retry is None or not retry(exc, failures):
                raise

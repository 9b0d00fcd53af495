"""Semantic versions as github.com/blang/semver/v4 parses and orders them (Kubernetes' CEL semver library).

The error texts are blang's, since they surface verbatim in CEL evaluation errors and in the "parse semantic
version" error of a device's version attribute.
"""

from __future__ import annotations

import string
from dataclasses import dataclass

_NUMBERS = frozenset(string.digits)
_ALPHANUM = frozenset(string.ascii_letters + string.digits + "-")
_MAX_UINT64 = 2**64 - 1


class SemverError(ValueError):
    """Text that is not a semantic version; str() is blang's message."""


@dataclass(frozen=True, slots=True)
class PreReleasePart:
    """One dot-separated prerelease identifier: numeric ones order numerically and before alphanumeric ones."""

    number: int | None
    text: str

    def compare(self, other: PreReleasePart) -> int:
        if self.number is not None and other.number is not None:
            return (self.number > other.number) - (self.number < other.number)
        if self.number is not None:
            return -1
        if other.number is not None:
            return 1
        return (self.text > other.text) - (self.text < other.text)


@dataclass(frozen=True, slots=True)
class Semver:
    major: int
    minor: int
    patch: int
    pre: tuple[PreReleasePart, ...] = ()
    build: tuple[str, ...] = ()

    def compare(self, other: Semver) -> int:
        """-1, 0 or 1 as blang's Version.Compare (build metadata is ignored)."""
        mine, theirs = (self.major, self.minor, self.patch), (other.major, other.minor, other.patch)
        if mine != theirs:
            return 1 if mine > theirs else -1
        if not self.pre or not other.pre:
            return (not self.pre) - (not other.pre)
        for a, b in zip(self.pre, other.pre, strict=False):
            result = a.compare(b)
            if result:
                return result
        return (len(self.pre) > len(other.pre)) - (len(self.pre) < len(other.pre))

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}.{self.patch}"
        if self.pre:
            text += "-" + ".".join(p.text for p in self.pre)
        if self.build:
            text += "+" + ".".join(self.build)
        return text


def _only(text: str, allowed: frozenset[str]) -> bool:
    return all(c in allowed for c in text)


def _parse_uint(text: str) -> int:
    # Go's strconv.ParseUint(text, 10, 64) errors, as blang passes them through.
    if not text:
        raise SemverError(f'strconv.ParseUint: parsing "{text}": invalid syntax')
    value = int(text)
    if value > _MAX_UINT64:
        raise SemverError(f'strconv.ParseUint: parsing "{text}": value out of range')
    return value


def _number(text: str, what: str) -> int:
    if not _only(text, _NUMBERS):
        raise SemverError(f'Invalid character(s) found in {what.lower()} number "{text}"')
    if len(text) > 1 and text[0] == "0":
        raise SemverError(f'{what} number must not contain leading zeroes "{text}"')
    return _parse_uint(text)


def _pre_release(text: str) -> PreReleasePart:
    if not text:
        raise SemverError("Prerelease is empty")
    if _only(text, _NUMBERS):
        if len(text) > 1 and text[0] == "0":
            raise SemverError(f'Numeric PreRelease version must not contain leading zeroes "{text}"')
        return PreReleasePart(_parse_uint(text), text)
    if _only(text, _ALPHANUM):
        return PreReleasePart(None, text)
    raise SemverError(f'Invalid character(s) found in prerelease "{text}"')


def parse_semver(text: str) -> Semver:
    """blang's strict semver.Parse."""
    if not text:
        raise SemverError("Version string empty")
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise SemverError("No Major.Minor.Patch elements found")
    major = _number(parts[0], "Major")
    minor = _number(parts[1], "Minor")
    patch_text = parts[2]
    build: list[str] = []
    pre_texts: list[str] = []
    if "+" in patch_text:
        patch_text, build_text = patch_text.split("+", 1)
        build = build_text.split(".")
    if "-" in patch_text:
        patch_text, pre_text = patch_text.split("-", 1)
        pre_texts = pre_text.split(".")
    patch = _number(patch_text, "Patch")
    pre = tuple(_pre_release(p) for p in pre_texts)
    for item in build:
        if not item:
            raise SemverError("Build meta data is empty")
        if not _only(item, _ALPHANUM):
            raise SemverError(f'Invalid character(s) found in build meta data "{item}"')
    return Semver(major, minor, patch, pre, tuple(build))


def parse_semver_normalized(text: str) -> Semver:
    """The CEL library's relaxed form (``semver(s, true)``): a leading "v", leading zeroes and missing minor or
    patch numbers are accepted."""
    text = text.removeprefix("v")
    parts = text.split(".", 2)
    for i, part in enumerate(parts):
        if len(part) > 1:
            part = part.lstrip("0")
            if not part or part[0] not in _NUMBERS:
                part = "0" + part
            parts[i] = part
    if len(parts) < 3:
        if "+" in parts[-1] or "-" in parts[-1]:
            raise SemverError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return parse_semver(".".join(parts))

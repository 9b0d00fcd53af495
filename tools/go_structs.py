"""Read the Go structs of k8s.io/api (and apimachinery's meta/v1, apiextensions) from a vendored module tree.

kube-apiserver decodes a body with encoding/json into its release's Go structs, and two things about those structs
are in no OpenAPI document: each field's Go type as ``reflect`` names it in an ``UnmarshalTypeError``
(``v1.TaintEffect``, not ``string``), and its JSON tag's options (``omitempty``, ``omitzero``), which decide what a
``null`` sent for it is written back as. This module reads both from the Go sources of one release: the ``vendor/``
directory of a module built against it (its ``modules.txt`` says which release). Only the declarations k8s.io/api
writes are understood: ``type X struct {...}`` with one field per line and its tag, ``type X Y`` and ``type X = Y``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_API_MODULE = re.compile(r"^# k8s\.io/api v0\.(\d+)\.\d+", re.M)
_IMPORT = re.compile(r'^\s*(?:(\w+)\s+)?"([^"]+)"\s*$')
_STRUCT = re.compile(r"^type (\w+) struct \{\s*$")
_NAMED = re.compile(r"^type (\w+) (=\s*)?([^\s{]+)\s*(?://.*)?$")
_FIELD = re.compile(r"^\s*(?:(\w+)\s+)?(\S+)\s+`([^`]*)`")
_JSON_TAG = re.compile(r'json:"([^"]*)"')
# Go's predeclared types: named as they are.
_BUILTIN = frozenset(
    ("bool", "string", "byte", "rune", "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32",
     "uint64", "uintptr", "float32", "float64", "any", "error")
)  # fmt: skip


@dataclass(frozen=True)
class GoField:
    """One JSON field of a struct: its Go type as ``reflect.Type.String()`` prints it (a pointer's element type:
    the decoder fills the element), whether the declared type is a pointer, and its tag's options."""

    go_type: str
    pointer: bool
    omitempty: bool
    omitzero: bool
    # The declared type's kind after named types are resolved: "slice", "map", "struct" or "scalar".
    kind: str


@dataclass(frozen=True)
class _RawField:
    name: str  # the JSON name ("" for an inlined embedded struct)
    type_expr: str
    inline: bool
    omitempty: bool
    omitzero: bool


@dataclass
class _Package:
    name: str  # the package clause's name ("v1")
    imports: dict[str, str]  # alias -> import path, for every file's imports
    structs: dict[str, list[_RawField]]
    named: dict[str, str]  # a named non-struct type -> its underlying type expression


def api_minor(vendor: Path) -> int:
    """The minor release of the k8s.io/api the vendored tree holds (``modules.txt``)."""
    found = _API_MODULE.search((vendor / "modules.txt").read_text())
    if found is None:
        raise ValueError(f"{vendor}: no k8s.io/api in modules.txt")
    return int(found.group(1))


class GoSources:
    """The packages of one vendored tree, read on demand (``k8s.io/api/core/v1`` ...)."""

    def __init__(self, vendor: Path) -> None:
        self.vendor = vendor
        self._packages: dict[str, _Package | None] = {}

    def package(self, path: str) -> _Package | None:
        """The package at import ``path``; None when the tree does not vendor it."""
        if path not in self._packages:
            self._packages[path] = self._read(path)
        return self._packages[path]

    def _read(self, path: str) -> _Package | None:
        directory = self.vendor / path
        files = sorted(
            f for f in directory.glob("*.go") if not f.name.endswith("_test.go") and not f.name.startswith("zz_")
        )
        if not files:
            return None
        package = _Package(path.rpartition("/")[2], {}, {}, {})
        for file in files:
            _read_file(file.read_text(), package)
        return package

    def fields(self, path: str, struct: str) -> dict[str, GoField] | None:
        """The JSON fields of ``struct`` in package ``path`` (inlined embedded structs' fields included), or None
        when the tree has no such struct."""
        package = self.package(path)
        if package is None or struct not in package.structs:
            return None
        out: dict[str, GoField] = {}
        for raw in package.structs[struct]:
            if raw.inline:
                target = self._resolve_path(package, path, raw.type_expr.lstrip("*"))
                if target is not None:
                    out.update(self.fields(*target) or {})
                continue
            out[raw.name] = self._field(package, path, raw)
        return out

    def _resolve_path(self, package: _Package, path: str, expr: str) -> tuple[str, str] | None:
        """(package path, type name) of a possibly qualified type name."""
        if "." in expr:
            alias, _, name = expr.partition(".")
            target = package.imports.get(alias)
            return (target, name) if target is not None else None
        return path, expr

    def _field(self, package: _Package, path: str, raw: _RawField) -> GoField:
        expr = raw.type_expr
        pointer = expr.startswith("*")
        expr = expr.lstrip("*")
        return GoField(
            go_type=self.type_string(package, path, expr),
            pointer=pointer,
            omitempty=raw.omitempty,
            omitzero=raw.omitzero,
            kind=self._kind(package, path, expr),
        )

    def type_string(self, package: _Package, path: str, expr: str) -> str:
        """``reflect.Type.String()`` of a type expression written in ``package``."""
        if expr.startswith("*"):
            return "*" + self.type_string(package, path, expr[1:])
        if expr.startswith("[]"):
            return "[]" + self.type_string(package, path, expr[2:])
        if expr.startswith("map["):
            key, value = _split_map(expr)
            return f"map[{self.type_string(package, path, key)}]{self.type_string(package, path, value)}"
        if expr in _BUILTIN:
            return "uint8" if expr == "byte" else expr
        target = self._resolve_path(package, path, expr)
        if target is None:
            return expr
        target_path, name = target
        owner = self.package(target_path)
        if owner is not None:
            underlying = owner.named.get(name)
            if underlying is not None and underlying.startswith("="):  # an alias: the type it names
                return self.type_string(owner, target_path, underlying[1:])
        return f"{target_path.rpartition('/')[2]}.{name}"

    def _kind(self, package: _Package, path: str, expr: str) -> str:
        for _ in range(8):  # named types resolved to their underlying type (a few levels at most)
            if expr.startswith("[]"):
                return "slice"
            if expr.startswith("map["):
                return "map"
            if expr in _BUILTIN:
                return "scalar"
            target = self._resolve_path(package, path, expr)
            if target is None:
                return "struct"
            path, name = target
            owner = self.package(path)
            if owner is None:
                return "struct"
            if name in owner.structs:
                return "struct"
            underlying = owner.named.get(name)
            if underlying is None:
                return "struct"
            package, expr = owner, underlying.lstrip("=")
        return "scalar"


def _split_map(expr: str) -> tuple[str, str]:
    """``map[K]V`` -> (K, V), K's brackets balanced."""
    depth, index = 0, len("map[")
    while True:
        char = expr[index]
        if char == "[":
            depth += 1
        elif char == "]":
            if depth == 0:
                return expr[len("map[") : index], expr[index + 1 :]
            depth -= 1
        index += 1


def _read_file(text: str, package: _Package) -> None:
    lines = text.splitlines()
    index = 0
    in_imports = False
    while index < len(lines):
        line = lines[index]
        index += 1
        if line.startswith("package "):
            package.name = line.split()[1]
        elif line.startswith("import ("):
            in_imports = True
        elif in_imports:
            if line.startswith(")"):
                in_imports = False
            elif (found := _IMPORT.match(line)) is not None:
                alias, target = found.groups()
                package.imports[alias or target.rpartition("/")[2]] = target
        elif line.startswith("import "):
            found = _IMPORT.match(line[len("import ") :])
            if found is not None:
                alias, target = found.groups()
                package.imports[alias or target.rpartition("/")[2]] = target
        elif (found := _STRUCT.match(line)) is not None:
            fields: list[_RawField] = []
            while index < len(lines) and not lines[index].startswith("}"):
                raw = _raw_field(lines[index])
                if raw is not None:
                    fields.append(raw)
                index += 1
            package.structs[found.group(1)] = fields
        elif (found := _NAMED.match(line)) is not None and found.group(3) not in ("interface", "func"):
            package.named[found.group(1)] = ("=" if found.group(2) else "") + found.group(3)


def _raw_field(line: str) -> _RawField | None:
    stripped = line.strip()
    if not stripped or stripped.startswith("//"):
        return None
    found = _FIELD.match(line)
    if found is None:
        return None
    go_name, type_expr, tag = found.groups()
    json_tag = _JSON_TAG.search(tag)
    if json_tag is None:
        return None
    name, *options = json_tag.group(1).split(",")
    if name == "-":
        return None
    embedded = go_name is None
    inline = embedded and (name == "" or "inline" in options)
    return _RawField(name, type_expr, inline, "omitempty" in options, "omitzero" in options)

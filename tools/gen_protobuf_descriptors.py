"""Generate ``kss_sim/cluster/api/protobuf_messages.json``: the protobuf messages of the API kinds kss serves.

kube-apiserver's protobuf encoding is go-to-protobuf's output for k8s.io/api and k8s.io/apimachinery: one proto2
file per Go package (``generated.proto``) whose messages mirror the Go structs, field numbers from the structs'
``protobuf`` tags. The JSON form of the same objects follows the structs' ``json`` tags, which the proto files do
not carry (the JSON name, ``omitempty``, ``,inline``, pointer or not). This script reads both from a Go tree that
vendors those modules, and writes the facts kss's codec needs as compact JSON: per message, its fields' proto
name, number, label, type and JSON name and flags. kss builds its descriptors from that at run time
(``kss_sim/cluster/api/protobuf.py``); no upstream file is copied.

Usage (a git checkout, or a bare mirror, of a tree with ``vendor/k8s.io/{api,apimachinery}``)::

    python tools/gen_protobuf_descriptors.py --git-dir PATH/TO/REPO [--rev HEAD] [--prefix vendor/]

``protobuf_messages.json`` is openshift-kni/scheduler-plugins' ``master`` (v0.35.4, ``--prefix vendor/``) with
openshift/kubernetes-autoscaler's ``main`` merged in (v0.36.2, ``--newer-prefix cluster-autoscaler/vendor/``).

kss serves several Kubernetes versions with one codec, so a newer tree can be merged in (``--newer-git-dir`` and its
``--newer-rev``/``--newer-prefix``/``--newer-source``): its packages the first tree lacks are added (v1.36's
``api/scheduling/v1alpha2``, ``NEWER_ROOTS``), and every message gains the fields the newer release added. Kubernetes
never reuses a field number (a removed field's number stays reserved, as the pod's ``workloadRef``, 42, in v1.36),
so the union encodes each version's objects as its own kube-apiserver does; a field a version lacks never reaches
the codec (it is dropped as unknown first).
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
from pathlib import Path
from typing import Any

OUTPUT = Path(__file__).resolve().parent.parent / "kss_sim" / "cluster" / "api" / "protobuf_messages.json"

# The Go packages whose messages kss serves (their imports are followed), under k8s.io/.
ROOTS = (
    "api/core/v1",
    "api/apps/v1",
    "api/batch/v1",
    "api/policy/v1",
    "api/policy/v1beta1",
    "api/scheduling/v1",
    "api/scheduling/v1alpha1",
    "api/storage/v1",
    "api/coordination/v1",
    "api/resource/v1",
    "api/resource/v1beta2",
    "api/resource/v1beta1",
    "api/events/v1",
    "api/discovery/v1",
    "api/rbac/v1",
    "api/authentication/v1",
    "api/authorization/v1",
    "api/autoscaling/v1",
    "api/autoscaling/v2",
    "api/apidiscovery/v2",
    "api/apidiscovery/v2beta1",
    "apiextensions-apiserver/pkg/apis/apiextensions/v1",
    "apimachinery/pkg/apis/meta/v1",
)

# Packages only the newer tree has (``--newer-git-dir``), and the roots both trees have (v1.36 dropped v1alpha1).
NEWER_ROOTS = ("api/scheduling/v1alpha2",)
ROOTS_AT_NEWER = tuple(r for r in ROOTS if r != "api/scheduling/v1alpha1")

_PACKAGE = re.compile(r"^package\s+([\w.]+);", re.M)
_IMPORT = re.compile(r'^import\s+"k8s\.io/([\w/.]+)/generated\.proto";', re.M)
_MESSAGE = re.compile(r"^message\s+(\w+)\s*\{(.*?)^\}", re.M | re.S)
_FIELD = re.compile(r"^\s*(optional|repeated)\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*;", re.M)
_MAP_FIELD = re.compile(r"^\s*map<\s*([\w.]+)\s*,\s*([\w.]+)\s*>\s+(\w+)\s*=\s*(\d+)\s*;", re.M)
_STRUCT = re.compile(r"^type\s+(\w+)\s+struct\s*\{(.*?)^\}", re.M | re.S)
_SLICE_TYPE = re.compile(r"^type\s+(\w+)\s+\[\]\w+\s*$", re.M)
_GO_FIELD = re.compile(r"^\s*(?:(\w+)\s+)?(\S+)\s+`([^`]*)`", re.M)
_TAG = re.compile(r'(\w+):"([^"]*)"')
_SCALARS = {"string", "bytes", "bool", "int32", "int64", "uint32", "uint64", "double", "float", "fixed64", "sfixed64"}


class Tree:
    """Files of one revision of a git repository."""

    def __init__(self, git_dir: str, rev: str, prefix: str) -> None:
        self.git_dir, self.rev, self.prefix = git_dir, rev, prefix
        listing = self._git("ls-tree", "-r", "--name-only", rev, f"{prefix}k8s.io/")
        self.files = set(listing.splitlines())

    def _git(self, *args: str) -> str:
        return subprocess.run(
            ["git", "--git-dir", self.git_dir, *args], check=True, capture_output=True, text=True
        ).stdout

    def read(self, path: str) -> str:
        return self._git("show", f"{self.rev}:{path}")

    def go_files(self, package: str) -> list[str]:
        folder = f"{self.prefix}k8s.io/{package}/"
        return sorted(
            f
            for f in self.files
            if f.startswith(folder)
            and "/" not in f[len(folder) :]
            and f.endswith(".go")
            and not f.endswith(("_test.go", ".pb.go"))
            and "zz_generated" not in f
        )


def _resolve(type_name: str, package: str) -> str:
    if type_name in _SCALARS:
        return type_name
    return type_name.lstrip(".") if "." in type_name else f"{package}.{type_name}"


def _go_fields(tree: Tree, package: str) -> tuple[dict[str, dict[int, tuple[str, str]]], set[str]]:
    """Per Go struct, its proto-numbered fields' (JSON name, flags); and the named slice types."""
    structs: dict[str, dict[int, tuple[str, str]]] = {}
    slices: set[str] = set()
    for path in tree.go_files(package):
        source = tree.read(path)
        slices.update(_SLICE_TYPE.findall(source))
        for name, body in _STRUCT.findall(source):
            fields: dict[int, tuple[str, str]] = {}
            for _field_name, go_type, tag in _GO_FIELD.findall(body):
                tags = dict(_TAG.findall(tag))
                parts = tags.get("protobuf", "").split(",")
                if len(parts) < 2:  # not in the proto message (``protobuf:"-"``, TypeMeta)
                    continue
                number = int(parts[1])
                json_name, *options = (tags.get("json") or "").split(",")
                flags = ("o" if "omitempty" in options else "") + ("p" if go_type.startswith("*") else "")
                flags += "i" if "inline" in options else ""
                fields[number] = (json_name, flags)
            structs[name] = fields
    return structs, slices


def generate(tree: Tree, roots: tuple[str, ...] = ROOTS) -> dict[str, object]:
    """Every message of ``roots``' packages and their imports: ``{"files": [{package, deps, messages}]}``."""
    todo, seen = list(roots), set(roots)
    files: list[dict[str, Any]] = []
    while todo:
        package_path = todo.pop(0)
        proto = tree.read(f"{tree.prefix}k8s.io/{package_path}/generated.proto")
        package = _PACKAGE.findall(proto)[0]
        deps = _IMPORT.findall(proto)
        for dep in deps:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
        structs, slices = _go_fields(tree, package_path)
        messages: dict[str, object] = {}
        for name, body in _MESSAGE.findall(proto):
            go = structs.get(name, {})
            fields: list[list[object]] = []
            for label, type_name, field_name, number in _FIELD.findall(body):
                json_name, flags = go.get(int(number), (field_name, ""))
                fields.append(
                    [field_name, int(number), label[0], _resolve(type_name, package), json_name or field_name, flags]
                )
            for key, value, field_name, number in _MAP_FIELD.findall(body):
                json_name, flags = go.get(int(number), (field_name, ""))
                map_type = f"map:{_resolve(key, package)}:{_resolve(value, package)}"
                fields.append([field_name, int(number), "r", map_type, json_name or field_name, flags])
            fields.sort(key=lambda f: int(str(f[1])))
            # A named Go slice (``type Verbs []string``) is a message with one repeated ``items``; its JSON is a list.
            messages[name] = {"fields": fields, **({"list": True} if name in slices else {})}
        files.append({"package": package, "path": package_path, "deps": deps, "messages": messages})
    by_path: dict[str, dict[str, Any]] = {str(f["path"]): f for f in files}
    ordered: list[dict[str, Any]] = []
    placed: set[str] = set()

    def place(path: str) -> None:  # dependencies first, as a descriptor pool takes them
        if path in placed:
            return
        placed.add(path)
        for dep in by_path[path]["deps"]:
            place(str(dep))
        ordered.append(by_path[path])

    for path in sorted(by_path):
        place(path)
    return {"files": ordered}


def merge_newer(older: dict[str, object], newer: dict[str, object]) -> dict[str, object]:
    """``older``'s packages with ``newer``'s added: whole packages it lacks, and in the packages both have, the
    messages and field numbers only ``newer`` has (an existing number keeps ``older``'s definition)."""
    old_files = older["files"]
    new_files = newer["files"]
    assert isinstance(old_files, list) and isinstance(new_files, list)
    by_path: dict[str, dict[str, Any]] = {str(f["path"]): f for f in old_files}
    merged = [dict(f) for f in old_files]
    index = {str(f["path"]): i for i, f in enumerate(merged)}
    for new in new_files:
        path = str(new["path"])
        if path not in by_path:
            merged.append(new)  # after its dependencies: every package it imports is older's too, or placed first
            continue
        messages = dict(merged[index[path]]["messages"])
        for name, message in new["messages"].items():
            if name not in messages:
                messages[name] = message
                continue
            fields = list(messages[name]["fields"])
            numbers = {int(f[1]) for f in fields}
            fields += [f for f in message["fields"] if int(f[1]) not in numbers]
            fields.sort(key=lambda f: int(str(f[1])))
            messages[name] = {**messages[name], "fields": fields}
        merged[index[path]] = {**merged[index[path]], "messages": dict(sorted(messages.items()))}
    return {"files": merged}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--git-dir", required=True)
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--prefix", default="vendor/", help="where k8s.io/ lies in the tree")
    parser.add_argument("--source", default="", help="what the tree is, recorded in the output")
    parser.add_argument("--newer-git-dir", help="a newer release's tree whose additions are merged in")
    parser.add_argument("--newer-rev", default="HEAD")
    parser.add_argument("--newer-prefix", default="vendor/")
    parser.add_argument("--newer-source", default="")
    args = parser.parse_args()
    generated = generate(Tree(args.git_dir, args.rev, args.prefix))
    source = args.source
    if args.newer_git_dir:
        newer = generate(Tree(args.newer_git_dir, args.newer_rev, args.newer_prefix), ROOTS_AT_NEWER + NEWER_ROOTS)
        generated = merge_newer(generated, newer)
        source = f"{source}; with the additions of {args.newer_source}"
    data = {"source": source, **generated}
    files = data["files"]
    assert isinstance(files, list)
    # One file per line: small diffs when a version changes, and still one JSON document.
    lines = [json.dumps(f, separators=(",", ":")) for f in files]
    OUTPUT.write_text(
        '{"source":' + json.dumps(source) + ',"files":[\n' + ",\n".join(lines) + "\n]}\n", encoding="utf-8"
    )
    print(f"wrote {OUTPUT} ({sum(len(f['messages']) for f in files)} messages in {len(files)} packages)")


if __name__ == "__main__":
    main()

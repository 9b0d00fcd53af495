"""Two memory censuses of the scheduler's process side by side (``bench/soak.py --census-scheduler DIR``, issue #35).

Usage: ``.venv/bin/python bench/census_diff.py DIR [--first 5] [--last N]``: the census of minute ``--first`` (the
file ``scheduler-census-005.txt``) against the last one (or ``--last``): the kernel's RSS and anonymous memory,
glibc's heap (in use, free, mmapped blocks), pymalloc's arenas and the bytes in its blocks in use, and the size
classes and object types that changed most. Growth in arenas with the blocks in use flat is freed memory pymalloc
keeps (arenas pinned by a few live blocks); growth in blocks in use is objects held.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

MB = 1024 * 1024


def sections(text: str) -> dict[str, list[str]]:
    """The census's sections by heading (``## name``), their lines."""
    found: dict[str, list[str]] = {}
    current: list[str] = []
    for line in text.splitlines():
        if line.startswith("## "):
            current = found.setdefault(line[3:].split(" (")[0].split(" ")[0], [])
        else:
            current.append(line)
    return found


def pairs(lines: list[str]) -> dict[str, int]:
    """``name value`` lines as a mapping (smaps' ``Name:  123 kB`` too, in kB)."""
    out: dict[str, int] = {}
    for line in lines:
        parts = line.replace(":", " ").split()
        if len(parts) >= 2 and parts[1].isdigit():
            out[parts[0]] = int(parts[1])
    return out


def pymalloc(lines: list[str]) -> tuple[dict[int, tuple[int, int, int]], dict[str, int]]:
    """Size classes (size: pools, blocks in use, blocks free) and the totals (``# name = value`` lines)."""
    classes: dict[int, tuple[int, int, int]] = {}
    totals: dict[str, int] = {}
    for line in lines:
        row = line.split()
        if len(row) == 5 and all(cell.isdigit() for cell in row):
            classes[int(row[1])] = (int(row[2]), int(row[3]), int(row[4]))
        match = re.match(r"#\s*(.+?)\s*=\s*([\d,]+)$", line.strip())
        if match:
            totals[match.group(1)] = int(match.group(2).replace(",", ""))
    return classes, totals


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("directory")
    p.add_argument("--first", type=int, default=5)
    p.add_argument("--last", type=int, default=None)
    p.add_argument("--top", type=int, default=15)
    p.add_argument("--process", default="scheduler", help="whose censuses: scheduler or api")
    args = p.parse_args()
    files = sorted(Path(args.directory).glob(f"{args.process}-census-*.txt"))
    by_number = {int(f.stem.rsplit("-", 1)[1]): f for f in files}
    last = args.last if args.last is not None else max(by_number)
    a, b = (sections(by_number[n].read_text()) for n in (args.first, last))
    print(f"census {args.first} -> {last}")
    for name, unit in (("smaps_rollup", 1024), ("glibc", 1), ("python", 0), ("frozen", 0), ("counts", 0)):
        left, right = pairs(a.get(name, [])), pairs(b.get(name, []))
        for key in left:
            if key in right and left[key] != right[key]:
                if unit:
                    scale = unit / MB
                    print(
                        f"  {name:13} {key:16} {left[key] * scale:9.1f} -> {right[key] * scale:9.1f} MB "
                        f"({(right[key] - left[key]) * scale:+.1f})"
                    )
                else:
                    print(f"  {name:13} {key:16} {left[key]:11,} -> {right[key]:11,} ({right[key] - left[key]:+,})")
    classes_a, totals_a = pymalloc(a.get("pymalloc", []))
    classes_b, totals_b = pymalloc(b.get("pymalloc", []))
    for key in (
        "arenas allocated current",
        "arenas highwater mark",
        "bytes in allocated blocks",
        "bytes in available blocks",
    ):
        if key in totals_a and key in totals_b:
            va, vb = totals_a[key], totals_b[key]
            scale = 1.0 if key.startswith("arenas") else 1 / MB
            print(f"  pymalloc      {key:28} {va * scale:10.1f} -> {vb * scale:10.1f} ({(vb - va) * scale:+.1f})")
    print("  size classes (pools, blocks in use, blocks free), largest change in pools first:")
    changed = sorted(classes_b, key=lambda s: -abs(classes_b[s][0] - classes_a.get(s, (0, 0, 0))[0]))
    for size in changed[: args.top]:
        print(f"    {size:4} B  {classes_a.get(size)} -> {classes_b[size]}")
    types_a, types_b = pairs(a.get("objects", [])), pairs(b.get("objects", []))
    print("  object types, largest change first:")
    for name in sorted(set(types_a) | set(types_b), key=lambda t: -abs(types_b.get(t, 0) - types_a.get(t, 0)))[
        : args.top
    ]:
        print(f"    {name:32} {types_a.get(name, 0):9,} -> {types_b.get(name, 0):9,}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

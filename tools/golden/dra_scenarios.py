"""Generate the `dra` golden family: tests/golden/dra/<name>.scenario.json.

    .venv/bin/python -m tools.golden.dra_scenarios            # (re)write the scenario files
    .venv/bin/python -m tools.golden.dra_scenarios --check    # fail if a file differs from what would be written

The output is deterministic (every scenario seeds its own random.Random from crc32 of its name). The oracle,
outside the repo, runs these files through kube-scheduler v1.35.4 and writes the matching *.expected.json.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tools.golden import dra_topics_claims, dra_topics_gates, dra_topics_requests
from tools.golden.dra_cluster import Scenario

OUT_DIR = Path(__file__).resolve().parents[2] / "tests" / "golden" / "dra"
TOPICS = [*dra_topics_requests.TOPICS, *dra_topics_claims.TOPICS, *dra_topics_gates.TOPICS]
# Selectors written to fail at runtime are still valid CEL; none is meant to fail compiling, except that
# device.allowMultipleAllocations is only declared while DRAConsumableCapacity is on.
COMPILE_FAILS_WITHOUT_CONSUMABLE = "device.allowMultipleAllocations"


def scenarios() -> Iterator[Scenario]:
    for topic in TOPICS:
        yield from topic()


def render(scenario: Scenario) -> str:
    return json.dumps(scenario.to_json(), indent=1) + "\n"


def check_shape(doc: dict[str, Any]) -> list[str]:
    """What the brief asks of every scenario: 2-8 nodes, 1-10 pending pods, a description."""
    name = doc["meta"]["name"]
    problems = []
    if not 2 <= len(doc["nodes"]) <= 8:
        problems.append(f"{name}: {len(doc['nodes'])} nodes")
    if not 1 <= len(doc["pending"]) <= 10:
        problems.append(f"{name}: {len(doc['pending'])} pending pods")
    if not doc["meta"]["description"]:
        problems.append(f"{name}: no description")
    claims = {(c["metadata"]["namespace"], c["metadata"]["name"]) for c in doc["resourceClaims"]}
    # Only the scenarios about missing claims may name one.
    about_missing = "not exist" in doc["meta"]["description"] or "not found" in doc["meta"]["description"]
    for pod in [*doc["pods"], *doc["pending"]]:
        for ref in pod["spec"].get("resourceClaims", []):
            missing = (pod["metadata"]["namespace"], ref.get("resourceClaimName")) not in claims
            if "resourceClaimName" in ref and missing and not about_missing:
                problems.append(f"{name}: {pod['metadata']['name']} names a missing claim")
    return problems


def expressions(doc: dict[str, Any]) -> Iterator[str]:
    def walk(node: Any) -> Iterator[str]:
        if isinstance(node, dict):
            if set(node) == {"expression"}:
                yield node["expression"]
            for value in node.values():
                yield from walk(value)
        elif isinstance(node, list):
            for value in node:
                yield from walk(value)

    yield from walk(doc["deviceClasses"])
    yield from walk(doc["resourceClaims"])
    yield from walk(doc.get("resourceClaimTemplates", []))


def compile_all(docs: list[dict[str, Any]]) -> list[str]:
    """Compile every selector with the project's CEL module, when it is there."""
    try:
        cel = importlib.import_module("kss_sim.kube.dra.cel")
    except ImportError:
        print("kss_sim.kube.dra.cel not importable: selectors not compiled", file=sys.stderr)
        return []
    problems = []
    for doc in docs:
        consumable = doc.get("featureGates", {}).get("DRAConsumableCapacity", False)
        for expression in sorted(set(expressions(doc))):
            try:
                cel.compile_selector(expression, consumable_capacity=consumable)
            except Exception as error:
                if COMPILE_FAILS_WITHOUT_CONSUMABLE in expression and not consumable:
                    continue
                problems.append(f"{doc['meta']['name']}: {expression!r}: {error}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out-dir", type=Path, default=OUT_DIR)
    parser.add_argument("--check", action="store_true", help="compare with the files on disk, write nothing")
    args = parser.parse_args(argv)

    rendered = {s.name: render(s) for s in scenarios()}
    docs = [json.loads(text) for text in rendered.values()]
    # A selector our CEL module cannot compile is its gap or ours: shown, not fatal (the oracle is the judge).
    for problem in compile_all(docs):
        print(f"warning: {problem}", file=sys.stderr)
    problems = [p for doc in docs for p in check_shape(doc)]
    for problem in problems:
        print(problem, file=sys.stderr)
    if problems:
        return 1

    out_dir: Path = args.out_dir
    stale = []
    for name, text in rendered.items():
        path = out_dir / f"{name}.scenario.json"
        if args.check:
            if not path.exists() or path.read_text() != text:
                stale.append(path.name)
        else:
            out_dir.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    existing = {p.name for p in out_dir.glob("*.scenario.json")} if out_dir.exists() else set()
    extra = sorted(existing - {f"{n}.scenario.json" for n in rendered})
    for name in extra:
        print(f"not generated any more: {name}", file=sys.stderr)
    if args.check and (stale or extra):
        print(f"{len(stale)} scenario files differ from the generator", file=sys.stderr)
        return 1
    print(f"{len(rendered)} scenarios {'checked' if args.check else 'written'} in {out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

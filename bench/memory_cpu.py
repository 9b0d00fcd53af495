"""CPU per write of the store's memory savings, old and new code alternating in one process (issue #20, memory).

Usage: ``.venv/bin/python bench/memory_cpu.py --baseline /work/base-memory [--pods 1500] [--rounds 3]``.
Writes each trace pod's life through an in-memory ``ClusterStore`` as ``kss serve`` does (create as kubectl, the
scheduler's binding with its result annotations and its Event, the kubelet's status write) and prints the thread
CPU per pod of each write, min over rounds, for two variants that alternate round by round on fresh stores:

- *old*: the baseline tree's ``SharedValues`` and ``ChangeLog`` (its files loaded from ``--baseline``) and
  ``orjson.dumps``'s own buffer as the stored JSON;
- *new*: this tree (parts looked into, superseded versions packed, exact copies of the JSON).

Then one more round of each under ``tracemalloc`` (not timed): the memory Python allocated for what the store holds
at the end, allocators' slack included (orjson's output buffer).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import sys
import threading
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson

from kss_sim.kube.objects import Obj

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _serve import WORKLOADS

from kss_sim.cluster.storage import versions as versions_module
from kss_sim.cluster.storage import writes as writes_module
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.pod_status import running_status

STEPS = ("create", "bind", "event", "kubelet status")


def load_base(base: Path, relative: str, name: str) -> ModuleType:
    """A module of the baseline tree, loaded under ``name`` (its imports resolve to this tree's modules)."""
    spec = importlib.util.spec_from_file_location(name, base / relative)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def annotations_for(node: str) -> dict[str, str]:
    """Result annotations shaped like the scheduler's (the same text on most pods, the selected node apart)."""
    prefix = "kube-scheduler-simulator.sigs.k8s.io/"
    texts = {
        "prefilter-result-status": '{"NodeResourcesFit":"success","PodTopologySpread":"skip"}',
        "prefilter-result": "{}",
        "prescore-result": '{"NodeResourcesBalancedAllocation":"success","TaintToleration":"success"}',
        "reserve-result": '{"VolumeBinding":"success"}',
        "bind-result": '{"DefaultBinder":"success"}',
        "selected-node": node,
    }
    out = {prefix + k: v for k, v in texts.items()}
    out[prefix + "result-history"] = orjson.dumps([out]).decode()
    return out


def one_round(
    nodes: list[Obj], pods: list[Obj], variant: Callable[[ClusterStore], None], traced: bool = False
) -> tuple[dict[str, float], int]:
    """Thread CPU per pod of each step, and (``traced``) the memory Python has allocated at the end, in bytes."""
    store = ClusterStore(None)
    variant(store)
    for n in nodes:
        store.create("Node", n, manager="kubectl-create")
    gc.collect()
    if traced:
        tracemalloc.start()
    cpu = dict.fromkeys(STEPS, 0.0)
    clock = time.thread_time
    for i, pod in enumerate(pods):
        ns = pod["metadata"].get("namespace") or "default"
        name = pod["metadata"]["name"]
        node = nodes[i % len(nodes)]["metadata"]["name"]
        t0 = clock()
        store.create("Pod", orjson.loads(orjson.dumps(pod)), ns, manager="kubectl-create", copy=False)
        t1 = clock()
        bound = store.bind_pod(ns, name, node, annotations=annotations_for(node), copy=False)
        t2 = clock()
        store.create_event(bound, "Scheduled", f"Successfully assigned {ns}/{name} to {node}")
        t3 = clock()
        status = running_status(
            bound,
            now=store._versions.timestamp(),
            host_ips=["172.17.0.1"],
            pod_ips=[f"10.{i // 65536}.{i // 256 % 256}.{i % 256}"],
        )
        store.merge_pod_status(
            ns, name, status, resource_version=str(bound["metadata"]["resourceVersion"]), manager="kss"
        )
        t4 = clock()
        for step, dt in zip(STEPS, (t1 - t0, t2 - t1, t3 - t2, t4 - t3), strict=True):
            cpu[step] += dt
    held = 0
    if traced:
        held = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
    return {k: v / len(pods) for k, v in cpu.items()}, held


def main() -> int:
    """Alternate the two variants and print the figures."""
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline", type=Path, required=True, help="a checkout of the tree to compare with")
    p.add_argument("--pods", type=int, default=1500)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    trace = WORKLOADS / "alibaba-gpu-trace"
    nodes = [d for d in yaml.load_all((trace / "nodes-1200.yaml").read_text(), Loader=loader) if d][:200]
    pods = [d for d in yaml.load_all((trace / "pods-1200.yaml").read_text(), Loader=loader) if d][: args.pods]
    base_stored = load_base(args.baseline, "app/cluster/stored.py", "base_stored")
    base_log = load_base(args.baseline, "app/cluster/change_log.py", "base_change_log")
    new_encode = versions_module.encode

    def use_encode(encode: Callable[[Any], bytes]) -> None:
        versions_module.encode = encode  # type: ignore[assignment]
        writes_module.encode = encode  # type: ignore[attr-defined, assignment]

    def old(store: ClusterStore) -> None:
        store._versions.shared = base_stored.SharedValues()
        # The committer publishes to the change log it was given: it takes the old one too.
        store._changes = store._committer._changes = base_log.ChangeLog(store._lock, store._changes.window)
        use_encode(orjson.dumps)

    def new(store: ClusterStore) -> None:
        use_encode(new_encode)

    best: dict[str, dict[str, float]] = {"old": {}, "new": {}}
    peaks: dict[str, int] = {}
    for r in range(args.rounds):
        for label, variant in (("old", old), ("new", new)) if r % 2 == 0 else (("new", new), ("old", old)):
            cpu, _ = one_round(nodes, pods, variant)
            for step, v in cpu.items():
                best[label][step] = min(best[label].get(step, v), v)
            print(f"round {r + 1} {label}: " + ", ".join(f"{k} {v * 1e6:.0f} us" for k, v in cpu.items()), flush=True)
    for label, variant in (("old", old), ("new", new)):
        peaks[label] = one_round(nodes, pods, variant, traced=True)[1]
    use_encode(new_encode)
    print(f"{len(pods)} pods on {len(nodes)} nodes, thread CPU per pod, min of {args.rounds} rounds:")
    print("| write | old | new |")
    print("| --- | --- | --- |")
    for step in STEPS:
        print(f"| {step} | {best['old'][step] * 1e6:.0f} us | {best['new'][step] * 1e6:.0f} us |")
    total_old, total_new = sum(best["old"].values()), sum(best["new"].values())
    print(f"| all four | {total_old * 1e6:.0f} us | {total_new * 1e6:.0f} us |")
    old_mb, new_mb = peaks["old"] / 1e6, peaks["new"] / 1e6
    print(f"allocated at the end (the store, {len(pods)} pods): old {old_mb:.1f} MB, new {new_mb:.1f} MB")
    return 0


if __name__ == "__main__":
    threading.current_thread().name = "bench"
    sys.exit(main())

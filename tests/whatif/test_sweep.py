"""``kss sweep``: the spec, one cell, and whole grids on real Dask clusters of worker processes."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from kss_sim.cli import main
from kss_sim.db import make_engine, make_session_factory, session_scope
from kss_sim.replay.workload import WorkloadError, parse_workload
from kss_sim.results.runs import RunsService
from kss_sim.whatif.sweep import FAILED, Cell, NodeShape, load_spec, parse_spec, run_cell
from tests.whatif.workloads import most_allocated, node, queue_behind, unknown_plugin, write

SPEC_CONFIGS = [
    {"name": "default"},
    {"name": "most", "file": "most.yaml"},
    {"name": "bogus", "inline": unknown_plugin()},
]


def grid(tmp_path: Path, **extra: Any) -> Path:
    write(tmp_path / "queue.yaml", queue_behind())
    write(tmp_path / "most.yaml", most_allocated())
    spec = {
        "configs": SPEC_CONFIGS,
        "workloads": [{"name": "queue", "file": "queue.yaml"}],
        "nodeShapes": [{"name": "own"}, {"name": "plus1", "node": node("extra"), "count": 1}],
        "seeds": [0, 1],
        "interval": "1m",
        **extra,
    }
    return write(tmp_path / "grid.yaml", spec)


def test_the_spec_is_a_grid_configs_outermost_seeds_innermost(tmp_path: Path) -> None:
    spec, workloads = load_spec(grid(tmp_path))
    cells = spec.cells()
    assert len(cells) == 3 * 1 * 2 * 2
    assert [c.id for c in cells[:4]] == [
        "default/queue/own/seed-0", "default/queue/own/seed-1",
        "default/queue/plus1/seed-0", "default/queue/plus1/seed-1",
    ]  # fmt: skip
    assert cells[4].config == most_allocated()  # read from the file next to the spec
    assert cells[0].config is None and cells[0].interval == 60.0
    assert list(workloads) == ["queue"] and len(workloads["queue"].events) == 3


def test_every_spec_problem_is_reported_at_once(tmp_path: Path) -> None:
    doc = {
        "configs": [{"name": "a"}, {"name": "a"}, {"name": "bad name"}, {"name": "f", "file": "missing.yaml"}],
        "workloads": [{"name": "w"}],
        "nodeShapes": [{"name": "s", "node": {"kind": "Pod", "metadata": {"name": "x"}}}, {"name": "t", "count": 2}],
        "seeds": ["zero"],
        "interval": "soon",
        "colour": "blue",
    }
    with pytest.raises(WorkloadError) as err:
        parse_spec(doc, base=tmp_path)
    text = "\n".join(err.value.problems)
    for expected in (
        "spec: unknown field(s) colour",
        "configs[1].name: Duplicate value: 'a'",
        "configs[2].name: Invalid value: 'bad name'",
        "configs[3].file: " + str(tmp_path / "missing.yaml") + ": No such file or directory",
        "workloads[0]: needs file (or files) or trace",
        "nodeShapes[0].node: the node file must hold one Node manifest",
        "nodeShapes[1].node: Required value",
        "seeds: must be a non-empty list of integers",
        "interval: 'soon' is not a duration",
    ):
        assert expected in text, text


def test_a_replacing_shape_drops_the_workloads_nodes_and_their_events() -> None:
    workload = parse_workload(
        "apiVersion: kss.sigs.k8s.io/v1alpha1\nkind: TimedWorkload\nspec:\n"
        "  start: [{kind: Node, metadata: {name: old}}]\n"
        "  events:\n"
        "  - {at: 5, create: {kind: Node, metadata: {name: late}}}\n"
        "  - {at: 6, cordon: old}\n"
        "  - {at: 7, create: {kind: Pod, metadata: {name: p}, spec: {containers: [{name: c}]}}}\n"
    )
    shape = NodeShape("big", node("big", cpu="64"), count=2, replace=True)
    replaced = shape.apply(workload)
    assert [o["metadata"]["name"] for o in replaced.start] == ["big-added-1", "big-added-2"]
    assert [(e.action, e.name) for e in replaced.events] == [("create", "p")]
    added = NodeShape("big", node("big"), count=1).apply(workload)
    assert [o["metadata"]["name"] for o in added.start] == ["old", "big-added-1"] and len(added.events) == 3
    assert NodeShape("own").apply(workload) is workload


def cell(config: Any, shape: NodeShape, seed: int = 0) -> Cell:
    return Cell("c", config, "queue", shape, seed, 60.0, None)


def test_one_cell_replays_with_the_waits_worked_by_hand() -> None:
    workload = parse_workload(json.dumps(queue_behind()))
    row = run_cell(cell(None, NodeShape("own")), workload)
    assert row["status"] == "done", row
    summary = row["summary"]
    assert (summary["pods"], summary["scheduled"], summary["neverScheduled"]) == (3, 3, 0)
    assert summary["waitSeconds"]["max"] == 480  # p2 arrives at 120 s, p0 ends at 600 s
    assert {p["pod"]: p["wait"] for p in row["pods"]} == {"default/p0": 0, "default/p1": 0, "default/p2": 480}
    assert [r["t"] for r in row["timeseries"]][:3] == [0, 60, 120]
    wider = run_cell(cell(None, NodeShape("plus1", node("extra"), 1)), workload)
    assert wider["summary"]["waitSeconds"]["max"] == 0
    assert {p["node"] for p in wider["pods"]} == {"n1", "n2", "extra-added-1"}


def test_a_failing_cell_is_a_row_with_its_error() -> None:
    row = run_cell(cell(unknown_plugin(), NodeShape("own")), parse_workload(json.dumps(queue_behind())))
    assert row["status"] == FAILED
    assert row["error"].startswith(
        "ConfigError: profiles[0].plugins.filter.enabled[0].name: Invalid value: 'NoSuchPlugin'"
    )
    assert "summary" not in row


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_sweep_on_a_two_worker_local_cluster(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = grid(tmp_path)
    out, db = tmp_path / "out", tmp_path / "runs.db"
    assert main(["sweep", str(spec), "--workers", "2", "--out", str(out), "--record-db", str(db)]) == 1
    err = capsys.readouterr().err
    assert "12 cell(s) on a local Dask cluster (2)" in err and "[12/12]" in err
    assert err.count("kss sweep: cell bogus/") == 4
    # Each cell's line writes its wait as every figure of kss is written (kss_sim.figures), not in raw seconds.
    assert "scheduled, wait p95 8 min (" in err and "wait p95 480" not in err, err
    rows = {r["cell"]: r for r in read_csv(out / "sweep.csv")}
    assert len(rows) == 12
    for cfg in ("default", "most"):
        for seed in (0, 1):
            own, plus = rows[f"{cfg}/queue/own/seed-{seed}"], rows[f"{cfg}/queue/plus1/seed-{seed}"]
            assert (own["status"], own["scheduled"], own["waitSeconds.max"]) == ("done", "3", "480")
            assert (plus["status"], plus["waitSeconds.max"]) == ("done", "0")
            assert (out / "cells" / f"{cfg}__queue__own__seed-{seed}" / "pods.csv").exists()
    bogus = [r for c, r in rows.items() if c.startswith("bogus/")]
    assert len(bogus) == 4 and all(r["status"] == "failed" and "NoSuchPlugin" in r["error"] for r in bogus)
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["failed"] == 4 and [c["cell"] for c in doc["cells"]] == list(rows)
    engine = make_engine(f"sqlite:///{db}")
    runs = RunsService(lambda: session_scope(make_session_factory(engine))).compare_group("sweep:grid")
    assert sorted((r["name"], r["status"]) for r in runs) == sorted(
        (c, "done" if not c.startswith("bogus/") else "failed") for c in rows
    )
    engine.dispose()


def test_sweep_on_an_existing_dask_cluster_by_address(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from distributed import LocalCluster

    write(tmp_path / "queue.yaml", queue_behind())
    doc = {"configs": [{"name": "default"}], "workloads": [{"name": "q", "file": "queue.yaml"}], "seeds": [3]}
    spec = write(tmp_path / "one.yaml", doc)
    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None)  # type: ignore[no-untyped-call]
    with cluster:
        address = cluster.scheduler_address
        code = main(["sweep", str(spec), "--scheduler-address", address, "--out", str(tmp_path / "o")])
    assert code == 0, capsys.readouterr().err
    (row,) = read_csv(tmp_path / "o" / "sweep.csv")
    assert (row["cell"], row["status"], row["seed"]) == ("default/q/own/seed-3", "done", "3")
    assert row["waitSeconds.max"] == "480"


@pytest.mark.parametrize(
    ("spec", "fragments"),
    [
        ({"configs": [{"name": "x", "inline": "nope"}], "workloads": [{"name": "w", "file": "w.yaml"}]},
         ("configs[0]: must be a KubeSchedulerConfiguration object",)),
        ({"configs": [{"name": "x"}], "workloads": [{"name": "w", "file": "gone.yaml"}]},
         ("workloads w: /", "/gone.yaml: No such file or directory")),
        ({"configs": [{"name": "x"}], "workloads": [{"name": "w", "file": "w.yaml"}], "featureGates": {"Nope": True}},
         ("featureGates: unrecognized feature gate: Nope",)),
    ],
)  # fmt: skip
def test_a_bad_spec_is_refused_before_any_cluster_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: dict[str, Any], fragments: tuple[str, ...]
) -> None:
    write(tmp_path / "w.yaml", queue_behind())
    path = write(tmp_path / "bad.yaml", spec)
    assert main(["sweep", str(path), "--out", str(tmp_path / "o")]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("kss sweep:")]
    assert len(lines) == 1 and lines[0].startswith(f"kss sweep: {path}: "), lines
    assert all(f in lines[0] for f in fragments), lines
    assert not (tmp_path / "o").exists()

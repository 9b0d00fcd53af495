"""``kss compare``: the same workload under LeastAllocated (v1.35's default) and MostAllocated, pod by pod."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from kss_sim.cli import main
from kss_sim.db import make_engine, make_session_factory, session_scope
from kss_sim.replay.workload import parse_workload
from kss_sim.results.runs import RunsService
from kss_sim.whatif.compare import Side, differences, run_sides, side_names
from tests.whatif.workloads import most_allocated, node, pod, spread_or_pack, write

SIDES = [Side("least", "the v1.35 defaults", None), Side("most", "most.yaml", most_allocated())]
BIG_FAILS = (
    "0/2 nodes are available: 2 Insufficient cpu, 2 Insufficient memory. no new claims to deallocate, preemption: "
    "0/2 nodes are available: 2 No preemption victims found for incoming pod."
)


def room_for_a_big_pod() -> dict[str, Any]:
    """Two nodes of 4 CPU / 8 Gi; two quarter pods at 0 and 1 s, then a whole-node pod at 2 s. Spreading them
    (LeastAllocated) leaves no node empty: the big pod fits nowhere. Packing them (MostAllocated) keeps one free."""
    return {
        "apiVersion": "kss.sigs.k8s.io/v1alpha1",
        "kind": "TimedWorkload",
        "metadata": {"name": "room"},
        "spec": {
            "start": [node("n1"), node("n2")],
            "events": [
                {"at": 0, "create": pod("p0")},
                {"at": 1, "create": pod("p1")},
                {"at": 2, "create": pod("big", cpu="4", memory="8Gi")},
            ],
        },
    }


def nodes_of(run: Any) -> dict[str, str]:
    return {row["pod"]: row["node"] for row in run.outcome.pods}


def test_packing_leaves_a_node_for_the_big_pod_and_spreading_does_not() -> None:
    least, most = run_sides(parse_workload(json.dumps(room_for_a_big_pod())), SIDES, interval=1.0)
    a, b = nodes_of(least), nodes_of(most)
    assert a["default/p0"] == b["default/p0"]  # the same seed breaks the first tie alike
    first = a["default/p0"]
    other = ({"n1", "n2"} - {first}).pop()
    assert (a["default/p1"], a["default/big"]) == (other, "")
    assert (b["default/p1"], b["default/big"]) == (first, other)
    assert least.outcome.summary["neverScheduled"] == 1 and most.outcome.summary["neverScheduled"] == 0
    big = next(row for row in least.outcome.pods if row["pod"] == "default/big")
    assert (big["outcome"], big["lastMessage"]) == ("pending", BIG_FAILS)
    diffs = differences([least, most])
    assert [d["pod"] for d in diffs] == ["default/p1", "default/big"]
    assert [s["node"] for s in diffs[1]["sides"]] == ["", other]
    assert diffs[1]["sides"][0]["lastMessage"] == BIG_FAILS


def test_spread_versus_pack_pod_by_pod() -> None:
    least, most = run_sides(parse_workload(json.dumps(spread_or_pack())), SIDES, interval=1.0)
    a, b = nodes_of(least), nodes_of(most)
    assert len({a[f"default/p{i}"] for i in range(3)}) == 3  # each new pod on an empty node
    assert len({b[f"default/p{i}"] for i in range(4)}) == 1  # all four fill the first pod's node exactly
    expected = [f"default/p{i}" for i in range(4) if a[f"default/p{i}"] != b[f"default/p{i}"]]
    assert {"default/p1", "default/p2"} <= set(expected)
    assert [d["pod"] for d in differences([least, most])] == expected


def test_side_names_are_the_files_stems_made_unique() -> None:
    assert side_names(["a.yaml", "dir/b.yaml", "other/a.yml", "default"]) == ["a", "b", "a-2", "default"]


def test_cli_writes_each_side_and_the_comparison_and_records_one_group(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workload = write(tmp_path / "room.yaml", room_for_a_big_pod())
    most = write(tmp_path / "most.yaml", most_allocated())
    out, db = tmp_path / "out", tmp_path / "runs.db"
    args = ["compare", str(workload), "--config", "default", "--config", str(most), "--interval", "1s"]
    assert main([*args, "--out", str(out), "--record-db", str(db)]) == 0
    printed = capsys.readouterr().out
    assert "Never scheduled                1       0" in printed
    assert "2 pod(s) placed differently" in printed and "/ui/compare?group=compare%3Aroom%3A" in printed
    for side in ("default", "most"):
        assert sorted(p.name for p in (out / side).iterdir()) == ["pods.csv", "report.html", "summary.json",
                                                                   "timeseries.csv"]  # fmt: skip
    with (out / "most" / "pods.csv").open() as f:
        assert {r["pod"]: r["outcome"] for r in csv.DictReader(f)}["default/big"] == "running"
    doc = json.loads((out / "compare.json").read_text())
    assert [s["name"] for s in doc["sides"]] == ["default", "most"]
    assert doc["differentPods"] == 2 and [d["pod"] for d in doc["differences"]] == ["default/p1", "default/big"]
    never = next(f for f in doc["figures"] if f["figure"] == "Never scheduled")
    assert never["values"] == [1, 0]
    group, ids = doc["recorded"]["group"], doc["recorded"]["runs"]
    engine = make_engine(f"sqlite:///{db}")
    runs = RunsService(lambda: session_scope(make_session_factory(engine)))
    assert [(r["name"], r["status"]) for r in runs.compare_group(group)] == [("default", "done"), ("most", "done")]
    (attempt,) = runs.list_attempts(ids["default"], "default", "big")
    assert (attempt["result"], attempt["message"]) == ("unschedulable", BIG_FAILS)
    assert attempt["rejections"] == {"NodeResourcesFit": {"Insufficient cpu, Insufficient memory": 2}}
    assert len(runs.list_attempts(ids["most"], "default", "big")) == 1
    engine.dispose()
    html = (out / "compare.html").read_text()
    assert f'href="http://127.0.0.1:8000/ui/runs/{ids["default"]}/pods/default/big"' in html


def test_cli_same_inputs_same_comparison(tmp_path: Path) -> None:
    workload = write(tmp_path / "spread.yaml", spread_or_pack())
    most = write(tmp_path / "most.yaml", most_allocated())
    docs = []
    for out in ("one", "two"):
        args = ["compare", str(workload), "--config", "default", "--config", str(most), "--seed", "5", "--quiet"]
        assert main([*args, "--out", str(tmp_path / out)]) == 0
        docs.append((tmp_path / out / "compare.json").read_bytes())
    assert docs[0] == docs[1]


@pytest.mark.parametrize(
    ("configs", "extra", "message"),
    [
        (["default"], [], "--config: two or more are needed"),
        (["default", "missing.yaml"], [], "missing.yaml: No such file or directory"),
        (["default", "bad.yaml"], [], "bad.yaml: profiles[0].plugins.filter.enabled[0].name: Invalid value: 'Nope'"),
        (["default", "default"], ["--until", "soon"], "--until: 'soon' is not a duration"),
        (["default", "default"], ["--feature-gates", "X=1"], "--feature-gates: invalid value of X=1"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], configs: list[str], extra: list[str], message: str
) -> None:
    workload = write(tmp_path / "spread.yaml", spread_or_pack())
    write(tmp_path / "bad.yaml", {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
                                  "profiles": [{"schedulerName": "default-scheduler",
                                                "plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}]})  # fmt: skip
    flags = [x for c in configs for x in ("--config", c if c == "default" else str(tmp_path / c))]
    assert main(["compare", str(workload), *flags, *extra, "--out", str(tmp_path / "out")]) == 2
    captured = capsys.readouterr()
    lines = [line for line in captured.err.splitlines() if line.startswith("kss compare:")]
    assert len(lines) == 1 and message in lines[0], captured.err
    assert not (tmp_path / "out").exists()

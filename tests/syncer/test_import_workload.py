"""The one-shot import of the 1,200-node Alibaba GPU workload, between two real ``kss serve`` (slow)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench" / "sync_import.py"


@pytest.mark.slow
def test_import_copies_the_1200_node_workload(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("sync_import_bench", BENCH)
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = bench  # dataclasses look their module up there
    spec.loader.exec_module(bench)
    figures = bench.run(tmp_path)
    print("\n".join(figures.lines()))
    assert figures.source_nodes == 1213 and figures.source_pods == 7064
    assert (figures.target_nodes, figures.target_pods) == (figures.source_nodes, figures.source_pods)
    assert "rejected" not in figures.import_output

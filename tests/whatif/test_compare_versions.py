"""``kss compare --kube-version 1.34 --kube-version 1.36``: one workload under one configuration at two Kubernetes
versions, pod by pod (examples/replay/upgrade-device-taints.yaml: DRADeviceTaints is off in v1.34, on in v1.36)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from kss_sim.cli import main
from kss_sim.config import Settings
from kss_sim.kube.versions import kube_version
from kss_sim.main import create_app
from kss_sim.replay.sources import load_source
from kss_sim.whatif.compare import ACROSS_VERSIONS, Side, differences, run_sides
from tests.whatif.workloads import most_allocated, write

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "replay" / "upgrade-device-taints.yaml"
REFUSED = (
    "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, preemption: 0/2 nodes are "
    "available: 2 Preemption is not helpful for scheduling."
)


def _side(name: str) -> Side:
    version = kube_version(name)
    return Side(f"v{name}", "defaults", None, version, version.gate_defaults())


def test_a_tainted_device_is_used_at_v134_and_left_free_at_v136() -> None:
    runs = run_sides(load_source([EXAMPLE]), [_side("1.34"), _side("1.36")], interval=60.0)
    assert [r.outcome.summary["kubeVersion"] for r in runs] == ["1.34", "1.36"]
    (diff,) = differences(runs, ACROSS_VERSIONS)
    assert (diff["pod"], diff["differs"]) == ("default/train-2", ["node", "wait", "reason"])
    old, new = diff["sides"]
    assert (old["node"], old["outcome"], old["lastMessage"]) == ("gpu-b", "succeeded", "")
    # Refused while the tainted device is the only free one; train-1's end frees gpu-a's device, and the claim's
    # deallocation retries train-2 at once.
    assert (new["node"], new["outcome"], new["lastMessage"]) == ("gpu-a", "succeeded", REFUSED)
    assert (old["wait"], new["wait"]) == (0, 3540)
    # Between configurations only placements count: the same runs differ there in train-2 alone too.
    assert [d["differs"] for d in differences(runs)] == [["node"]]


async def test_cli_compares_versions_in_compare_json_html_and_the_compare_page(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out, db = tmp_path / "out", tmp_path / "runs.db"
    args = ["compare", str(EXAMPLE), "--kube-version", "1.34", "--kube-version", "1.36", "--interval", "1m"]
    assert main([*args, "--out", str(out), "--record-db", str(db), "--quiet"]) == 0
    printed = capsys.readouterr().out
    assert "1 pod(s) placed, waiting or refused differently" in printed
    assert any(line.split() == ["Kubernetes", "version", "1.34", "1.36"] for line in printed.splitlines())
    doc = json.loads((out / "compare.json").read_text())
    assert doc["compared"] == "versions" and [s["name"] for s in doc["sides"]] == ["v1.34", "v1.36"]
    assert [(d["pod"], d["differs"]) for d in doc["differences"]] == [("default/train-2", ["node", "wait", "reason"])]
    assert sorted(p.name for p in out.iterdir()) == ["compare.html", "compare.json", "v1.34", "v1.36"]
    html = (out / "compare.html").read_text()
    assert "Pods placed, waiting or refused differently (1)" in html
    assert '<td class="differs-in">node, wait, reason</td>' in html and REFUSED in html
    # The Compare page of kss serve over the same database: the versions side by side, train-2 with each reason.
    app = create_app(Settings(database_url=f"sqlite:///{db}"))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as client:
            ids = ",".join(str(i) for i in doc["recorded"]["runs"].values())
            page = (await client.get(f"/ui/compare?runs={ids}")).text
    assert "Pods placed, waiting or refused differently" in page
    assert '<td data-testid="differs-in">node, wait, reason</td>' in page
    assert 'data-pod="default/train-2"' in page and REFUSED in page


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--config", "default", "--config", "most.yaml"], "--config: one at most with two or more --kube-version"),
        (["--kube-version", "1.34"], "--kube-version: 1.34 given twice"),
        (["--kube-version", "1.99"], "--kube-version: unsupported Kubernetes version '1.99'"),
        (["--feature-gates", "NodeDeclaredFeatures=true"], "--feature-gates: "),
    ],
)
def test_cli_bad_version_input_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    write(tmp_path / "most.yaml", most_allocated())
    args = ["compare", str(EXAMPLE), "--kube-version", "1.34", "--kube-version", "1.36", *extra]
    assert main([*args, "--out", str(tmp_path / "out")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"kss compare: {message}"), line
    assert not (tmp_path / "out").exists()

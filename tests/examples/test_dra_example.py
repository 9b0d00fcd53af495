"""examples/dra, applied with kubectl as the README says: the pod with a template gets an A100 of 32Gi or more, the
pod whose selector matches no device stays Pending with kube-scheduler's message."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import KUBECTL, KubectlRunner, start_server

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "dra"


@pytest.fixture
def kubectl(tmp_path: Path) -> Iterator[KubectlRunner]:
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'kss.db'}")
    try:
        yield KubectlRunner(server.kubeconfig)
    finally:
        server.stop()


def _until(check: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.25)


def _get(kubectl: KubectlRunner, *args: str) -> Any:
    return json.loads(kubectl("get", *args, "-o", "json").stdout)


def test_the_dra_example_allocates_the_big_gpu_and_explains_the_missing_one(kubectl: KubectlRunner) -> None:
    kubectl("apply", "-f", str(EXAMPLE))

    _until(lambda: _get(kubectl, "pod", "training")["spec"].get("nodeName") == "gpu-node-a", "training bound")
    statuses = _get(kubectl, "pod", "training")["status"]["resourceClaimStatuses"]
    (claim_name,) = [s["resourceClaimName"] for s in statuses]
    claim = _get(kubectl, "resourceclaim", claim_name)
    assert claim["metadata"]["ownerReferences"][0]["name"] == "training"
    results = claim["status"]["allocation"]["devices"]["results"]
    # The T4 on gpu-node-b has 16Gi: only node a's A100s match; the allocator takes the first.
    assert [(r["request"], r["driver"], r["pool"], r["device"]) for r in results] == [
        ("gpu", "gpu.example.com", "gpu-node-a", "gpu-0")
    ]
    assert [r["name"] for r in claim["status"]["reservedFor"]] == ["training"]

    def failed_scheduling() -> str:
        events = _get(kubectl, "events", "--field-selector", "involvedObject.name=wants-h100")["items"]
        return next((e["message"] for e in events if e["reason"] == "FailedScheduling"), "")

    _until(lambda: bool(failed_scheduling()), "FailedScheduling for wants-h100")
    assert failed_scheduling().startswith("0/2 nodes are available: 2 cannot allocate all claims.")
    assert _get(kubectl, "pod", "wants-h100")["status"]["phase"] == "Pending"
    assert "allocation" not in (_get(kubectl, "resourceclaim", "h100").get("status") or {})

"""DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates (resource.k8s.io/v1) through the real
kubectl against ``kss serve``: apply, ``get`` with kube-apiserver's printer columns, ``describe``, ``-w``,
``api-resources``, ``explain``, and refusals worded as kube-apiserver words them (nothing stored)."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

from tests.conftest import KUBECTL, KubectlRunner

pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

NS = "kdra"
OBJECTS = f"""
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {{name: gpu.example.com}}
spec:
  selectors:
  - cel: {{expression: 'device.driver == "gpu.example.com"'}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: node-1-gpu.example.com}}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {{name: node-1, generation: 1, resourceSliceCount: 1}}
  devices:
  - name: gpu-0
    attributes:
      model: {{string: A100}}
      gpu.example.com/index: {{int: 0}}
      driverVersion: {{version: 1.2.3}}
    capacity:
      memory: {{value: 40960Mi}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: one-gpu, namespace: {NS}}}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {{deviceClassName: gpu.example.com}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: shared-gpus, namespace: {NS}}}
spec:
  devices:
    requests:
    - name: gpus
      exactly:
        deviceClassName: gpu.example.com
        allocationMode: All
    - name: fallback
      firstAvailable:
      - {{name: big, deviceClassName: gpu.example.com, count: 2}}
      - {{name: small, deviceClassName: gpu.example.com}}
    constraints:
    - matchAttribute: gpu.example.com/model
"""


def _rows(out: str) -> list[list[str]]:
    return [line.split() for line in out.strip().splitlines()]


@pytest.fixture(scope="module")
def applied(kubectl: KubectlRunner) -> KubectlRunner:
    kubectl("create", "namespace", NS, check=False)
    out = kubectl("apply", "-f", "-", input=OBJECTS).stdout
    for line in (
        "deviceclass.resource.k8s.io/gpu.example.com created",
        "resourceslice.resource.k8s.io/node-1-gpu.example.com created",
        "resourceclaimtemplate.resource.k8s.io/one-gpu created",
        "resourceclaim.resource.k8s.io/shared-gpus created",
    ):
        assert line in out
    return kubectl


def test_api_resources_lists_the_four_kinds(kubectl: KubectlRunner) -> None:
    rows = _rows(kubectl("api-resources", "--api-group=resource.k8s.io").stdout)
    assert rows[0] == ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    assert sorted(rows[1:]) == [
        ["deviceclasses", "resource.k8s.io/v1", "false", "DeviceClass"],
        ["resourceclaims", "resource.k8s.io/v1", "true", "ResourceClaim"],
        ["resourceclaimtemplates", "resource.k8s.io/v1", "true", "ResourceClaimTemplate"],
        ["resourceslices", "resource.k8s.io/v1", "false", "ResourceSlice"],
    ]


def test_get_prints_upstream_columns_and_defaults(applied: KubectlRunner) -> None:
    kubectl = applied
    rows = _rows(kubectl("get", "resourceslices").stdout)
    assert rows[0] == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    # The server is shared with other tests of this module, which add slices of their own.
    assert ["node-1-gpu.example.com", "node-1", "gpu.example.com", "node-1"] in [row[:4] for row in rows[1:]]
    rows = _rows(kubectl("get", "resourceclaims", "-n", NS).stdout)
    assert rows[0] == ["NAME", "STATE", "AGE"] and ["shared-gpus", "pending"] in [row[:2] for row in rows[1:]]
    assert _rows(kubectl("get", "deviceclass").stdout)[0] == ["NAME", "AGE"]
    assert "one-gpu" in [row[0] for row in _rows(kubectl("get", "resourceclaimtemplates", "-n", NS).stdout)[1:]]

    claim = json.loads(kubectl("get", "resourceclaim", "shared-gpus", "-n", NS, "-o", "json").stdout)
    requests = claim["spec"]["devices"]["requests"]
    assert requests[0]["exactly"] == {"deviceClassName": "gpu.example.com", "allocationMode": "All"}
    assert [s["count"] for s in requests[1]["firstAvailable"]] == [2, 1]
    assert {s["allocationMode"] for s in requests[1]["firstAvailable"]} == {"ExactCount"}
    assert claim["status"] == {}
    template = json.loads(kubectl("get", "resourceclaimtemplate", "one-gpu", "-n", NS, "-o", "json").stdout)
    assert template["spec"]["spec"]["devices"]["requests"][0]["exactly"]["count"] == 1
    device = json.loads(kubectl("get", "resourceslice", "node-1-gpu.example.com", "-o", "json").stdout)
    assert device["spec"]["devices"][0]["capacity"]["memory"]["value"] == "40Gi"  # Quantity.String()
    assert device["metadata"]["generation"] == 1


def test_describe_shows_the_objects(applied: KubectlRunner) -> None:
    out = applied("describe", "resourceslice", "node-1-gpu.example.com").stdout
    assert "Name:" in out and "node-1-gpu.example.com" in out and "gpu.example.com" in out and "A100" in out
    out = applied("describe", "resourceclaim", "shared-gpus", "-n", NS).stdout
    assert "Namespace:" in out and NS in out and "Allocation Mode:" in out and "All" in out


def test_watch_sees_a_claim_created(applied: KubectlRunner) -> None:
    process = subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(applied.config), "get", "resourceclaims", "-n", NS, "-w",
         "--request-timeout=20s", "--output-watch-events"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        time.sleep(1.5)
        body = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "watched", "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
        }
        applied("apply", "-f", "-", input=json.dumps(body))
        deadline = time.monotonic() + 15
        seen = ""
        assert process.stdout is not None
        while time.monotonic() < deadline and "watched" not in seen:
            seen += process.stdout.readline()
        assert "ADDED" in seen and "watched" in seen and "pending" in seen
    finally:
        process.kill()
        process.wait()


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.example.com",
             "allocationMode": "Some"}}]}}},
            'spec.devices.requests[0].exactly.allocationMode: Unsupported value: "Some": supported values: "All", '
            '"ExactCount"',
        ),
        (
            {"spec": {"devices": {"requests": [
                {"name": "g", "exactly": {"deviceClassName": "gpu.example.com"}},
                {"name": "g", "exactly": {"deviceClassName": "gpu.example.com"}},
            ]}}},
            'spec.devices.requests[1]: Duplicate value: "g"',
        ),
        (
            {"spec": {"devices": {"requests": [{"name": "g"}]}}},
            "spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required",
        ),
        (
            {"spec": {"devices": {"requests": [{"name": "g", "exactly": {"deviceClassName": "gpu.example.com",
             "count": 0, "allocationMode": "All"}}], "constraints": [{"matchAttribute": "model"}]}}},
            "spec.devices.constraints[0].matchAttribute: Invalid value: \"model\": a fully qualified name must be a "
            "domain and a name separated by a slash",
        ),
    ],
)  # fmt: skip
def test_invalid_claims_are_refused_with_upstream_messages(
    applied: KubectlRunner, body: dict[str, object], expected: str
) -> None:
    doc = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "bad", "namespace": NS},
           **body}  # fmt: skip
    result = applied("apply", "-f", "-", input=json.dumps(doc), check=False)
    assert result.returncode != 0
    assert 'The ResourceClaim "bad" is invalid' in result.stderr and expected in result.stderr
    assert "NotFound" in applied("get", "resourceclaim", "bad", "-n", NS, check=False).stderr


def test_bad_quantity_and_unknown_field_are_refused(applied: KubectlRunner) -> None:
    doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "bad-slice"},
        "spec": {"driver": "gpu.example.com", "nodeName": "node-2", "pool": {"name": "p", "resourceSliceCount": 1},
                 "devices": [{"name": "d", "capacity": {"memory": {"value": "12XB"}}}]},
    }  # fmt: skip
    result = applied("apply", "-f", "-", input=json.dumps(doc), check=False)
    assert result.returncode != 0 and "quantities must match the regular expression" in result.stderr
    doc["spec"]["devices"] = [{"name": "d", "atributes": {}}]  # type: ignore[index]
    result = applied("apply", "-f", "-", input=json.dumps(doc), check=False)
    assert result.returncode != 0 and 'unknown field "spec.devices[0].atributes"' in result.stderr
    assert "NotFound" in applied("get", "resourceslice", "bad-slice", check=False).stderr


def test_cel_syntax_errors_are_named_by_field(applied: KubectlRunner) -> None:
    selector = {"cel": {"expression": "device.driver =="}}
    exactly = {"deviceClassName": "gpu.example.com", "selectors": [selector]}
    doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "bad-cel", "namespace": NS},
        "spec": {"devices": {"requests": [{"name": "g", "exactly": exactly}]}},
    }
    result = applied("apply", "-f", "-", input=json.dumps(doc), check=False)
    assert (
        'spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value: "device.driver ==": '
        "compilation failed: ERROR: <input>:1:17: Syntax error: mismatched input '<EOF>'" in result.stderr
    )
    device_class = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "bad-cel"},
                    "spec": {"selectors": [{"cel": {"expression": "device.attributes"}}]}}  # fmt: skip
    result = applied("apply", "-f", "-", input=json.dumps(device_class), check=False)
    assert (
        'spec.selectors[0].cel.expression: Invalid value: "device.attributes": must evaluate to bool or the unknown '
        "type, not map" in result.stderr
    ), result.stderr
    assert "NotFound" in applied("get", "deviceclass", "bad-cel", check=False).stderr


def test_slice_needs_exactly_one_node_field(applied: KubectlRunner) -> None:
    doc = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "no-node"},
        "spec": {"driver": "gpu.example.com", "pool": {"name": "p", "resourceSliceCount": 1}, "devices": []},
    }
    result = applied("apply", "-f", "-", input=json.dumps(doc), check=False)
    assert (
        "spec: Required value: exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is "
        "required" in result.stderr
    )


def test_explain_reads_the_schema(kubectl: KubectlRunner) -> None:
    out = kubectl("explain", "resourceclaim.spec.devices.requests.exactly").stdout
    assert "allocationMode" in out and "deviceClassName" in out and "derivedAttributes" not in out

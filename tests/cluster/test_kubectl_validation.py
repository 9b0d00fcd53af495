"""What kubectl and API clients are told about bodies the simulator cannot take as they are, as kube-apiserver
tells them: kinds it does not serve, and fields a kind does not have (``fieldValidation``)."""

from __future__ import annotations

import json
import os

import httpx
import pytest

from tests.conftest import KUBECTL, KubectlRunner, Server

kubectl_only = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl not installed")

TYPO_POD = """
apiVersion: v1
kind: Pod
metadata: {name: NAME, namespace: fv}
spec:
  nodeSelecter: {zone: a}
  containers: [{name: c, image: nginx, imagePullPolicyy: Never}]
"""


@kubectl_only
@pytest.mark.parametrize(
    ("manifest", "kind", "version"),
    [
        ("apiVersion: v1\nkind: Foo\nmetadata: {name: x}\n", "Foo", "v1"),
        (
            "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: x, namespace: default}\n",
            "Widget",
            "example.com/v1",
        ),
    ],
)
@pytest.mark.parametrize("verb", ["apply", "create"])
def test_unknown_kind_is_reported_as_kube_apiserver_does(
    kubectl: KubectlRunner, manifest: str, kind: str, version: str, verb: str
) -> None:
    out = kubectl(verb, "-f", "-", input=manifest, check=False)
    assert out.returncode != 0
    # kubectl validates client-side with the (empty) OpenAPI v2 document, then fails to map the kind.
    assert f'no matches for kind "{kind}" in version "{version}"' in out.stderr, out.stderr
    assert "openapi" not in out.stderr


@kubectl_only
@pytest.mark.parametrize("verb", ["apply", "create"])
def test_kubectl_refuses_unknown_fields_and_writes_nothing(kubectl: KubectlRunner, verb: str) -> None:
    name = f"typo-{verb}"
    out = kubectl(verb, "-f", "-", input=TYPO_POD.replace("NAME", name), check=False)
    assert out.returncode != 0
    assert (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.containers[0].imagePullPolicyy", unknown field "spec.nodeSelecter"'
    ) in out.stderr, out.stderr
    missing = kubectl("get", "pod", name, "-n", "fv", check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr


@kubectl_only
def test_kubectl_warn_creates_without_the_unknown_fields(kubectl: KubectlRunner) -> None:
    out = kubectl("apply", "--validate=warn", "-f", "-", input=TYPO_POD.replace("NAME", "typo-warn"))
    assert "pod/typo-warn created" in out.stdout
    assert 'Warning: unknown field "spec.nodeSelecter"' in out.stderr
    pod = json.loads(kubectl("get", "pod", "typo-warn", "-n", "fv", "-o", "json").stdout)
    assert "nodeSelecter" not in pod["spec"] and "imagePullPolicyy" not in pod["spec"]["containers"][0]
    # A merge patch is checked too: the unknown field is dropped with a warning, the known one applied.
    patched = kubectl(
        "patch",
        "pod",
        "typo-warn",
        "-n",
        "fv",
        "--type=merge",
        "-p",
        '{"spec": {"bogus": 1}, "metadata": {"labels": {"a": "b"}}}',
    )
    assert 'unknown field "spec.bogus"' in patched.stderr
    pod = json.loads(kubectl("get", "pod", "typo-warn", "-n", "fv", "-o", "json").stdout)
    assert pod["metadata"]["labels"] == {"a": "b"} and "bogus" not in pod["spec"]


@kubectl_only
def test_a_json_patch_is_checked_on_the_object_it_produces(kubectl: KubectlRunner) -> None:
    clean = TYPO_POD.replace("NAME", "jp").replace("nodeSelecter", "nodeSelector")
    kubectl("apply", "-f", "-", input=clean.replace("imagePullPolicyy", "imagePullPolicy"))
    ops = json.dumps(
        [
            {"op": "add", "path": "/metadata/labels", "value": {"a": "b"}},
            {"op": "add", "path": "/spec/bogus", "value": 1},
        ]
    )
    patched = kubectl("patch", "pod", "jp", "-n", "fv", "--type=json", "-p", ops)
    assert 'unknown field "spec.bogus"' in patched.stderr, patched.stderr
    pod = json.loads(kubectl("get", "pod", "jp", "-n", "fv", "-o", "json").stdout)
    assert pod["metadata"]["labels"] == {"a": "b"} and "bogus" not in pod["spec"]


def test_field_validation_modes_over_the_api(server: Server) -> None:
    url = f"{server.url}/api/v1/namespaces/fv/pods"

    def pod(name: str) -> dict[str, object]:
        return {"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": "i"}], "nodeSelecter": {}}}

    strict = httpx.post(url, params={"fieldValidation": "Strict"}, json=pod("api-strict"))
    assert strict.status_code == 400 and strict.json()["reason"] == "BadRequest"
    assert httpx.get(f"{url}/api-strict").status_code == 404
    # No parameter: kube-apiserver's default, Warn.
    warned = httpx.post(url, json=pod("api-warn"))
    assert warned.status_code == 201 and "nodeSelecter" not in warned.json()["spec"]
    assert warned.headers.get_list("warning") == ['299 - "unknown field \\"spec.nodeSelecter\\""']
    ignored = httpx.post(url, params={"fieldValidation": "Ignore"}, json=pod("api-ignore"))
    assert ignored.status_code == 201 and "warning" not in ignored.headers
    assert "nodeSelecter" not in httpx.get(f"{url}/api-ignore").json()["spec"]
    bad = httpx.post(url, params={"fieldValidation": "Loud"}, json=pod("api-bad"))
    assert bad.status_code == 422 and bad.json()["message"] == (
        'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loud": supported values: '
        '"", "Ignore", "Strict", "Warn"'
    )
    assert httpx.get(f"{url}/api-bad").status_code == 404
    # A JSON patch: the fields of the object it produces, under the same three modes.
    json_patch = {"content-type": "application/json-patch+json"}
    ops = [{"op": "add", "path": "/metadata/labels", "value": {"a": "b"}}, {"op": "add", "path": "/spec/x", "value": 1}]
    before = httpx.get(f"{url}/api-warn").json()
    refused = httpx.patch(f"{url}/api-warn", params={"fieldValidation": "Strict"}, json=ops, headers=json_patch)
    assert refused.status_code == 400 and refused.json()["message"] == 'strict decoding error: unknown field "spec.x"'
    assert httpx.get(f"{url}/api-warn").json() == before, "a refused patch changes nothing"
    bad_mode = httpx.patch(f"{url}/api-warn", params={"fieldValidation": "Loud"}, json=ops, headers=json_patch)
    assert bad_mode.status_code == 422 and bad_mode.json()["message"].startswith('PatchOptions.meta.k8s.io "" is')
    assert httpx.get(f"{url}/api-warn").json() == before
    ignored_patch = httpx.patch(f"{url}/api-warn", params={"fieldValidation": "Ignore"}, json=ops, headers=json_patch)
    assert ignored_patch.status_code == 200 and "warning" not in ignored_patch.headers
    stored = httpx.get(f"{url}/api-warn").json()
    assert stored["metadata"]["labels"] == {"a": "b"} and "x" not in stored["spec"]
    ops[0]["value"] = {"c": "d"}
    warned_patch = httpx.patch(f"{url}/api-warn", json=ops, headers=json_patch)
    assert warned_patch.status_code == 200
    assert warned_patch.headers.get_list("warning") == ['299 - "unknown field \\"spec.x\\""']
    assert warned_patch.json()["metadata"]["labels"] == {"c": "d"} and "x" not in warned_patch.json()["spec"]


def test_openapi_v2_is_served_as_json_and_protobuf(server: Server) -> None:
    as_json = httpx.get(f"{server.url}/openapi/v2")
    assert as_json.status_code == 200 and as_json.json()["swagger"] == "2.0"
    accept = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
    as_pb = httpx.get(f"{server.url}/openapi/v2", headers={"Accept": accept})
    assert as_pb.status_code == 200 and as_pb.headers["content-type"] == "application/octet-stream"
    assert as_pb.content.startswith(b"\x0a\x032.0")  # Document.swagger (field 1) = "2.0"


RFC1123_SUBDOMAIN = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)


@kubectl_only
@pytest.mark.parametrize(
    ("manifest", "lines"),
    [
        (
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "Bad_Name", "namespace": "default"},
             "spec": {"restartPolicy": "Sometimes", "containers": [{"name": "c"}, {"name": "c", "image": "i"}]}},
            ['The Pod "Bad_Name" is invalid: ',
             f'* metadata.name: Invalid value: "Bad_Name": {RFC1123_SUBDOMAIN}',
             "* spec.containers[0].image: Required value",
             '* spec.containers[1].name: Duplicate value: "c"',
             '* spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"'],
        ),
        (
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "default"},
             "spec": {"replicas": -1, "selector": {"matchLabels": {"a": "b"}},
                      "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}}}},
            ['The Deployment "d" is invalid: ',
             "* spec.replicas: Invalid value: -1: must be greater than or equal to 0",
             "* spec.template.spec.containers[0].image: Required value"],
        ),
        (
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
             "spec": {"ports": [{"port": 0}, {"port": 80, "protocol": "XTP"}]}},
            ['The Service "s" is invalid: ',
             "* spec.ports[0].name: Required value",
             "* spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
             "* spec.ports[1].name: Required value",
             '* spec.ports[1].protocol: Unsupported value: "XTP": supported values: "SCTP", "TCP", "UDP"'],
        ),
        (
            {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "N_1"},
             "spec": {"taints": [{"key": "k", "effect": "Bad"}]}},
            ['The Node "N_1" is invalid: ',
             f'* metadata.name: Invalid value: "N_1": {RFC1123_SUBDOMAIN}',
             '* spec.taints[0].effect: Unsupported value: "Bad": supported values: "NoSchedule", "PreferNoSchedule", '
             '"NoExecute"'],
        ),
    ],
)  # fmt: skip
def test_every_field_error_of_a_builtin_kind_is_reported_at_once(
    kubectl: KubectlRunner, manifest: dict[str, object], lines: list[str]
) -> None:
    refused = kubectl("create", "-f", "-", input=json.dumps(manifest), check=False)
    assert refused.returncode != 0
    assert "\n".join(lines) + "\n" in refused.stderr, refused.stderr


@kubectl_only
def test_a_bad_label_key_or_value_is_reported_at_metadata_labels(kubectl: KubectlRunner) -> None:
    """apimachinery's ValidateLabels reports a bad key and a bad value at the labels field itself (no ``[key]``)."""
    manifest = (
        "apiVersion: v1\nkind: Pod\nmetadata: {name: bad-labels, namespace: default, "
        'labels: {"a b": x, app: "not valid!"}}\nspec: {containers: [{name: c, image: nginx}]}\n'
    )
    out = kubectl("create", "-f", "-", input=manifest, check=False)
    assert out.returncode != 0
    assert (
        """metadata.labels: Invalid value: "a b": name part must consist of alphanumeric characters, """
        "'-', '_' or '.', and must start and end with an alphanumeric character"
    ) in out.stderr, out.stderr
    assert (
        """metadata.labels: Invalid value: "not valid!": a valid label must be an empty string or consist of """
        "alphanumeric characters"
    ) in out.stderr, out.stderr
    assert "metadata.labels[" not in out.stderr

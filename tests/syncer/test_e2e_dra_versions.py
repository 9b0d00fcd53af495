"""``kss import`` from a source that serves DRA only as resource.k8s.io/v1beta1 (a ``kss serve`` at v1.33 with
``--runtime-config resource.k8s.io/v1beta1=true``, as a v1.33 cluster): its DeviceClasses, ResourceSlices and
ResourceClaims are mirrored, in the version both ends serve, into a simulator at v1.33 enabled the same way; a
simulator that serves none of the source's versions is told which ``--runtime-config`` to start with."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.conftest import Server, launch_server, start_servers
from tests.syncer.test_e2e_versions import _kss

GROUP = "/apis/resource.k8s.io/v1beta1"
DRIVER = "gpu.example.com"
OBJECTS: list[tuple[str, dict[str, Any]]] = [
    (
        "deviceclasses",
        {
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "DeviceClass",
            "metadata": {"name": DRIVER},
            "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
        },
    ),
    (
        "resourceslices",
        {
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceSlice",
            "metadata": {"name": "node-a-gpus"},
            "spec": {
                "driver": DRIVER,
                "nodeName": "node-a",
                "pool": {"name": "node-a", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0", "basic": {"attributes": {"model": {"string": "a100"}}}}],
            },
        },
    ),
    (
        "namespaces/default/resourceclaims",
        {
            "apiVersion": "resource.k8s.io/v1beta1",
            "kind": "ResourceClaim",
            "metadata": {"name": "one-gpu"},
            "spec": {"devices": {"requests": [{"name": "gpu", "deviceClassName": DRIVER}]}},
        },
    ),
]


@pytest.fixture(scope="module")
def ends(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Server, Server]]:
    """The source and a simulator at v1.33 serving v1beta1, and a simulator at v1.33 serving no DRA version."""
    tmp = tmp_path_factory.mktemp("dra-versions")
    quiet = {
        "KSS_SCHEDULER_ENABLED": "false",
        "KSS_CONTROLLERS": "false",
        "KSS_KUBELET": "false",
        "KSS_KUBE_VERSION": "1.33",
    }
    beta = {**quiet, "KSS_RUNTIME_CONFIG": "resource.k8s.io/v1beta1=true"}
    source, simulator, without = start_servers(
        launch_server(tmp, f"sqlite:///{tmp / 'source.db'}", env=beta),
        launch_server(tmp, f"sqlite:///{tmp / 'sim.db'}", env=beta),
        launch_server(tmp, f"sqlite:///{tmp / 'without.db'}", env=quiet),
    )
    for path, body in OBJECTS:
        created = httpx.post(f"{source.url}{GROUP}/{path}", json=body)
        assert created.status_code == 201, created.text
    yield source, simulator, without
    for srv in (source, simulator, without):
        srv.stop()


def test_a_v1beta1_source_s_dra_objects_are_mirrored_into_a_simulator_at_1_33(
    ends: tuple[Server, Server, Server],
) -> None:
    source, simulator, _ = ends
    done = _kss("import", "--source-kubeconfig", str(source.kubeconfig), "--target-url", simulator.url, "--no-progress")
    assert done.returncode == 0, done.stderr
    claim = httpx.get(f"{simulator.url}{GROUP}/namespaces/default/resourceclaims/one-gpu").json()
    assert claim["spec"]["devices"]["requests"][0]["deviceClassName"] == DRIVER
    (mirrored,) = httpx.get(f"{simulator.url}{GROUP}/resourceslices").json()["items"]
    assert mirrored["spec"]["devices"] == [{"name": "gpu-0", "basic": {"attributes": {"model": {"string": "a100"}}}}]
    assert httpx.get(f"{simulator.url}{GROUP}/deviceclasses/{DRIVER}").status_code == 200


def test_a_simulator_serving_none_of_the_source_s_versions_is_told_the_runtime_config(
    ends: tuple[Server, Server, Server],
) -> None:
    source, _, without = ends
    done = _kss("import", "--source-kubeconfig", str(source.kubeconfig), "--target-url", without.url, "--no-progress")
    assert done.returncode == 0, done.stderr
    assert (
        "the simulator does not serve resourceclaims in resource.k8s.io/v1beta1 (the source's): not mirroring them "
        "(start it with --runtime-config resource.k8s.io/v1beta1=true)"
    ) in done.stderr

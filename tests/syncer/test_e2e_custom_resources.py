"""End to end: ``python -m syncer --custom-resources`` mirrors a source's CustomResourceDefinitions and their objects
into ``kss serve`` (the CRD established there by the simulator itself, the objects following the source's changes
and deletions) and never writes to the source; without the flag, neither is mirrored."""

from __future__ import annotations

import copy
import json
import subprocess
from typing import Any

import httpx

from syncer.translate import SOURCE_UID_ANNOTATION
from tests.cluster.test_custom_resources import CRDS, RAY_CRD
from tests.conftest import KSS
from tests.syncer.test_e2e import REPO, Mirror, eventually, mirror, raw  # noqa: F401

RAYS = "/apis/ray.example.com/v1/namespaces/default/rayclusters"


def _ray(name: str, workers: int) -> dict[str, Any]:
    return {
        "apiVersion": "ray.example.com/v1",
        "kind": "RayCluster",
        "metadata": {"name": name},
        "spec": {"image": "rayproject/ray", "workers": workers},
    }


def _send(m: Mirror, method: str, path: str, body: Any = None, content_type: str = "application/json") -> None:
    """A write to the source (the test plays its users)."""
    answer = httpx.request(
        method,
        m.source.url + path,
        content=json.dumps(body).encode() if body is not None else None,
        headers={"content-type": content_type},
        timeout=10,
    )
    assert answer.status_code < 300, answer.text


def _sim_rays(m: Mirror) -> dict[str, dict[str, Any]]:
    try:
        return {o["metadata"]["name"]: o for o in raw(m.sim, RAYS)["items"]}
    except Exception:  # the CRD is not mirrored yet: 404
        return {}


def test_crds_and_their_objects_are_mirrored_and_followed(mirror: Mirror) -> None:  # noqa: F811
    _send(mirror, "POST", CRDS, copy.deepcopy(RAY_CRD))
    for name, workers in (("a", 1), ("b", 2)):
        _send(mirror, "POST", RAYS, _ray(name, workers))
    source_rays = {o["metadata"]["name"]: o for o in raw(mirror.src, RAYS)["items"]}
    mirror.start_syncer("--custom-resources")

    def mirrored() -> dict[str, dict[str, Any]] | None:
        rays = _sim_rays(mirror)
        return rays if set(rays) == {"a", "b"} else None

    rays = eventually(mirrored, what="the RayClusters in the simulator")
    assert rays["b"]["spec"] == {"image": "rayproject/ray", "workers": 2}
    assert rays["a"]["metadata"]["annotations"][SOURCE_UID_ANNOTATION] == source_rays["a"]["metadata"]["uid"]
    crd = raw(mirror.sim, f"{CRDS}/rayclusters.ray.example.com")
    assert {c["type"]: c["status"] for c in crd["status"]["conditions"]}["Established"] == "True"

    _send(mirror, "PATCH", f"{RAYS}/a", {"spec": {"workers": 7}}, "application/merge-patch+json")
    _send(mirror, "DELETE", f"{RAYS}/b")
    eventually(
        lambda: set(_sim_rays(mirror)) == {"a"} and _sim_rays(mirror)["a"]["spec"]["workers"] == 7,
        what="the change and the deletion mirrored",
    )
    assert mirror.proxy.mutating() == [], "the syncer never writes to the source"


def test_without_the_flag_crds_are_not_mirrored(mirror: Mirror) -> None:  # noqa: F811
    _send(mirror, "POST", CRDS, copy.deepcopy(RAY_CRD))
    _send(mirror, "POST", RAYS, _ray("a", 1))
    mirror.start_syncer()
    eventually(lambda: mirror.metric("Namespace", "listed") >= 1, what="the syncer's lists")
    assert raw(mirror.sim, CRDS)["items"] == []
    assert mirror.proxy.mutating() == []


def test_kss_import_copies_crds_and_their_objects_once(mirror: Mirror) -> None:  # noqa: F811
    _send(mirror, "POST", CRDS, copy.deepcopy(RAY_CRD))
    for name, workers in (("a", 1), ("b", 2), ("c", 3)):
        _send(mirror, "POST", RAYS, _ray(name, workers))
    source_config = mirror.workdir / "source.kubeconfig"
    source_config.write_text(mirror.source.kubeconfig.read_text().replace(mirror.source.url, mirror.proxy.url))
    target = ["--target-url", mirror.simulator.url]
    done = subprocess.run(
        [str(KSS), "import", "--kubeconfig", str(source_config), *target, "--custom-resources", "--page-size", "2"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    rays = _sim_rays(mirror)
    assert {name: o["spec"]["workers"] for name, o in rays.items()} == {"a": 1, "b": 2, "c": 3}
    assert mirror.proxy.mutating() == []


def test_a_crd_created_after_the_start_brings_its_objects_along(mirror: Mirror) -> None:  # noqa: F811
    # The source has no CRD when the syncer starts: the kind is found from the CRD's watch event.
    mirror.start_syncer("--custom-resources")
    eventually(lambda: mirror.metric("CustomResourceDefinition", "listed") >= 1, what="the CRDs' first list")
    _send(mirror, "POST", CRDS, copy.deepcopy(RAY_CRD))
    for name, workers in (("a", 1), ("b", 2)):
        _send(mirror, "POST", RAYS, _ray(name, workers))
    rays = eventually(lambda: _sim_rays(mirror) if set(_sim_rays(mirror)) == {"a", "b"} else None, what="the objects")
    assert rays["b"]["spec"] == {"image": "rayproject/ray", "workers": 2}
    _send(mirror, "PATCH", f"{RAYS}/a", {"spec": {"workers": 7}}, "application/merge-patch+json")
    _send(mirror, "DELETE", f"{RAYS}/b")
    eventually(
        lambda: set(_sim_rays(mirror)) == {"a"} and _sim_rays(mirror)["a"]["spec"]["workers"] == 7,
        what="the change and the deletion of objects of a kind created after the start",
    )

    # Deleted in the source: the CRD goes from the simulator, its objects with it, and its watcher stops.
    _send(mirror, "DELETE", f"{CRDS}/rayclusters.ray.example.com")
    eventually(lambda: raw(mirror.sim, CRDS)["items"] == [], what="the CRD's deletion mirrored")
    eventually(lambda: "no longer watching them" in mirror.syncer_log(), what="the kind's watcher stopped")
    # Created again, with new objects: followed again.
    _send(mirror, "POST", CRDS, copy.deepcopy(RAY_CRD))
    _send(mirror, "POST", RAYS, _ray("c", 3))
    eventually(lambda: set(_sim_rays(mirror)) == {"c"}, what="the objects of the CRD created again")
    assert mirror.syncer_log().count("the source established the CRD of rayclusters") == 2
    assert mirror.proxy.mutating() == [], "the syncer never writes to the source"


def test_a_bundle_in_the_source_reads_the_same_in_the_simulator(mirror: Mirror) -> None:  # noqa: F811
    # The "Done when" of issue #33: a CRD and its objects beside ConfigMaps, Secrets, Services and ServiceAccounts,
    # mirrored with --custom-resources and --workloads, the source never written.
    _send(mirror, "POST", CRDS, copy.deepcopy(RAY_CRD))
    _send(mirror, "POST", RAYS, _ray("a", 1))
    objects = {
        "/api/v1/namespaces/default/serviceaccounts": {"metadata": {"name": "ray-head"}},
        "/api/v1/namespaces/default/configmaps": {"metadata": {"name": "ray-config"}, "data": {"k": "v"}},
        "/api/v1/namespaces/default/secrets": {"metadata": {"name": "ray-token"}, "stringData": {"t": "s3cret"}},
        "/api/v1/namespaces/default/services": {
            "metadata": {"name": "ray-head"},
            "spec": {"selector": {"app": "ray"}, "ports": [{"port": 6379}]},
        },
    }
    for path, body in objects.items():
        _send(mirror, "POST", path, body)
    mirror.start_syncer("--custom-resources", "--workloads")

    def mirrored() -> bool:
        try:
            return all(raw(mirror.sim, f"{path}/{body['metadata']['name']}") for path, body in objects.items())
        except Exception:  # not there yet: 404
            return False

    eventually(lambda: mirrored() and set(_sim_rays(mirror)) == {"a"}, what="the bundle in the simulator")
    for path, body in objects.items():
        source = raw(mirror.src, f"{path}/{body['metadata']['name']}")
        copied = raw(mirror.sim, f"{path}/{body['metadata']['name']}")
        for field in ("data", "type", "spec"):
            assert copied.get(field) == source.get(field), (path, field)
        assert copied["metadata"]["annotations"][SOURCE_UID_ANNOTATION] == source["metadata"]["uid"]
    assert mirror.proxy.mutating() == [], "the syncer never writes to the source"

"""The gang pages at v1.37 (ported, not measured): the PodGroups the store holds in v1.36's v1alpha2 form are named
and shown as v1.37's API serves them, scheduling.k8s.io/v1beta1 (its YAML with ``workloadRef`` and ``disruptionMode``
as a union), not in the store's form; at v1.36 the same page says v1alpha2."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml
from fastapi import FastAPI

from kss_sim.config import Settings
from kss_sim.main import create_app
from kss_sim.web.views.groups import group_page
from tests.conftest import asgi_client
from tests.web.test_groups import web_of


async def _app(tmp_path: Path, version: str, group_version: str, gates: dict[str, bool]) -> AsyncIterator[FastAPI]:
    application = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'kss.db'}",
            scheduler_enabled=False,
            controllers=False,
            kube_version=version,
            feature_gates=gates,
            runtime_config=f"scheduling.k8s.io/{group_version}=true",
        )
    )
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def v137(tmp_path: Path) -> AsyncIterator[FastAPI]:
    async for application in _app(
        tmp_path, "1.37", "v1beta1", {"GenericWorkload": True}
    ):  # GangScheduling merged into it
        yield application


@pytest.fixture
async def v136(tmp_path: Path) -> AsyncIterator[FastAPI]:
    async for application in _app(tmp_path, "1.36", "v1alpha2", {"GenericWorkload": True, "GangScheduling": True}):
        yield application


async def test_at_v1_37_a_pod_group_is_named_and_shown_in_v1beta1(v137: FastAPI) -> None:
    group = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "train"},
        "spec": {
            "schedulingPolicy": {"gang": {"minCount": 2}},
            "workloadRef": {"workloadName": "job", "templateName": "workers"},
            "disruptionMode": {"all": {}},
        },
    }
    async with asgi_client(v137) as client:
        created = await client.post("/apis/scheduling.k8s.io/v1beta1/namespaces/default/podgroups", json=group)
        assert created.status_code == 201, created.text
        listing = (await client.get("/ui/groups")).text
        page = await client.get("/ui/groups/default/PodGroup.v1alpha2/train")
    assert page.status_code == 200, page.text
    # the gang's row names its kind as v1.37 serves it (the how-to below the table names every version's)
    assert '<span class="muted">PodGroup (scheduling.k8s.io/v1beta1)</span>' in listing
    assert '<span class="muted">PodGroup (scheduling.k8s.io/v1alpha2)</span>' not in listing
    assert "PodGroup (scheduling.k8s.io/v1beta1)" in page.text
    detail = group_page(web_of(v137), "default", "PodGroup.v1alpha2", "train", minor=37)
    assert detail is not None and detail.kind_label == "PodGroup (scheduling.k8s.io/v1beta1)"
    shown = yaml.safe_load(detail.yaml)
    assert shown["apiVersion"] == "scheduling.k8s.io/v1beta1"
    assert shown["spec"]["workloadRef"] == {"workloadName": "job", "templateName": "workers"}
    assert shown["spec"]["disruptionMode"] == {"all": {}}
    assert "podGroupTemplateRef" not in shown["spec"] and "managedFields" not in shown["metadata"]


async def test_at_v1_36_the_same_pod_group_is_v1alpha2(v136: FastAPI) -> None:
    group = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "train"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
    async with asgi_client(v136) as client:
        created = await client.post("/apis/scheduling.k8s.io/v1alpha2/namespaces/default/podgroups", json=group)
        assert created.status_code == 201, created.text
        page = (await client.get("/ui/groups/default/PodGroup.v1alpha2/train")).text
    assert "PodGroup (scheduling.k8s.io/v1alpha2)" in page and "scheduling.k8s.io/v1beta1" not in page
    assert "apiVersion: scheduling.k8s.io/v1alpha2" in page and "podGroupTemplateRef: null" in page

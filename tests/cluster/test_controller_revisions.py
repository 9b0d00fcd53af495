"""apps/v1 ControllerRevisions as kube-apiserver serves them: validation (``data`` required and immutable, the
revision number not negative but changeable), the table ``kubectl get controllerrevisions`` prints, protobuf."""

from __future__ import annotations

from typing import Any

import httpx

from kss_sim.cluster.api import protobuf
from kss_sim.cluster.api.protobuf import PROTOBUF

REVISIONS = "/apis/apps/v1/namespaces/default/controllerrevisions"
TABLE = {"accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
DATA = {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}, "$patch": "replace"}}}


def _revision(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": {"name": name}, **fields}


async def test_data_is_mandatory_and_revision_not_negative(client: httpx.AsyncClient) -> None:
    missing = await client.post(REVISIONS, json=_revision("r0", revision=1))
    assert missing.status_code == 422
    assert [c["field"] for c in missing.json()["details"]["causes"]] == ["data"]
    assert "data is mandatory" in missing.json()["message"]
    negative = await client.post(REVISIONS, json=_revision("r0", data=DATA, revision=-1))
    assert negative.status_code == 422
    assert "revision: Invalid value: -1: must be greater than or equal to 0" in negative.json()["message"]


async def test_data_is_immutable_and_the_revision_number_may_change(client: httpx.AsyncClient) -> None:
    created = await client.post(REVISIONS, json=_revision("r1", data=DATA, revision=1))
    assert created.status_code == 201, created.text
    assert created.json()["data"] == DATA  # kept as sent, the $patch directive included
    bumped = await client.patch(
        f"{REVISIONS}/r1", json={"revision": 3}, headers={"content-type": "application/merge-patch+json"}
    )
    assert bumped.status_code == 200 and bumped.json()["revision"] == 3
    changed = await client.patch(
        f"{REVISIONS}/r1",
        json={"data": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "httpd"}]}}}}},
        headers={"content-type": "application/merge-patch+json"},
    )
    assert changed.status_code == 422
    assert "data: Invalid value" in changed.json()["message"] and "field is immutable" in changed.json()["message"]


async def test_table_names_the_controller_by_kind_group_and_name(client: httpx.AsyncClient) -> None:
    owned = _revision("web-6b9f", data=DATA, revision=2)
    owned["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "u-1", "controller": True}
    ]
    assert (await client.post(REVISIONS, json=owned)).status_code == 201
    assert (await client.post(REVISIONS, json=_revision("loose", data=DATA, revision=0))).status_code == 201
    table = (await client.get(REVISIONS, headers=TABLE)).json()
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Controller", "Revision", "Age"]
    rows = {r["cells"][0]: r["cells"][1:3] for r in table["rows"]}
    assert rows["web-6b9f"] == ["statefulset.apps/web", 2]
    assert rows["loose"] == ["<none>", 0]


async def test_served_in_protobuf(client: httpx.AsyncClient) -> None:
    assert (await client.post(REVISIONS, json=_revision("pb", data=DATA, revision=4))).status_code == 201
    answer = await client.get(f"{REVISIONS}/pb", headers={"accept": PROTOBUF})
    assert answer.status_code == 200 and answer.headers["content-type"] == PROTOBUF
    decoded = protobuf.decode(answer.content)
    assert decoded["revision"] == 4 and decoded["data"] == DATA

"""A ControllerRevision's ``data`` is a runtime.RawExtension: kube-apiserver keeps its bytes as sent, a number beyond
float64 (``1e1000``) included, and serves them back unchanged. kss keeps such a number as its text: created, read,
listed, watched, patched, reloaded from the database and shown by kubectl as it was sent."""

from __future__ import annotations

import json

import httpx
import orjson
from sqlalchemy import Engine

from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.kube import raw_numbers
from kss_sim.web.formatting import to_yaml
from tests.conftest import KubectlRunner, Server

REVISIONS = "/apis/apps/v1/namespaces/default/controllerrevisions"
DATA = b'{"x":1e1000,"y":[-2e999,1.5],"z":{"n":12345678901234567890123e1000}}'


def _revision(name: str) -> bytes:
    head = f'{{"apiVersion":"apps/v1","kind":"ControllerRevision","metadata":{{"name":"{name}"}},"revision":1,"data":'
    return head.encode() + DATA + b"}"


def _data(text: str) -> bytes:
    """The ``data`` of the one object in ``text`` (a JSON document), as its bytes."""
    start = text.index('"data":') + len('"data":')
    return text[start : start + len(DATA)].encode()


async def test_data_beyond_float64_is_stored_and_served_as_sent(client: httpx.AsyncClient) -> None:
    created = await client.post(REVISIONS, content=_revision("r"), headers={"content-type": "application/json"})
    assert created.status_code == 201, created.text
    assert _data(created.text) == DATA
    got = await client.get(f"{REVISIONS}/r")
    assert got.status_code == 200 and _data(got.text) == DATA
    listed = await client.get(REVISIONS)
    assert listed.status_code == 200 and _data(listed.text) == DATA
    async with client.stream("GET", REVISIONS, params={"watch": "1", "timeoutSeconds": "1"}) as watch:
        first = await watch.aiter_lines().__anext__()
    assert json.loads(first.replace("1e1000", "0").replace("2e999", "0").replace("123e1000", "0"))["type"] == "ADDED"
    assert _data(first) == DATA
    # An update of something else keeps the data (it is immutable: the same bytes are the same data).
    patched = await client.patch(
        f"{REVISIONS}/r",
        content=b'{"metadata":{"labels":{"a":"b"}}}',
        headers={"content-type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    assert _data(patched.text) == DATA
    changed = await client.patch(
        f"{REVISIONS}/r", content=b'{"data":{"x":1e999}}', headers={"content-type": "application/merge-patch+json"}
    )
    assert changed.status_code == 422, changed.text
    assert changed.json()["details"]["causes"][0]["field"] == "data"


def test_the_number_survives_a_restart(engine: Engine) -> None:
    store = ClusterStore.open(engine)
    body = raw_numbers.loads(_revision("kept"))
    store.create("ControllerRevision", body, namespace="default")
    reopened = ClusterStore.open(engine)
    stored = reopened.get("ControllerRevision", "default", "kept")
    assert stored is not None
    assert orjson.dumps(stored["data"]) == DATA


def test_loads_keeps_only_what_orjson_cannot_read() -> None:
    assert raw_numbers.loads(b'{"a":1.5}') == {"a": 1.5}
    kept = raw_numbers.loads(b"[1e1000, 2]")
    assert raw_numbers.is_kept(kept[0]) and raw_numbers.text_of(kept[0]) == "1e1000" and kept[1] == 2


def test_kubectl_reads_what_kube_apiserver_would_serve(server: Server, kubectl: KubectlRunner) -> None:
    """kubectl sends no such number (it decodes a manifest first) and its ``-o json`` refuses to decode one, as it
    does against kube-apiserver; the table and the raw bytes show the revision as stored."""
    created = httpx.post(
        server.url + REVISIONS, content=_revision("shown"), headers={"content-type": "application/json"}, timeout=30
    )
    assert created.status_code == 201, created.text
    raw = kubectl("get", "--raw", f"{REVISIONS}/shown")
    assert _data(raw.stdout) == DATA
    table = kubectl("get", "controllerrevisions", "shown")
    assert "shown" in table.stdout
    as_json = kubectl("get", "controllerrevision", "shown", "-o", "json", check=False)
    assert as_json.returncode == 1
    assert as_json.stderr.strip() == "error: json: cannot unmarshal number 1e1000 into Go value of type float64"


def test_the_web_pages_show_the_number_as_sent() -> None:
    assert to_yaml(raw_numbers.loads(b'{"data":{"x":1e1000}}')) == "data:\n  x: 1e1000\n"

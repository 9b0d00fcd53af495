"""A sweep over every field of every served kind: a value of the wrong type, out of its integer's range or in a bad
format is refused as kube-apiserver's decoder refuses it (400, "cannot be handled as a Kind", the Go field path or
the format's own error), never a 5xx, and nothing is stored."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from kss_sim.cluster.admission.decode_types import check_types, schema
from kss_sim.cluster.errors import BadRequest
from kss_sim.cluster.kinds.registry import KINDS, KindInfo
from kss_sim.config import Settings
from kss_sim.kube.versions import VERSIONS
from kss_sim.main import create_app

# A value each code cannot decode, and what the message then says (None: the Go field path and type).
_BAD: dict[str, tuple[Any, str | None]] = {
    "string": (5, None),
    "bool": ("yes", None),
    "int32": (2**31, None),
    "int64": (2**63, None),
    "float": ("x", None),
    "time": ("not-a-time", 'parsing time "not-a-time"'),
    "microtime": ("2024-05-01T10:00:00Z", 'cannot parse "Z" as ".000000"'),
    "quantity": ("abc", "quantities must match the regular expression"),
    "intorstr": (1.5, "json: cannot unmarshal number 1.5 into Go value of type int32"),
    "bytes": ("!!!!", "illegal base64 data at input byte 0"),
}
_MAX_DEPTH = 6


def _bad_value(code: str) -> tuple[Any, str | None] | None:
    if code[0] in "@[{":
        return "x", None  # a string where an object, a list or a map is
    return _BAD.get(code)  # None: free-form JSON takes anything


def _sweep(kind: str, version: str | None, seen: set[str]) -> Iterator[tuple[str, dict[str, Any], str]]:
    """(field path, a body with that one field bad, what the message must hold) for every field reached from
    ``kind``'s root whose struct is not in ``seen`` yet (each struct swept once)."""
    decoding = schema(version)

    def walk(struct: str, go_path: str, build: Any, depth: int) -> Iterator[tuple[str, dict[str, Any], str]]:
        if struct in seen or depth > _MAX_DEPTH:
            return
        seen.add(struct)
        for field, code in decoding.structs[struct].items():
            if depth == 0 and field in ("apiVersion", "kind"):
                continue  # the kind's own identity: checked before the types, with messages of its own
            if field in decoding.borrowed.get(struct, ()):
                continue  # another version's field: unknown here, dropped before decoding
            path = go_path + field
            bad = _bad_value(code)
            if bad is not None:
                value, expected = bad
                yield path, build({field: value}), expected or f"Go struct field {struct.rpartition('.')[2]}.{path}"
            inner = code.lstrip("[{")
            if inner.startswith("@"):
                wrap = (lambda v: [v]) if code[0] == "[" else (lambda v: {"k": v}) if code[0] == "{" else (lambda v: v)

                def nested(obj: dict[str, Any], field: str = field, wrap: Any = wrap) -> Any:
                    return build({field: wrap(obj)})

                yield from walk(inner[1:], path + ".", nested, depth + 1)

    yield from walk(decoding.roots[kind], "", lambda obj: obj, 0)


def _checked_kinds() -> list[KindInfo]:
    return [k for k in KINDS if not k.custom and not k.review]


@pytest.mark.parametrize("version", list(VERSIONS))
def test_every_field_of_every_kind_refuses_what_go_cannot_decode(version: str) -> None:
    seen: set[str] = set()
    count = 0
    for info in _checked_kinds():
        for path, body, expected in _sweep(info.kind, version, seen):
            with pytest.raises(BadRequest) as raised:
                check_types(info.kind, body, version=info.version, kube_version=version)
            message = str(raised.value)
            prefix = f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: '
            assert message.startswith(prefix) and expected in message, (path, message)
            count += 1
    assert count > 1000  # the sweep reached the fields, not only the roots


def _url(info: KindInfo) -> str:
    prefix = f"/apis/{info.group}/{info.version}" if info.group else "/api/v1"
    return f"{prefix}{'/namespaces/default' if info.namespaced else ''}/{info.plural}"


@pytest.fixture
async def client_at(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[tuple[str, httpx.AsyncClient]]:
    """An in-process client of the API at the Kubernetes version the test is parametrized with."""
    version: str = request.param
    application = create_app(
        Settings(
            database_url=f"sqlite:///{tmp_path / 'kss.db'}",
            scheduler_enabled=False,
            controllers=False,
            kubelet=False,
            kube_version=version,
        )
    )
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application)
        async with httpx.AsyncClient(transport=transport, base_url="http://kss.test") as c:
            yield version, c


@pytest.mark.parametrize("client_at", ["1.35", "1.36"], indirect=True)
async def test_every_field_refused_through_the_api_with_kubes_code_and_message(
    client_at: tuple[str, httpx.AsyncClient],
) -> None:
    version, client = client_at
    seen: set[str] = set()
    count = 0
    for info in _checked_kinds():
        url = _url(info)
        if (await client.get(url)).status_code == 404:
            continue  # not served with the version's default gates (an alpha kind)
        for path, body, expected in _sweep(info.kind, version, seen):
            meta = body.setdefault("metadata", {})
            if isinstance(meta, dict):
                meta.setdefault("name", "swept")
            r = await client.post(url, json={"apiVersion": info.api_version, "kind": info.kind, **body})
            assert r.status_code == 400, (info.kind, path, r.status_code, r.text[:300])
            answer = r.json()
            assert answer["kind"] == "Status" and answer["reason"] == "BadRequest", (info.kind, path, answer)
            assert expected in answer["message"], (info.kind, path, answer["message"])
            count += 1
        listed = await client.get(url)
        assert all(o["metadata"]["name"] != "swept" for o in listed.json()["items"]), info.kind
    assert count > 1000

"""YAML reads as sigs.k8s.io/yaml's YAMLToJSON reads it (go-yaml v2 into interface{}, then JSON), where PyYAML's YAML
1.1 differs: each difference, then one through the API and one through a file kss reads."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kss_sim.kube import go_yaml
from kss_sim.whatif.inputs import read_yaml


@pytest.mark.parametrize(
    ("text", "go", "pyyaml"),
    [
        # Booleans: go-yaml v2 has y/Y/n/N too; both have yes/no/on/off in three spellings.
        ("y", True, "y"),
        ("N", False, "N"),
        ("yes", True, True),
        ("Off", False, False),
        ("tRUE", "tRUE", "tRUE"),
        # Floats: a dot is not needed, nor a signed exponent; beyond float64 it is a string; integral floats come
        # out of the JSON as integers.
        ("1e30", 1e30, "1e30"),
        ("1.5e3", 1500, "1.5e3"),
        ("1.5", 1.5, 1.5),
        ("1e1000", "1e1000", "1e1000"),
        ("99999999999999999999", 1e20, 99999999999999999999),
        ("1.0", 1, 1.0),
        # Integers: Go's base prefixes (0o, a leading 0, 0b, 0x), underscores; a leading zero that is not octal is
        # a float; no sexagesimal.
        ("0o17", 15, "0o17"),
        ("017", 15, 15),
        ("08", 8, "08"),
        ("0b101", 5, 5),
        ("-0x1f", -31, -31),
        ("1_000", 1000, 1000),
        ("1:30", "1:30", 90),
        ("18446744073709551615", 18446744073709551615, 18446744073709551615),
        # Timestamps stay text (go-yaml keeps a timestamp's text in an interface{}).
        ("2024-01-01", "2024-01-01", None),
        ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00", None),
        ("=", "=", None),
        ("~", None, None),
        ("'yes'", "yes", "yes"),
    ],
)
def test_plain_scalars_resolve_as_go_yaml_resolves_them(text: str, go: Any, pyyaml: Any) -> None:
    got = go_yaml.load(f"v: {text}\n")["v"]
    assert got == go and type(got) is type(go)
    if pyyaml is not None:  # the difference this is about (None: PyYAML makes a datetime or refuses it)
        assert yaml.safe_load(f"v: {text}\n")["v"] == pyyaml


def test_keys_become_strings_as_sigs_yaml_makes_them() -> None:
    doc = go_yaml.load("1: a\ntrue: b\n1.5: c\n1e7: d\n0.1: e\ny: f\n")
    # 1 and true are two keys (one Python key if left as 1 and True); y is true again, the last one wins.
    assert doc == {"1": "a", "true": "f", "1.5": "c", "1e+07": "d", "0.1": "e"}


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("v: .inf", "json: unsupported value: +Inf"),
        ("v: -.Inf", "json: unsupported value: -Inf"),
        ("v: [.nan]", "json: unsupported value: NaN"),
        ("~: 1", "Unsupported map key of type: NoneType"),
    ],
)
def test_what_json_cannot_hold_is_refused(text: str, message: str) -> None:
    with pytest.raises(yaml.YAMLError, match=re.escape(message)):
        go_yaml.load(text)


def test_tags_merges_and_documents() -> None:
    assert go_yaml.load("a: !!binary aGVsbG8=\nb: !!float 1\nc: !!int '0x10'\nd: !!str 1\n") == {
        "a": "hello",
        "b": 1,
        "c": 16,
        "d": "1",
    }
    assert go_yaml.load("base: &b {x: 1}\nm:\n  <<: *b\n  z: 2\n")["m"] == {"x": 1, "z": 2}
    assert list(go_yaml.load_all("a: y\n---\nb: 1e3\n")) == [{"a": True}, {"b": 1000}]
    assert go_yaml.load("") is None


async def test_a_yaml_body_is_read_as_kubectl_would_send_it(client: httpx.AsyncClient) -> None:
    pods = "/api/v1/namespaces/default/pods"
    body = (
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  labels: {ready: yes}\n"
        "spec:\n  containers: [{name: c, image: x}]\n"
    )
    r = await client.post(pods, content=body, headers={"content-type": "application/yaml"})
    assert r.status_code == 400, r.text
    assert r.json()["message"] == (
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal bool into Go struct field '
        "ObjectMeta.metadata.labels of type string"
    )
    # Quoted, it is a string; 1e3 is a float that the JSON writes as 1000, which an int64 takes.
    body = body.replace("{ready: yes}", "{ready: 'yes'}") + "  terminationGracePeriodSeconds: 1e3\n"
    r = await client.post(pods, content=body, headers={"content-type": "application/yaml"})
    assert r.status_code == 201, r.text
    assert r.json()["metadata"]["labels"] == {"ready": "yes"}
    assert r.json()["spec"]["terminationGracePeriodSeconds"] == 1000


def test_a_file_kss_reads_is_read_the_same_way(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("apiVersion: v1\nkind: X\nflags: {a: y, b: off}\nsize: 1e3\nmode: 0o644\n")
    assert read_yaml(path) == {"apiVersion": "v1", "kind": "X", "flags": {"a": True, "b": False}, "size": 1000,
                               "mode": 420}  # fmt: skip

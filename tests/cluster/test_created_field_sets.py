"""A created object's managedFields: the field sets of parts seen before are reused (by shape and JSON), and every
set is the one computed afresh, whatever came before it."""

from __future__ import annotations

import copy

from kss_sim.cluster.admission import field_sets, managed_fields
from kss_sim.cluster.admission.admit import decode
from kss_sim.cluster.kinds.registry import BY_KIND
from kss_sim.kube.objects import Obj

POD = BY_KIND["Pod"]


def _pod(name: str, token: str, *, env_name: str = "LOG", mount: str = "/var/run/token") -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "containers": [
                {
                    "name": "web",
                    "image": "nginx",
                    "ports": [{"name": "http", "containerPort": 8080}],
                    # The same JSON in env and volumeMounts: keyed by name in one, by mountPath in the other.
                    "env": [{"name": env_name}],
                    "volumeMounts": [{"name": token, "mountPath": mount}],
                    "readinessProbe": {"httpGet": {"path": "/healthz", "port": 8080}},
                    "resources": {"requests": {"cpu": "100m"}},
                }
            ],
            "volumes": [{"name": token, "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}],
            "tolerations": [{"key": "dedicated", "operator": "Exists"}],
        },
    }


def _created_fields(obj: Obj) -> list[Obj]:
    body = decode(POD, copy.deepcopy(obj))
    return managed_fields.track_update(POD, None, body, [], "kss", None, "2026-11-25T12:00:00Z")


def _afresh(obj: Obj) -> list[Obj]:
    field_sets._added_sets.clear()
    return _created_fields(obj)


def test_each_created_field_set_is_the_one_computed_afresh() -> None:
    pods = [_pod(f"web-{i}", f"kube-api-access-{i}") for i in range(5)]
    pods.append(_pod("web-env", "kube-api-access-x", env_name="/var/run/token", mount="LOG"))
    pods.append(_pod("web-mount", "LOG", env_name="LOG", mount="/var/run/token"))
    reordered = _pod("web-reordered", "kube-api-access-9")
    container = reordered["spec"]["containers"][0]
    reordered["spec"]["containers"][0] = dict(reversed(list(container.items())))
    pods.append(reordered)
    expected = [_afresh(p) for p in pods]
    field_sets._added_sets.clear()
    for _ in range(2):  # the second round finds every part remembered
        assert [_created_fields(p) for p in pods] == expected
    fields = expected[0][0]["fieldsV1"]["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert fields["f:env"] == {".": {}, 'k:{"name":"LOG"}': {".": {}, "f:name": {}}}
    assert fields["f:volumeMounts"] == {
        ".": {},
        'k:{"mountPath":"/var/run/token"}': {".": {}, "f:mountPath": {}, "f:name": {}},
    }


def test_equal_parts_under_different_fields_get_their_own_sets() -> None:
    # One list of the same JSON, first as env (keyed by name), then as volumeMounts (keyed by mountPath).
    same = [{"name": "a", "mountPath": "/a"}]
    pod = _pod("p", "t")
    pod["spec"]["containers"][0]["env"] = copy.deepcopy(same)
    pod["spec"]["containers"][0]["volumeMounts"] = copy.deepcopy(same)
    field_sets._added_sets.clear()
    fields = _created_fields(pod)[0]["fieldsV1"]["f:spec"]["f:containers"]['k:{"name":"web"}']
    assert 'k:{"name":"a"}' in fields["f:env"]
    assert 'k:{"mountPath":"/a"}' in fields["f:volumeMounts"]
    assert _created_fields(pod) == _afresh(pod)


def test_remembered_parts_are_bounded() -> None:
    field_sets._added_sets.clear()
    for i in range(field_sets._ADDED_LIMIT + 50):
        _created_fields(_pod(f"p{i}", f"t{i}", env_name=f"E{i}"))
    assert len(field_sets._added_sets) <= field_sets._ADDED_LIMIT

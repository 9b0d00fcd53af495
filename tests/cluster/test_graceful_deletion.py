"""Graceful deletion of pods as kube-apiserver does it (``rest.BeforeDelete`` with the pod strategy's
``CheckGracefulDelete``), over an in-memory store on a clock the tests move, then through the HTTP API and the real
kubectl: a bound pod deleted with DeleteOptions gets ``deletionTimestamp`` = now + its grace period and stays
(MODIFIED, not DELETED) until a delete with a grace period of 0; a later delete may only shorten the period; an
unbound or finished pod, or a grace period of 0, goes at once; a negative period is 1 s; finalizers still hold
the object; the store's own deletes (no DeleteOptions) stay immediate."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kss_sim.cluster.admission.deletion import DeleteOptions, parse_delete_options
from kss_sim.cluster.errors import BadRequest
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.kube.objects import Obj
from tests.cluster.factories import pod
from tests.conftest import KubectlRunner

T0 = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.at = T0

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
def store() -> ClusterStore:
    s = ClusterStore(None, clock=Clock())
    s.ensure_builtins()
    return s


def client_delete(grace: int | None = None) -> DeleteOptions:
    """DeleteOptions as a client sends them (``gracePeriodSeconds`` when given)."""
    return parse_delete_options({} if grace is None else {"gracePeriodSeconds": grace}, {})


def stamp(seconds: int) -> str:
    return (T0 + timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def bound(store: ClusterStore, name: str, **spec: Any) -> Obj:
    return store.create("Pod", pod(name, node_name="n1", **spec))


def events_of(store: ClusterStore, name: str) -> list[tuple[str, str | None, int | None]]:
    """(type, deletionTimestamp, deletionGracePeriodSeconds) of every change of pod ``name``."""
    return [
        (e.type, e.obj["metadata"].get("deletionTimestamp"), e.obj["metadata"].get("deletionGracePeriodSeconds"))
        for e in store.events_since(0)
        if e.kind == "Pod" and e.obj["metadata"]["name"] == name
    ]


def test_a_bound_pod_is_marked_for_its_grace_period_then_goes_at_zero(store: ClusterStore) -> None:
    bound(store, "web")
    marked = store.delete("Pod", "default", "web", options=client_delete())
    assert marked["metadata"]["deletionTimestamp"] == stamp(30)  # terminationGracePeriodSeconds defaults to 30
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30
    assert store.get("Pod", "default", "web") is not None
    # A longer (or equal) period changes nothing; a shorter one moves the deletion earlier.
    again = store.delete("Pod", "default", "web", options=client_delete(60))
    assert again["metadata"]["resourceVersion"] == marked["metadata"]["resourceVersion"]
    shorter = store.delete("Pod", "default", "web", options=client_delete(10))
    assert (shorter["metadata"]["deletionTimestamp"], shorter["metadata"]["deletionGracePeriodSeconds"]) == (
        stamp(10),
        10,
    )
    store.delete("Pod", "default", "web", options=client_delete(0))
    assert store.get("Pod", "default", "web") is None
    assert events_of(store, "web") == [
        ("ADDED", None, None),
        ("MODIFIED", stamp(30), 30),
        ("MODIFIED", stamp(10), 10),
        ("DELETED", stamp(10), 10),
    ]


def test_the_pods_own_period_a_negative_one_and_the_pods_that_go_at_once(store: ClusterStore) -> None:
    bound(store, "quick", terminationGracePeriodSeconds=5)
    assert store.delete("Pod", "default", "quick", options=client_delete())["metadata"]["deletionTimestamp"] == stamp(5)
    bound(store, "negative")
    marked = store.delete("Pod", "default", "negative", options=client_delete(-7))
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 1  # "treated as the value `1s`", not refused
    store.create("Pod", pod("unbound"))
    store.delete("Pod", "default", "unbound", options=client_delete())
    assert store.get("Pod", "default", "unbound") is None
    bound(store, "finished")
    current = store.get("Pod", "default", "finished")
    assert current is not None
    store.update_pod_status("default", "finished", {**current.get("status", {}), "phase": "Succeeded"})
    store.delete("Pod", "default", "finished", options=client_delete())
    assert store.get("Pod", "default", "finished") is None
    bound(store, "forced")
    store.delete("Pod", "default", "forced", options=client_delete(0))
    assert store.get("Pod", "default", "forced") is None
    # The store's own deletes (a node's pods, the controllers'): no DeleteOptions, immediate.
    bound(store, "internal")
    store.delete("Pod", "default", "internal")
    assert store.get("Pod", "default", "internal") is None


def test_finalizers_still_hold_a_pod_after_its_grace_period(store: ClusterStore) -> None:
    body = pod("held", node_name="n1")
    body["metadata"]["finalizers"] = ["example.com/keep"]
    store.create("Pod", body)
    marked = store.delete("Pod", "default", "held", options=client_delete())
    assert marked["metadata"]["deletionGracePeriodSeconds"] == 30
    assert marked["metadata"]["finalizers"] == ["example.com/keep"]
    ended = store.delete("Pod", "default", "held", options=client_delete(0))  # what the kubelet sends at the end
    assert (ended["metadata"]["deletionTimestamp"], ended["metadata"]["deletionGracePeriodSeconds"]) == (stamp(0), 0)
    assert store.get("Pod", "default", "held") is not None
    store.patch("Pod", "default", "held", {"metadata": {"finalizers": None}})
    assert store.get("Pod", "default", "held") is None


def test_a_terminating_pod_whose_last_finalizer_goes_still_waits_for_its_grace_period(store: ClusterStore) -> None:
    # shouldDeleteDuringUpdate: only an object with no grace period left goes when its last finalizer does.
    body = pod("tracked", node_name="n1")
    body["metadata"]["finalizers"] = ["batch.kubernetes.io/job-tracking"]
    store.create("Pod", body)
    store.delete("Pod", "default", "tracked", options=client_delete())
    store.patch("Pod", "default", "tracked", {"metadata": {"finalizers": None}})
    left = store.get("Pod", "default", "tracked")
    assert left is not None and left["metadata"]["deletionGracePeriodSeconds"] == 30
    assert not left["metadata"].get("finalizers")
    store.delete("Pod", "default", "tracked", options=client_delete(0))  # what the kubelet sends at the end
    assert store.get("Pod", "default", "tracked") is None


def test_a_grace_period_that_is_not_an_integer_is_the_decoders_400() -> None:
    with pytest.raises(BadRequest) as refused:
        parse_delete_options({"gracePeriodSeconds": "5"}, {})
    assert refused.value.message == (
        'DeleteOptions in version "v1" cannot be handled as a DeleteOptions: json: cannot unmarshal string into Go '
        "struct field DeleteOptions.gracePeriodSeconds of type int64"
    )
    assert parse_delete_options({}, {}, query_grace_period=4).grace_period_seconds == 4
    assert parse_delete_options({"gracePeriodSeconds": 2}, {}, query_grace_period=4).grace_period_seconds == 2


# ---------------------------------------------------------------------------------------------- kubectl


POD = """apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: grace}}
spec:
  nodeName: somewhere
  containers: [{{name: c, image: registry.k8s.io/pause:3.10}}]
"""


def test_kubectl_delete_leaves_a_pod_terminating_without_a_kubelet_and_force_removes_it(
    kubectl: KubectlRunner,
) -> None:
    """The session's server runs no kubelet: a pod deleted gracefully stays Terminating, as on a cluster whose
    node has no kubelet; ``--grace-period=0 --force`` removes it at once, a bad query parameter is Go's 400."""
    kubectl("create", "namespace", "grace")
    kubectl("apply", "-f", "-", input=POD.format(name="stays") + "---\n" + POD.format(name="forced"))
    assert 'pod "stays" deleted' in kubectl("delete", "pod", "stays", "-n", "grace", "--wait=false").stdout
    got = json.loads(kubectl("get", "pod", "stays", "-n", "grace", "-o", "json").stdout)
    assert got["metadata"]["deletionGracePeriodSeconds"] == 30
    assert "Terminating" in kubectl("get", "pod", "stays", "-n", "grace").stdout
    forced = kubectl("delete", "pod", "forced", "-n", "grace", "--grace-period=0", "--force")
    assert 'pod "forced" force deleted' in forced.stdout
    assert kubectl("get", "pod", "forced", "-n", "grace", check=False).returncode != 0
    # Shortened to 0 by kubectl too: the terminating pod goes.
    kubectl("delete", "pod", "stays", "-n", "grace", "--grace-period=0", "--force")
    assert kubectl("get", "pods", "-n", "grace", "-o", "name").stdout.strip() == ""
    raw = kubectl("delete", "--raw", "/api/v1/namespaces/grace/pods/none?gracePeriodSeconds=abc", check=False)
    assert raw.returncode != 0 and "strconv.ParseInt" in raw.stderr and "invalid syntax" in raw.stderr

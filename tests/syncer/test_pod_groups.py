"""PodGroups and Workloads over fakes: mirrored like any kind where both ends serve them, skipped (logged once)
where one does not, discovery retried while an end is unreachable."""

from __future__ import annotations

import logging
import time

import pytest

from syncer.backoff import Backoff
from syncer.discovery import available_kinds
from syncer.importer import run_import
from syncer.kinds import (
    DEFAULT,
    POD,
    POD_GROUP,
    POD_GROUP_V1ALPHA2,
    POD_GROUP_V1BETA1,
    WORKLOAD,
    WORKLOAD_V1ALPHA2,
    WORKLOAD_V1BETA1,
    parse_kinds,
)
from syncer.kube import Unavailable
from syncer.objects import Obj
from syncer.runner import Syncer, SyncOptions
from syncer.sink import ADDED, DELETED, MODIFIED, Event, Sink
from syncer.translate import SOURCE_UID_ANNOTATION
from tests.syncer.fakes import FakeSource, FakeTarget, page, pod


def pod_group(name: str, *, rv: str = "1", min_member: int = 2, phase: str = "Running") -> Obj:
    """A source PodGroup as the API returns it, status filled in by its controller."""
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": {
            "name": name,
            "namespace": "default",
            "uid": f"src-{name}",
            "resourceVersion": rv,
            "generation": 1,
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u"}],
        },
        "spec": {"minMember": min_member, "minResources": {"cpu": "2"}},
        "status": {"phase": phase, "running": min_member},
    }


def workload(name: str) -> Obj:
    """A source Workload."""
    return {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default", "uid": f"src-{name}", "resourceVersion": "1"},
        "spec": {
            "controllerRef": {"apiGroup": "batch", "kind": "Job", "name": name},
            "podGroups": [{"name": "workers", "policy": {"gang": {"minCount": 2}}}],
        },
    }


def test_the_new_kinds_come_before_pods_and_have_their_names() -> None:
    assert [k.name for k in DEFAULT][-9:] == [
        "PodGroup",
        "Workload",
        "Workload.v1alpha2",
        "PodGroup.v1alpha2",
        "Workload.v1beta1",
        "PodGroup.v1beta1",
        "ResourceClaimTemplate",
        "ResourceClaim",
        "Pod",
    ]
    # Workloads and PodGroups are asked for in every version; discovery keeps what both ends serve.
    assert parse_kinds("pg,workloads,pods") == (
        POD_GROUP,
        WORKLOAD,
        WORKLOAD_V1ALPHA2,
        POD_GROUP_V1ALPHA2,
        WORKLOAD_V1BETA1,
        POD_GROUP_V1BETA1,
        POD,
    )
    pod_groups = (POD_GROUP, POD_GROUP_V1ALPHA2, POD_GROUP_V1BETA1)
    assert parse_kinds("pgs") == parse_kinds("podgroups") == parse_kinds("PodGroup") == pod_groups
    assert parse_kinds("Workload.v1alpha2") == (WORKLOAD_V1ALPHA2,)
    assert parse_kinds("Workload.v1beta1") == (WORKLOAD_V1BETA1,)
    assert POD_GROUP_V1BETA1.path("ns", "g") == "/apis/scheduling.k8s.io/v1beta1/namespaces/ns/podgroups/g"
    assert (WORKLOAD_V1BETA1.object_kind, POD_GROUP_V1BETA1.object_kind) == ("Workload", "PodGroup")
    assert (WORKLOAD_V1ALPHA2.object_kind, POD_GROUP_V1ALPHA2.object_kind, POD_GROUP.object_kind) == (
        "Workload",
        "PodGroup",
        "PodGroup",
    )
    status_path = "/apis/scheduling.k8s.io/v1alpha2/namespaces/ns/podgroups/g/status"
    assert POD_GROUP_V1ALPHA2.path("ns", "g", "status") == status_path
    assert POD_GROUP.path("ns", "g", "status") == "/apis/scheduling.x-k8s.io/v1alpha1/namespaces/ns/podgroups/g/status"
    assert WORKLOAD.group_version_path == "/apis/scheduling.k8s.io/v1alpha1"
    assert POD_GROUP.optional and WORKLOAD.optional and not POD.optional


def test_pod_groups_and_workloads_are_mirrored_with_the_usual_rules() -> None:
    target = FakeTarget()
    sink = Sink(target)
    sink.apply(Event(ADDED, POD_GROUP, pod_group("gang"), initial=True))
    sink.apply(Event(ADDED, WORKLOAD, workload("train"), initial=True))
    mirrored = target.find("PodGroup", "gang", "default")
    assert mirrored is not None
    assert mirrored["metadata"]["annotations"] == {SOURCE_UID_ANNOTATION: "src-gang"}
    assert mirrored["spec"] == {"minMember": 2, "minResources": {"cpu": "2"}}
    assert [c[0] for c in target.writes()] == ["create", "create"], "a PodGroup's status is not copied"
    assert target.find("Workload", "train", "default") is not None

    # An update of the spec is patched through; a status-only change in the source writes nothing.
    sink.apply(Event(MODIFIED, POD_GROUP, pod_group("gang", rv="2", min_member=3)))
    sink.apply(Event(MODIFIED, POD_GROUP, pod_group("gang", rv="3", min_member=3, phase="Finished")))
    assert [c[0] for c in target.writes()] == ["create", "create", "patch"]
    assert target.find("PodGroup", "gang", "default")["spec"]["minMember"] == 3  # type: ignore[index]

    # Deleted in the simulator: left alone, not recreated by later source updates.
    del target.objects[("PodGroup", "default", "gang")]
    sink.apply(Event(MODIFIED, POD_GROUP, pod_group("gang", rv="4", min_member=4)))
    sink.apply(Event(MODIFIED, POD_GROUP, pod_group("gang", rv="5", min_member=5)))
    assert target.find("PodGroup", "gang", "default") is None
    # Deleted in the source: deleted in the simulator.
    sink.apply(Event(DELETED, WORKLOAD, workload("train")))
    assert target.find("Workload", "train", "default") is None


def test_v1_36_workloads_and_pod_groups_are_mirrored_without_the_pod_groups_status() -> None:
    target = FakeTarget()
    sink = Sink(target)
    source_workload: Obj = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "Workload",
        "metadata": {"name": "job", "namespace": "default", "uid": "src-job", "resourceVersion": "1"},
        "spec": {"podGroupTemplates": [{"name": "workers", "schedulingPolicy": {"gang": {"minCount": 3}}}]},
    }
    source_group: Obj = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "job-workers-0", "namespace": "default", "uid": "src-pg", "resourceVersion": "2"},
        "spec": {
            "podGroupTemplateRef": {"workload": {"workloadName": "job", "podGroupTemplateName": "workers"}},
            "schedulingPolicy": {"gang": {"minCount": 3}},
        },
        "status": {"conditions": [{"type": "PodGroupScheduled", "status": "True"}]},
    }
    sink.apply(Event(ADDED, WORKLOAD_V1ALPHA2, source_workload, initial=True))
    sink.apply(Event(ADDED, POD_GROUP_V1ALPHA2, source_group, initial=True))
    mirrored = target.find("PodGroup.v1alpha2", "job-workers-0", "default")
    assert mirrored is not None
    assert (mirrored["apiVersion"], mirrored["kind"]) == ("scheduling.k8s.io/v1alpha2", "PodGroup")
    assert mirrored["spec"] == source_group["spec"]
    assert [c[0] for c in target.writes()] == ["create", "create"], "a PodGroup's status is the scheduler's"
    workload_copy = target.find("Workload.v1alpha2", "job", "default")
    assert workload_copy is not None and workload_copy["kind"] == "Workload"


def test_kinds_an_end_does_not_serve_are_left_out_with_one_line(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="kss.syncer")
    # A v1.35 source: no v1alpha2 or v1beta1 kinds.
    source = FakeSource(
        unserved={"PodGroup", "Workload.v1alpha2", "PodGroup.v1alpha2", "Workload.v1beta1", "PodGroup.v1beta1"}
    )
    target = FakeTarget()
    target.unserved = {"Workload"}
    dra = {"DeviceClass", "ResourceSlice", "ResourceClaimTemplate", "ResourceClaim"}  # served by both fakes
    assert available_kinds(source, target, DEFAULT) == tuple(k for k in DEFAULT if not k.optional or k.name in dra)
    messages = [r.getMessage() for r in caplog.records]
    assert messages == [
        "the source does not serve podgroups (scheduling.x-k8s.io/v1alpha1): not mirroring them",
        "the simulator does not serve workloads (scheduling.k8s.io/v1alpha1): not mirroring them "
        "(start it with --feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1alpha1=true)",
        "the source does not serve workloads (scheduling.k8s.io/v1alpha2): not mirroring them",
        "the source does not serve podgroups (scheduling.k8s.io/v1alpha2): not mirroring them",
        "the source does not serve workloads (scheduling.k8s.io/v1beta1): not mirroring them",
        "the source does not serve podgroups (scheduling.k8s.io/v1beta1): not mirroring them",
    ]
    assert [r.levelname for r in caplog.records] == ["INFO", "WARNING", "INFO", "INFO", "INFO", "INFO"]
    # Kinds every cluster serves are never asked about.
    discovered = [c[1] for c in target.calls if c[0] == "discover"]
    assert discovered == ["DeviceClass", "ResourceSlice", "Workload", "ResourceClaimTemplate", "ResourceClaim"]


def test_a_v1_37_source_s_beta_workload_kinds_need_the_simulator_started_for_them(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="kss.syncer")
    wanted = (WORKLOAD_V1BETA1, POD_GROUP_V1BETA1, POD)
    target = FakeTarget()
    target.unserved = {"Workload.v1beta1", "PodGroup.v1beta1"}
    assert available_kinds(FakeSource(), target, wanted) == (POD,)
    assert [r.getMessage() for r in caplog.records] == [
        f"the simulator does not serve {plural} (scheduling.k8s.io/v1beta1): not mirroring them (start it with "
        "--feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true)"
        for plural in ("workloads", "podgroups")
    ]
    assert available_kinds(FakeSource(), FakeTarget(), wanted) == wanted


def test_discovery_is_retried_while_the_source_is_unreachable() -> None:
    source = FakeSource(discovery_failures=2)
    waits: list[int] = []

    def retry(_exc: Unavailable, failures: int) -> bool:
        waits.append(failures)
        return True

    assert available_kinds(source, FakeTarget(), (POD_GROUP, POD), retry=retry) == (POD_GROUP, POD)
    assert waits == [1, 2]
    with pytest.raises(Unavailable):
        available_kinds(FakeSource(discovery_failures=1), FakeTarget(), (POD_GROUP,))


def test_the_syncer_lists_and_watches_only_what_both_ends_serve() -> None:
    lists = {k.name: [[page(rv="9")]] for k in DEFAULT}
    lists["PodGroup"] = [[page(pod_group("gang"), rv="9")]]
    lists["Pod"] = [[page(pod("worker", labels={"scheduling.x-k8s.io/pod-group": "gang"}), rv="9")]]
    source = FakeSource(lists=lists, unserved={"Workload"}, discovery_failures=1)
    target = FakeTarget()
    syncer = Syncer(source, target, SyncOptions(backoff=Backoff(initial=0.01)))
    syncer.start()
    try:
        deadline = time.monotonic() + 10
        while target.find("Pod", "worker", "default") is None and time.monotonic() < deadline:
            time.sleep(0.02)
    finally:
        syncer.shutdown()
    assert WORKLOAD not in syncer.kinds and POD_GROUP in syncer.kinds
    assert "Workload" not in {c[0] for c in source.list_calls} | {c[0] for c in source.watch_calls}
    creates = [(kind, name) for verb, kind, name in target.calls if verb == "create"]
    assert creates == [("PodGroup", "gang"), ("Pod", "worker")], "the group before its pods"
    labels = target.find("Pod", "worker", "default")["metadata"]["labels"]  # type: ignore[index]
    assert labels == {"scheduling.x-k8s.io/pod-group": "gang"}


def test_the_one_shot_import_skips_what_the_simulator_does_not_serve() -> None:
    source = FakeSource(lists={"PodGroup": [[page(pod_group("gang"))]], "Workload": [[page(workload("train"))]]})
    target = FakeTarget()
    target.unserved = {"Workload"}
    report = run_import(source, target, kinds=(POD_GROUP, WORKLOAD))
    assert report.objects == {"PodGroup": 1}
    assert target.find("PodGroup", "gang", "default") is not None

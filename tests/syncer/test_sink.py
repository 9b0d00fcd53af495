"""The sink applies the mirroring rules to an in-memory simulator."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from syncer import translate
from syncer.backoff import Backoff
from syncer.kinds import NODE, POD
from syncer.metrics import Metrics
from syncer.sink import ADDED, DELETED, MODIFIED, SYNCED, Event, Sink
from syncer.state import MirrorState
from tests.syncer.fakes import FakeTarget, node, pod


def _sink(target: FakeTarget, sleeps: list[float] | None = None) -> Sink:
    record = sleeps if sleeps is not None else []
    return Sink(target, metrics=Metrics(), backoff=Backoff(initial=1, cap=4), sleep=record.append)


def _bump(obj: dict, rv: str) -> dict:
    new = copy.deepcopy(obj)
    new["metadata"]["resourceVersion"] = rv
    return new


def test_pod_created_while_syncing_arrives_unscheduled_without_owner_references() -> None:
    target = FakeTarget()
    sink = _sink(target)
    source = pod("web", node="n1")
    source["metadata"]["ownerReferences"] = [{"kind": "ReplicaSet", "name": "web", "uid": "rs"}]
    sink.apply(Event(ADDED, POD, source))
    sim = target.find("Pod", "web", "default")
    assert sim is not None
    assert "nodeName" not in sim["spec"] and "ownerReferences" not in sim["metadata"]
    assert sim["metadata"]["annotations"][translate.SOURCE_UID_ANNOTATION] == "src-web"
    assert sink.metrics.value("Pod", "created") == 1


def test_pod_running_at_start_arrives_bound_to_the_same_node_with_its_status() -> None:
    target = FakeTarget()
    sink = _sink(target)
    sink.apply(Event(ADDED, POD, pod("db", node="n7"), initial=True))
    sim = target.find("Pod", "db", "default")
    assert sim is not None
    assert sim["spec"]["nodeName"] == "n7"
    assert sim["status"]["phase"] == "Running"
    assert [c[0] for c in target.writes()] == ["create", "patch_status"]


def test_update_of_a_pod_scheduled_in_the_source_never_moves_it() -> None:
    target = FakeTarget()
    sink = _sink(target)
    sink.apply(Event(ADDED, POD, pod("web")))
    target.objects[("Pod", "default", "web")]["spec"]["nodeName"] = "sim-choice"
    writes = len(target.writes())
    bound_elsewhere = pod("web", node="source-choice", rv="2", labels={"new": "label"})
    sink.apply(Event(MODIFIED, POD, bound_elsewhere))
    assert target.objects[("Pod", "default", "web")]["spec"]["nodeName"] == "sim-choice"
    assert len(target.writes()) == writes, "ignored: not a single write"
    assert sink.metrics.value("Pod", "ignored_scheduled") == 1


def test_update_of_a_pending_pod_patches_only_what_changed() -> None:
    target = FakeTarget()
    sink = _sink(target)
    sink.apply(Event(ADDED, POD, pod("job", schedulingGates=[{"name": "quota"}])))
    stored = target.objects[("Pod", "default", "job")]
    stored["metadata"]["annotations"]["kube-scheduler-simulator.sigs.k8s.io/filter-result"] = "{}"
    ungated = pod("job", rv="2", labels={"tier": "gold"})
    sink.apply(Event(MODIFIED, POD, ungated))
    sim = target.objects[("Pod", "default", "job")]
    assert "schedulingGates" not in sim["spec"]
    assert sim["metadata"]["labels"] == {"tier": "gold"}
    assert "kube-scheduler-simulator.sigs.k8s.io/filter-result" in sim["metadata"]["annotations"]
    assert target.writes()[-1][0] == "patch"


def test_node_updates_carry_status() -> None:
    target = FakeTarget()
    sink = _sink(target)
    sink.apply(Event(ADDED, NODE, node("n1", cpu="4"), initial=True))
    sink.apply(Event(MODIFIED, NODE, node("n1", cpu="8", rv="2")))
    assert target.objects[("Node", "", "n1")]["status"]["allocatable"]["cpu"] == "8"
    assert sink.metrics.value("Node", "status_updated") == 1


def test_delete_in_the_source_deletes_in_the_simulator_and_not_found_is_fine() -> None:
    target = FakeTarget()
    sink = _sink(target)
    sink.apply(Event(ADDED, POD, pod("a")))
    sink.apply(Event(ADDED, POD, pod("b")))
    sink.apply(Event(DELETED, POD, pod("a")))
    assert target.find("Pod", "a", "default") is None
    del target.objects[("Pod", "default", "b")]
    sink.apply(Event(DELETED, POD, pod("b")))  # already gone: no error
    assert sink.metrics.value("Pod", "failed") == 0
    assert len(sink.state) == 0


def test_simulator_side_deletion_is_never_recreated_and_later_updates_are_ignored() -> None:
    target = FakeTarget()
    sink = _sink(target)
    sink.apply(Event(ADDED, POD, pod("victim")))
    del target.objects[("Pod", "default", "victim")]  # preempted, or deleted by a user
    sink.apply(Event(MODIFIED, POD, pod("victim", rv="2", labels={"x": "1"})))
    sink.apply(Event(MODIFIED, POD, pod("victim", rv="3", labels={"x": "2"})))
    sink.apply(Event(ADDED, POD, pod("victim", rv="4")))  # a re-list after a gap
    assert target.find("Pod", "victim", "default") is None
    assert sink.metrics.value("Pod", "tombstoned") == 1
    assert sink.metrics.value("Pod", "ignored_deleted_in_simulator") == 2
    sink.apply(Event(DELETED, POD, pod("victim", rv="5")))
    assert len(sink.state) == 0, "the tombstone goes when the source deletes the object"


def test_already_exists_is_handled_by_the_update_rules() -> None:
    target = FakeTarget()
    target.create(POD, {"metadata": {"name": "web", "namespace": "default"}, "spec": {"nodeName": "sim-node"}})
    sink = _sink(target)
    sink.apply(Event(ADDED, POD, pod("web", labels={"app": "web"})))
    sim = target.objects[("Pod", "default", "web")]
    assert sim["spec"]["nodeName"] == "sim-node"
    assert sim["metadata"]["labels"] == {"app": "web"}
    assert sim["metadata"]["annotations"][translate.SOURCE_UID_ANNOTATION] == "src-web"
    assert sink.metrics.value("Pod", "adopted") == 1
    # A scheduled pod that already exists is adopted but left alone.
    target.create(POD, {"metadata": {"name": "db", "namespace": "default", "labels": {"old": "1"}}, "spec": {}})
    sink.apply(Event(ADDED, POD, pod("db", node="n1"), initial=True))
    assert target.objects[("Pod", "default", "db")]["metadata"]["labels"] == {"old": "1"}


def test_synced_deletes_what_vanished_from_the_source_during_a_gap() -> None:
    target = FakeTarget()
    sink = _sink(target)
    for name in ("keep", "gone"):
        sink.apply(Event(ADDED, POD, pod(name)))
    sink.apply(Event(SYNCED, POD, present=frozenset({"src-keep"})))
    assert target.find("Pod", "keep", "default") is not None
    assert target.find("Pod", "gone", "default") is None


def test_unreachable_simulator_is_retried_with_capped_backoff_without_losing_the_event() -> None:
    target = FakeTarget()
    sleeps: list[float] = []
    sink = _sink(target, sleeps)
    target.down = 5
    sink.apply(Event(ADDED, POD, pod("a")))
    sink.apply(Event(ADDED, POD, pod("b")))
    assert sleeps == [1, 2, 4, 4, 4]
    assert [c[2] for c in target.writes()] == ["a", "b"], "applied once each, in order"
    assert sink.metrics.value("Pod", "retried") == 5


def test_rejected_object_is_counted_and_skipped() -> None:
    target = FakeTarget()
    target.reject.add("bad")
    sink = _sink(target)
    sink.apply(Event(ADDED, POD, pod("bad")))
    sink.apply(Event(ADDED, POD, pod("good")))
    assert sink.metrics.value("Pod", "failed") == 1
    assert target.find("Pod", "good", "default") is not None


def test_seed_adopts_earlier_mirrors_so_deletions_during_downtime_reach_the_simulator() -> None:
    target = FakeTarget()
    first = _sink(target)
    first.apply(Event(ADDED, POD, pod("stays")))
    first.apply(Event(ADDED, POD, pod("deleted-while-down")))
    target.create(POD, {"metadata": {"name": "user-made", "namespace": "default"}, "spec": {}})
    restarted = _sink(target)
    assert restarted.seed((POD,)) == 2
    restarted.apply(Event(ADDED, POD, pod("stays", rv="9"), initial=True))
    restarted.apply(Event(SYNCED, POD, present=frozenset({"src-stays"})))
    names = sorted(k[2] for k in target.objects)
    assert names == ["stays", "user-made"]


def test_simulator_side_deletions_stay_deleted_across_a_syncer_restart(tmp_path: Path) -> None:
    tombstones = tmp_path / "state.json"
    target = FakeTarget()
    first = Sink(target, metrics=Metrics(), backoff=Backoff(initial=1, cap=4), sleep=[].append,
                 state=MirrorState(tombstones))  # fmt: skip
    first.apply(Event(ADDED, POD, pod("web")))
    del target.objects[("Pod", "default", "web")]  # a user deletes it in the simulator
    first.apply(Event(MODIFIED, POD, pod("web", rv="2", labels={"x": "1"})))
    assert tombstones.exists()

    # A new syncer process re-lists the source: the pod is still there, but must not come back.
    restarted = Sink(target, metrics=Metrics(), backoff=Backoff(initial=1, cap=4), sleep=[].append,
                     state=MirrorState(tombstones))  # fmt: skip
    restarted.apply(Event(ADDED, POD, pod("web", rv="3", labels={"x": "1"}), initial=True))
    assert target.find("Pod", "web", "default") is None
    # Once the source deletes it too, the tombstone is gone from the file as well.
    restarted.apply(Event(DELETED, POD, pod("web", rv="4")))
    assert MirrorState(tombstones).get("src-web") is None


def _restarted(target: FakeTarget, state_file: Path) -> Sink:
    """A new syncer process over the same simulator and state file, seeded as ``Syncer.start`` seeds it."""
    sink = Sink(target, metrics=Metrics(), backoff=Backoff(initial=1, cap=4), sleep=[].append,
                state=MirrorState(state_file))  # fmt: skip
    sink.seed((POD,))
    return sink


def test_a_simulator_side_deletion_whose_source_copy_never_changes_is_tombstoned_at_the_next_start(
    tmp_path: Path,
) -> None:
    state_file = tmp_path / "state.json"
    target = FakeTarget()
    first = Sink(target, metrics=Metrics(), backoff=Backoff(initial=1, cap=4), sleep=[].append,
                 state=MirrorState(state_file))  # fmt: skip
    first.apply(Event(ADDED, POD, pod("quiet")))
    first.apply(Event(ADDED, POD, pod("kept")))
    first.state.flush()
    saved = json.loads(state_file.read_text())
    assert saved["version"] == 2 and set(saved["mirrors"]) == {"src-quiet", "src-kept"}
    assert not list(tmp_path.glob("*.tmp")), "written through a temporary file, renamed into place"
    del target.objects[("Pod", "default", "quiet")]  # a user deletes it in the simulator; the source never changes

    restarted = _restarted(target, state_file)
    assert restarted.metrics.value("Pod", "tombstoned") == 1
    assert json.loads(state_file.read_text())["mirrors"]["src-quiet"]["deletedInSimulator"] is True
    # The relist of the source still has both: the deleted one is not created again, the other is left as it is.
    restarted.apply(Event(ADDED, POD, pod("quiet", rv="5"), initial=True))
    restarted.apply(Event(ADDED, POD, pod("kept", rv="5"), initial=True))
    restarted.apply(Event(SYNCED, POD, present=frozenset({"src-quiet", "src-kept"})))
    assert target.find("Pod", "quiet", "default") is None
    assert target.find("Pod", "kept", "default") is not None
    assert restarted.metrics.value("Pod", "ignored_deleted_in_simulator") == 1


def test_a_pod_scheduled_in_the_source_and_deleted_in_the_simulator_stays_deleted_across_restarts(
    tmp_path: Path,
) -> None:
    state_file = tmp_path / "state.json"
    target = FakeTarget()
    first = Sink(target, metrics=Metrics(), backoff=Backoff(initial=1, cap=4), sleep=[].append,
                 state=MirrorState(state_file))  # fmt: skip
    first.apply(Event(ADDED, POD, pod("web")))
    del target.objects[("Pod", "default", "web")]
    # The source binds it and relabels it: ignored as "scheduled in the source", so the deletion goes unnoticed.
    first.apply(Event(MODIFIED, POD, pod("web", node="n1", rv="2", labels={"x": "1"})))
    assert first.metrics.value("Pod", "ignored_scheduled") == 1
    first.state.flush()

    for _ in range(2):  # and it stays a tombstone over a second restart
        restarted = _restarted(target, state_file)
        restarted.apply(Event(ADDED, POD, pod("web", node="n1", rv="3", labels={"x": "1"}), initial=True))
        assert target.find("Pod", "web", "default") is None


def test_changes_are_written_within_the_save_interval_and_tombstones_at_once(tmp_path: Path) -> None:
    state_file = tmp_path / "state.json"
    now = [0.0]
    state = MirrorState(state_file, clock=lambda: now[0])
    target = FakeTarget()
    sink = Sink(target, metrics=Metrics(), backoff=Backoff(initial=1, cap=4), sleep=[].append, state=state)
    sink.apply(Event(ADDED, POD, pod("a")))
    assert not state_file.exists(), "a create is not written by itself..."
    now[0] = 1.5
    sink.apply(Event(ADDED, POD, pod("b")))
    assert set(json.loads(state_file.read_text())["mirrors"]) == {"src-a", "src-b"}, "...but within the interval"
    del target.objects[("Pod", "default", "a")]
    sink.apply(Event(MODIFIED, POD, pod("a", rv="2", labels={"x": "1"})))
    assert json.loads(state_file.read_text())["mirrors"]["src-a"]["deletedInSimulator"] is True


def test_a_state_file_of_the_first_format_is_read_as_tombstones(tmp_path: Path) -> None:
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps({"src-web": ["Pod", "default", "web"]}))
    target = FakeTarget()
    sink = _restarted(target, state_file)
    sink.apply(Event(ADDED, POD, pod("web", rv="3"), initial=True))
    assert target.find("Pod", "web", "default") is None

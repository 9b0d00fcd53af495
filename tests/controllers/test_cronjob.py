"""The CronJob controller (app/controllers/cronjob.py) over an in-memory ClusterStore on a clock the test moves:
Jobs named by their scheduled minute with the owner and scheduled-timestamp annotation, Allow/Forbid/Replace,
startingDeadlineSeconds and missed schedules, suspend, time zones, history limits and status as upstream."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kss_sim.cluster.admission.cron import parse_standard
from kss_sim.cluster.storage.store import ClusterStore
from kss_sim.controllers.cronjob import CronJobController, Schedule, most_recent_schedule_time
from kss_sim.kube.objects import Obj

START = datetime(2026, 1, 1, 12, 0, 30, tzinfo=UTC)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def cronjob(name: str, schedule: str, **spec: Any) -> Obj:
    return {
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "metadata": {"labels": {"team": "a"}, "annotations": {"note": "x"}},
                "spec": {
                    "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
                },
            },
            **spec,
        },
    }


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def store(clock: Clock) -> ClusterStore:
    return ClusterStore(None, clock=clock)


@pytest.fixture
def cron(store: ClusterStore, clock: Clock) -> Iterator[CronJobController]:
    controller = CronJobController(store, clock=clock)
    controller.start()
    yield controller
    controller.stop()


def at(clock: Clock, cron: CronJobController, when: datetime) -> None:
    """Move the clock and let the controller act on its timers."""
    clock.now = when
    cron.poke()
    assert cron.wait_idle()


def job_names(store: ClusterStore) -> list[str]:
    return [j["metadata"]["name"] for j in store.list("Job", "default")[0]]


def status_of(store: ClusterStore, name: str) -> Obj:
    got = store.get("CronJob", "default", name)
    assert got is not None
    return dict(got.get("status") or {})


def finish_job(store: ClusterStore, name: str, kind: str, when: datetime) -> None:
    stamp = when.strftime("%Y-%m-%dT%H:%M:%SZ")
    status: Obj = {
        "startTime": stamp,
        "conditions": [{"type": kind, "status": "True", "lastTransitionTime": stamp, "reason": "x", "message": "x"}],
    }
    if kind == "Complete":
        status["completionTime"] = stamp
    store.patch("Job", "default", name, {"status": status}, "merge", subresource="status")


def reasons(store: ClusterStore, name: str) -> list[str]:
    return [
        e["reason"]
        for e in store.list("Event", "default")[0]
        if e["involvedObject"]["kind"] == "CronJob" and e["involvedObject"]["name"] == name
    ]


def minute(m: int) -> datetime:
    return datetime(2026, 1, 1, 12, m, 0, tzinfo=UTC)


def test_creates_a_job_per_schedule_named_by_its_minute(
    store: ClusterStore, cron: CronJobController, clock: Clock
) -> None:
    created = store.create("CronJob", cronjob("tick", "*/5 * * * *"))
    assert cron.wait_idle()
    assert job_names(store) == []  # 12:00:30: the next run is 12:05
    at(clock, cron, minute(4) + timedelta(seconds=59))
    assert job_names(store) == []
    at(clock, cron, minute(5) + timedelta(seconds=1))
    expected = f"tick-{int(minute(5).timestamp()) // 60}"
    assert job_names(store) == [expected]
    job = store.get("Job", "default", expected)
    assert job is not None
    assert job["metadata"]["labels"] == {"team": "a"}
    assert job["metadata"]["annotations"] == {
        "note": "x",
        "batch.kubernetes.io/cronjob-scheduled-timestamp": "2026-01-01T12:05:00Z",
    }
    ref = job["metadata"]["ownerReferences"][0]
    assert (ref["kind"], ref["name"], ref["uid"], ref["controller"]) == (
        "CronJob",
        "tick",
        created["metadata"]["uid"],
        True,
    )
    status = status_of(store, "tick")
    assert status["lastScheduleTime"] == "2026-01-01T12:05:00Z"
    assert [(a["kind"], a["name"], a["uid"]) for a in status["active"]] == [("Job", expected, job["metadata"]["uid"])]
    finish_job(store, expected, "Complete", minute(6))
    assert cron.wait_idle()
    status = status_of(store, "tick")
    assert "active" not in status and status["lastSuccessfulTime"] == "2026-01-01T12:06:00Z"
    assert reasons(store, "tick")[:2] == ["SuccessfulCreate", "SawCompletedJob"]
    at(clock, cron, minute(10) + timedelta(seconds=1))
    assert len(job_names(store)) == 2


def test_forbid_skips_a_run_while_one_is_active_and_replace_deletes_it(
    store: ClusterStore, cron: CronJobController, clock: Clock
) -> None:
    store.create("CronJob", cronjob("solo", "* * * * *", concurrencyPolicy="Forbid"))
    store.create("CronJob", cronjob("swap", "* * * * *", concurrencyPolicy="Replace"))
    at(clock, cron, minute(1) + timedelta(seconds=1))
    at(clock, cron, minute(2) + timedelta(seconds=1))
    names = job_names(store)
    assert [n for n in names if n.startswith("solo-")] == [f"solo-{int(minute(1).timestamp()) // 60}"]
    assert "JobAlreadyActive" in reasons(store, "solo")
    assert [n for n in names if n.startswith("swap-")] == [f"swap-{int(minute(2).timestamp()) // 60}"]
    assert reasons(store, "swap").count("SuccessfulDelete") == 1
    assert [a["name"] for a in status_of(store, "swap")["active"]] == [f"swap-{int(minute(2).timestamp()) // 60}"]


def test_allow_runs_concurrently(store: ClusterStore, cron: CronJobController, clock: Clock) -> None:
    store.create("CronJob", cronjob("many", "* * * * *"))
    at(clock, cron, minute(1) + timedelta(seconds=1))
    at(clock, cron, minute(2) + timedelta(seconds=1))
    assert len(status_of(store, "many")["active"]) == 2


def test_a_missed_start_older_than_the_deadline_is_not_run(
    store: ClusterStore, cron: CronJobController, clock: Clock
) -> None:
    store.create("CronJob", cronjob("late", "0 * * * *", startingDeadlineSeconds=60))
    cron.stop()  # the controller is down at 13:00
    clock.now = datetime(2026, 1, 1, 13, 5, tzinfo=UTC)
    cron.start()
    assert cron.wait_idle()
    assert job_names(store) == []
    # Without a deadline the most recent missed run starts late, once.
    store.patch("CronJob", "default", "late", {"spec": {"startingDeadlineSeconds": None}})
    assert cron.wait_idle()
    assert job_names(store) == [f"late-{int(datetime(2026, 1, 1, 13, 0, tzinfo=UTC).timestamp()) // 60}"]


def test_too_many_missed_start_times_are_reported(store: ClusterStore, cron: CronJobController, clock: Clock) -> None:
    store.create("CronJob", cronjob("busy", "* * * * *"))
    cron.stop()
    clock.now = START + timedelta(minutes=150)
    cron.start()
    assert cron.wait_idle()
    assert "TooManyMissedTimes" in reasons(store, "busy")
    assert len(job_names(store)) == 1  # only the most recent one starts
    event = next(e for e in store.list("Event", "default")[0] if e["reason"] == "TooManyMissedTimes")
    assert event["type"] == "Warning"
    assert event["message"] == (
        "too many missed start times: 150. Set or decrease .spec.startingDeadlineSeconds or check clock skew"
    )


def test_suspended_cronjob_starts_nothing(store: ClusterStore, cron: CronJobController, clock: Clock) -> None:
    store.create("CronJob", cronjob("off", "* * * * *", suspend=True))
    at(clock, cron, minute(3))
    assert job_names(store) == []
    store.patch("CronJob", "default", "off", {"spec": {"suspend": False}})
    assert cron.wait_idle()
    assert job_names(store) == [f"off-{int(minute(3).timestamp()) // 60}"]


def test_time_zone_decides_the_wall_clock_and_the_annotation(
    store: ClusterStore, cron: CronJobController, clock: Clock
) -> None:
    # 09:00 in Tokyo is 00:00 UTC.
    store.create("CronJob", cronjob("tokyo", "0 9 * * *", timeZone="Asia/Tokyo"))
    at(clock, cron, datetime(2026, 1, 2, 0, 0, 1, tzinfo=UTC))
    names = job_names(store)
    assert names == [f"tokyo-{int(datetime(2026, 1, 2, tzinfo=UTC).timestamp()) // 60}"]
    job = store.get("Job", "default", names[0])
    assert job is not None
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == (
        "2026-01-02T09:00:00+09:00"
    )


def test_history_limits_delete_the_oldest_finished_jobs(
    store: ClusterStore, cron: CronJobController, clock: Clock
) -> None:
    store.create("CronJob", cronjob("hist", "* * * * *", successfulJobsHistoryLimit=1, failedJobsHistoryLimit=1))
    for m in range(1, 5):
        at(clock, cron, minute(m) + timedelta(seconds=1))
        finish_job(store, f"hist-{int(minute(m).timestamp()) // 60}", "Complete" if m % 2 else "Failed", minute(m))
        assert cron.wait_idle()
    assert job_names(store) == [f"hist-{int(minute(m).timestamp()) // 60}" for m in (3, 4)]
    assert reasons(store, "hist").count("SuccessfulDelete") == 2


def test_missed_schedule_arithmetic_matches_upstream() -> None:
    hourly = Schedule(parse_standard("@hourly"), None)
    cj: Obj = {"metadata": {"creationTimestamp": "2026-01-01T10:30:00Z"}, "spec": {}, "status": {}}
    now = datetime(2026, 1, 1, 13, 10, tzinfo=UTC)
    _, recent, missed = most_recent_schedule_time(cj, now, hourly, with_deadline=True)
    assert recent == datetime(2026, 1, 1, 13, 0, tzinfo=UTC) and missed == 3
    with pytest.raises(ValueError, match="less than 1 second"):
        never = Schedule(parse_standard("59 23 31 2 *"), None)
        most_recent_schedule_time(cj, now + timedelta(days=800), never, with_deadline=False)

"""The pod timings a live replay sends, scaled to its speed (``live_timings``): grace periods, tolerationSeconds and
the admission's default not-ready/unreachable tolerations written out scaled, in whole seconds and at least 1."""

from __future__ import annotations

from typing import Any

from kss_sim.replay.live_timings import SPEED_ANNOTATION, scale_pod_timings, scaled_for, wall_seconds


def template(**spec: Any) -> dict[str, Any]:
    return {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": [{"name": "c", "image": "i"}], **spec}}


def test_a_pods_grace_period_and_tolerations_are_divided_by_the_speed() -> None:
    own = [
        {"key": "maintenance", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 100},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0},
    ]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, **template(tolerations=own)}
    scale_pod_timings(pod, 60)
    assert pod["spec"]["terminationGracePeriodSeconds"] == 1  # 30 s by default, / 60, at least 1
    assert [(t["key"], t["tolerationSeconds"]) for t in pod["spec"]["tolerations"]] == [
        ("maintenance", 2),
        ("node.kubernetes.io/unreachable", 0),  # at once stays at once; the pod's own, so no default added
        ("node.kubernetes.io/not-ready", 5),
    ]
    assert scaled_for(pod, 60) and not scaled_for(pod, 10)
    assert own[0]["tolerationSeconds"] == 100  # the workload's manifest is not touched


def test_workload_templates_are_scaled_and_a_daemonsets_pods_keep_tolerating_for_ever() -> None:
    deployment = {"kind": "Deployment", "spec": {"template": template(terminationGracePeriodSeconds=45)}}
    cron = {"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": template()}}}}
    daemons = {"kind": "DaemonSet", "spec": {"template": template()}}
    for obj in (deployment, cron, daemons):
        scale_pod_timings(obj, 10)
    assert deployment["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] == 5
    assert deployment["spec"]["template"]["metadata"]["annotations"] == {SPEED_ANNOTATION: "10"}
    job_pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    assert job_pod["terminationGracePeriodSeconds"] == 3
    assert {t["tolerationSeconds"] for t in job_pod["tolerations"]} == {30}
    assert daemons["spec"]["template"]["spec"]["tolerations"] == []


def test_at_speed_one_and_for_other_kinds_nothing_changes() -> None:
    pod = {"kind": "Pod", "metadata": {}, **template()}
    service = {"kind": "Service", "spec": {"template": template()}}
    scale_pod_timings(pod, 1)
    scale_pod_timings(service, 5)
    assert pod == {"kind": "Pod", "metadata": {}, **template()}
    assert service == {"kind": "Service", "spec": {"template": template()}}
    assert (wall_seconds(0, 10), wall_seconds(-5, 10), wall_seconds(1, 10), wall_seconds(31, 10)) == (0, -5, 1, 4)

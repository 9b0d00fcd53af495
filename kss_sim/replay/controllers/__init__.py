"""Workload controllers for a replay (Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob) on the virtual
clock: one module per kind, ``manager.py`` the entry the engine calls."""

from kss_sim.replay.controllers.base import ReplayActions, WorkloadError
from kss_sim.replay.controllers.manager import WorkloadControllers, check_workload_object

__all__ = ["ReplayActions", "WorkloadControllers", "WorkloadError", "check_workload_object"]

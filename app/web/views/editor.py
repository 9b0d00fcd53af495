"""The YAML editor: starter manifests, and creating, replacing and deleting objects through the store."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.cluster.errors import ApiError, Invalid
from app.cluster.kinds import KINDS, KindInfo

Obj = dict[str, Any]


@dataclass(slots=True)
class FieldProblem:
    """One field error shown under the editor."""

    field: str
    message: str


@dataclass(slots=True)
class EditOutcome:
    """The result of submitting YAML: the saved object, or why nothing was saved."""

    ok: bool
    kind: str = ""
    namespace: str = ""
    name: str = ""
    message: str = ""
    reason: str = ""
    code: int = 200
    problems: list[FieldProblem] = field(default_factory=list)
    obj: Obj | None = None


@dataclass(frozen=True, slots=True)
class Target:
    """Which object an edit form replaces."""

    kind: str
    namespace: str
    name: str


TEMPLATES: dict[str, str] = {
    "Node": """apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels:
    kubernetes.io/hostname: node-1
    topology.kubernetes.io/zone: zone-a
spec: {}
status:
  capacity:
    cpu: "4"
    memory: 32Gi
    pods: "110"
  allocatable:
    cpu: "4"
    memory: 32Gi
    pods: "110"
""",
    "Pod": """apiVersion: v1
kind: Pod
metadata:
  name: web-1
  namespace: default
  labels:
    app: web
spec:
  containers:
  - name: app
    image: nginx:1.27
    resources:
      requests:
        cpu: 500m
        memory: 1Gi
""",
    "Namespace": """apiVersion: v1
kind: Namespace
metadata:
  name: team-a
""",
    "PriorityClass": """apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata:
  name: high-priority
value: 1000
globalDefault: false
description: Pods that may preempt others.
""",
    "PersistentVolume": """apiVersion: v1
kind: PersistentVolume
metadata:
  name: pv-1
spec:
  capacity:
    storage: 10Gi
  accessModes: [ReadWriteOnce]
  storageClassName: standard
  hostPath:
    path: /data/pv-1
""",
    "PersistentVolumeClaim": """apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data-1
  namespace: default
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: standard
  resources:
    requests:
      storage: 5Gi
""",
    "StorageClass": """apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: standard
provisioner: kubernetes.io/no-provisioner
volumeBindingMode: WaitForFirstConsumer
""",
    "PodDisruptionBudget": """apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web-pdb
  namespace: default
spec:
  minAvailable: 1
  selector:
    matchLabels:
      app: web
""",
    "CSINode": """apiVersion: storage.k8s.io/v1
kind: CSINode
metadata:
  name: node-1
spec:
  drivers:
  - name: ebs.csi.aws.com
    nodeID: node-1
    allocatable:
      count: 25
""",
    "Event": """apiVersion: v1
kind: Event
metadata:
  name: note-1
  namespace: default
involvedObject:
  kind: Pod
  name: web-1
  namespace: default
reason: Note
message: Written from the web UI.
type: Normal
""",
}


def editable_kinds() -> list[KindInfo]:
    """Every kind the virtual cluster serves, in registry order."""
    return list(KINDS)


def _problems_of(exc: ApiError) -> list[FieldProblem]:
    if isinstance(exc, Invalid):
        return [FieldProblem(c.field, c.message) for c in exc.causes]
    causes = (exc.details or {}).get("causes") or []
    return [FieldProblem(str(c.get("field") or ""), str(c.get("message") or "")) for c in causes]


def _failure(exc: ApiError, kind: str = "", namespace: str = "", name: str = "") -> EditOutcome:
    return EditOutcome(False, kind, namespace, name, exc.message, exc.reason, exc.code, _problems_of(exc))


def _bad(message: str, field_path: str = "", reason: str = "BadRequest") -> EditOutcome:
    problems = [FieldProblem(field_path, message)] if field_path else []
    return EditOutcome(False, message=message, reason=reason, code=400, problems=problems)

"""GPU fragmentation as the FGD paper measures it (Weng et al., USENIX ATC'23, "Beware of Fragmentation: Scheduling
GPU-Sharing Workloads with Fragmentation Gradient Descent", section 3).

Fragmentation is relative to a *target workload*: the tasks expected to arrive, as a distribution of shapes (CPU,
memory, number of GPUs, share of each GPU, allowed GPU models) weighted by popularity. For one node and one task
shape, the paper's case analysis decides which of the node's free GPU capacity that task cannot use:

- the task asks for no GPU (``x_satisfied`` / ``x_lack_cpu``): every free GPU is a fragment to it;
- the node's GPU model is not one the task accepts (``no_access``): every free GPU is a fragment;
- the node lacks GPUs for it (``q2_lack_gpu``), CPU/memory for it (``q4_lack_cpu``) or both (``q1_lack_both``): every
  free GPU is a fragment;
- the task fits (``q3_satisfied``): only the GPUs whose free share is smaller than the task's per-GPU share are.

A node's fragmentation is the popularity-weighted sum over the target's shapes, the cluster's the sum over nodes.
Amounts are in milli-GPUs here (1000 = one GPU) as in the paper's simulator; callers report GPUs.

The target workload follows the paper's experiments (hkust-adsl/kubernetes-scheduler-simulator, typicalPodsConfig
``isInvolvedCpuPods: true, podPopularityThreshold: 95``): every pod counts, CPU-only ones included; shapes are taken
from the most popular down until they cover 95 % of the pods, and their weights renormalised to sum to 1.
Unlike that simulator, a task also lacks room when the node's free memory is short (kube-scheduler checks both).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

MILLI = 1000  # one whole GPU
DEFAULT_POPULARITY_THRESHOLD = 0.95

# The paper's cases.
Q1_LACK_BOTH = "q1_lack_both"
Q2_LACK_GPU = "q2_lack_gpu"
Q3_SATISFIED = "q3_satisfied"
Q4_LACK_CPU = "q4_lack_cpu"
X_SATISFIED = "x_satisfied"
X_LACK_CPU = "x_lack_cpu"
NO_ACCESS = "no_access"


@dataclass(frozen=True, slots=True, order=True)
class TaskShape:
    """What a task asks for: CPU (milli), memory (bytes), ``gpus`` devices each with ``milli_gpu`` of its capacity
    (1000 = the whole device), and the GPU models it accepts (empty: any)."""

    milli_cpu: int = 0
    memory: int = 0
    gpus: int = 0
    milli_gpu: int = 0
    models: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class TargetTask:
    shape: TaskShape
    weight: float  # its popularity, the target's weights sum to 1


@dataclass(frozen=True, slots=True)
class NodeRoom:
    """What a node has left: CPU (milli), memory (bytes), each GPU's free share (0..1000) and its GPU model."""

    milli_cpu: int
    memory: int
    gpu_free: tuple[int, ...] = ()
    model: str = ""

    @property
    def free_milli_gpu(self) -> int:
        return sum(self.gpu_free)


@dataclass
class TargetWorkload:
    """The target workload: shapes and their weights, with a cache of per-node fragment amounts."""

    tasks: list[TargetTask]
    _cache: dict[NodeRoom, float] = field(default_factory=dict, repr=False)

    def node_fragmentation(self, room: NodeRoom) -> float:
        """F_n(M): the node's fragment amount in milli-GPUs (memoised: nodes in the same state share the answer)."""
        try:
            return self._cache[room]
        except KeyError:
            pass
        if not room.gpu_free or room.free_milli_gpu == 0:
            amount = 0.0
        else:
            amount = sum(task.weight * fragment(room, task.shape) for task in self.tasks)
        if len(self._cache) > 100_000:
            self._cache.clear()
        self._cache[room] = amount
        return amount


def accessible(room: NodeRoom, task: TaskShape) -> bool:
    """The node's GPU model is one the task accepts (a task without a constraint accepts any; a node without GPUs
    has no model and suits no constrained task)."""
    if not task.models:
        return True
    return bool(room.model) and room.model in task.models


def gpus_fit(room: NodeRoom, task: TaskShape) -> bool:
    """At least ``task.gpus`` of the node's GPUs each have ``task.milli_gpu`` free."""
    return sum(1 for free in room.gpu_free if free >= task.milli_gpu) >= task.gpus


def classify(room: NodeRoom, task: TaskShape) -> str:
    """The paper's case for this node and task (``GetNodePodFrag``)."""
    host_fits = room.milli_cpu >= task.milli_cpu and room.memory >= task.memory
    if task.gpus == 0 or task.milli_gpu == 0:
        return X_SATISFIED if host_fits else X_LACK_CPU
    if not accessible(room, task):
        return NO_ACCESS
    if gpus_fit(room, task):
        return Q3_SATISFIED if host_fits else Q4_LACK_CPU
    return Q2_LACK_GPU if host_fits else Q1_LACK_BOTH


def fragment(room: NodeRoom, task: TaskShape) -> int:
    """F_n(m) in milli-GPUs: the free GPU capacity of the node that this task cannot use."""
    if classify(room, task) == Q3_SATISFIED:
        return sum(free for free in room.gpu_free if free < task.milli_gpu)
    return room.free_milli_gpu


def cluster_fragmentation(rooms: Iterable[NodeRoom], target: TargetWorkload) -> float:
    """F(M) in milli-GPUs: the sum of every node's fragment amount."""
    return sum(target.node_fragmentation(room) for room in rooms)


def target_workload(
    shapes: Iterable[TaskShape], *, popularity_threshold: float = DEFAULT_POPULARITY_THRESHOLD
) -> TargetWorkload:
    """The target workload of these tasks (one shape per task): the most popular shapes covering at least
    ``popularity_threshold`` of the tasks, weights renormalised. Ties in popularity are broken by the shape's order,
    so the result does not depend on the order of the tasks."""
    counts = Counter(shapes)
    total = sum(counts.values())
    if total == 0:
        return TargetWorkload([])
    ranked: Sequence[tuple[TaskShape, int]] = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    kept: list[tuple[TaskShape, int]] = []
    covered = 0
    for shape, count in ranked:
        if covered >= popularity_threshold * total:
            break
        kept.append((shape, count))
        covered += count
    return TargetWorkload([TargetTask(shape, count / covered) for shape, count in kept])

"""The FGD fragmentation measure against amounts worked by hand (milli-GPUs: 1000 = one GPU)."""

from __future__ import annotations

import pytest

from kss_sim.replay.fragmentation import (
    NO_ACCESS,
    Q1_LACK_BOTH,
    Q2_LACK_GPU,
    Q3_SATISFIED,
    Q4_LACK_CPU,
    X_LACK_CPU,
    X_SATISFIED,
    NodeRoom,
    TargetTask,
    TargetWorkload,
    TaskShape,
    classify,
    cluster_fragmentation,
    fragment,
    target_workload,
)

GI = 1024**3

# Node B: 4 T4s with free shares 1000, 1000, 500, 0 (2500 free); 2 CPUs and 8 GiB left.
NODE_B = NodeRoom(milli_cpu=2000, memory=8 * GI, gpu_free=(1000, 1000, 500, 0), model="T4")


def test_cases_of_the_paper_for_one_node() -> None:
    whole_big_cpu = TaskShape(milli_cpu=4000, memory=GI, gpus=1, milli_gpu=1000)
    share = TaskShape(milli_cpu=1000, memory=GI, gpus=1, milli_gpu=600)
    v100_only = TaskShape(milli_cpu=1000, memory=GI, gpus=1, milli_gpu=1000, models=("V100M32",))
    three_gpus = TaskShape(milli_cpu=1000, memory=GI, gpus=3, milli_gpu=1000)
    three_gpus_big_cpu = TaskShape(milli_cpu=3000, memory=GI, gpus=3, milli_gpu=1000)
    cpu_only = TaskShape(milli_cpu=1000, memory=GI)
    big_cpu_only = TaskShape(milli_cpu=3000, memory=GI)
    too_much_memory = TaskShape(milli_cpu=1000, memory=16 * GI, gpus=1, milli_gpu=1000)

    assert classify(NODE_B, whole_big_cpu) == Q4_LACK_CPU  # 2 whole GPUs free, 2 CPUs < 4
    assert classify(NODE_B, share) == Q3_SATISFIED  # two GPUs have >= 600 free
    assert classify(NODE_B, v100_only) == NO_ACCESS
    assert classify(NODE_B, three_gpus) == Q2_LACK_GPU  # only two GPUs wholly free
    assert classify(NODE_B, three_gpus_big_cpu) == Q1_LACK_BOTH
    assert classify(NODE_B, cpu_only) == X_SATISFIED
    assert classify(NODE_B, big_cpu_only) == X_LACK_CPU
    assert classify(NODE_B, too_much_memory) == Q4_LACK_CPU  # memory short counts as the host lacking room

    # Q3: only GPUs whose free share is below the task's 600 are fragments: 500 + 0.
    assert fragment(NODE_B, share) == 500
    # A whole-GPU task that fits (enough CPU): the half-used GPU (500 free) is a fragment to it.
    assert fragment(NODE_B, TaskShape(milli_cpu=1000, gpus=1, milli_gpu=1000)) == 500
    # Every other case: all 1000 + 1000 + 500 + 0 = 2500 free milli-GPUs are fragments.
    for task in (whole_big_cpu, v100_only, three_gpus, three_gpus_big_cpu, cpu_only, big_cpu_only):
        assert fragment(NODE_B, task) == 2500


def test_node_and_cluster_fragmentation_weight_tasks_by_popularity() -> None:
    one_gpu = TaskShape(milli_cpu=4000, memory=GI, gpus=1, milli_gpu=1000)
    eight_gpus = TaskShape(milli_cpu=16000, memory=GI, gpus=8, milli_gpu=1000)
    cpu_only = TaskShape(milli_cpu=2000, memory=GI)
    target = TargetWorkload([TargetTask(one_gpu, 0.5), TargetTask(eight_gpus, 0.25), TargetTask(cpu_only, 0.25)])

    # Node A: 8 free V100M32s, 32 CPUs: one_gpu and eight_gpus fit with no GPU short of a whole one (0);
    # cpu_only cannot use any GPU (8000).  F = 0.5*0 + 0.25*0 + 0.25*8000 = 2000.
    node_a = NodeRoom(milli_cpu=32000, memory=64 * GI, gpu_free=(1000,) * 8, model="V100M32")
    assert target.node_fragmentation(node_a) == pytest.approx(2000)

    # Node C: 3 free GPUs, 2 CPUs: one_gpu lacks CPU (Q4: 3000), eight_gpus lacks both (Q1: 3000),
    # cpu_only fits the host but uses no GPU (3000).  F = (0.5 + 0.25 + 0.25) * 3000 = 3000.
    node_c = NodeRoom(milli_cpu=2000, memory=64 * GI, gpu_free=(1000,) * 3, model="V100M32")
    assert target.node_fragmentation(node_c) == pytest.approx(3000)

    # A node with every GPU taken, and a CPU node, have nothing to fragment.
    full = NodeRoom(milli_cpu=32000, memory=64 * GI, gpu_free=(0, 0), model="T4")
    cpu_node = NodeRoom(milli_cpu=32000, memory=64 * GI)
    assert target.node_fragmentation(full) == 0
    assert target.node_fragmentation(cpu_node) == 0

    assert cluster_fragmentation([node_a, node_c, full, cpu_node], target) == pytest.approx(5000)


def test_target_workload_keeps_the_most_popular_shapes_up_to_the_threshold() -> None:
    a = TaskShape(milli_cpu=1000, gpus=1, milli_gpu=1000)
    b = TaskShape(milli_cpu=2000)
    c = TaskShape(milli_cpu=8000, gpus=8, milli_gpu=1000)
    shapes = [a] * 6 + [b] * 3 + [c]

    # 95 % of 10 pods = 9.5: a (6) and b (9) are not enough, c brings 10.
    full = target_workload(shapes)
    assert [(t.shape, t.weight) for t in full.tasks] == [(a, 0.6), (b, 0.3), (c, 0.1)]

    # 80 % = 8: a (6) then b (9) covers it; weights renormalised over the 9 pods kept.
    top = target_workload(shapes, popularity_threshold=0.8)
    assert [t.shape for t in top.tasks] == [a, b]
    assert [t.weight for t in top.tasks] == pytest.approx([6 / 9, 3 / 9])

    # The order of the pods does not matter, ties included.
    assert target_workload(list(reversed(shapes))).tasks == full.tasks
    tie = target_workload([b, a])
    assert tie.tasks == target_workload([a, b]).tasks

    assert target_workload([]).tasks == []

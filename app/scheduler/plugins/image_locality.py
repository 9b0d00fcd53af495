"""ImageLocality: prefer nodes that already hold the pod's container images (``imagelocality``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from app.scheduler.columns import IntArray, NodeBatch, NodeColumns
from app.scheduler.framework import MAX_NODE_SCORE, CycleState, ScorePlugin, Status, success
from app.scheduler.nodeinfo import ImageStateSummary, NodeInfo, PodInfo, normalized_image_name

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def pod_images(pod: PodInfo) -> tuple[tuple[str, ...], int]:
    """Normalized image names of init containers then containers, and the container count."""

    def build() -> tuple[tuple[str, ...], int]:
        spec = pod.spec
        containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
        return tuple(normalized_image_name(str(c.get("image") or "")) for c in containers), len(containers)

    return pod.memo("ImageLocality:images", build)


def scaled_image_score(state: ImageStateSummary, total_num_nodes: int) -> int:
    """An image's size weighted by the share of nodes holding it (float, truncated like Go's int64())."""
    spread = float(state.num_nodes) / float(total_num_nodes)
    return int(float(state.size) * spread)


def calculate_priority(sum_scores: int, num_containers: int) -> int:
    """Clamp the summed image scores to [23 MB, 1000 MB × containers] and scale into 0–100."""
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    if sum_scores < MIN_THRESHOLD:
        sum_scores = MIN_THRESHOLD
    elif sum_scores > max_threshold:
        sum_scores = max_threshold
    numerator = MAX_NODE_SCORE * (sum_scores - MIN_THRESHOLD)
    denominator = max_threshold - MIN_THRESHOLD
    # Go's truncating division (the denominator is negative for pods without containers).
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator >= 0) == (denominator > 0) else -quotient


class ImageLocality(ScorePlugin):
    """Scores a node by the total (spread-weighted) size of the pod's images already present there."""

    name: ClassVar[str] = "ImageLocality"

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        images, num_containers = pod_images(pod)
        total = len(self.handle.snapshot.node_info_list)
        return self._score(images, num_containers, node_info, total), success()

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        images, num_containers = pod_images(pod)
        total = len(self.handle.snapshot.node_info_list)
        return [self._score(images, num_containers, ni, total) for ni in nodes], success()

    def score_batch(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        images, num_containers = pod_images(pod)
        if num_containers == 0:
            return None
        total = len(self.handle.snapshot.node_info_list)
        cols = batch.cols
        sums = np.zeros(len(batch), np.int64)
        for image in images:
            sums += batch.take(self._image_column(cols, image, total))
        max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
        clamped = np.clip(sums, MIN_THRESHOLD, max_threshold)
        scores: IntArray = MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
        return scores

    @staticmethod
    def _image_column(cols: NodeColumns, image: str, total: int) -> IntArray:
        """Per node, the image's ``scaled_image_score`` where the node holds it, else 0 (cached per columns)."""

        def build() -> IntArray:
            col = np.zeros(cols.n, np.int64)
            for i, ni in enumerate(cols.infos):
                st = ni.image_states.get(image)
                if st is not None:
                    col[i] = scaled_image_score(st, total)
            return col

        return cols.cached(f"ImageLocality:{total}:{image}", build)

    @staticmethod
    def _score(images: Sequence[str], num_containers: int, node_info: NodeInfo, total: int) -> int:
        states = node_info.image_states
        total_score = 0
        for image in images:
            st = states.get(image)
            if st is not None:
                total_score += scaled_image_score(st, total)
        return calculate_priority(total_score, num_containers)

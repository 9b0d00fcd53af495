"""ImageLocality: prefer nodes that already hold the pod's container images (``imagelocality``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from kss_sim.scheduler.columns import IntArray, NodeBatch, NodeColumns
from kss_sim.scheduler.framework import MAX_NODE_SCORE, CycleState, Handle, ScorePlugin, Status, success
from kss_sim.scheduler.nodeinfo import ImageStateSummary, NodeInfo, PodInfo, normalized_image_name

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def pod_images(
    pod: PodInfo, *, image_volumes: bool = False, count_volumes: bool = False
) -> tuple[tuple[str, ...], int]:
    """Normalized image names of init containers then containers (then, with ``image_volumes``, of the pod's image
    volumes, as v1.36 counts them), and the image count the score's maximum is scaled by: the containers, and with
    ``count_volumes`` the image volumes too (v1.37, kubernetes#138951: v1.36 scored a volume's image without
    raising the maximum, so a pod's image volumes could outscore the same images in containers)."""

    def build() -> tuple[tuple[str, ...], int]:
        spec = pod.spec
        containers = [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]
        images = [str(c.get("image") or "") for c in containers]
        volumes: list[str] = []
        if image_volumes:
            volumes = [
                str(v["image"].get("reference") or "")
                for v in spec.get("volumes") or []
                if isinstance(v, dict) and isinstance(v.get("image"), dict)
            ]
        count = len(containers) + (len(volumes) if count_volumes else 0)
        return tuple(normalized_image_name(image) for image in images + volumes), count

    key = "ImageLocality:images"
    if image_volumes:
        key += "+volumes" + ("+counted" if count_volumes else "")
    return pod.memo(key, build)


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

    def __init__(self, handle: Handle, args: dict[str, Any] | None = None) -> None:
        super().__init__(handle, args)
        # From v1.36 the images of the pod's image volumes count too; from v1.37 in the image count as well.
        self.image_volumes = handle.kube_version.minor >= 36
        self.count_volumes = handle.kube_version.minor >= 37

    def score(self, state: CycleState, pod: PodInfo, node_info: NodeInfo) -> tuple[int, Status]:
        images, num_containers = pod_images(pod, image_volumes=self.image_volumes, count_volumes=self.count_volumes)
        total = len(self.handle.snapshot.node_info_list)
        return self._score(images, num_containers, node_info, total), success()

    def score_nodes(self, state: CycleState, pod: PodInfo, nodes: Sequence[NodeInfo]) -> tuple[list[int], Status]:
        images, num_containers = pod_images(pod, image_volumes=self.image_volumes, count_volumes=self.count_volumes)
        total = len(self.handle.snapshot.node_info_list)
        return [self._score(images, num_containers, ni, total) for ni in nodes], success()

    def score_batch(self, state: CycleState, pod: PodInfo, batch: NodeBatch) -> IntArray | None:
        cols = batch.cols
        if not cols.cached("ImageLocality:anyImages", lambda: any(ni.image_states for ni in cols.infos)):
            spec = pod.spec
            if spec.get("containers") or spec.get("initContainers"):
                # No node holds any image (image states are fixed for the columns' lifetime): every score is 0.
                return np.zeros(len(batch), np.int64)
        images, num_containers = pod_images(pod, image_volumes=self.image_volumes, count_volumes=self.count_volumes)
        if num_containers == 0:
            return None
        total = len(self.handle.snapshot.node_info_list)
        by_images: dict[tuple[int, tuple[str, ...]], list[IntArray]] = cols.cached("ImageLocality:held", dict)
        held = by_images.get((total, images))
        if held is None:
            held = [col for col in (self._image_column(cols, image, total) for image in images) if col is not None]
            if len(by_images) >= 256:
                by_images.pop(next(iter(by_images)))
            by_images[(total, images)] = held
        if not held:
            # No node holds any of the images: every sum is 0, clamped to the minimum, which scores 0.
            return np.zeros(len(batch), np.int64)
        sums = np.zeros(len(batch), np.int64)
        for col in held:
            sums += batch.take(col)
        max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
        clamped = np.clip(sums, MIN_THRESHOLD, max_threshold)
        scores: IntArray = MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (max_threshold - MIN_THRESHOLD)
        return scores

    @staticmethod
    def _image_column(cols: NodeColumns, image: str, total: int) -> IntArray | None:
        """Per node, the image's ``scaled_image_score`` where the node holds it, else 0; None when that is 0 on
        every node (cached per columns)."""

        def build() -> IntArray | None:
            col = np.zeros(cols.n, np.int64)
            for i, ni in enumerate(cols.infos):
                st = ni.image_states.get(image)
                if st is not None:
                    col[i] = scaled_image_score(st, total)
            return col if col.any() else None

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

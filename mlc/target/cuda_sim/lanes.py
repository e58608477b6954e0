"""The threads the GPU interpreter runs at once (:class:`Lanes`, one lane per sampled block and
thread) and the bookkeeping around them: which blocks to sample (:func:`pick_blocks`) and the numpy
dtypes of IR types (:func:`np_dtype`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlc.target.gpu.split_host_device import BLOCK_AXES, THREAD_AXES
from mlc.tir import dtype as dt

WARP_SIZE = 32


def np_dtype(dtype: str) -> np.dtype:
    e = dt.element(dtype)
    return np.dtype("bool" if e == "bool" else e)


@dataclass
class Lanes:
    """The threads an interpreter runs at once: one lane per (sampled block, thread)."""

    block_ids: np.ndarray      # (L,) linear block index in the whole grid
    block_slot: np.ndarray     # (L,) index of the lane's block among the sampled blocks
    thread_ids: np.ndarray     # (L,) linear thread index in its block (x fastest)
    axis: dict[str, np.ndarray]  # blockIdx.x, threadIdx.y, ... -> (L,) values
    n_blocks: int              # sampled blocks
    threads_per_block: int

    def describe(self, lane: int) -> str:
        """``block (0, 1), thread (3, 2)``: the lane's blockIdx and threadIdx as (x, y[, z])."""
        b = tuple(int(self.axis[a][lane]) for a in BLOCK_AXES if a in self.axis)
        t = tuple(int(self.axis[a][lane]) for a in THREAD_AXES if a in self.axis)
        return f"blockIdx {_tup(b)}, threadIdx {_tup(t)}"

    @property
    def warp_ids(self) -> np.ndarray:
        """A number per (block, warp) pair: the lanes of one warp share it."""
        warps_per_block = -(-self.threads_per_block // WARP_SIZE)
        return self.block_slot * warps_per_block + self.thread_ids // WARP_SIZE


def _tup(t: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, t)) + ")" if t else "()"


def pick_blocks(n: int, limit: int | None, neighbours: tuple[int, ...] = ()) -> np.ndarray:
    """``limit`` of the ``n`` blocks, spread evenly, the first and the last included.

    With ``neighbours`` (offsets in the linear block index, e.g. ``(1, grid_x)``), each
    block picked comes with the blocks at those offsets after it, so that two neighbouring
    blocks that touch the same elements (a halo, ``blockIdx.x // 2``) are run together:
    ``limit // (1 + len(neighbours))`` groups, at most ``limit`` blocks in all."""
    if limit is None or n <= limit:
        return np.arange(n)
    steps = [d for d in dict.fromkeys(neighbours) if 0 < d < n]
    groups = max(1, limit // (1 + len(steps)))
    anchors = np.unique(np.linspace(0, n - 1, groups).round().astype(np.int64))
    if not steps:
        return anchors
    picked = [anchors, *(np.minimum(anchors + d, n - 1) for d in steps)]
    return np.unique(np.concatenate(picked))[: max(limit, 1)]

"""The ``"cuda"`` target: GPU kernels as CUDA C, compiled by NVRTC, run through the CUDA driver.

Its common passes reduce across threads with warp shuffles (``COMMON_PASSES``: the
``lower_cross_thread_reduction`` pass with ``warp_size=32``); its own passes split the lowered
program into kernels and put barriers between shared-memory writes and reads
(:mod:`mlc.target.gpu`); codegen prints CUDA C
(:mod:`mlc.target.cuda.codegen`); the Module copies arrays to the GPU and launches the kernels
(:mod:`mlc.target.cuda.module`).
"""

from __future__ import annotations

from mlc.target.cuda.build import COMMON_PASSES, GPU_PASSES, build_cuda
from mlc.target.cuda.module import CUDAModule
from mlc.target.target import Backend, TargetKind

BACKEND = Backend(
    kind=TargetKind.CUDA,
    description="CUDA C for NVIDIA GPUs (NVRTC + the CUDA driver)",
    codegen=build_cuda,
    module_class=CUDAModule,
    passes=GPU_PASSES,
    features=frozenset({"gpu", "warp_shuffle"}),
    common_passes=COMMON_PASSES,
)

__all__ = ["BACKEND", "CUDAModule", "build_cuda"]

"""The ``"cuda-sim"`` target: the same GPU kernels as ``"cuda"``, run on the CPU with GPU
semantics (every block and thread, shared memory per block, barriers), so students without a
GPU see what their GPU schedule computes. See :mod:`mlc.target.cuda_sim.simulate`.

Beside the fast simulation, an interpreter (:mod:`~mlc.target.cuda_sim.interp`) runs the same
kernels watching every access and running warp shuffles lane by lane (a thread's loop whose
iterations are independent runs them at once: :mod:`~mlc.target.cuda_sim.vectorize`):
:func:`check` finds races, reads of uninitialised shared memory, out-of-range indices,
divergent barriers and misused shuffles (:mod:`~mlc.target.cuda_sim.checks`); a module runs
it before every call whose verdict could differ, on every block when that fits its budget
(:mod:`~mlc.target.cuda_sim.call_checks`);
:func:`predict` estimates the time on a real GPU from counted memory transactions, bank
conflicts and FLOPs (:mod:`~mlc.target.cuda_sim.model`)."""

from __future__ import annotations

from mlc.target.cuda.build import COMMON_PASSES, GPU_PASSES, build_cuda
from mlc.target.cuda.module import CUDAModule
from mlc.target.cuda_sim.checks import CheckReport, check
from mlc.target.cuda_sim.model import (
    PROFILES,
    Candidate,
    GPUProfile,
    Prediction,
    count,
    predict,
    search,
)
from mlc.target.target import Backend, Target, TargetKind
from mlc.tir.stmt import PrimFunc


def _build(func: PrimFunc, target: Target) -> CUDAModule:
    return build_cuda(func, target, simulate_on_cpu=True)

BACKEND = Backend(
    kind=TargetKind.CUDA_SIM,
    description="GPU kernels simulated on the CPU (compiled with LLVM)",
    codegen=_build,
    module_class=CUDAModule,
    passes=GPU_PASSES,
    features=frozenset({"gpu", "warp_shuffle"}),
    common_passes=COMMON_PASSES,
)

__all__ = [
    "BACKEND", "PROFILES", "Candidate", "CheckReport", "GPUProfile", "Prediction", "check", "count",
    "predict", "search",
]

"""Build a GPU function: CUDA C for its kernels and, for ``"cuda-sim"``, their CPU simulation.

The GPU passes (:data:`GPU_PASSES`) have already run when :func:`build_cuda` is called: the
program it gets is the host program with :class:`~mlc.tir.stmt.KernelLaunch` statements.
"""

from __future__ import annotations

from mlc.target.cuda import nvrtc
from mlc.target.cuda.codegen import codegen_cuda
from mlc.target.cuda.module import CUDAModule
from mlc.target.gpu.split_host_device import insert_thread_sync, split_host_device
from mlc.target.target import Pass, Target
from mlc.tir.stmt import PrimFunc
from mlc.transform import PASSES, run_passes
from mlc.transform.lower_cross_thread_reduction import with_warp_shuffles

WARP_SIZE = 32
"""Threads of an NVIDIA warp: they run in lock step and read each other's registers
(``__shfl_down_sync``), so a cross-thread reduction needs no shared memory within a warp."""

COMMON_PASSES: tuple[tuple[str, Pass], ...] = tuple(
    (name, with_warp_shuffles(WARP_SIZE) if name == "lower_cross_thread_reduction" else fn)
    for name, fn in PASSES
)
"""The common passes (:data:`mlc.transform.PASSES`) as the GPU targets run them: a reduction
across threads reduces within each warp by shuffles (see
:mod:`mlc.transform.lower_cross_thread_reduction`)."""

GPU_PASSES: tuple[tuple[str, Pass], ...] = (
    ("split_host_device", split_host_device),    # bound loops -> kernel launches
    ("insert_thread_sync", insert_thread_sync),  # __syncthreads() around shared memory
)
"""The passes both GPU targets run after the common ones, in order."""


def build_cuda(func: PrimFunc, target: Target, simulate_on_cpu: bool = False) -> CUDAModule:
    """Compile a GPU program into CUDA C; with ``simulate_on_cpu`` (target ``"cuda-sim"``)
    the Module runs the kernels' simulation (the pass ``simulate_gpu``, then LLVM), else it
    runs them on a GPU."""
    source = codegen_cuda(func)
    sim = None
    if simulate_on_cpu:
        from mlc.target.cuda_sim.simulate import simulate
        from mlc.target.llvm.build import compile_lowered

        cpu = run_passes(func, [("simulate_gpu", simulate)])
        sim = compile_lowered(cpu, "llvm", func.name)
    module = CUDAModule(func, target, source, sim)
    if not simulate_on_cpu and nvrtc.available():
        module.ptx()  # NVRTC's errors show at build time
    return module

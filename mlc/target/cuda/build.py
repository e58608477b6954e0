"""Build a GPU function: kernels, their CUDA C, and (for ``"cuda-sim"``) their CPU simulation."""

from __future__ import annotations

from mlc.target.cuda import nvrtc
from mlc.target.cuda.codegen import codegen_cuda
from mlc.target.cuda.module import CUDAModule
from mlc.target.gpu.split_host_device import numel, split_host_device
from mlc.target.target import Target
from mlc.tir.stmt import PrimFunc


def build_cuda(func: PrimFunc, target: Target, simulate_on_cpu: bool = False) -> CUDAModule:
    """Compile a lowered PrimFunc into kernels; with ``simulate_on_cpu`` (target
    ``"cuda-sim"``) the Module runs their simulation, else it runs them on a GPU."""
    prog = split_host_device(func)
    for k in prog.kernels:
        for buf in k.shared:
            numel(buf)
    source = codegen_cuda(prog)
    sim = None
    if simulate_on_cpu:
        from mlc.target.cuda_sim.simulate import simulate
        from mlc.target.llvm.build import compile_lowered

        sim = compile_lowered(simulate(prog), "llvm", func.name)
    module = CUDAModule(func, target, source, sim)
    if not simulate_on_cpu and nvrtc.available():
        module.ptx()  # NVRTC's errors show at build time
    return module

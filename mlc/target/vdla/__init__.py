"""The ``"vdla"`` target: a te schedule compiled to the course's accelerator and run on its
simulator (:mod:`mlc.vdla`).

    s[CL].tensorize(yi, vdla.gemm8x8)
    f = mlc.build(s, [A, B, C], target="vdla")
    f(a, b, c); f.stats.cycles; print(f.get_source())

It runs fewer common passes (``check_bounds``, ``lower_blocks``: its instructions move 2-D
tiles, so buffers are not flattened), then its own, listed in :data:`PASSES` and described in
:mod:`mlc.target.vdla.passes`; codegen (:mod:`mlc.target.vdla.codegen`) emits the
instruction stream and :class:`~mlc.target.vdla.module.VDLAModule` runs it.
"""

from __future__ import annotations

from mlc.target.target import Backend, Target, TargetKind
from mlc.target.vdla.codegen import generate
from mlc.target.vdla.module import VDLAModule
from mlc.target.vdla.passes import (
    allocate_sram,
    decompose_acc_init,
    inject_virtual_threads,
    lower_alu,
    lower_dma_copies,
    lower_tensor_intrins,
)
from mlc.tir.stmt import PrimFunc
from mlc.transform.check_bounds import check_bounds
from mlc.transform.lower_blocks import lower_blocks
from mlc.vdla.config import DEFAULT

COMMON_PASSES = (
    ("check_bounds", check_bounds),
    ("decompose_acc_init", decompose_acc_init),   # the tile's zeroing before the k loop
    ("lower_blocks", lower_blocks),
)

PASSES = (
    ("allocate_sram", allocate_sram),              # on-chip buffers sized to one tile step
    ("lower_dma_copies", lower_dma_copies),        # copy loops -> vdla.dma_copy2d
    ("lower_tensor_intrins", lower_tensor_intrins),  # fill_zero; gemm + micro-op loops
    ("lower_alu", lower_alu),                      # element-wise acc loops -> vdla.alu
    ("inject_virtual_threads", inject_virtual_threads),  # vthread -> one interleaved stream
)


def _build(func: PrimFunc, target: Target) -> VDLAModule:
    program, tensors = generate(func, DEFAULT)
    return VDLAModule(func.name, program, tensors, DEFAULT, func)


BACKEND = Backend(
    kind=TargetKind.VDLA,
    description="the VDLA teaching accelerator, simulated (mlc.vdla)",
    codegen=_build,
    module_class=VDLAModule,
    passes=PASSES,
    features=frozenset({"accelerator"}),
    common_passes=COMMON_PASSES,
)

__all__ = ["BACKEND", "COMMON_PASSES", "PASSES", "VDLAModule"]

"""The VDLA lowering passes, in the order :data:`mlc.target.vdla.PASSES` runs them.

After ``lower_blocks`` a schedule for VDLA reads like the notes' loop nest, element by
element: copies into the on-chip buffers, the tensorized ``fuse_gemm8x8_add`` calls, copies
back. These passes turn it, step by step, into the instruction-level program::

    decompose_acc_init     the accumulator's zeroing leaves the reduction loop (blocks)
    allocate_sram          each on-chip buffer is allocated where it is used, one tile
                           of the loops around it large (the DMA's destination)
    lower_dma_copies       copy loops -> vdla.dma_copy2d(dst_ptr, src_ptr, rows, cols)
    lower_tensor_intrins   zero loops -> vdla.fill_zero; fuse_gemm8x8_add in loops ->
                           a GEMM whose loops become its micro-op loops
    lower_alu              element-wise loops on acc_buffer -> vdla.alu(op, ...)
    inject_virtual_threads a vthread/cthread loop -> one interleaved instruction stream,
                           each thread with its own copy of the on-chip buffers

Codegen (:mod:`mlc.target.vdla.codegen`) then runs the host loops once, emitting one
instruction per call, and inserts the dependency tokens
(:func:`mlc.vdla.insert_dependencies`).

The passes live by stage: :mod:`~mlc.target.vdla.memory_passes` (``allocate_sram``,
``lower_dma_copies``), :mod:`~mlc.target.vdla.compute_passes` (``decompose_acc_init``,
``lower_tensor_intrins``, ``lower_alu``), :mod:`~mlc.target.vdla.vthread_passes`
(``inject_virtual_threads``); shared helpers in :mod:`~mlc.target.vdla.pass_helpers`.
This module re-exports them.
"""

from __future__ import annotations

from mlc.target.vdla.compute_passes import decompose_acc_init, lower_alu, lower_tensor_intrins
from mlc.target.vdla.memory_passes import allocate_sram, lower_dma_copies
from mlc.target.vdla.pass_helpers import GEMM_CALLS
from mlc.target.vdla.vthread_passes import inject_virtual_threads

__all__ = ["GEMM_CALLS", "allocate_sram", "decompose_acc_init", "inject_virtual_threads",
           "lower_alu", "lower_dma_copies", "lower_tensor_intrins"]

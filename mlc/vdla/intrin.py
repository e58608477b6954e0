"""The tensor intrinsic of the machine, declared as the notes declare it (seed 000, 001, 003).

The hardware designer describes what one instruction computes with a te expression on
8 x 8 placeholders, and how to call it::

    w, x = te.placeholder((8, 8), "int8"), te.placeholder((8, 8), "int8")
    k = te.reduce_axis((0, 8))
    y = te.compute((8, 8), lambda i, j: te.sum(w[i, k].astype("int32")
                                                * x[j, k].astype("int32"), axis=k))

    def gemm_intrin_lower(inputs, outputs):
        ww_ptr = inputs[0].access_ptr("r")
        xx_ptr = inputs[1].access_ptr("r")
        zz_ptr = outputs[0].access_ptr("w")
        compute = te.hardware_intrin("gemm8x8", ww_ptr, xx_ptr, zz_ptr)
        reset = te.hardware_intrin("fill_zero", zz_ptr)
        update = te.hardware_intrin("fuse_gemm8x8_add", ww_ptr, xx_ptr, zz_ptr)
        return compute, reset, update

    gemm8x8 = te.decl_tensor_intrin(y.op, gemm_intrin_lower, name="vdla.gemm_8x8x8")

``w`` is the input tile (inp_buffer: ``batch x block_in``), ``x`` the weight tile
(wgt_buffer: ``block_out x block_in``), ``y`` the accumulator tile: exactly the GEMM core's
``acc[b, o] += sum_i inp[b, i] * wgt[o, i]``. ``s[CL].tensorize(yi, vdla.gemm8x8)`` replaces
an 8 x 8 x 8 tile of a schedule by one ``fuse_gemm8x8_add`` call, which the ``vdla`` target
lowers to a GEMM micro-op.
"""

from __future__ import annotations

from typing import Any

from mlc import te
from mlc.tir.tensor_intrin import TensorIntrin
from mlc.vdla.config import DEFAULT, VDLAConfig


def declare_gemm(config: VDLAConfig = DEFAULT) -> TensorIntrin:
    """Declare (once) and return the GEMM intrinsic of ``config``'s tensor core:
    ``vdla.gemm8x8`` for the default 8 x 8 x 8 core."""
    b, i, o = config.batch, config.block_in, config.block_out
    w = te.placeholder((b, i), name="w", dtype="int8")
    x = te.placeholder((o, i), name="x", dtype="int8")
    k = te.reduce_axis((0, i), name="k")
    y = te.compute((b, o), lambda bb, oo: te.sum(
        w[bb, k].astype("int32") * x[oo, k].astype("int32"), axis=k), name="y")

    def gemm_intrin_lower(inputs: list[Any], outputs: list[Any]) -> Any:
        ww_ptr = inputs[0].access_ptr("r")
        xx_ptr = inputs[1].access_ptr("r")
        zz_ptr = outputs[0].access_ptr("w")
        compute = te.hardware_intrin("gemm8x8", ww_ptr, xx_ptr, zz_ptr)
        reset = te.hardware_intrin("fill_zero", zz_ptr)
        update = te.hardware_intrin("fuse_gemm8x8_add", ww_ptr, xx_ptr, zz_ptr)
        return compute, reset, update

    # registered as "vdla.gemm_8x8x8" ("vdla.gemm8x8" is the te tutorial's CPU stand-in)
    name = f"vdla.gemm_{b}x{i}x{o}"
    return te.decl_tensor_intrin(y.op, gemm_intrin_lower, name=name)


gemm8x8 = declare_gemm()

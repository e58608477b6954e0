"""A packed panel too large for the stack (aligned_alloc) inside a parallel loop must not
cost the micro-kernel its registers: the loop body is its own noinline function with
noalias pointer arguments, so LLVM knows a store to C cannot change the panel and keeps
the accumulators in registers across k (no load or store of C in the k loop)."""

from __future__ import annotations

import re

import numpy as np

import mlc
from mlc import te, tir
from mlc.target.llvm.codegen import STACK_LIMIT


def _gemm_with_heap_panel(n: int = 256, nc: int = 128):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    c = sch.get_block("C")
    i, j, kk = sch.get_loops(c)
    jc, jr, ji = sch.split(j, factors=[None, nc // 16, 16])
    io, ii = sch.split(i, factors=[None, 4])
    sch.reorder(jc, jr, io, kk, ii, ji)
    init = sch.decompose_reduction(c, kk)
    panel = sch.cache_read(c, 1, "global")  # kc x nc = n x nc floats: 128 KiB
    sch.compute_at(panel, jc)
    sch.unroll(ii)
    sch.vectorize(ji)
    sch.vectorize(sch.get_loops(init)[-1])
    sch.parallel(jc)
    assert n * nc * 4 > STACK_LIMIT
    return sch.mod


def _self_loops(ir: str) -> list[str]:
    """The bodies of the basic blocks that branch back to themselves (innermost loops)."""
    blocks = re.split(r"\n(?=[\w.\-]+:)", ir)
    out = []
    for b in blocks:
        m = re.match(r"([\w.\-]+):", b)
        if m and re.search(r"br .*label %" + re.escape(m.group(1)) + r"\b", b):
            out.append(b)
    return out


def test_heap_panel_keeps_the_accumulators_in_registers():
    f = mlc.build(_gemm_with_heap_panel())
    ir = f.get_source("ll")
    assert "aligned_alloc" in ir
    kernel = max(_self_loops(ir), key=lambda b: b.count("fmul") + b.count("fma"))
    assert kernel.count("fmul") + kernel.count("fma") >= 4
    assert "store" not in kernel, kernel
    rng = np.random.default_rng(0)
    a = rng.random((256, 256), dtype="float32")
    b = rng.random((256, 256), dtype="float32")
    c = np.zeros((256, 256), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def test_the_parallel_body_is_not_inlined():
    ir = mlc.build(_gemm_with_heap_panel()).get_source("ll-unopt")
    header = next(line for line in ir.splitlines() if "main__parallel0_chunk" in line
                  and line.startswith("define"))
    assert "noinline" in header and "alwaysinline" not in header
    assert header.count("noalias") >= 3  # A, B and C

# ruff: noqa: E501  (the Expected programs print as long lines)
"""Each schedule primitive as TVM tests it: the program Before, the call, the program
Expected (as `print` shows it, parsed back), compared structurally; then both built and run
against each other, so an Expected that kept the shape but lost the meaning fails too."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import tir
from mlc.script import from_source

ELEMWISE = """
@T.prim_func
def main(A: T.Buffer((64, 64), "float32"), C: T.Buffer((64, 64), "float32")):
    B = T.alloc_buffer((64, 64), "float32")
    for i, j in T.grid(64, 64):
        with T.block("B"):
            vi, vj = T.axis.remap("SS", [i, j])
            B[vi, vj] = A[vi, vj] * 2.0
    for i, j in T.grid(64, 64):
        with T.block("C"):
            vi, vj = T.axis.remap("SS", [i, j])
            C[vi, vj] = B[vi, vj] + 1.0
"""

MATMUL = """
@T.prim_func
def main(A: T.Buffer((32, 32), "float32"), B: T.Buffer((32, 32), "float32"), C: T.Buffer((32, 32), "float32")):
    for i, j, k in T.grid(32, 32, 32):
        with T.block("C"):
            vi, vj, vk = T.axis.remap("SSR", [i, j, k])
            with T.init():
                C[vi, vj] = 0.0
            C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""


def _split(s: tir.Schedule) -> None:
    i, j, k = s.get_loops(s.get_block("C"))
    s.split(i, [None, 16])


EXPECTED_SPLIT = """
@prim_func
def main(A: Buffer((32, 32), "float32"), B: Buffer((32, 32), "float32"), C: Buffer((32, 32), "float32")):
    for i_0 in range(2):
        for i_1 in range(16):
            for j in range(32):
                for k in range(32):
                    with block("C"):
                        vi = axis.spatial(32, i_0 * 16 + i_1)
                        vj = axis.spatial(32, j)
                        vk = axis.reduce(32, k)
                        reads(A[vi, vk], B[vk, vj])
                        writes(C[vi, vj])
                        with init():
                            C[vi, vj] = 0.0
                        C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""


def _fuse(s: tir.Schedule) -> None:
    i, j = s.get_loops(s.get_block("C"))
    s.fuse(i, j)


EXPECTED_FUSE = """
@prim_func
def main(A: Buffer((64, 64), "float32"), C: Buffer((64, 64), "float32")):
    B = alloc_buffer((64, 64), "float32")
    for i in range(64):
        for j in range(64):
            with block("B"):
                vi = axis.spatial(64, i)
                vj = axis.spatial(64, j)
                reads(A[vi, vj])
                writes(B[vi, vj])
                B[vi, vj] = A[vi, vj] * 2.0
    for i_j_fused in range(4096):
        with block("C"):
            vi_1 = axis.spatial(64, i_j_fused // 64)
            vj_1 = axis.spatial(64, i_j_fused % 64)
            reads(B[vi_1, vj_1])
            writes(C[vi_1, vj_1])
            C[vi_1, vj_1] = B[vi_1, vj_1] + 1.0
"""


def _reorder(s: tir.Schedule) -> None:
    i, j, k = s.get_loops(s.get_block("C"))
    s.reorder(k, i, j)


EXPECTED_REORDER = """
@prim_func
def main(A: Buffer((32, 32), "float32"), B: Buffer((32, 32), "float32"), C: Buffer((32, 32), "float32")):
    for k in range(32):
        for i in range(32):
            for j in range(32):
                with block("C"):
                    vi = axis.spatial(32, i)
                    vj = axis.spatial(32, j)
                    vk = axis.reduce(32, k)
                    reads(A[vi, vk], B[vk, vj])
                    writes(C[vi, vj])
                    with init():
                        C[vi, vj] = 0.0
                    C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]
"""


def _compute_inline(s: tir.Schedule) -> None:
    s.compute_inline(s.get_block("B"))


EXPECTED_COMPUTE_INLINE = """
@prim_func
def main(A: Buffer((64, 64), "float32"), C: Buffer((64, 64), "float32")):
    for i in range(64):
        for j in range(64):
            with block("C"):
                vi = axis.spatial(64, i)
                vj = axis.spatial(64, j)
                reads(A[vi, vj])
                writes(C[vi, vj])
                C[vi, vj] = A[vi, vj] * 2.0 + 1.0
"""


def _reverse_compute_inline(s: tir.Schedule) -> None:
    s.reverse_compute_inline(s.get_block("C"))


EXPECTED_REVERSE_COMPUTE_INLINE = """
@prim_func
def main(A: Buffer((64, 64), "float32"), C: Buffer((64, 64), "float32")):
    for i in range(64):
        for j in range(64):
            with block("B"):
                vi = axis.spatial(64, i)
                vj = axis.spatial(64, j)
                reads(A[vi, vj])
                writes(C[vi, vj])
                C[vi, vj] = A[vi, vj] * 2.0 + 1.0
"""


def _compute_at(s: tir.Schedule) -> None:
    i, j = s.get_loops(s.get_block("C"))
    s.compute_at(s.get_block("B"), i)


EXPECTED_COMPUTE_AT = """
@prim_func
def main(A: Buffer((64, 64), "float32"), C: Buffer((64, 64), "float32")):
    B = alloc_buffer((64, 64), "float32")
    for i in range(64):
        for ax0 in range(64):
            with block("B"):
                vi = axis.spatial(64, i)
                vj = axis.spatial(64, ax0)
                reads(A[vi, vj])
                writes(B[vi, vj])
                B[vi, vj] = A[vi, vj] * 2.0
        for j in range(64):
            with block("C"):
                vi_1 = axis.spatial(64, i)
                vj_1 = axis.spatial(64, j)
                reads(B[vi_1, vj_1])
                writes(C[vi_1, vj_1])
                C[vi_1, vj_1] = B[vi_1, vj_1] + 1.0
"""


def _reverse_compute_at(s: tir.Schedule) -> None:
    i, j = s.get_loops(s.get_block("B"))
    s.reverse_compute_at(s.get_block("C"), i)


EXPECTED_REVERSE_COMPUTE_AT = """
@prim_func
def main(A: Buffer((64, 64), "float32"), C: Buffer((64, 64), "float32")):
    B = alloc_buffer((64, 64), "float32")
    for i in range(64):
        for j in range(64):
            with block("B"):
                vi = axis.spatial(64, i)
                vj = axis.spatial(64, j)
                reads(A[vi, vj])
                writes(B[vi, vj])
                B[vi, vj] = A[vi, vj] * 2.0
        for ax0 in range(64):
            with block("C"):
                vi_1 = axis.spatial(64, i)
                vj_1 = axis.spatial(64, ax0)
                reads(B[vi_1, vj_1])
                writes(C[vi_1, vj_1])
                C[vi_1, vj_1] = B[vi_1, vj_1] + 1.0
"""


def _cache_read(s: tir.Schedule) -> None:
    s.cache_read(s.get_block("C"), 0, "local")


EXPECTED_CACHE_READ = """
@prim_func
def main(A: Buffer((64, 64), "float32"), C: Buffer((64, 64), "float32")):
    B = alloc_buffer((64, 64), "float32")
    B_local = alloc_buffer((64, 64), "float32", scope="local")
    for i in range(64):
        for j in range(64):
            with block("B"):
                vi = axis.spatial(64, i)
                vj = axis.spatial(64, j)
                reads(A[vi, vj])
                writes(B[vi, vj])
                B[vi, vj] = A[vi, vj] * 2.0
    for ax0 in range(64):
        for ax1 in range(64):
            with block("B_local"):
                v0 = axis.spatial(64, ax0)
                v1 = axis.spatial(64, ax1)
                reads(B[v0, v1])
                writes(B_local[v0, v1])
                B_local[v0, v1] = B[v0, v1]
    for i_1 in range(64):
        for j_1 in range(64):
            with block("C"):
                vi_1 = axis.spatial(64, i_1)
                vj_1 = axis.spatial(64, j_1)
                reads(B_local[vi_1, vj_1])
                writes(C[vi_1, vj_1])
                C[vi_1, vj_1] = B_local[vi_1, vj_1] + 1.0
"""


def _cache_write(s: tir.Schedule) -> None:
    s.cache_write(s.get_block("C"), 0, "local")


EXPECTED_CACHE_WRITE = """
@prim_func
def main(A: Buffer((32, 32), "float32"), B: Buffer((32, 32), "float32"), C: Buffer((32, 32), "float32")):
    C_local = alloc_buffer((32, 32), "float32", scope="local")
    for i in range(32):
        for j in range(32):
            for k in range(32):
                with block("C"):
                    vi = axis.spatial(32, i)
                    vj = axis.spatial(32, j)
                    vk = axis.reduce(32, k)
                    reads(A[vi, vk], B[vk, vj])
                    writes(C_local[vi, vj])
                    with init():
                        C_local[vi, vj] = 0.0
                    C_local[vi, vj] = C_local[vi, vj] + A[vi, vk] * B[vk, vj]
    for ax0 in range(32):
        for ax1 in range(32):
            with block("C_local"):
                v0 = axis.spatial(32, ax0)
                v1 = axis.spatial(32, ax1)
                reads(C_local[v0, v1])
                writes(C[v0, v1])
                C[v0, v1] = C_local[v0, v1]
"""


def _decompose_reduction(s: tir.Schedule) -> None:
    i, j, k = s.get_loops(s.get_block("C"))
    s.decompose_reduction(s.get_block("C"), i)


EXPECTED_DECOMPOSE_REDUCTION = """
@prim_func
def main(A: Buffer((32, 32), "float32"), B: Buffer((32, 32), "float32"), C: Buffer((32, 32), "float32")):
    for i_init in range(32):
        for j_init in range(32):
            with block("C_init"):
                vi = axis.spatial(32, i_init)
                vj = axis.spatial(32, j_init)
                reads()
                writes(C[vi, vj])
                C[vi, vj] = 0.0
    for i in range(32):
        for j in range(32):
            for k in range(32):
                with block("C"):
                    vi_1 = axis.spatial(32, i)
                    vj_1 = axis.spatial(32, j)
                    vk = axis.reduce(32, k)
                    reads(A[vi_1, vk], B[vk, vj_1])
                    writes(C[vi_1, vj_1])
                    C[vi_1, vj_1] = C[vi_1, vj_1] + A[vi_1, vk] * B[vk, vj_1]
"""


def _parallel_vectorize(s: tir.Schedule) -> None:
    i, j = s.get_loops(s.get_block("C"))
    s.parallel(i)
    s.vectorize(j)


EXPECTED_PARALLEL_VECTORIZE = """
@prim_func
def main(A: Buffer((64, 64), "float32"), C: Buffer((64, 64), "float32")):
    B = alloc_buffer((64, 64), "float32")
    for i in range(64):
        for j in range(64):
            with block("B"):
                vi = axis.spatial(64, i)
                vj = axis.spatial(64, j)
                reads(A[vi, vj])
                writes(B[vi, vj])
                B[vi, vj] = A[vi, vj] * 2.0
    for i_1 in parallel(64):
        for j_1 in vectorized(64):
            with block("C"):
                vi_1 = axis.spatial(64, i_1)
                vj_1 = axis.spatial(64, j_1)
                reads(B[vi_1, vj_1])
                writes(C[vi_1, vj_1])
                C[vi_1, vj_1] = B[vi_1, vj_1] + 1.0
"""


def _rfactor(s: tir.Schedule) -> None:
    i, j, k = s.get_loops(s.get_block("C"))
    ko, ki = s.split(k, [None, 4])
    s.rfactor(ki, 0)


EXPECTED_RFACTOR = """
@prim_func
def main(A: Buffer((32, 32), "float32"), B: Buffer((32, 32), "float32"), C: Buffer((32, 32), "float32")):
    C_rf = alloc_buffer((4, 32, 32), "float32")
    for i in range(32):
        for j in range(32):
            for k_0 in range(8):
                for k_1 in range(4):
                    with block("C_rf"):
                        vi = axis.spatial(32, i)
                        vj = axis.spatial(32, j)
                        vk_0 = axis.reduce(8, k_0)
                        vk_1 = axis.spatial(4, k_1)
                        reads(A[vi, vk_0 * 4 + vk_1], B[vk_0 * 4 + vk_1, vj])
                        writes(C_rf[vk_1, vi, vj])
                        with init():
                            C_rf[vk_1, vi, vj] = 0.0
                        C_rf[vk_1, vi, vj] = C_rf[vk_1, vi, vj] + A[vi, vk_0 * 4 + vk_1] * B[vk_0 * 4 + vk_1, vj]
    for i_1 in range(32):
        for j_1 in range(32):
            for k_1_1 in range(4):
                with block("C"):
                    vi_1 = axis.spatial(32, i_1)
                    vj_1 = axis.spatial(32, j_1)
                    vk_1_1 = axis.reduce(4, k_1_1)
                    reads(C_rf[vk_1_1, vi_1, vj_1])
                    writes(C[vi_1, vj_1])
                    with init():
                        C[vi_1, vj_1] = 0.0
                    C[vi_1, vj_1] = C[vi_1, vj_1] + C_rf[vk_1_1, vi_1, vj_1]
"""


CASES = [
    ("split", MATMUL, _split, EXPECTED_SPLIT),
    ("fuse", ELEMWISE, _fuse, EXPECTED_FUSE),
    ("reorder", MATMUL, _reorder, EXPECTED_REORDER),
    ("compute_inline", ELEMWISE, _compute_inline, EXPECTED_COMPUTE_INLINE),
    ("reverse_compute_inline", ELEMWISE, _reverse_compute_inline, EXPECTED_REVERSE_COMPUTE_INLINE),
    ("compute_at", ELEMWISE, _compute_at, EXPECTED_COMPUTE_AT),
    ("reverse_compute_at", ELEMWISE, _reverse_compute_at, EXPECTED_REVERSE_COMPUTE_AT),
    ("cache_read", ELEMWISE, _cache_read, EXPECTED_CACHE_READ),
    ("cache_write", MATMUL, _cache_write, EXPECTED_CACHE_WRITE),
    ("decompose_reduction", MATMUL, _decompose_reduction, EXPECTED_DECOMPOSE_REDUCTION),
    ("parallel_vectorize", ELEMWISE, _parallel_vectorize, EXPECTED_PARALLEL_VECTORIZE),
    ("rfactor", MATMUL, _rfactor, EXPECTED_RFACTOR),
]


def _run(func: object, shapes: list[tuple[int, ...]]) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(shape).astype("float32") for shape in shapes]
    arrays[-1][...] = 0
    mlc.build(func)(*arrays)
    return arrays


@pytest.mark.parametrize("name, before, apply, expected", CASES, ids=[c[0] for c in CASES])
def test_primitive_before_expected(name: str, before: str, apply: object, expected: str) -> None:
    sch = tir.Schedule(from_source(before))
    apply(sch)  # type: ignore[operator]
    tir.assert_structural_equal(sch.mod, from_source(expected))
    shapes = [tuple(int(d) for d in b.shape) for b in from_source(before).params]
    want = _run(from_source(before), shapes)[-1]
    got = _run(sch.mod, shapes)[-1]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)

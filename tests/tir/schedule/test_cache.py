"""cache_read, cache_write, set_scope, and the GEMM write-cache journey."""

from __future__ import annotations

import pytest
from block_programs import chain, chain_ref, check, matmul, matmul_relu, matmul_relu_ref

from mlc import tir
from mlc.errors import ScheduleError


def _mm_ref(a, b):  # type: ignore[no-untyped-def]
    return a @ b


def test_cache_read_copies_then_consumer_reads_cache() -> None:
    sch = tir.Schedule(chain())
    cache = sch.cache_read(sch.get_block("B"), 0, "shared")
    text = str(sch.mod)
    assert 'A_shared = alloc_buffer((8, 6), "float32", scope="shared")' in text
    assert text.index('block("A_shared")') < text.index('block("B")')
    assert "B[vi, vj] = A_shared[vi, vj] * 2.0" in text
    assert sch.get_loops(cache)  # the handle names the copy block
    check(sch.mod, chain_ref, (8, 6))


def test_cache_write_adds_copy_back() -> None:
    sch = tir.Schedule(chain())
    copy = sch.cache_write(sch.get_block("C"), 0, "local")
    text = str(sch.mod)
    assert "C_local[vi_1, vj_1] = B[vi_1, vj_1] + 1.0" in text
    assert 'with block("C_local")' in text and "C[v0, v1] = C_local[v0, v1]" in text
    assert len(sch.get_loops(copy)) == 2
    check(sch.mod, chain_ref, (8, 6))


def test_gemm_write_cache_journey() -> None:
    """cache_write + reverse_compute_at(copy, jo) + decompose_reduction(C, ko)."""
    sch = tir.Schedule(matmul(16, 16, 16))
    c = sch.get_block("C")
    copy = sch.cache_write(c, 0, "local")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, factors=[None, 4])
    jo, ji = sch.split(j, factors=[None, 4])
    ko, ki = sch.split(k, factors=[None, 4])
    sch.reorder(io, jo, ko, ii, ki, ji)
    sch.reverse_compute_at(copy, jo)
    init = sch.decompose_reduction(c, ko)
    text = str(sch.mod)
    assert 'block("C_init")' in text and "with init()" not in text
    # the copy-back runs per tile, after the k loop, under jo
    assert [sch.mod] and len(sch.get_loops(copy)) == 4
    assert len(sch.get_loops(init)) == 4
    check(sch.mod, _mm_ref, (16, 16), (16, 16))
    # and the journey replays from its trace
    sch2 = tir.Schedule(matmul(16, 16, 16))
    sch.trace.apply_to_schedule(sch2)
    assert str(sch2.mod) == str(sch.mod)


def test_cache_read_then_compute_at_tile() -> None:
    sch = tir.Schedule(matmul(16, 16, 16))
    c = sch.get_block("C")
    a_sh = sch.cache_read(c, 0, "shared")
    i, j, k = sch.get_loops(c)
    ko, ki = sch.split(k, factors=[None, 4])
    sch.reorder(i, ko, j, ki)
    sch.compute_at(a_sh, ko)
    text = str(sch.mod)
    assert "for ax0 in range(4):" in text  # one row slice of A: A[i, ko*4 : ko*4+4]
    check(sch.mod, _mm_ref, (16, 16), (16, 16))


def test_cache_write_of_matmul_then_relu() -> None:
    sch = tir.Schedule(matmul_relu())
    sch.cache_write(sch.get_block("C"), 0, "local")
    check(sch.mod, matmul_relu_ref, (8, 8), (8, 6))


def test_set_scope() -> None:
    sch = tir.Schedule(chain())
    sch.set_scope(sch.get_block("B"), 0, "shared")
    assert 'B = alloc_buffer((8, 6), "float32", scope="shared")' in str(sch.mod)
    check(sch.mod, chain_ref, (8, 6))
    with pytest.raises(ScheduleError, match="'C' is a parameter of the function"):
        sch.set_scope(sch.get_block("C"), 0, "shared")
    with pytest.raises(ScheduleError, match="unknown storage scope 'sharde'"):
        sch.set_scope(sch.get_block("B"), 0, "sharde")


def test_cache_index_out_of_range() -> None:
    sch = tir.Schedule(chain())
    with pytest.raises(ScheduleError, match=r"block 'B' reads 1 buffer\(s\) \['A'\]; index 3"):
        sch.cache_read(sch.get_block("B"), 3, "shared")
    with pytest.raises(ScheduleError, match=r"writes 1 buffer\(s\) \['B'\]; index 1"):
        sch.cache_write(sch.get_block("B"), 1, "local")


def test_cache_write_refuses_reader_in_same_nest() -> None:
    sch = tir.Schedule(chain())
    i, _ = sch.get_loops(sch.get_block("B"))
    sch.reverse_compute_at(sch.get_block("C"), i)
    with pytest.raises(ScheduleError, match="block 'C' reads 'B' inside the same loop nest"):
        sch.cache_write(sch.get_block("B"), 0, "local")


def test_gemm_write_cache_journey_builds_with_llvm() -> None:
    import numpy as np

    import mlc

    sch = tir.Schedule(matmul(16, 16, 16))
    c = sch.get_block("C")
    copy = sch.cache_write(c, 0, "local")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, factors=[None, 4])
    jo, ji = sch.split(j, factors=[None, 4])
    ko, ki = sch.split(k, factors=[None, 4])
    sch.reorder(io, jo, ko, ii, ki, ji)
    sch.reverse_compute_at(copy, jo)
    sch.decompose_reduction(c, ko)
    f = mlc.build(sch.mod, target="llvm")
    rng = np.random.default_rng(3)
    a = rng.random((16, 16), dtype=np.float32)
    b = rng.random((16, 16), dtype=np.float32)
    out = np.zeros((16, 16), "float32")
    f(a, b, out)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4)

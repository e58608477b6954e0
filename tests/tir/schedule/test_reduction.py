"""decompose_reduction and rfactor."""

from __future__ import annotations

import pytest
from block_programs import check, matmul, softmax, softmax_ref

from mlc import te, tir
from mlc.errors import ScheduleError


def _mm_ref(a, b):  # type: ignore[no-untyped-def]
    return a @ b


def test_decompose_reduction_at_outer_loop() -> None:
    sch = tir.Schedule(matmul(8, 6, 5))
    c = sch.get_block("C")
    i, _, _ = sch.get_loops(c)
    init = sch.decompose_reduction(c, i)
    text = str(sch.mod)
    assert "for i_init in range(8):" in text and "for j_init in range(6):" in text
    assert "with init()" not in text
    assert text.index('block("C_init")') < text.index('block("C")')
    assert len(sch.get_loops(init)) == 2
    check(sch.mod, _mm_ref, (8, 5), (5, 6))


def test_decompose_reduction_at_reduction_loop() -> None:
    sch = tir.Schedule(matmul(8, 6, 5))
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    sch.decompose_reduction(c, k)
    text = str(sch.mod)
    assert "_init in range" not in text  # no spatial loop below k: the init sits under j
    check(sch.mod, _mm_ref, (8, 5), (5, 6))


def test_decompose_reduction_refusals() -> None:
    sch = tir.Schedule(matmul(8, 6, 8))
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    ko, ki = sch.split(k, factors=[None, 4])
    with pytest.raises(ScheduleError, match="loop 'k_1' is inside the reduction loop 'k_0'"):
        sch.decompose_reduction(c, ki)
    sch.decompose_reduction(c, ko)
    with pytest.raises(ScheduleError, match="block 'C' has no init"):
        sch.decompose_reduction(c, i)


def test_decompose_reduction_loop_not_around_block() -> None:
    sch = tir.Schedule(softmax())
    i = sch.get_loops(sch.get_block("T_exp"))[0]
    with pytest.raises(ScheduleError, match="not one of the loops around block 'T_sum'"):
        sch.decompose_reduction(sch.get_block("T_sum"), i)


def test_rfactor_sum() -> None:
    sch = tir.Schedule(matmul(6, 4, 8))
    c = sch.get_block("C")
    _, _, k = sch.get_loops(c)
    ko, ki = sch.split(k, factors=[None, 4])
    rf = sch.rfactor(ki, 0)
    text = str(sch.mod)
    assert 'C_rf = alloc_buffer((4, 6, 4), "float32")' in text
    assert 'block("C_rf")' in text and "C[vi_1, vj_1] + C_rf[" in text
    assert len(sch.get_loops(rf)) == 4
    check(sch.mod, _mm_ref, (6, 8), (8, 4))


def test_rfactor_max_last_axis_then_parallel_ready() -> None:
    sch = tir.Schedule(softmax())
    mx = sch.get_block("T_max")
    _, k = sch.get_loops(mx)
    sch.rfactor(k, 1)
    assert 'T_max_rf = alloc_buffer((4, 8), "float32")' in str(sch.mod)
    check(sch.mod, softmax_ref, (4, 8))


def test_rfactor_then_decompose_both() -> None:
    A = te.placeholder((12, 10), name="A")
    k = te.reduce_axis((0, 10), name="k")
    B = te.compute((12,), lambda i: te.sum(A[i, k], axis=k), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    b = sch.get_block("B")
    i, kk = sch.get_loops(b)
    ko, ki = sch.split(kk, factors=[None, 5])
    rf = sch.rfactor(ko, 0)
    sch.decompose_reduction(rf, ko)
    sch.decompose_reduction(b, sch.get_loops(b)[0])
    check(sch.mod, lambda a: a.sum(axis=1), (12, 10))
    sch2 = tir.Schedule(te.create_prim_func([A, B]))
    sch.trace.apply_to_schedule(sch2)
    assert str(sch2.mod) == str(sch.mod)


def test_rfactor_refusals() -> None:
    sch = tir.Schedule(matmul(6, 4, 8))
    c = sch.get_block("C")
    i, _, k = sch.get_loops(c)
    with pytest.raises(ScheduleError, match="loop 'i' is not a reduction loop of block 'C'"):
        sch.rfactor(i, 0)
    with pytest.raises(ScheduleError, match="factor_axis 5 is out of range"):
        sch.rfactor(k, 5)
    A = te.placeholder((4, 4), name="A")
    r = te.reduce_axis((0, 4), name="r")
    prod = te.comm_reducer(lambda x, y: x - y, lambda t: te.const(0.0, t), name="minus")
    B = te.compute((4,), lambda i: prod(A[i, r], axis=r), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    _, r_loop = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="not a known commutative reduction"):
        sch.rfactor(r_loop, 0)


def test_rfactor_on_two_blocks_refused() -> None:
    sch = tir.Schedule(softmax())
    sch.compute_inline(sch.get_block("T_exp"))
    i = sch.get_loops(sch.get_block("T_softmax"))[0]
    sch.compute_at(sch.get_block("T_sum"), i)
    with pytest.raises(ScheduleError, match="must contain exactly one block"):
        sch.rfactor(i, 0)



"""parallel / vectorize / bind refuse a loop one of whose iterations reads what another
writes (a hand-written block that updates a buffer in place at another element): run
together, the iterations would compute something else. Reading the element written, or
within a slice only this iteration writes, is fine."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import tir
from mlc.errors import ScheduleError
from mlc.script import tir as T


@T.prim_func
def reverse_in_place(B: T.Buffer((8,), "float32")):
    for j in range(4):
        with T.block("swap"):
            vj = T.axis.spatial(4, j)
            B[vj] = B[7 - vj]


@T.prim_func
def running_rows(A: T.Buffer((16, 32), "float32")):
    # each row becomes its running sum, one column after another, written as spatial
    for i, j in T.grid(16, 31):
        with T.block("step"):
            vi = T.axis.spatial(16, i)
            vj = T.axis.spatial(31, j)
            A[vi, vj + 1] = A[vi, vj + 1] + A[vi, vj]


@T.prim_func
def double_in_place(B: T.Buffer((64,), "float32")):
    for i in range(64):
        with T.block("double"):
            vi = T.axis.spatial(64, i)
            B[vi] = B[vi] * 2.0


def _running(a: np.ndarray) -> np.ndarray:
    return np.cumsum(a, axis=1)


@pytest.mark.parametrize("primitive", ["vectorize", "parallel", "bind"])
def test_a_loop_whose_iterations_read_each_others_writes_is_refused(primitive):
    sch = tir.Schedule(reverse_in_place)
    (j,) = sch.get_loops(sch.get_block("swap"))
    with pytest.raises(ScheduleError) as err:
        if primitive == "bind":
            sch.bind(j, "threadIdx.x")
        else:
            getattr(sch, primitive)(j)
    msg = str(err.value)
    assert "block 'swap' writes B[vj] and reads B[7 - vj]" in msg
    assert "one iteration of 'j' may read an element another writes" in msg


def test_serially_the_in_place_program_is_what_it_says():
    b = np.arange(8, dtype="float32")
    mlc.build(reverse_in_place)(b)
    np.testing.assert_array_equal(b, [7, 6, 5, 4, 4, 5, 6, 7])


def test_rows_that_touch_separate_slices_may_run_at_once_but_not_columns():
    sch = tir.Schedule(running_rows)
    i, j = sch.get_loops(sch.get_block("step"))
    with pytest.raises(ScheduleError, match=r"reads A\[vi, vj\]"):
        sch.vectorize(j)
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.parallel(i0)  # rows i0*4 .. i0*4+3: a slice no other iteration writes
    a = np.random.default_rng(0).random((16, 32), dtype="float32")
    want = _running(a)
    mlc.build(sch.mod)(a)
    np.testing.assert_allclose(a, want, rtol=1e-5)


def test_a_fused_loop_over_rows_and_columns_is_refused():
    sch = tir.Schedule(running_rows)
    i, j = sch.get_loops(sch.get_block("step"))
    fused = sch.fuse(i, j)
    with pytest.raises(ScheduleError, match="must run one after another"):
        sch.parallel(fused)


def test_updating_the_element_written_vectorizes():
    sch = tir.Schedule(double_in_place)
    (i,) = sch.get_loops(sch.get_block("double"))
    _, inner = sch.split(i, factors=[None, 8])
    sch.vectorize(inner)
    b = np.arange(64, dtype="float32")
    mlc.build(sch.mod)(b)
    np.testing.assert_array_equal(b, np.arange(64) * 2)


@T.prim_func
def shift_through_b(A: T.Buffer((9,), "float32"), B: T.Buffer((9,), "float32"),
                    C: T.Buffer((8,), "float32")):
    # iteration j writes B[j] and reads B[j + 1], which iteration j + 1 writes
    for j in range(8):
        with T.block("write"):
            vj = T.axis.spatial(8, j)
            B[vj] = A[vj] * 2.0
        with T.block("read"):
            vj = T.axis.spatial(8, j)
            C[vj] = B[vj + 1]


def test_two_blocks_passing_data_between_iterations_through_a_parameter_are_refused():
    sch = tir.Schedule(shift_through_b)
    (j,) = sch.get_loops(sch.get_block("write"))
    with pytest.raises(ScheduleError) as err:
        sch.parallel(j)
    assert "block 'write' writes B[vj] and block 'read' reads B[vj + 1]" in str(err.value)
    a = np.arange(9, dtype="float32")
    b = np.full(9, 100.0, "float32")
    c = np.zeros(8, "float32")
    mlc.build(shift_through_b)(a, b, c)  # serially: each read comes before the write
    np.testing.assert_array_equal(c, [100.0] * 8)


def test_init_and_update_of_a_reduction_under_a_parallel_row_loop_are_fine():
    from mlc import te

    A = te.placeholder((32, 16), name="A")
    k = te.reduce_axis((0, 16), name="k")
    B = te.compute((32,), lambda i: te.sum(A[i, k], axis=k), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    blk = sch.get_block("B")
    i, kk = sch.get_loops(blk)
    i0, i1 = sch.split(i, factors=[None, 4])
    sch.decompose_reduction(blk, kk)
    sch.parallel(i0)  # init and update both stay within rows i0*4 .. i0*4+3
    a = np.random.default_rng(0).random((32, 16), dtype="float32")
    b = np.zeros(32, "float32")
    mlc.build(sch.mod)(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)

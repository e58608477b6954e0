"""Schedule primitives attacked as a hostile student would: reductions whose init is not the
identity, updates that are not commutative, blocks that update a buffer in place, caches of
buffers written only in part, alignment factors past the index type. Each was found to give
a wrong answer, raise an untyped exception or crash the process; each now computes what
numpy computes or raises a ScheduleError that names the block and says what would work."""

from __future__ import annotations

import re

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import ScheduleError
from mlc.script import tir as T
from mlc.testing import eval_prim_func
from mlc.tir.verify import verify_well_formed

RNG = np.random.default_rng(0)


def _both(func: tir.PrimFunc, *arrays: np.ndarray) -> list[np.ndarray]:
    """The last array after running ``func`` on copies of ``arrays``, compiled for llvm and
    in the IR interpreter (which reads an element never written as NaN)."""
    outs = []
    for run in (lambda *xs: mlc.build(func, target="llvm")(*xs),
                lambda *xs: eval_prim_func(func, *xs)):
        copies = [a.copy() for a in arrays]
        run(*copies)
        outs.append(copies[-1])
    return outs


def _check(func: tir.PrimFunc, ref: np.ndarray, *arrays: np.ndarray) -> None:
    verify_well_formed(func)
    for got in _both(func, *arrays):
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-5)


# -- rfactor: the init is not the combiner's identity ---------------------------------------

@T.prim_func
def sum_from_five(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 16):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            vk = T.axis.reduce(16, k)
            with T.init():
                B[vi] = T.float32(5)
            B[vi] = B[vi] + A[vi, vk]


@T.prim_func
def sum_from_bias(A: T.Buffer((4, 16), "float32"), C: T.Buffer((4,), "float32"),
                  B: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 16):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            vk = T.axis.reduce(16, k)
            with T.init():
                B[vi] = C[vi]
            B[vi] = B[vi] + A[vi, vk]


@pytest.mark.parametrize("which", [0, 1])
def test_rfactor_of_a_sum_that_starts_from_five_adds_five_once(which: int) -> None:
    # each of the 4 partial sums started from 5.0: the result was 20 too large
    sch = tir.Schedule(sum_from_five)
    _, k = sch.get_loops(sch.get_block("B"))
    loops = sch.split(k, factors=[None, 4])
    sch.rfactor(loops[which], 0)
    assert "B_rf[vk_1, vi] = 0.0" in str(sch.mod) or "B_rf[vk_0, vi] = 0.0" in str(sch.mod)
    a = RNG.random((4, 16), dtype=np.float32)
    _check(sch.mod, a.sum(1) + 5, a, np.zeros(4, "float32"))


def test_rfactor_of_a_sum_that_starts_from_a_bias_buffer() -> None:
    # the write-back's init kept the old block variable: VerifyError (an unbound vi)
    sch = tir.Schedule(sum_from_bias)
    _, k = sch.get_loops(sch.get_block("B"))
    _, k1 = sch.split(k, factors=[None, 4])
    sch.rfactor(k1, 0)
    a, c = RNG.random((4, 16), dtype=np.float32), RNG.random(4, dtype=np.float32)
    _check(sch.mod, a.sum(1) + c, a, c, np.zeros(4, "float32"))


def test_decompose_reduction_init_block_lists_what_it_reads() -> None:
    sch = tir.Schedule(sum_from_bias)
    b = sch.get_block("B")
    init = sch.decompose_reduction(b, sch.get_loops(b)[1])
    assert [r.buffer.name for r in sch.get(init).reads] == ["C"]
    a, c = RNG.random((4, 16), dtype=np.float32), RNG.random(4, dtype=np.float32)
    _check(sch.mod, a.sum(1) + c, a, c, np.zeros(4, "float32"))


# -- cache_read of a block that updates its buffer in place ----------------------------------

@T.prim_func
def double_in_place(B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("double"):
            vi = T.axis.spatial(8, i)
            B[vi] = B[vi] * 2.0


def test_cache_read_of_an_in_place_update_is_refused() -> None:
    # IndexError: list index out of range (no block only reads B)
    sch = tir.Schedule(double_in_place)
    with pytest.raises(ScheduleError, match="block 'double' also writes it"):
        sch.cache_read(sch.get_block("double"), 0, "local")
    with pytest.raises(ScheduleError, match="consumer_blocks is empty"):
        sch.cache_read(sch.get_block("double"), 0, "local", consumer_blocks=[])


# -- storage_align ---------------------------------------------------------------------------

def _chain() -> tir.PrimFunc:
    A = te.placeholder((8, 6), name="A")
    B = te.compute((8, 6), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((8, 6), lambda i, j: B[i, j] + 1.0, name="C")
    return te.create_prim_func([A, C])


@pytest.mark.parametrize("factor", [2**31, 2**40])
def test_storage_align_past_the_index_type_is_refused(factor: int) -> None:
    # factor=2**40 made an int32 stride of 2**40: the compiled function crashed the process
    sch = tir.Schedule(_chain())
    with pytest.raises(ScheduleError, match="past what its int32 indices can count"):
        sch.storage_align(sch.get_block("B"), 0, 0, factor, 1)


@pytest.mark.parametrize("args", [(0, 4.5, 0), (0, "4", 0), (0, 4, 1.0), ("0", 4, 1)])
def test_storage_align_arguments_that_are_not_ints_are_refused(args: tuple) -> None:
    # TypeError: unsupported operand type(s) for &: 'float' and 'int'
    sch = tir.Schedule(_chain())
    with pytest.raises(ScheduleError, match="must be an int"):
        sch.storage_align(sch.get_block("B"), 0, *args)


def test_storage_align_with_a_large_factor_still_computes() -> None:
    sch = tir.Schedule(_chain())
    sch.storage_align(sch.get_block("B"), 0, 0, 2**16, 1)
    a = RNG.random((8, 6), dtype=np.float32)
    _check(sch.mod, a * 2 + 1, a, np.zeros((8, 6), "float32"))


# -- reorder: loops whose order the result depends on ----------------------------------------

@T.prim_func
def fold_left(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4,), "float32")):
    # B = A[15] - (A[14] - (... - (A[0] - 0))): the order of the steps matters
    for i, k in T.grid(4, 16):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            vk = T.axis.reduce(16, k)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = A[vi, vk] - B[vi]


@T.prim_func
def decaying_sum(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 16):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            vk = T.axis.reduce(16, k)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] * 0.5 + A[vi, vk]


@T.prim_func
def minus_sum(A: T.Buffer((4, 16), "float32"), B: T.Buffer((4,), "float32")):
    for i, k in T.grid(4, 16):
        with T.block("B"):
            vi = T.axis.spatial(4, i)
            vk = T.axis.reduce(16, k)
            with T.init():
                B[vi] = T.float32(0)
            B[vi] = B[vi] - A[vi, vk]


@T.prim_func
def running_rows(A: T.Buffer((4, 16), "float32")):
    for i, j in T.grid(4, 15):
        with T.block("step"):
            vi = T.axis.spatial(4, i)
            vj = T.axis.spatial(15, j)
            A[vi, vj + 1] = A[vi, vj + 1] + A[vi, vj]


def _fold(a: np.ndarray, step) -> np.ndarray:  # type: ignore[no-untyped-def]
    out = np.zeros(a.shape[0], "float64")
    for k in range(a.shape[1]):
        out = step(out, a[:, k].astype("float64"))
    return out.astype("float32")


@pytest.mark.parametrize("func, update", [
    (fold_left, "B[vi] = A[vi, vk] - B[vi]"),
    (decaying_sum, "B[vi] = B[vi] * 0.5 + A[vi, vk]"),
])
def test_reorder_of_the_steps_of_an_order_dependent_reduction_is_refused(func, update) -> None:  # type: ignore[no-untyped-def]
    # split k, reorder(k_1, k_0): ran the steps 0, 4, 8, 12, 1, 5, ... and gave another number
    sch = tir.Schedule(func)
    i, k = sch.get_loops(sch.get_block("B"))
    k0, k1 = sch.split(k, factors=[None, 4])
    with pytest.raises(ScheduleError,
                       match=re.escape(f"block 'B' is a reduction whose update ({update})")) as err:
        sch.reorder(k1, k0)
    assert "the loops 'k_0', 'k_1' must keep this order" in str(err.value)
    # the spatial loop may still move: each row is its own fold
    sch.reorder(k0, i)
    a = RNG.random((4, 16), dtype=np.float32)
    ref = _fold(a, (lambda b, x: x - b) if func is fold_left else (lambda b, x: b * 0.5 + x))
    _check(sch.mod, ref, a, np.zeros(4, "float32"))


def test_reorder_of_the_steps_of_a_decomposed_order_dependent_reduction_is_refused() -> None:
    sch = tir.Schedule(fold_left)
    b = sch.get_block("B")
    _, k = sch.get_loops(b)
    sch.decompose_reduction(b, k)
    k0, k1 = sch.split(k, factors=[None, 4])
    with pytest.raises(ScheduleError, match="must keep this order"):
        sch.reorder(k1, k0)


def test_reorder_of_a_difference_reduction_is_allowed() -> None:
    # B - A[k] is B + (-A[k]): its steps may run in any order
    sch = tir.Schedule(minus_sum)
    _, k = sch.get_loops(sch.get_block("B"))
    k0, k1 = sch.split(k, factors=[None, 4])
    sch.reorder(k1, k0)
    a = RNG.random((4, 16), dtype=np.float32)
    _check(sch.mod, -a.sum(1), a, np.zeros(4, "float32"))


def test_reorder_of_the_loops_of_an_in_place_running_sum_is_refused() -> None:
    # A[vi, vj + 1] += A[vi, vj] split along j and reordered: 40 of 64 elements were wrong
    sch = tir.Schedule(running_rows)
    i, j = sch.get_loops(sch.get_block("step"))
    j0, j1 = sch.split(j, factors=[None, 5])
    with pytest.raises(ScheduleError, match="block 'step' writes A\\[vi, vj \\+ 1\\] and reads "
                                            "A\\[vi, vj\\]") as err:
        sch.reorder(j1, j0)
    assert "the loops 'j_0', 'j_1' must keep this order" in str(err.value)
    sch.reorder(j0, i)  # the rows are independent
    a = RNG.random((4, 16), dtype=np.float32)
    _check(sch.mod, np.cumsum(a, axis=1), a)


# -- cache_write of a nest that does not write every element first --------------------------

@T.prim_func
def write_middle(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    for i in range(4):
        with T.block("C"):
            vi = T.axis.spatial(4, i)
            C[vi + 2] = A[vi] * 2.0


@T.prim_func
def write_even(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    for i in range(4):
        with T.block("C"):
            vi = T.axis.spatial(8, i * 2)
            C[vi] = A[vi] * 2.0


@T.prim_func
def write_where(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            T.where(i < 5)
            C[vi] = A[vi] * 2.0


def _partly(a: np.ndarray, where: slice) -> np.ndarray:
    """C starts as 7.0; the program writes C[where] from A[0:4] (middle, where) or from
    A at the same elements (even)."""
    out = np.full(8, 7.0, "float32")
    out[where] = a[: len(out[where])] * 2 if where.step is None else a[where] * 2
    return out


@pytest.mark.parametrize("func, where", [(write_middle, slice(2, 6)),
                                         (write_even, slice(0, 8, 2)),
                                         (write_where, slice(0, 5))])
def test_cache_write_of_a_partial_write_keeps_the_other_elements(func, where) -> None:  # type: ignore[no-untyped-def]
    # the copy-back copied all of C_local, unwritten elements included, over C
    sch = tir.Schedule(func)
    sch.cache_write(sch.get_block("C"), 0, "local")
    assert 'block("C_local_in")' in str(sch.mod)
    a = RNG.random(8, dtype=np.float32)
    _check(sch.mod, _partly(a, where), a, np.full(8, 7.0, "float32"))


def test_cache_write_of_an_in_place_update_starts_from_the_old_values() -> None:
    # B_local = B_local * 2 read a cache nobody had written
    sch = tir.Schedule(double_in_place)
    sch.cache_write(sch.get_block("double"), 0, "local")
    b = RNG.random(8, dtype=np.float32)
    _check(sch.mod, b * 2, b)
    sch = tir.Schedule(running_rows)
    sch.cache_write(sch.get_block("step"), 0, "local")
    a = RNG.random((4, 16), dtype=np.float32)
    _check(sch.mod, np.cumsum(a, axis=1), a)


def test_cache_write_of_a_whole_matmul_needs_no_copy_in() -> None:
    A = te.placeholder((10, 10), name="A")
    B = te.placeholder((10, 10), name="B")
    k = te.reduce_axis((0, 10), name="k")
    C = te.compute((10, 10), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    c = sch.get_block("C")
    i = sch.get_loops(c)[0]
    i0, i1 = sch.split(i, factors=[None, 4])  # tails: the predicate drops only them
    sch.fuse(i0, i1)
    sch.cache_write(c, 0, "local")
    assert "_in" not in str(sch.mod)
    a, b = RNG.random((10, 10), dtype=np.float32), RNG.random((10, 10), dtype=np.float32)
    _check(sch.mod, a @ b, a, b, np.zeros((10, 10), "float32"))


# -- transform_layout with a Python function that raises or negates -------------------------

def test_transform_layout_with_a_function_that_raises_is_refused() -> None:
    # ZeroDivisionError escaped from the student's lambda
    sch = tir.Schedule(_chain())
    with pytest.raises(ScheduleError, match="could not be read \\(ZeroDivisionError"):
        sch.transform_layout(sch.get_block("B"), "B", lambda i, j: (i, j // (1 // 0)))
    with pytest.raises(ScheduleError, match="could not be read \\(TypeError"):
        sch.transform_layout(sch.get_block("B"), "B", lambda i, j: (abs(i), j))


def test_transform_layout_with_a_negated_index_reverses() -> None:
    # TypeError: bad operand type for unary -: the text form 'lambda i, j: (-i + 7, j)' worked
    sch = tir.Schedule(_chain())
    sch.transform_layout(sch.get_block("B"), "B", lambda i, j: (-i + 7, -(j + 1) + 6))
    a = RNG.random((8, 6), dtype=np.float32)
    _check(sch.mod, a * 2 + 1, a, np.zeros((8, 6), "float32"))


# -- reverse_compute_at of a consumer that reads more than the loop's producers write --------

@T.prim_func
def running_sum_then_double(A: T.Buffer((4, 16), "float32"), C: T.Buffer((4, 16), "float32")):
    B = T.alloc_buffer((4, 16), "float32")
    for i, j in T.grid(4, 16):
        with T.block("copy"):
            vi = T.axis.spatial(4, i)
            vj = T.axis.spatial(16, j)
            B[vi, vj] = A[vi, vj]
    for i, j in T.grid(4, 15):
        with T.block("step"):
            vi = T.axis.spatial(4, i)
            vj = T.axis.spatial(15, j)
            B[vi, vj + 1] = B[vi, vj + 1] + B[vi, vj]
    for i, j in T.grid(4, 16):
        with T.block("C"):
            vi = T.axis.spatial(4, i)
            vj = T.axis.spatial(16, j)
            C[vi, vj] = B[vi, vj] * 2.0


@pytest.mark.parametrize("which", [0, 1])
def test_reverse_compute_at_refuses_a_consumer_the_loop_would_not_cover(which: int) -> None:
    # 'step' writes columns 1..15; C's column 0 (written by 'copy') was never computed: 0.0
    sch = tir.Schedule(running_sum_then_double)
    loop = sch.get_loops(sch.get_block("step"))[which]
    with pytest.raises(ScheduleError, match="block 'C' needs vj from 0 to 15, but under loop "
                                            "'[ij]' 'step' write only from 1 to 15"):
        sch.reverse_compute_at(sch.get_block("C"), loop)
    a = RNG.random((4, 16), dtype=np.float32)
    _check(sch.mod, np.cumsum(a, axis=1) * 2, a, np.zeros((4, 16), "float32"))


def test_reverse_compute_at_of_a_symbolic_tiled_producer_still_works() -> None:
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((n, m), lambda i, j: B[i, j] + 1.0, name="C")
    sch = tir.Schedule(te.create_prim_func([A, C]))
    i, j = sch.get_loops(sch.get_block("B"))
    i0, i1 = sch.split(i, [None, 4])
    j0, j1 = sch.split(j, [None, 3])
    sch.reorder(i0, j0, i1, j1)
    sch.reverse_compute_at(sch.get_block("C"), j0)
    for shape in ((0, 3), (5, 7), (8, 9)):
        a = RNG.random(shape, dtype=np.float32)
        _check(sch.mod, a * 2 + 1, a, np.zeros(shape, "float32"))


# -- the te facade: compute_at into a stage's own loops, or two stages into each other -------

def _three_stages() -> tuple[te.Tensor, te.Tensor, te.Tensor, te.Tensor]:
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] * 2.0, name="B")
    C = te.compute((8, 8), lambda i, j: B[i, j] * 2.0, name="C")
    D = te.compute((8, 8), lambda i, j: C[i, j] * 2.0, name="D")
    return A, B, C, D


def test_te_compute_at_into_its_own_loop_is_refused() -> None:
    # RecursionError at build
    A, B, _, D = _three_stages()
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match="a stage cannot be computed inside its own loops"):
        s[B].compute_at(s[B], B.op.axis[0])


def test_te_compute_at_of_two_stages_into_each_other_is_refused() -> None:
    # RecursionError at build: each waited for the other to be placed first
    A, B, C, D = _three_stages()
    s = te.create_schedule(D.op)
    s[B].compute_at(s[C], C.op.axis[0])
    s[C].compute_at(s[B], B.op.axis[0])
    with pytest.raises(ScheduleError, match="cannot be applied"):
        mlc.build(s, [A, D], target="llvm")


# -- absurd sizes of a split and sampling arguments that are not numbers ---------------------

def _one_loop() -> tir.Schedule:
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    return tir.Schedule(te.create_prim_func([A, B]))


def test_a_split_into_a_thousand_loops_is_refused() -> None:
    # RecursionError in the simplifier of the thousand-term binding
    sch = _one_loop()
    (i,) = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="into 1001 loops: at most 64 factors"):
        sch.split(i, [1] * 1000 + [None])
    with pytest.raises(ScheduleError, match="n must be an int >= 1 and at most 64"):
        sch.sample_perfect_tile(i, n=10**6)
    sch.split(i, [1] * 63 + [None])  # 64 loops still compile (the interpreter nests 20)
    a, b = RNG.random(8, dtype=np.float32), np.zeros(8, "float32")
    mlc.build(sch.mod, target="llvm")(a, b)
    np.testing.assert_allclose(b, a + 1)


@pytest.mark.parametrize("probs", [[float("nan"), 1.0], [float("inf"), 1.0], ["x", 1.0],
                                   [None, 1.0]])
def test_sample_categorical_refuses_probabilities_that_are_not_finite_numbers(probs) -> None:  # type: ignore[no-untyped-def]
    # ValueError: Total of weights must be finite (or could not convert string to float)
    with pytest.raises(ScheduleError, match="probabilities must be"):
        _one_loop().sample_categorical([1, 2], probs)


def test_the_interpreter_runs_a_split_into_24_loops() -> None:
    # more than 20 nested loops: the generated Python raised SyntaxError (too many
    # statically nested blocks); the inner ones go into nested functions
    sch = _one_loop()
    (i,) = sch.get_loops(sch.get_block("B"))
    sch.split(i, [1] * 23 + [None])
    a, b = RNG.random(8, dtype=np.float32), np.zeros(8, "float32")
    eval_prim_func(sch.mod, a, b)
    np.testing.assert_allclose(b, a + 1)


@pytest.mark.parametrize("axis", [1.0, True, "0"])
def test_rfactor_refuses_a_factor_axis_that_is_not_an_int(axis) -> None:  # type: ignore[no-untyped-def]
    # TypeError: slice indices must be integers (1.0); True was taken as 1
    sch = tir.Schedule(sum_from_five)
    _, k = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="factor_axis must be an int"):
        sch.rfactor(k, axis)


def test_arguments_of_the_wrong_kind_are_refused_with_a_schedule_error() -> None:
    # TypeError ('float' object is not iterable) / ValueError (invalid literal for int())
    sch = _one_loop()
    b = sch.get_block("B")
    (i,) = sch.get_loops(b)
    with pytest.raises(ScheduleError, match="consumer_blocks must be a list of block handles"):
        sch.cache_read(b, 0, "local", consumer_blocks=b)  # type: ignore[arg-type]
    with pytest.raises(ScheduleError, match="candidates and probs must be lists"):
        sch.sample_categorical(None, None)  # type: ignore[arg-type]
    for decision in (1.5, ["x", 4]):
        with pytest.raises(ScheduleError, match="the decision must be a list of 2 ints"):
            sch.sample_perfect_tile(i, n=2, decision=decision)  # type: ignore[arg-type]


def test_reorder_above_a_blockized_running_sum_keeps_the_order() -> None:
    # the blockized block was trusted: 40 of 64 elements wrong
    sch = tir.Schedule(running_rows)
    _, j = sch.get_loops(sch.get_block("step"))
    j0, j1, j2 = sch.split(j, [3, 5, 1])
    sch.blockize(j2)
    with pytest.raises(ScheduleError, match="the loops 'j_0', 'j_1' must keep this order"):
        sch.reorder(j1, j0)
    sch = tir.Schedule(fold_left)
    _, k = sch.get_loops(sch.get_block("B"))
    k0, k1, k2 = sch.split(k, [2, 4, 2])
    sch.blockize(k2)
    with pytest.raises(ScheduleError, match="block 'B' is a reduction whose update"):
        sch.reorder(k1, k0)


# -- compute_at of a reduction into a parallel loop that does not index its output -----------

def _row_sums_times_x() -> tuple[tir.PrimFunc, np.ndarray, np.ndarray, np.ndarray]:
    A = te.placeholder((16, 32), name="A")
    X = te.placeholder((8,), name="X")
    k = te.reduce_axis((0, 32), name="k")
    B = te.compute((16,), lambda j: te.sum(A[j, k], axis=k), name="B")
    C = te.compute((8, 16), lambda i, j: B[j] * X[i], name="C")
    a, x = RNG.random((16, 32), dtype=np.float32), RNG.random(8, dtype=np.float32)
    return te.create_prim_func([A, X, C]), a, x, np.outer(x, a.sum(1))


@pytest.mark.parametrize("where", [0, 1])
def test_compute_at_of_a_shared_reduction_into_a_parallel_loop_is_refused(where: int) -> None:
    # every thread zeroed and accumulated the one B: a data race (parallel(i) after the
    # compute_at was refused, the other order was not)
    func, a, x, ref = _row_sums_times_x()
    sch = tir.Schedule(func)
    i, j = sch.get_loops(sch.get_block("C"))
    sch.parallel(i)
    with pytest.raises(ScheduleError, match="moving block 'B' under the parallel loop 'i' would "
                                            "make it unsafe: parallel: block 'B' under loop 'i' "
                                            "is a reduction that does not depend on 'i'"):
        sch.compute_at(sch.get_block("B"), [i, j][where])
    _check(sch.mod, ref, a, x, np.zeros((8, 16), "float32"))


def test_compute_at_into_a_serial_loop_inside_a_vectorized_one_is_allowed() -> None:
    func, a, x, ref = _row_sums_times_x()
    sch = tir.Schedule(func)
    _, j = sch.get_loops(sch.get_block("C"))
    sch.vectorize(j)
    sch.compute_at(sch.get_block("B"), j)  # B[vj] moves with j: each lane its own element
    _check(sch.mod, ref, a, x, np.zeros((8, 16), "float32"))


def test_cache_write_after_an_rfactor_with_a_tail() -> None:
    # StopIteration: rfactor leaves its two nests as one statement of the root, and the cache
    # (which starts as a copy: the tail's predicate may skip the init) lost its place
    A = te.placeholder((6, 10), name="A")
    k = te.reduce_axis((0, 10), name="k")
    B = te.compute((6,), lambda i: te.sum(A[i, k], axis=k), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    _, kl = sch.get_loops(sch.get_block("B"))
    _, k1 = sch.split(kl, [None, 4])
    sch.rfactor(k1, 0)
    sch.cache_write(sch.get_block("B"), 0, "local")
    a = RNG.random((6, 10), dtype=np.float32)
    _check(sch.mod, a.sum(1), a, np.zeros(6, "float32"))


# -- parallel/vectorize of a block whose instances store to the same element -----------------

@T.prim_func
def count_into_halves(A: T.Buffer((4,), "float32")):
    for i in range(8):
        with T.block("h"):
            vi = T.axis.spatial(8, i)
            A[vi // 2] = A[vi // 2] + 1.0


@T.prim_func
def last_of_each_pair(A: T.Buffer((4,), "float32"), B: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("h"):
            vi = T.axis.spatial(8, i)
            A[vi % 4] = B[vi]


@pytest.mark.parametrize("primitive", ["parallel", "vectorize"])
def test_a_loop_whose_instances_store_one_element_cannot_run_at_once(primitive: str) -> None:
    # accepted: A[vi // 2] += 1 read "the element it writes", but vi = 0 and 1 both write A[0]
    sch = tir.Schedule(count_into_halves)
    (i,) = sch.get_loops(sch.get_block("h"))
    with pytest.raises(ScheduleError, match=re.escape("writes A[vi // 2] and reads A[vi // 2]")):
        getattr(sch, primitive)(i)
    sch = tir.Schedule(last_of_each_pair)
    (i,) = sch.get_loops(sch.get_block("h"))
    with pytest.raises(ScheduleError, match=re.escape(
            "block 'h' writes A[vi % 4], the same element for several of its instances")):
        getattr(sch, primitive)(i)
    a, b = np.zeros(4, "float32"), np.arange(8, dtype=np.float32)
    mlc.build(sch.mod, target="llvm")(a, b)
    np.testing.assert_array_equal(a, b[4:])  # serial: the last of each pair wins


def test_cache_write_over_symbolic_split_tails_needs_no_copy_in() -> None:
    # `(m + 7) // 8 * 8 - 1 >= m - 1` is beyond the analyzer: the copy of C into C_local
    # came first, outside every thread loop on a GPU (tests/gpu_schedules/test_attacks_gpu.py)
    m, n = te.var("m"), te.var("n")
    A = te.placeholder((m, n), name="A")
    C = te.compute((m, n), lambda i, j: A[i, j] * 2.0, name="C")
    sch = tir.Schedule(te.create_prim_func([A, C]))
    c = sch.get_block("C")
    i, j = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 8])
    j0, j1 = sch.split(j, [None, 8])
    sch.reorder(i0, j0, i1, j1)
    cl = sch.cache_write(c, 0, "local")
    assert "_in" not in str(sch.mod)
    sch.reverse_compute_at(cl, j1)
    for shape in ((13, 7), (0, 3), (16, 8)):
        a = RNG.random(shape, dtype=np.float32)
        _check(sch.mod, a * 2, a, np.zeros(shape, "float32"))


def test_te_split_of_another_stages_axis_is_refused() -> None:
    # s[C].split(B.op.axis[0]) split B's loop, silently
    A, B, C, D = _three_stages()
    s = te.create_schedule(D.op)
    with pytest.raises(ScheduleError, match="i is not a loop around stage 'C' \\(it belongs to "
                                            "another stage\\)"):
        s[C].split(B.op.axis[0], factor=2)
    with pytest.raises(ScheduleError, match="not a loop around stage 'C'"):
        s[C].reorder(B.op.axis[1], C.op.axis[0])

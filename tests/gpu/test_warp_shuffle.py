"""Cross-thread reductions with warp shuffles (``__shfl_down_sync``) on the CUDA targets.

TVM's "Reduction" tutorial binds a reduction loop to ``threadIdx.x``; on ``"cuda"`` and
``"cuda-sim"`` the threads of a warp combine their parts by shuffles: up to 32 threads need
no shared memory and no barrier; more use one shared slot per warp, a barrier and a last warp
reduction. Every program runs on cuda-sim twice (the compiled simulation and the checking
interpreter, which executes shuffles lane by lane) against numpy; NVRTC compiles the kernels
where it is installed. tests/gpu/test_real_gpu.py runs the same programs on a GPU.
"""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import RaceError, ShuffleDivergenceError
from mlc.target.cuda import nvrtc
from mlc.target.cuda_sim import check, count
from mlc.tir import (
    Buffer,
    BufferLoad,
    BufferStore,
    Call,
    For,
    ForKind,
    IfThenElse,
    LetStmt,
    PrimFunc,
    Select,
    Var,
    const,
)
from mlc.tir.functor import IRMutator

needs_nvrtc = pytest.mark.skipif(
    not nvrtc.available(), reason="NVRTC not installed (pip install nvidia-cuda-nvrtc-cu12)"
)

rng = np.random.default_rng(18)
REDUCERS = {"sum": te.sum, "max": te.max, "min": te.min}


def row_reduction(rows: int, cols: int, threads: int, reducer: str = "sum",
                  dtype: str = "float32") -> tuple[te.Schedule, list[te.Tensor]]:
    """TVM's tutorial: ``B[i] = sum(A[i, k])``, one block per row, the reduction split by
    ``threads`` and its inner part bound to threadIdx.x (the outer part a loop per thread)."""
    A = te.placeholder((rows, cols), name="A", dtype=dtype)
    k = te.reduce_axis((0, cols), "k")
    B = te.compute((rows,), lambda i: REDUCERS[reducer](A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=threads)
    s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
    s[B].bind(ki, te.thread_axis("threadIdx.x"))
    return s, [A, B]


def rfactor_row_sum(rows, cols, factor: int = 16, rows_per_block: int = 32):
    """TVM's tutorial with rfactor: the reduction split by ``factor``, its inner part made a
    stage of its own (``rfactor``) whose ``factor`` partial sums ``threadIdx.x`` combines,
    ``rows_per_block`` rows per block along ``threadIdx.y``."""
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=factor)
    BF = s.rfactor(B, ki)
    xo, xi = s[B].split(s[B].op.axis[0], factor=rows_per_block)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    s[B].bind(xi, te.thread_axis("threadIdx.y"))
    s[B].bind(s[B].op.reduce_axis[0], te.thread_axis("threadIdx.x"))
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    return s, [A, B]


def numpy_reduce(a: np.ndarray, reducer: str) -> np.ndarray:
    if reducer == "sum":
        return a.sum(1, dtype=a.dtype)
    return a.max(1) if reducer == "max" else a.min(1)


def run_both(f, a: np.ndarray, out_dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """The output of the compiled simulation and of the checking interpreter (which raises
    on a race, a divergent shuffle or barrier, an index out of range)."""
    rows = a.shape[0]
    compiled = np.full(rows, 7, out_dtype)
    f(a, compiled)
    interpreted = np.full(rows, 7, out_dtype)
    check(f, a, interpreted)
    return compiled, interpreted


def assert_same(got: np.ndarray, want: np.ndarray) -> None:
    if got.dtype.kind == "f":
        # a row's sum can cancel to near zero (0.0548 from terms of size ~1): the tree adds in
        # another order than numpy, so allow an absolute error of a few ulps of the terms too
        single = got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5 if single else 1e-12,
                                   atol=1e-4 if single else 1e-12)
    else:
        np.testing.assert_array_equal(got, want)


# -- TVM's tutorial programs against numpy -----------------------------------------------------


@pytest.mark.parametrize("threads", [1, 31, 32, 33, 64, 100, 1024])
def test_row_sum_with_the_reduction_on_threads(threads: int) -> None:
    rows, cols = 3, 150
    s, args = row_reduction(rows, cols, threads)
    f = mlc.build(s, args, target="cuda-sim")
    a = rng.standard_normal((rows, cols)).astype("float32")
    for got in run_both(f, a, "float32"):
        assert_same(got, a.sum(1))
    src = f.get_source("cuda")
    if threads == 1:  # nothing to combine
        assert "__shfl_down_sync" not in src and "__shared__" not in src
    elif threads <= 32:  # one warp: registers only
        assert "__shfl_down_sync(" in src
        assert "__syncthreads" not in src and "__shared__" not in src
    else:  # one shared slot per warp, a barrier, a last warp reduction
        warps = -(-threads // 32)
        assert f"__shared__ float B_red_shared[{warps}];" in src
        assert "__syncthreads();" in src and src.count("__shfl_down_sync(") >= 6


def test_the_tutorials_cuda_for_32_threads() -> None:
    s, args = row_reduction(4, 64, 32)
    src = mlc.build(s, args, target="cuda-sim").get_source("cuda")
    for offset in (16, 8, 4, 2, 1):
        assert f"B_shfl[0] = __shfl_down_sync(0xffffffffu, B_red[0], {offset}, 32);" in src
        assert f"if ((k_1 + {offset}) < 32) {{" in src
    assert "__syncthreads" not in src and "__shared__" not in src


def test_tvm_reduction_tutorial_with_rfactor() -> None:
    s, args = rfactor_row_sum(te.var("n"), te.var("m"))
    f = mlc.build(s, args, target="cuda-sim")
    for rows, cols in [(64, 128), (70, 100), (3, 5), (1, 1), (33, 0)]:
        a = rng.random((rows, cols), dtype=np.float32)
        for got in run_both(f, a, "float32"):
            assert_same(got, a.sum(1))
    # two rows per warp: shuffles of width 16, as TVM emits them
    src = f.get_source("cuda")
    assert "__shfl_down_sync(0xffffffffu, B_red[0], 8, 16);" in src
    assert "__syncthreads" not in src


def test_rfactor_over_two_warps_per_row() -> None:
    """64 threads per row, 4 rows per block: each warp reduces, one shared slot per warp and
    row (``B_red_shared[4, 2]``), then the first warp of each row."""
    rows, cols = 10, 300
    s, args = rfactor_row_sum(rows, cols, factor=64, rows_per_block=4)
    f = mlc.build(s, args, target="cuda-sim")
    a = rng.standard_normal((rows, cols)).astype("float32")
    for got in run_both(f, a, "float32"):
        assert_same(got, a.sum(1))
    assert "__shared__ float B_red_shared[8];" in f.get_source("cuda")


@pytest.mark.parametrize("threads", [32, 100])
@pytest.mark.parametrize("reducer", ["max", "min"])
def test_max_and_min_with_infinities_and_nan_rows(threads: int, reducer: str) -> None:
    rows, cols = 6, 77
    s, args = row_reduction(rows, cols, threads, reducer)
    f = mlc.build(s, args, target="cuda-sim")
    a = rng.standard_normal((rows, cols)).astype("float32")
    a[1] = -np.inf                     # a row of -inf: the identity of max itself
    a[2] = np.inf
    a[3, 40] = np.nan                  # one NaN: the answer is NaN (numpy propagates it)
    a[4] = np.nan
    a[5, ::3] = -np.inf
    a[5, 1::3] = np.inf
    want = numpy_reduce(a, reducer)
    for got in run_both(f, a, "float32"):
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("threads", [31, 64])
def test_int32_sums_wrap_like_numpy(threads: int) -> None:
    rows, cols = 4, 70
    s, args = row_reduction(rows, cols, threads, "sum", "int32")
    f = mlc.build(s, args, target="cuda-sim")
    i32 = np.iinfo(np.int32)
    a = rng.integers(i32.min, i32.max, (rows, cols), dtype=np.int32, endpoint=True)
    a[0] = i32.min                     # INT_MIN * 70 wraps to 0
    a[1] = i32.max
    a[2, :2] = (i32.min, -1)           # INT_MIN - 1 wraps to INT_MAX
    a[2, 2:] = 0
    for got in run_both(f, a, "int32"):
        assert_same(got, a.sum(1, dtype=np.int32))
    assert "__shfl_down_sync(" in f.get_source("cuda")


@pytest.mark.parametrize(("dtype", "reducer"), [("int64", "sum"), ("int32", "max"),
                                                ("float64", "sum"), ("float64", "min")])
def test_other_dtypes_that_shuffle(dtype: str, reducer: str) -> None:
    rows, cols = 5, 90
    s, args = row_reduction(rows, cols, 48, reducer, dtype)  # 48 threads: 2 warps, one partial
    f = mlc.build(s, args, target="cuda-sim")
    if dtype.startswith("int"):
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, (rows, cols), dtype=dtype)
    else:
        a = rng.standard_normal((rows, cols)).astype(dtype)
    for got in run_both(f, a, dtype):
        assert_same(got, numpy_reduce(a, reducer))
    src = f.get_source("cuda")
    # the second warp has 16 threads: its lanes name only themselves
    assert "__shfl_down_sync(((k_1 < 32) ? 0xffffffffu : 0xffffu), B_red[0], 16, 32);" in src


def test_symbolic_shapes_and_empty_inputs() -> None:
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    k = te.reduce_axis((0, m), "k")
    B = te.compute((n,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=64)
    s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
    s[B].bind(ki, te.thread_axis("threadIdx.x"))
    f = mlc.build(s, [A, B], target="cuda-sim")
    for rows, cols in [(5, 1000), (2, 1), (3, 0), (0, 4), (1, 65)]:
        a = rng.standard_normal((rows, cols)).astype("float32")
        for got in run_both(f, a, "float32"):
            assert_same(got, a.sum(1))


# -- where shuffles do not apply: the shared-memory tree ---------------------------------------


def test_dtypes_without_shuffles_keep_the_shared_tree() -> None:
    s, args = row_reduction(3, 40, 32, "sum", "int16")
    lowered = str(mlc.lower(s, args, target="cuda-sim"))
    assert "tvm_warp_shuffle_down" not in lowered and 'scope="shared"' in lowered
    f = mlc.build(s, args, target="cuda-sim")
    a = rng.integers(-300, 300, (3, 40)).astype("int16")
    for got in run_both(f, a, "int16"):
        assert_same(got, a.sum(1, dtype=np.int16))


def test_rows_that_straddle_warps_keep_the_shared_tree() -> None:
    """24 threads per row and 4 rows per block: the second row spans lanes 24-47, across two
    warps, so shuffles cannot combine it; shared memory does."""
    rows, cols = 8, 50
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, kk = sch.get_loops(sch.get_block("B"))
    io, ii = sch.split(i, [None, 4])
    ko, ki = sch.split(kk, [None, 24])
    sch.reorder(io, ii, ko, ki)
    sch.bind(io, "blockIdx.x")
    sch.bind(ii, "threadIdx.y")
    sch.bind(ki, "threadIdx.x")
    f = mlc.build(sch.mod, target="cuda-sim")
    assert "__shfl_down_sync" not in f.get_source("cuda")
    a = rng.standard_normal((rows, cols)).astype("float32")
    for got in run_both(f, a, "float32"):
        assert_same(got, a.sum(1))


def test_targets_without_warps_keep_the_shared_tree() -> None:
    s, args = row_reduction(3, 64, 32)
    assert "tvm_warp_shuffle_down" not in str(mlc.lower(s, args))
    assert mlc.target.parse_target("cuda-sim").has_feature("warp_shuffle")
    assert not mlc.target.parse_target("llvm").has_feature("warp_shuffle")


# -- cuda-sim's checks and model ---------------------------------------------------------------


def shuffle_program(threads: int, delta: int, width: int, mask: int | None,
                    guard: int | None = None) -> PrimFunc:
    """``B[tx] = tvm_warp_shuffle_down(mask, A[tx], delta, width)`` (under ``if tx < guard``;
    ``mask=None``: lanes 0-15 name 0-15, lanes 16-31 name 16-31)."""
    A = Buffer("A", (const(threads, "int32"),), "float32")
    B = Buffer("B", (const(threads, "int32"),), "float32")
    tx = Var("tx", "int32")
    lanes = (const(mask, "uint32") if mask is not None else
             Select(tx < 16, const(0xFFFF, "uint32"), const(0xFFFF0000, "uint32")))
    call = Call("float32", "tvm_warp_shuffle_down", (lanes, BufferLoad(A, (tx,)),
                                                     const(delta, "int32"),
                                                     const(width, "int32")))
    body = BufferStore(B, call, (tx,))
    if guard is not None:
        body = IfThenElse(tx < guard, body)
    loop = For(tx, const(0, "int32"), const(threads, "int32"), ForKind.THREAD_BINDING, body,
               "threadIdx.x")
    return PrimFunc((A, B), loop, "shfl")


@pytest.mark.parametrize(("threads", "delta", "width"), [(32, 1, 32), (48, 3, 8), (64, 16, 32),
                                                         (40, 5, 4), (32, 0, 32), (20, 7, 32)])
def test_a_shuffle_reads_the_lane_below_within_its_width(threads, delta, width) -> None:
    f = mlc.build(shuffle_program(threads, delta, width, 0xFFFFFFFF), target="cuda-sim")
    a = np.arange(threads, dtype="float32") * 10
    lane = np.arange(threads) % 32
    src = np.arange(threads) + delta
    take = ((lane % width) + delta < width) & (src < threads)
    want = np.where(take, a[np.minimum(src, threads - 1)], a)
    for got in run_both(f, a, "float32"):
        np.testing.assert_array_equal(got, want)
    assert f"__shfl_down_sync(0xffffffffu, A[tx], {delta}, {width})" in f.get_source("cuda")


def test_a_divergent_shuffle_is_an_error_naming_kernel_and_line() -> None:
    f = mlc.build(shuffle_program(32, 1, 32, 0xFFFFFFFF, guard=5), target="cuda-sim")
    a = np.zeros(32, "float32")
    with pytest.raises(ShuffleDivergenceError) as err:
        check(f, a, np.zeros(32, "float32"))
    message = str(err.value)
    assert message.startswith("kernel shfl_kernel: the warp shuffle at line ")
    assert "reached by blockIdx (), threadIdx (0) but not by blockIdx (), threadIdx (5)" in message
    assert "# <-- here" in message


def test_a_mask_that_names_only_the_lanes_taking_part_is_fine() -> None:
    f = mlc.build(shuffle_program(32, 1, 32, 0x1F, guard=5), target="cuda-sim")
    a = np.arange(32, dtype="float32")
    got = np.full(32, -1, "float32")
    check(f, a, got)
    np.testing.assert_array_equal(got[:5], [1, 2, 3, 4, 4])  # lane 4 reads lane 5: not named


def test_shuffle_misuse_a_lane_outside_its_own_mask() -> None:
    f = mlc.build(shuffle_program(32, 1, 32, 0xFFFFFFFE), target="cuda-sim")
    with pytest.raises(ShuffleDivergenceError, match="does not name its own lane"):
        check(f, np.zeros(32, "float32"), np.zeros(32, "float32"))


def test_shuffle_misuse_reading_a_lane_the_mask_leaves_out() -> None:
    f = mlc.build(shuffle_program(32, 1, 32, None), target="cuda-sim")  # two half-warp masks
    with pytest.raises(ShuffleDivergenceError, match=r"threadIdx \(15\) reads blockIdx \(\), "
                       r"threadIdx \(16\), which its mask 0x0000ffff does not name"):
        check(f, np.zeros(32, "float32"), np.zeros(32, "float32"))


def test_shuffle_misuse_lanes_passing_different_masks() -> None:
    f = mlc.build(shuffle_program(32, 1, 32, None), target="cuda-sim")
    broken = f.func.with_body(_Masks().visit(f.func.body))
    with pytest.raises(ShuffleDivergenceError, match="the lanes of one shuffle must pass the "
                       "same mask"):
        check(broken, np.zeros(32, "float32"), np.zeros(32, "float32"))


class _Masks(IRMutator):
    """Lanes 0-15 name the whole warp, lanes 16-31 only their half."""

    def visit_Call(self, op: Call) -> object:
        if op.op != "tvm_warp_shuffle_down":
            return op
        sel = op.args[0]
        assert isinstance(sel, Select)
        return Call(op.dtype, op.op, (Select(sel.condition, const(0xFFFFFFFF, "uint32"),
                                             sel.false_value), *op.args[1:]))


class _GuardShuffles(IRMutator):
    """Puts every shuffle store under ``if k_1 < 7`` (the bug a hand-written kernel makes by
    reducing only the threads that have data)."""

    tx: Var | None = None

    def visit_LetStmt(self, op: LetStmt) -> object:
        if op.var.name == "k_1":
            self.tx = op.var
        return self.generic_visit(op)

    def visit_BufferStore(self, op: BufferStore) -> object:
        if isinstance(op.value, Call) and op.value.op == "tvm_warp_shuffle_down":
            assert self.tx is not None
            return IfThenElse(self.tx < 7, op)
        return op


def test_a_reduction_whose_shuffles_diverge_is_caught() -> None:
    s, args = row_reduction(2, 64, 32)
    f = mlc.build(s, args, target="cuda-sim")
    broken = f.func.with_body(_GuardShuffles().visit(f.func.body))
    with pytest.raises(ShuffleDivergenceError,
                       match="kernel main_kernel: the warp shuffle at line"):
        check(broken, np.ones((2, 64), "float32"), np.zeros(2, "float32"))


def test_shuffles_need_no_barrier_but_shared_slots_do() -> None:
    """The race checker sees no shared memory in a one-warp reduction (nothing to order);
    over two warps, dropping the barrier between the per-warp slots and the last warp is a
    race."""
    s, args = row_reduction(2, 64, 64)
    f = mlc.build(s, args, target="cuda-sim")

    class DropBarriers(IRMutator):
        def visit_Evaluate(self, op):
            from mlc.target.gpu.split_host_device import is_barrier

            return mlc.tir.Evaluate(const(0, "int32")) if is_barrier(op) else op

    a = np.ones((2, 64), "float32")
    check(f, a, np.zeros(2, "float32"))
    broken = f.func.with_body(DropBarriers().visit(f.func.body))
    with pytest.raises(RaceError, match="B_red_shared"):
        check(broken, a, np.zeros(2, "float32"))


def test_the_model_counts_shuffles_not_shared_traffic() -> None:
    s, args = row_reduction(8, 256, 32)
    a = np.ones((8, 256), "float32")
    shuffled = count(mlc.build(s, args, target="cuda-sim"), a, np.zeros(8, "float32"))[0]
    tree = count(mlc.build(mlc.lower(s, args), target="cuda-sim"), a, np.zeros(8, "float32"))[0]
    assert shuffled.shuffles == 8 * 8 * 5  # 8 rows x 8 steps of k_0 x 5 shuffles
    assert shuffled.shared_requests == 0
    assert tree.shuffles == 0 and tree.shared_requests > 0


# -- NVRTC --------------------------------------------------------------------------------------


@needs_nvrtc
@pytest.mark.parametrize(("threads", "dtype"), [(32, "float32"), (16, "float64"),
                                                (100, "int32"), (256, "int64")])
def test_nvrtc_compiles_the_shuffle_kernels(threads: int, dtype: str) -> None:
    s, args = row_reduction(4, 300, threads, "sum", dtype)
    ptx = mlc.build(s, args, target="cuda").get_source("ptx")
    assert "shfl.sync.down" in ptx
    assert ("bar.sync" in ptx) == (threads > 32)


# -- reductions in kernels with other stages ---------------------------------------------------


@pytest.mark.parametrize(("threads", "copy_threads", "shuffles"), [(32, 64, 5), (16, 32, 4),
                                                                   (64, 32, 6)])
def test_a_row_beside_a_wider_copy_names_only_its_lanes(threads, copy_threads, shuffles) -> None:
    """The cooperative copy into shared memory runs on more threads than the reduction: the
    threads past the reduction skip it, and the shuffles' masks leave them out."""
    rows, cols = 6, 128
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    AA = s.cache_read(A, "shared", [B])
    s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.x"))
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=threads)
    s[B].bind(ki, te.thread_axis("threadIdx.x"))
    s[AA].compute_at(s[B], B.op.axis[0])
    _, inner = s[AA].split(s[AA].fuse(*s[AA].op.axis), factor=copy_threads)
    s[AA].bind(inner, te.thread_axis("threadIdx.x"))
    f = mlc.build(s, [A, B], target="cuda-sim")
    a = rng.standard_normal((rows, cols)).astype("float32")
    for got in run_both(f, a, "float32"):
        np.testing.assert_allclose(got, a.sum(1), rtol=1e-4, atol=1e-5)
    src = f.get_source("cuda")
    assert src.count("__shfl_down_sync(") == shuffles
    if threads < copy_threads:
        mask = f"{(1 << threads) - 1:#x}u"
        assert f"__shfl_down_sync({mask}, B_red[0], {threads // 2}, {threads});" in src


@pytest.mark.parametrize("threads", [32, 128])
def test_softmax_denominator_two_reductions_in_one_kernel(threads: int) -> None:
    rows, cols = 6, 200
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    M = te.compute((rows,), lambda i: te.max(A[i, k], axis=k), name="M")
    k2 = te.reduce_axis((0, cols), "k2")
    S = te.compute((rows,), lambda i: te.sum(te.exp(A[i, k2] - M[i]), axis=k2), name="S")
    s = te.create_schedule(S.op)
    s[S].bind(S.op.axis[0], te.thread_axis("blockIdx.x"))
    _, ki = s[S].split(S.op.reduce_axis[0], factor=threads)
    s[S].bind(ki, te.thread_axis("threadIdx.x"))
    s[M].compute_at(s[S], S.op.axis[0])
    s[M].set_scope("shared")
    _, mi = s[M].split(M.op.reduce_axis[0], factor=threads)
    s[M].bind(mi, te.thread_axis("threadIdx.x"))
    f = mlc.build(s, [A, S], target="cuda-sim")
    a = rng.standard_normal((rows, cols)).astype("float32")
    want = np.exp(a - a.max(1, keepdims=True)).sum(1)
    for got in run_both(f, a, "float32"):
        np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize(("x", "shuffles"), [(8, False), (1, True)])
def test_a_reduction_on_threadidx_y(x: int, shuffles: bool) -> None:
    """Reduced over threadIdx.y: its threads are lanes ``x`` apart, neighbours only when
    threadIdx.x has one thread; otherwise the shared-memory tree combines them."""
    rows, cols = 16, 90
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    bo, bi = s[B].split(B.op.axis[0], factor=x)
    ko, ki = s[B].split(B.op.reduce_axis[0], factor=32)
    s[B].reorder(bo, bi, ko, ki)
    s[B].bind(bo, te.thread_axis("blockIdx.x"))
    s[B].bind(bi, te.thread_axis("threadIdx.x"))
    s[B].bind(ki, te.thread_axis("threadIdx.y"))
    f = mlc.build(s, [A, B], target="cuda-sim")
    a = rng.standard_normal((rows, cols)).astype("float32")
    for got in run_both(f, a, "float32"):
        np.testing.assert_allclose(got, a.sum(1), rtol=1e-5, atol=1e-6)
    assert ("__shfl_down_sync" in f.get_source("cuda")) == shuffles


@pytest.mark.parametrize(("threads", "rows_per_block", "shuffles", "barriers"), [
    (8, 3, 3, 0),     # 24 threads: three rows of 8 lanes in one partial warp
    (16, 5, 4, 0),    # 80 threads: the third warp has one row, 16 lanes
    (64, 2, 6, 2),    # two warps per row, two rows: B_red_shared[2, 2]
    (48, 2, 0, 9),    # rows of 48 straddle warps: the shared-memory tree
])
def test_rows_per_block_and_partial_warps(threads, rows_per_block, shuffles, barriers) -> None:
    rows, cols = 3 * rows_per_block, 100
    A = te.placeholder((rows, cols), name="A")
    k = te.reduce_axis((0, cols), "k")
    B = te.compute((rows,), lambda i: te.sum(A[i, k], axis=k), name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    i, kk = sch.get_loops(sch.get_block("B"))
    io, ii = sch.split(i, [None, rows_per_block])
    ko, ki = sch.split(kk, [None, threads])
    sch.reorder(io, ii, ko, ki)
    sch.bind(io, "blockIdx.x")
    sch.bind(ii, "threadIdx.y")
    sch.bind(ki, "threadIdx.x")
    f = mlc.build(sch.mod, target="cuda-sim")
    a = rng.standard_normal((rows, cols)).astype("float32")
    for got in run_both(f, a, "float32"):
        np.testing.assert_allclose(got, a.sum(1), rtol=1e-5, atol=1e-5)
    src = f.get_source("cuda")
    assert (src.count("__shfl_down_sync("), src.count("__syncthreads();")) == (shuffles, barriers)


def test_a_serial_reduce_loop_inside_the_thread_loop() -> None:
    """``k`` split in three, the middle part on threads: each thread first folds its 4
    consecutive elements (this crashed the lowering before)."""
    s, args = row_reduction(5, 300, 32)
    sch = tir.Schedule(te.create_prim_func(args))
    i, kk = sch.get_loops(sch.get_block("B"))
    _, k1, _ = sch.split(kk, [None, 32, 4])
    sch.bind(i, "blockIdx.x")
    sch.bind(k1, "threadIdx.x")
    f = mlc.build(sch.mod, target="cuda-sim")
    a = rng.standard_normal((5, 300)).astype("float32")
    for got in run_both(f, a, "float32"):
        np.testing.assert_allclose(got, a.sum(1), rtol=1e-5, atol=1e-5)
    assert "__syncthreads" not in f.get_source("cuda")


def test_rfactor_with_a_split_that_does_not_divide() -> None:
    A = te.placeholder((7, 99), name="A")
    k = te.reduce_axis((0, 99), "k")
    B = te.compute((7,), lambda i: te.sum(A[i, k], axis=k), name="B")
    s = te.create_schedule(B.op)
    _, ki = s[B].split(k, factor=40)  # 40 threads: a full warp and one of 8 lanes
    BF = s.rfactor(B, ki)
    s[B].bind(s[B].op.axis[0], te.thread_axis("blockIdx.x"))
    s[B].bind(s[B].op.reduce_axis[0], te.thread_axis("threadIdx.x"))
    s[BF].compute_at(s[B], s[B].op.reduce_axis[0])
    f = mlc.build(s, [A, B], target="cuda-sim")
    a = rng.standard_normal((7, 99)).astype("float32")
    for got in run_both(f, a, "float32"):
        np.testing.assert_allclose(got, a.sum(1), rtol=1e-5, atol=1e-5)
    assert "((k_1_1 < 32) ? 0xffffffffu : 0xffu)" in f.get_source("cuda")

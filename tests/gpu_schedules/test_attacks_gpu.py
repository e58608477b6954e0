"""Hostile GPU schedules and kernels, as a student might write them. Each one computed a
wrong answer without a word, crashed or raised an untyped error on cuda-sim; each now
computes what numpy computes or raises a typed error that names what is wrong."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import (
    ArgumentError,
    ArgumentTypeError,
    CodegenError,
    IntegerDivisionError,
    RaceError,
    ScheduleError,
    UninitializedReadError,
)
from mlc.script import from_source

rng = np.random.default_rng(0)


def _matmul(n: int) -> tir.PrimFunc:
    X = te.placeholder((n, n), name="X")
    W = te.placeholder((n, n), name="W")
    k = te.reduce_axis((0, n), name="k")
    Y = te.compute((n, n), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    return te.create_prim_func([X, W, Y])


def _tiled(n: int, tile: int) -> tuple[tir.Schedule, tir.BlockRV, tir.LoopRV]:
    sch = tir.Schedule(_matmul(n))
    blk = sch.get_block("Y")
    i, j, k = sch.get_loops(blk)
    bi, ti = sch.split(i, factors=[None, tile])
    bj, tj = sch.split(j, factors=[None, tile])
    sch.reorder(bi, bj, ti, tj)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    ko, _ = sch.split(k, factors=[None, tile])
    return sch, blk, ko


def _script(body: str, dtype: str = "float32") -> tir.PrimFunc:
    head = (f'@T.prim_func\ndef f(A: T.Buffer((64,), "{dtype}"), '
            f'B: T.Buffer((64,), "{dtype}")):\n')
    return from_source(head + textwrap.indent(textwrap.dedent(body), "    "))


# -- a cache whose copy loop is bound to threads but which each thread has alone ----------------

def test_global_cache_copied_by_threads_is_refused() -> None:
    # cache_read(..., "global") at the k loop, its copy loop bound to threadIdx.x: every
    # block using X_global is inside the threadIdx loops, so lowering gives each thread its
    # own copy ("local"), of which the bound copy filled one element; the matmul read the
    # other seven from uninitialised memory (max error 8.4, no error raised)
    sch, blk, ko = _tiled(32, 8)
    xs = sch.cache_read(blk, 0, "global")
    sch.compute_at(xs, ko)
    with pytest.raises(ScheduleError, match=r"'X_global'.*own copy.*'shared'"):
        sch.bind(sch.get_loops(xs)[-1], "threadIdx.x")


def test_global_cache_copied_whole_by_each_thread_still_works() -> None:
    sch, blk, ko = _tiled(32, 8)
    xs = sch.cache_read(blk, 0, "global")
    sch.compute_at(xs, ko)  # the copy loops stay serial: each thread copies what it reads
    x = rng.random((32, 32), dtype="float32")
    w = rng.random((32, 32), dtype="float32")
    y = np.full((32, 32), np.nan, "float32")
    mlc.build(sch.mod, target="cuda-sim")(x, w, y)
    np.testing.assert_allclose(y, x @ w, rtol=1e-4)


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_local_array_indexed_by_thread_reads_uninitialised_registers(dtype: str) -> None:
    # each thread has its own L and writes only L[tx]: reading L[31 - tx] gave 0 on
    # cuda-sim, silently; the first call's check now names the read
    func = _script(f"""
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                L = T.alloc_buffer((32,), "{dtype}", scope="local")
                L[tx] = A[bx * 32 + tx]
                B[bx * 32 + tx] = L[31 - tx]
    """, dtype)
    f = mlc.build(func, target="cuda-sim")
    a = (rng.random(64) * 100).astype(dtype)
    with pytest.raises(UninitializedReadError, match=r"L\[31\] \(local memory\).*'shared'"):
        f(a, np.zeros(64, dtype))


def test_local_array_each_thread_fills_itself_is_accepted() -> None:
    func = _script("""
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                L = T.alloc_buffer((4,), "float32", scope="local")
                for j in range(4):
                    L[j] = A[bx * 32 + (tx + j) % 32]
                B[bx * 32 + tx] = L[3] - L[0]
    """)
    a = rng.random(64, dtype="float32")
    b = np.full(64, np.nan, "float32")
    f = mlc.build(func, target="cuda-sim")
    f.check(a, b)
    f(a, b)
    r = a.reshape(2, 32)
    np.testing.assert_allclose(b, (np.roll(r, -3, axis=1) - r).reshape(-1), rtol=1e-6)


# -- races between blocks that the first call's check did not run together ---------------------

@pytest.mark.parametrize("grid", [100, 37])
def test_write_write_race_between_neighbouring_blocks_is_found(grid: int) -> None:
    # blocks 2b and 2b + 1 write the same elements of B: the check before the first call
    # ran 16 blocks spread over the grid, never two neighbours, and the call went on
    n = grid * 32
    func = from_source(textwrap.dedent(f"""
        @T.prim_func
        def f(A: T.Buffer(({n},), "float32"), B: T.Buffer(({n},), "float32")):
            for bx in T.thread_binding({grid}, thread="blockIdx.x"):
                for tx in T.thread_binding(32, thread="threadIdx.x"):
                    B[bx // 2 * 32 + tx] = A[bx * 32 + tx]
    """))
    f = mlc.build(func, target="cuda-sim")
    with pytest.raises(RaceError, match=r"write-write race.*different blocks"):
        f(rng.random(n, dtype="float32"), np.zeros(n, "float32"))


def test_race_between_rows_of_blocks_is_found() -> None:
    # a 2D grid whose block rows y and y + 1 (for even y) write the same row of B
    func = from_source(textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((40, 64), "float32"), B: T.Buffer((40, 64), "float32")):
            for by in T.thread_binding(40, thread="blockIdx.y"):
                for bx in T.thread_binding(8, thread="blockIdx.x"):
                    for tx in T.thread_binding(8, thread="threadIdx.x"):
                        B[by // 2, bx * 8 + tx] = A[by, bx * 8 + tx]
    """))
    f = mlc.build(func, target="cuda-sim")
    with pytest.raises(RaceError, match=r"write-write race.*different blocks"):
        f(rng.random((40, 64), dtype="float32"), np.zeros((40, 64), "float32"))


def test_a_big_grid_without_races_still_runs() -> None:
    func = from_source(textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((40, 64), "float32"), B: T.Buffer((40, 64), "float32")):
            for by in T.thread_binding(40, thread="blockIdx.y"):
                for bx in T.thread_binding(8, thread="blockIdx.x"):
                    for tx in T.thread_binding(8, thread="threadIdx.x"):
                        B[by, bx * 8 + tx] = A[by, bx * 8 + tx] * 2.0
    """))
    a = rng.random((40, 64), dtype="float32")
    b = np.zeros((40, 64), "float32")
    mlc.build(func, target="cuda-sim")(a, b)
    np.testing.assert_allclose(b, 2 * a)


# -- launches a GPU refuses ---------------------------------------------------------------------

def _scaled(n: int, outer: str, inner: str, factor: int) -> tuple[te.Schedule, list[te.Tensor]]:
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    o, i = s[B].split(B.op.axis[0], factor=factor)
    s[B].bind(o, te.thread_axis(outer))
    s[B].bind(i, te.thread_axis(inner))
    return s, [A, B]


@pytest.mark.parametrize("target", ["cuda-sim", "cuda"])
@pytest.mark.parametrize("n, outer, inner, factor, what", [
    (1024, "blockIdx.x", "threadIdx.z", 128, "128 threads per block along threadIdx.z"),
    (70000, "blockIdx.y", "threadIdx.x", 1, "70000 blocks along blockIdx.y"),
    (70000 * 2, "blockIdx.z", "threadIdx.y", 2, "70000 blocks along blockIdx.z"),
])
def test_launch_past_an_axis_limit_is_refused(target: str, n: int, outer: str, inner: str,
                                              factor: int, what: str) -> None:
    # cuda-sim ran 128 threads along z (a GPU has at most 64) and 70000 blocks along y
    # (at most 65535): a schedule that "worked" there failed to launch on a GPU
    s, args = _scaled(n, outer, inner, factor)
    with pytest.raises(CodegenError, match=f"{what}.*at most"):
        mlc.build(s, args, target=target)


def test_launches_at_the_axis_limits_run() -> None:
    s, args = _scaled(64 * 2048, "blockIdx.y", "threadIdx.z", 64)
    a = rng.random(64 * 2048, dtype="float32")
    b = np.zeros_like(a)
    mlc.build(s, args, target="cuda-sim")(a, b)
    np.testing.assert_allclose(b, 2 * a)


def test_symbolic_grid_past_the_limit_is_refused_at_the_call() -> None:
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), name="A")
    B = te.compute((n, m), lambda i, j: A[i, j] * 2.0, name="B")
    s = te.create_schedule(B.op)
    s[B].bind(B.op.axis[0], te.thread_axis("blockIdx.y"))
    o, i = s[B].split(B.op.axis[1], factor=32)
    s[B].bind(o, te.thread_axis("blockIdx.x"))
    s[B].bind(i, te.thread_axis("threadIdx.x"))
    f = mlc.build(s, [A, B], target="cuda-sim")
    a = rng.random((65535, 2), dtype="float32")
    b = np.zeros_like(a)
    f(a, b)
    np.testing.assert_allclose(b, 2 * a)
    a = np.ones((70000, 1), "float32")
    with pytest.raises(ArgumentError, match=r"70000 blocks along blockIdx.y \(n with n=70000"):
        f(a, np.zeros_like(a))


# -- the checker and the performance model given nonsense -------------------------------------

def _elementwise_module() -> mlc.runtime.Module:
    s, args = _scaled(256, "blockIdx.x", "threadIdx.x", 64)
    return mlc.build(s, args, target="cuda-sim")


@pytest.mark.parametrize("run", ["check", "predict"])
def test_wrong_arrays_are_argument_errors_not_kernel_errors(run: str) -> None:
    # the interpreter took any array: a short one was a GPUIndexError blaming the split
    # factors, a float64 one was read as if it were float32's values
    from mlc.target.cuda_sim import check, predict

    f = _elementwise_module()
    go = check if run == "check" else predict
    b = np.zeros(256, "float32")
    with pytest.raises(ArgumentError, match=r"'A' has shape \(100,\).*\(256,\)"):
        go(f, np.zeros(100, "float32"), b)
    with pytest.raises(ArgumentTypeError, match=r"'A' has dtype float64.*float32"):
        go(f, np.zeros(256, "float64"), b)


@pytest.mark.parametrize("kw", [{"blocks": 0}, {"blocks": -1}, {"blocks": 2.5},
                                {"blocks": "all"}, {"loops": 0}, {"loops": -3}])
def test_block_and_loop_counts_must_be_positive(kw: dict[str, object]) -> None:
    # blocks=0 checked one block and said so in passing; blocks=2.5 was a TypeError
    from mlc.target.cuda_sim import check, predict

    f = _elementwise_module()
    a, b = rng.random(256, dtype="float32"), np.zeros(256, "float32")
    name = next(iter(kw))
    with pytest.raises(ArgumentError, match=f"{name}=.*whole number >= 1"):
        predict(f, a, b, **kw)  # type: ignore[arg-type]
    if name == "blocks":
        with pytest.raises(ArgumentError, match="blocks=.*whole number >= 1"):
            check(f, a, b, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("field, value", [("sms", 0), ("clock_ghz", 0.0), ("dram_gbs", -1.0),
                                          ("l2_gbs", float("nan")), ("fp32_lanes", 0),
                                          ("max_threads_per_sm", 0), ("sms", -4),
                                          ("warps_to_hide_latency", 0), ("launch_us", -1.0)])
def test_gpu_profile_with_nonsense_numbers_is_refused(field: str, value: float) -> None:
    # a profile with 0 SMs or a 0 GHz clock was a ZeroDivisionError inside the model;
    # a negative SM count predicted a negative time
    from mlc.target.cuda_sim import GPUProfile

    numbers: dict[str, object] = {"sms": 10, "clock_ghz": 1.0, "dram_gbs": 100.0,
                                  "l2_bytes": 2**20, "l2_gbs": 500.0}
    numbers[field] = value
    with pytest.raises(ArgumentError, match=f"{field}=.*finite number"):
        GPUProfile("mine", **numbers)  # type: ignore[arg-type]


def test_a_sensible_gpu_profile_predicts_a_positive_time() -> None:
    from mlc.target.cuda_sim import GPUProfile, predict

    gpu = GPUProfile("mine", sms=10, clock_ghz=1.0, dram_gbs=100.0, l2_bytes=2**20,
                     l2_gbs=500.0, launch_us=0.0)
    f = _elementwise_module()
    assert predict(f, rng.random(256, dtype="float32"), np.zeros(256, "float32"),
                   gpu=gpu).time > 0


# -- a value read from shared memory into a variable, then the memory overwritten ---------------

_LET_HEAD = ('@T.prim_func\ndef f(A: T.Buffer((64,), "int32"), '
             'B: T.Buffer((64,), "int32")):\n')


def _let_kernel(body: str) -> mlc.runtime.Module:
    func = from_source(_LET_HEAD + textwrap.indent(textwrap.dedent(body), "    "))
    return mlc.build(func, target="cuda-sim")


@pytest.mark.parametrize("checked", [True, False])
def test_variable_read_from_shared_then_overwritten(checked: bool) -> None:
    # `v = S[31 - tx]; S[tx] = 2 * v`: no barrier went between the read (a let's value) and
    # the write, so the first call was a RaceError for a correct program; and cuda-sim
    # (without the check) read S[31 - tx] again after the next barrier, seeing 2 * v, not v
    f = _let_kernel("""
        S = T.alloc_buffer((32,), "int32", scope="shared")
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                S[tx] = A[bx * 32 + tx]
                v = S[31 - tx]
                c = v > 0
                S[tx] = v * 2
                B[bx * 32 + tx] = T.Select(c, S[31 - tx] + v, v)
    """)
    f.check_on_first_call = checked
    a = rng.integers(-100, 100, 64).astype("int32")
    b = np.zeros(64, "int32")
    f(a, b)
    v = a.reshape(2, 32)[:, ::-1]
    np.testing.assert_array_equal(b, np.where(v > 0, (2 * v)[:, ::-1] + v, v).reshape(-1))


@pytest.mark.parametrize("checked", [True, False])
def test_variable_read_from_shared_in_a_loop(checked: bool) -> None:
    f = _let_kernel("""
        S = T.alloc_buffer((32,), "int32", scope="shared")
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                S[tx] = A[bx * 32 + tx]
                for it in range(3):
                    v = S[31 - tx]
                    S[tx] = S[tx] + v
                B[bx * 32 + tx] = S[tx]
    """)
    f.check_on_first_call = checked
    a = rng.integers(-100, 100, 64).astype("int32")
    b = np.zeros(64, "int32")
    f(a, b)
    s = a.reshape(2, 32).copy()
    for _ in range(3):
        s = s + s[:, ::-1]
    np.testing.assert_array_equal(b, s.reshape(-1))


# -- a scan whose step reads a neighbour in the previous row -----------------------------------

# the iterations of the i loop write row t and read row t - 1 of the state, which never
# overlap: bind/parallel refused any read at another column
def test_scan_reading_the_previous_rows_neighbour_binds_to_threads() -> None:
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n))
    init = te.compute((1, n), lambda _, i: X[0, i])
    update = te.compute((m, n), lambda t, i: state[t - 1, n - 1 - i] + X[t, i])
    scan = te.scan(init, update, state, inputs=[X])
    s = te.create_schedule(scan.op)
    for stage in (init, update):
        xo, xi = s[stage].split(stage.op.axis[1], factor=32)
        s[stage].bind(xo, te.thread_axis("blockIdx.x"))
        s[stage].bind(xi, te.thread_axis("threadIdx.x"))
    f = mlc.build(s, [X, scan], target="cuda-sim")
    x = rng.random((6, 40), dtype="float32")
    y = np.full((6, 40), np.nan, "float32")
    f(x, y)
    ref = x.copy()
    for t in range(1, 6):
        ref[t] = ref[t - 1][::-1] + x[t]
    np.testing.assert_allclose(y, ref, rtol=1e-5)


# -- a local write cache over symbolic sizes -----------------------------------------------------

def _symbolic_local_output() -> tir.Schedule:
    m, n, kk = te.var("m"), te.var("n"), te.var("kk")
    A = te.placeholder((m, kk), name="A")
    B = te.placeholder((kk, n), name="B")
    k = te.reduce_axis((0, kk), name="k")
    C = te.compute((m, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    sch = tir.Schedule(te.create_prim_func([A, B, C]))
    c = sch.get_block("C")
    i, j, _ = sch.get_loops(c)
    i0, i1 = sch.split(i, [None, 8])
    j0, j1 = sch.split(j, [None, 8])
    sch.reorder(i0, j0, i1, j1)
    sch.bind(i0, "blockIdx.y")
    sch.bind(j0, "blockIdx.x")
    sch.bind(i1, "threadIdx.y")
    sch.bind(j1, "threadIdx.x")
    cl = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(cl, j1)
    return sch


def test_local_buffer_used_outside_the_threads_names_the_statement() -> None:
    # the message said only "compute_at it inside the loop bound to threadIdx", which the
    # student had done for the compute: the copy into L outside the threads is the problem
    # (cache_write's copy-in over symbolic sizes is such a copy)
    func = _script("""
        L = T.alloc_buffer((64,), "float32", scope="local")
        for i in range(64):
            L[i] = A[i]
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                B[bx * 32 + tx] = L[bx * 32 + tx] * 2.0
    """)
    with pytest.raises(CodegenError, match=r"'L'.*store to 'L' `L\[i\] = A\[i\]` is not "
                                           r"inside any bound loop"):
        mlc.build(func, target="cuda-sim")


def test_local_write_cache_over_symbolic_sizes_builds() -> None:
    # cache_write copied C into C_local outside the thread loops until d75a71f (cache.py)
    f = mlc.build(_symbolic_local_output().mod, target="cuda-sim")
    a = rng.standard_normal((13, 5)).astype("float32")
    b = rng.standard_normal((5, 7)).astype("float32")
    c = np.full((13, 7), np.nan, "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


# -- arrays with no elements -------------------------------------------------------------------

def test_empty_arrays_build_a_module_with_no_kernel() -> None:
    # shape (0,): lowering removes the loops, and the build said "the function has no loop
    # bound to a GPU thread axis; bind the outer loop to blockIdx.x ..." to a student who had
    from mlc.target.cuda_sim import check, predict

    s, args = _scaled(0, "blockIdx.x", "threadIdx.x", 32)
    f = mlc.build(s, args, target="cuda-sim")
    assert f.kernels == ()
    a, b = np.zeros(0, "float32"), np.zeros(0, "float32")
    f(a, b)
    assert "0 accesses" in repr(check(f, a, b))
    assert predict(f, a, b).time == 0.0
    assert mlc.build(s, args, target="cuda").kernels == ()


def test_an_unbound_program_is_still_refused() -> None:
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    with pytest.raises(CodegenError, match="not inside any loop bound to a GPU thread axis"):
        mlc.build(te.create_schedule(B.op), [A, B], target="cuda-sim")


# -- integer division by zero in the checking interpreter ----------------------------------------

def _divide(guarded: bool) -> mlc.runtime.Module:
    A = te.placeholder((8,), name="A", dtype="int32")
    D = te.placeholder((8,), name="D", dtype="int32")
    if guarded:
        C = te.compute((8,), lambda i: te.if_then_else(D[i] != 0, te.floordiv(A[i], D[i]), 0),
                       name="C")
    else:
        C = te.compute((8,), lambda i: te.floordiv(A[i], D[i]), name="C")
    s = te.create_schedule(C.op)
    o, i = s[C].split(C.op.axis[0], factor=4)
    s[C].bind(o, te.thread_axis("blockIdx.x"))
    s[C].bind(i, te.thread_axis("threadIdx.x"))
    return mlc.build(s, [A, D, C], target="cuda-sim")


@pytest.mark.parametrize("a0, d0", [(5, 0), (-2**31, -1)])
def test_check_reports_an_integer_division_by_zero(a0: int, d0: int) -> None:
    # f(...) raised IntegerDivisionError, but f.check(...) said "no races ..." and wrote
    # the outputs as if nothing had happened
    f = _divide(guarded=False)
    a = np.arange(8, dtype="int32")
    d = np.ones(8, "int32")
    a[5], d[5] = a0, d0
    with pytest.raises(IntegerDivisionError, match=rf"threadIdx \(1\).*divisor {d0}"):
        f.check(a, d, np.zeros(8, "int32"))
    with pytest.raises(IntegerDivisionError):
        f(a, d, np.zeros(8, "int32"))


def test_a_guarded_division_is_not_reported() -> None:
    f = _divide(guarded=True)
    a = np.arange(8, dtype="int32")
    d = np.array([0, 1, 2, 0, 3, 2, 0, 1], "int32")
    c = np.zeros(8, "int32")
    f.check(a, d, c)
    f(a, d, c)
    np.testing.assert_array_equal(c, np.where(d != 0, a // np.where(d == 0, 1, d), 0))


# -- shared memory written by one kernel and read by another -------------------------------------

def _shared_copy_schedule(attach: bool) -> tir.Schedule:
    A = te.placeholder((256,), name="A")
    B = te.compute((256,), lambda i: A[i] * 2.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    b = sch.get_block("B")
    cache = sch.cache_read(b, 0, "shared")
    (loop,) = sch.get_loops(b)
    bo, bi = sch.split(loop, [None, 64])
    sch.bind(bo, "blockIdx.x")
    sch.bind(bi, "threadIdx.x")
    if attach:
        sch.compute_at(cache, bo)
    else:  # the copy gets loops (and a kernel) of its own
        (loop,) = sch.get_loops(cache)
        bo, bi = sch.split(loop, [None, 64])
        sch.bind(bo, "blockIdx.x")
    sch.bind(sch.get_loops(cache)[-1] if attach else bi, "threadIdx.x")
    return sch


def test_shared_buffer_filled_by_another_kernel_is_refused() -> None:
    # the consumer's kernel read A_shared that only the copy's kernel wrote: garbage on a
    # GPU; the first call said the copy did not cover the elements read
    with pytest.raises(CodegenError, match=r"reads the shared buffer 'A_shared', written only "
                                           r"by the kernel 'main_kernel0'.*compute_at"):
        mlc.build(_shared_copy_schedule(attach=False).mod, target="cuda-sim")


def test_shared_buffer_filled_in_the_same_kernel_works() -> None:
    a = rng.random(256, dtype="float32")
    b = np.zeros(256, "float32")
    mlc.build(_shared_copy_schedule(attach=True).mod, target="cuda-sim")(a, b)
    np.testing.assert_allclose(b, 2 * a)


# -- CUDA C that NVRTC refused, or that computed something else than cuda-sim -------------------

def _cuda_source(fn: object, dtypes: list[str]) -> str:
    from mlc.target.cuda import nvrtc

    ins = [te.placeholder((64,), name=f"X{k}", dtype=d) for k, d in enumerate(dtypes)]
    C = te.compute((64,), lambda i: fn(*[x[i] for x in ins]), name="C")  # type: ignore[operator]
    s = te.create_schedule(C.op)
    o, i = s[C].split(C.op.axis[0], factor=32)
    s[C].bind(o, te.thread_axis("blockIdx.x"))
    s[C].bind(i, te.thread_axis("threadIdx.x"))
    f = mlc.build(s, [*ins, C], target="cuda")  # NVRTC, where present, compiles it here
    if nvrtc.available():
        assert ".entry" in f.get_source("ptx")
    return f.get_source("cuda")


@pytest.mark.parametrize("value, literal", [(3000000000, "3000000000LL"),
                                            (-2**63, "(-9223372036854775807LL - 1LL)"),
                                            (-(2**40), "(-1099511627776LL)")])
def test_int64_constants_compile_with_nvrtc(value: int, literal: str) -> None:
    # INT64_C(3000000000): NVRTC has no <stdint.h>, so a valid int64 program failed to build
    src = _cuda_source(lambda x: x * te.const(value, "int64"), ["int64"])
    assert literal in src and "INT64_C" not in src


def test_float_floor_division_is_floor_of_the_quotient_in_cuda() -> None:
    # (float)mlc_floordiv(a, b) went through the int64 helper: 0.7 // 0.2 was 0 // 0 on a
    # GPU (cuda-sim, on LLVM, gave 3)
    src = _cuda_source(lambda a, b: te.floordiv(a, b), ["float32", "float32"])
    assert "floorf((X0[" in src and "mlc_floordiv(X0" not in src
    src = _cuda_source(lambda a, b: te.floordiv(a, b), ["float64", "float64"])
    assert "floor((X0[" in src


def test_float_remainder_is_fmod_in_cuda() -> None:
    # `a % b` on floats: NVRTC refused to compile it
    src = _cuda_source(lambda a, b: te.truncmod(a, b), ["float32", "float32"])
    assert "fmodf(X0[" in src


def test_float_floor_modulo_is_refused_on_cuda_as_on_cuda_sim() -> None:
    # cuda-sim (LLVM) refuses it; cuda printed it through the int64 helper
    with pytest.raises(CodegenError, match="floor modulo"):
        _cuda_source(lambda a, b: te.floormod(a, b), ["float32", "float32"])
    A = te.placeholder((64,), name="A")
    C = te.compute((64,), lambda i: te.floormod(A[i], 0.5), name="C")
    s = te.create_schedule(C.op)
    o, i = s[C].split(C.op.axis[0], factor=32)
    s[C].bind(o, te.thread_axis("blockIdx.x"))
    s[C].bind(i, te.thread_axis("threadIdx.x"))
    with pytest.raises(CodegenError, match="floor modulo"):
        mlc.build(s, [A, C], target="cuda-sim")


def test_uint64_constant_past_2_63_in_the_checker() -> None:
    # the checking interpreter made np.int64(2**63 + 5): an OverflowError on the first call
    A = te.placeholder((64,), name="A", dtype="uint64")
    C = te.compute((64,), lambda i: A[i] + te.const(2**63 + 5, "uint64"), name="C")
    s = te.create_schedule(C.op)
    o, i = s[C].split(C.op.axis[0], factor=32)
    s[C].bind(o, te.thread_axis("blockIdx.x"))
    s[C].bind(i, te.thread_axis("threadIdx.x"))
    a = np.arange(64, dtype="uint64")
    c = np.zeros(64, "uint64")
    mlc.build(s, [A, C], target="cuda-sim")(a, c)
    np.testing.assert_array_equal(c, a + np.uint64(2**63 + 5))


# -- an accumulator updated by every thread of an axis it does not use --------------------------

def _gemv(rows_per_block: int = 4) -> tir.Schedule:
    A = te.placeholder((16, 64), name="A")
    x = te.placeholder((64,), name="x")
    k = te.reduce_axis((0, 64), name="k")
    y = te.compute((16,), lambda i: te.sum(A[i, k] * x[k], axis=k), name="y")
    sch = tir.Schedule(te.create_prim_func([A, x, y]))
    b = sch.get_block("y")
    i, kk = sch.get_loops(b)
    io, ii = sch.split(i, [None, rows_per_block])
    ko, _ = sch.split(kk, [None, 8])
    sch.bind(io, "blockIdx.x")
    sch.bind(ii, "threadIdx.y")
    xs = sch.cache_read(b, 1, "shared")
    sch.compute_at(xs, ko)
    sch.bind(sch.get_loops(xs)[-1], "threadIdx.x")  # the copy launches threadIdx.x
    return sch


@pytest.mark.parametrize("checked", [True, False])
def test_row_sums_under_a_cooperative_copy_bound_to_another_axis(checked: bool) -> None:
    # rows on threadIdx.y, the shared copy of x on threadIdx.x: the 8 threads along x all
    # ran y[row] = y[row] + ... at once (a RaceError on the first call, a wrong y without
    # the check); the threads with threadIdx.x == 0 now do the sum alone
    f = mlc.build(_gemv().mod, target="cuda-sim")
    f.check_on_first_call = checked
    a = rng.random((16, 64), dtype="float32")
    x = rng.random(64, dtype="float32")
    y = np.zeros(16, "float32")
    f(a, x, y)
    np.testing.assert_allclose(y, a @ x, rtol=1e-5)
    assert "if (threadIdx.x == 0)" in f.get_source("cuda").replace("((", "(").replace("))", ")")


def test_a_value_every_thread_writes_and_reads_back_is_left_alone() -> None:
    # B[ty] is written (the same value) by all threads along x and read back by each: not an
    # accumulator, so no thread is left out of writing it
    func = from_source(textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32"),
              C: T.Buffer((4, 8), "float32")):
            for bx in T.thread_binding(1, thread="blockIdx.x"):
                for ty in T.thread_binding(4, thread="threadIdx.y"):
                    B[ty] = A[ty] * 2.0
                    for tx in T.thread_binding(8, thread="threadIdx.x"):
                        C[ty, tx] = B[ty] + T.float32(tx)
    """))
    assert "threadIdx.x == 0" not in str(mlc.lower(func, target="cuda-sim"))

"""LLVM backend: local allocations, loops with hints, and parallel loops on libgomp."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from llvm_helpers import build, loop

from mlc.runtime import parallel
from mlc.target.llvm.parallel import free_vars
from mlc.tir import (
    Allocate,
    Buffer,
    BufferStore,
    Call,
    Cast,
    For,
    ForKind,
    IfThenElse,
    Let,
    LetStmt,
    SizeVar,
    Var,
    const,
    seq,
)

RNG = np.random.default_rng(2)


def _row_sum(rows: SizeVar, cols: int, kind: ForKind = ForKind.SERIAL, scope_size: int = 1):
    """``B[i] = sum(A[i, :])`` with the accumulator in a local one-element buffer."""
    A = Buffer("A", (rows, cols), "float32")
    B = Buffer("B", (rows,), "float32")
    acc = Buffer("acc", (scope_size,), "float32", scope="local")
    flat_a = Buffer("A_flat", (rows * cols,), "float32", data=A.data)
    i, k = Var("i", "int32"), Var("k", "int32")
    body = Allocate(acc, seq(
        BufferStore(acc, const(0.0), (const(0),)),
        loop(k, cols, BufferStore(acc, acc[0] + flat_a[i * cols + k], (const(0),))),
        BufferStore(B, acc[0], (i,)),
    ))
    return build((A, B), loop(i, rows, body, kind))


def test_reduction_with_a_local_allocation() -> None:
    f = _row_sum(SizeVar("m", "int32"), 37)
    a = RNG.random((5, 37), dtype=np.float32)
    b = np.empty(5, np.float32)
    f(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)
    assert "alloca [1 x float], align 64" in f.get_source("ll-unopt")


def test_large_and_symbolic_allocations_go_to_the_heap() -> None:
    """A 1 MiB scratch buffer is a block kept between calls (see test_llvm_workspace);
    one of symbolic size ``n``: aligned_alloc + free on every call."""
    n = SizeVar("n", "int32")
    A = Buffer("A", (n,), "float32")
    B = Buffer("B", (n,), "float32")
    big = Buffer("big", (1 << 18,), "float32")
    tmp = Buffer("tmp", (n,), "float32")
    i = Var("i", "int32")
    body = Allocate(big, Allocate(tmp, seq(
        loop(i, n, BufferStore(tmp, A[i] * 3.0, (i,))),
        loop(i, n, BufferStore(big, tmp[i], (i,))),
        loop(i, n, BufferStore(B, big[i] + 1.0, (i,))),
    )))
    f = build((A, B), body)
    a = RNG.random(1000, dtype=np.float32)
    b = np.empty_like(a)
    f(a, b)
    np.testing.assert_allclose(b, a * 3 + 1, rtol=1e-6)
    ir = f.get_source("ll-unopt")
    assert ir.count('call i8* @"__mlc_ws_take64"(') == 1
    assert ir.count('call void @"__mlc_ws_give"(') == 1
    entry = ir[ir.index('define void @"'):]
    entry = entry[:entry.index("\n}")]
    assert entry.count('call i8* @"aligned_alloc"(i64 64') == 1  # tmp, of size n
    assert entry.count('call void @"free"') == 1


def test_multi_dimensional_indices_are_flattened_row_major() -> None:
    A = Buffer("A", (3, 4), "int32")
    B = Buffer("B", (4, 3), "int32")
    i, j = Var("i", "int32"), Var("j", "int32")
    f = build((A, B), loop(i, 3, loop(j, 4, BufferStore(B, A[i, j], (j, i)))))
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    b = np.empty((4, 3), np.int32)
    f(a, b)
    np.testing.assert_array_equal(b, a.T)


def test_if_let_and_hinted_loops() -> None:
    """IfThenElse, LetStmt, and loops that lowering left `vectorized`/`unroll`."""
    n = SizeVar("n", "int32")
    A = Buffer("A", (n,), "int32")
    B = Buffer("B", (n,), "int32")
    i, j, t = Var("i", "int32"), Var("j", "int32"), Var("t", "int32")
    body = seq(
        loop(i, n, LetStmt(t, A[i] * 2, IfThenElse(
            t > 4, BufferStore(B, t, (i,)), BufferStore(B, const(0) - t, (i,))
        )), ForKind.VECTORIZED),
        loop(j, 4, BufferStore(B, B[j] + 1000, (j,)), ForKind.UNROLLED),
    )
    f = build((A, B), body)
    a = np.arange(10, dtype=np.int32)
    b = np.empty_like(a)
    f(a, b)
    expected = np.where(a * 2 > 4, a * 2, -a * 2)
    expected[:4] += 1000
    np.testing.assert_array_equal(b, expected)
    ir = f.get_source("ll-unopt")
    assert "llvm.loop.vectorize.enable" in ir and "distinct !{" in ir
    assert "for_j" not in ir  # four copies of the body instead of a loop


def _thread_ids(n: int, threads: str, monkeypatch: pytest.MonkeyPatch) -> np.ndarray:
    monkeypatch.setenv("MLC_NUM_THREADS", threads)
    T = Buffer("T", (n,), "int32")
    i = Var("i", "int32")
    f = build((T,), loop(i, n, BufferStore(T, Call("int32", "omp_get_thread_num", ()), (i,)),
                         ForKind.PARALLEL))
    t = np.full(n, -1, np.int32)
    f(t)
    return t


needs_gomp = pytest.mark.skipif(
    not parallel.available(warn=False), reason="libgomp (OpenMP runtime) not found"
)


@needs_gomp
def test_parallel_loop_runs_on_several_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each iteration records the thread that ran it: static chunks, thread 0 first."""
    t = _thread_ids(100, "2", monkeypatch)
    np.testing.assert_array_equal(t, np.repeat([0, 1], 50))
    t = _thread_ids(10, "3", monkeypatch)  # chunks of 4, 4, 2
    np.testing.assert_array_equal(t, [0, 0, 0, 0, 1, 1, 1, 1, 2, 2])


@needs_gomp
def test_parallel_loop_with_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    np.testing.assert_array_equal(_thread_ids(20, "1", monkeypatch), np.zeros(20))


@pytest.mark.parametrize("threads", ["1", "2"])
def test_parallel_reduction_matches_numpy(threads: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each thread gets its own accumulator (the Allocate is inside the parallel body)."""
    monkeypatch.setenv("MLC_NUM_THREADS", threads)
    f = _row_sum(SizeVar("m", "int32"), 64, ForKind.PARALLEL)
    a = RNG.random((301, 64), dtype=np.float32)
    b = np.empty(301, np.float32)
    f(a, b)
    np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)
    if parallel.available(warn=False):
        assert "GOMP_parallel" in f.get_source("ll")


def test_parallel_inside_a_serial_loop_captures_outer_variables() -> None:
    """``for i: for j in parallel: C[i, j] = A[i, j] + i * s``: i and s reach the threads."""
    n = SizeVar("n", "int32")
    A = Buffer("A", (4, n), "float32")
    C = Buffer("C", (4, n), "float32")
    flat_a = Buffer("A_flat", (4 * n,), "float32", data=A.data)
    flat_c = Buffer("C_flat", (4 * n,), "float32", data=C.data)
    i, j, k = Var("i", "int32"), Var("j", "int32"), Var("k", "int32")
    value = flat_a[i * n + j] + Cast("float32", i * n)
    # a parallel loop nested in another runs serially inside the outer one's threads
    inner = loop(k, 2, BufferStore(flat_c, value, (i * n + j,)), ForKind.PARALLEL)
    body = loop(i, 4, loop(j, n, inner, ForKind.PARALLEL))
    assert sorted(v.name for v in free_vars(body.body)) == ["A", "C", "i", "n"]
    f = build((A, C), body)
    a = RNG.random((4, 33), dtype=np.float32)
    c = np.empty_like(a)
    f(a, c)
    np.testing.assert_allclose(c, a + (np.arange(4) * 33)[:, None], rtol=1e-6)


def test_free_vars_lists_what_the_outlined_body_needs() -> None:
    n = SizeVar("n", "int32")
    A = Buffer("A", (n,), "float32")
    tmp = Buffer("tmp", (4,), "float32")
    i, j, t = Var("i", "int32"), Var("j", "int32"), Var("t", "int32")
    body = loop(i, n, LetStmt(t, i * 2, Allocate(tmp, seq(
        loop(j, 4, BufferStore(tmp, A[t], (j,))),
        BufferStore(A, tmp[0], (i,)),
    ))), ForKind.PARALLEL)
    assert [v.name for v in free_vars(body)] == ["A", "n"]


def test_without_libgomp_parallel_loops_run_serially_with_one_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(parallel, "_state", {"path": None})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            f = _row_sum(SizeVar("m", "int32"), 8, ForKind.PARALLEL)
            a = RNG.random((10, 8), dtype=np.float32)
            b = np.empty(10, np.float32)
            f(a, b)
            np.testing.assert_allclose(b, a.sum(axis=1), rtol=1e-5)
            assert "GOMP_parallel" not in f.get_source("ll-unopt")
    messages = [str(w.message) for w in caught if "libgomp" in str(w.message)]
    assert len(messages) == 1 and "run serially" in messages[0]


def test_thread_bound_loops_and_let_expressions_run_serially_on_the_cpu() -> None:
    """A loop bound to threadIdx.x is an ordinary loop on the CPU; Let binds inside an expr."""
    A = Buffer("A", (8,), "int32")
    i, t = Var("i", "int32"), Var("t", "int32")
    body = For(i, const(0), const(8), ForKind.THREAD_BINDING,
               BufferStore(A, Let(t, i * 3, t + t), (i,)), thread_binding="threadIdx.x")
    f = build((A,), body)
    a = np.zeros(8, np.int32)
    f(a)
    np.testing.assert_array_equal(a, np.arange(8) * 6)


@needs_gomp
def test_too_many_threads_are_capped_with_a_warning() -> None:
    """MLC_NUM_THREADS=100000 made libgomp crash the process (a segmentation fault). In a
    process of its own: a team of 1024 threads stays in libgomp's pool afterwards."""
    code = textwrap.dedent("""
        import warnings
        import numpy as np
        import mlc
        from mlc import config, te
        A = te.placeholder((4096,), "int32", name="A")
        B = te.compute((4096,), lambda i: A[i] + 1, name="B")
        s = te.create_schedule(B.op)
        s[B].parallel(B.op.axis[0])
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            f = mlc.build(s, [A, B])
        a = np.arange(4096, dtype="int32"); b = np.zeros_like(a); f(a, b)
        print(config.MAX_THREADS, bool((b == a + 1).all()), str(caught[0].message).split(",")[0])
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env={**os.environ, "MLC_NUM_THREADS": "100000"})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "1024 True MLC_NUM_THREADS=100000: using 1024 threads"


@pytest.mark.parametrize("value", ["0", "-1", "abc", "3.5"])
def test_a_thread_count_that_is_not_a_positive_whole_number_warns(
    value: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from mlc import config

    monkeypatch.setenv("MLC_NUM_THREADS", value)
    with pytest.warns(UserWarning, match="is not a positive whole number; using one thread"):
        n = config.num_threads()
    assert n == max(1, len(os.sched_getaffinity(0)))

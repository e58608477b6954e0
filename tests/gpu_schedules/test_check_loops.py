"""The checking interpreter runs a thread's loop iterations at once where no iteration
touches what another one writes (mlc.target.cuda_sim.vectorize), and stops a check that runs
out of its time budget. These programs put loops where that could go wrong: an iteration
that reads what the previous one wrote, a race or a bad index inside a loop run at once, a
loop too long to check."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import mlc
from mlc.errors import GPUIndexError, RaceError, UninitializedReadError
from mlc.script import from_source
from mlc.target.cuda_sim.checks import check_program


def _build(body: str, n: int = 256, dtype: str = "float32") -> mlc.runtime.Module:
    head = (f'@T.prim_func\ndef f(A: T.Buffer(({n},), "{dtype}"), '
            f'B: T.Buffer(({n},), "{dtype}")):\n')
    return mlc.build(from_source(head + textwrap.indent(textwrap.dedent(body), "    ")),
                     target="cuda-sim")


def test_carried_loop_in_a_local_array_is_checked_in_order() -> None:
    # L[i] = L[i - 1] + A[...]: each iteration reads the previous one's element; run at
    # once, every iteration would read garbage (an uninitialised read) or the old value
    f = _build("""
        for bx in T.thread_binding(4, thread="blockIdx.x"):
            for tx in T.thread_binding(8, thread="threadIdx.x"):
                L = T.alloc_buffer((8,), "float32", scope="local")
                L[0] = A[(bx * 8 + tx) * 8]
                for i in range(1, 8):
                    L[i] = L[i - 1] + A[(bx * 8 + tx) * 8 + i]
                for j in range(8):
                    B[(bx * 8 + tx) * 8 + j] = L[j]
    """)
    a = np.random.default_rng(0).random(256, dtype="float32")
    b = np.zeros(256, "float32")
    report = f.check(a, b)
    assert report.complete
    np.testing.assert_allclose(b, np.cumsum(a.reshape(32, 8), axis=1).reshape(-1), rtol=1e-5)


def test_race_inside_a_loop_run_at_once_names_two_threads() -> None:
    # every thread writes S[i] for i in 0..7, each its own value: the loop runs at once
    # (no iteration touches another's element), the threads still race
    f = _build("""
        S = T.alloc_buffer((8,), "float32", scope="shared")
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(32, thread="threadIdx.x"):
                for i in range(8):
                    S[i] = A[bx * 32 + tx] + T.float32(i)
                B[bx * 32 + tx] = S[tx % 8]
    """)
    with pytest.raises(RaceError, match=r"write-write race.*threadIdx \(\d+\).*threadIdx"):
        f.check(np.arange(256, dtype="float32"), np.zeros(256, "float32"))


def test_bad_index_inside_a_loop_names_the_thread() -> None:
    # the offset is a scalar argument: nothing before the run knows the last thread's
    # last iteration writes past B
    func = from_source(textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((256,), "float32"), B: T.Buffer((256,), "float32"), off: T.int32):
            for bx in T.thread_binding(2, thread="blockIdx.x"):
                for tx in T.thread_binding(16, thread="threadIdx.x"):
                    for i in range(8):
                        B[(bx * 16 + tx) * 8 + i + off] = A[(bx * 16 + tx) * 8 + i]
    """))
    f = mlc.build(func, target="cuda-sim")
    b = np.zeros(256, "float32")
    f.check(np.ones(256, "float32"), b, 0)
    with pytest.raises(GPUIndexError, match=r"blockIdx \(1\), threadIdx \(15\) writes "
                                            r"element 256 of B"):
        f.check(np.ones(256, "float32"), b, 1)


def test_uninitialised_shared_read_inside_a_loop_run_at_once() -> None:
    # the copy fills S[0..15] (two per thread); the loop reads S[i] for i up to 17
    f = _build("""
        S = T.alloc_buffer((32,), "float32", scope="shared")
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(8, thread="threadIdx.x"):
                for c in range(2):
                    S[tx * 2 + c] = A[bx * 16 + tx * 2 + c]
                for i in range(18):
                    B[bx * 128 + tx * 16 + i % 16] = S[i]
    """)
    with pytest.raises((UninitializedReadError, RaceError), match=r"S\[16\]|S\[17\]"):
        f.check(np.ones(256, "float32"), np.zeros(256, "float32"))


def test_outputs_of_a_check_with_loops_run_at_once_match_the_simulation() -> None:
    f = _build("""
        for bx in T.thread_binding(4, thread="blockIdx.x"):
            for tx in T.thread_binding(8, thread="threadIdx.x"):
                for i in range(4):
                    for j in range(2):
                        B[(bx * 8 + tx) * 8 + i * 2 + j] = A[(bx * 8 + tx) * 8 + j * 4 + i] * 2.0
    """)
    a = np.random.default_rng(1).random(256, dtype="float32")
    b1, b2 = np.zeros(256, "float32"), np.zeros(256, "float32")
    f.check(a, b1)
    f.check_calls = "never"
    f(a, b2)
    np.testing.assert_array_equal(b1, b2)


def test_a_very_long_loop_is_checked_until_the_budget_runs_out() -> None:
    # 1,000,000 iterations of an accumulation per thread: iteration by iteration, the
    # check ran for many minutes before the call; now the sums are folded many iterations
    # at a time, and with a small budget the check stops at its deadline, says where, and
    # the call runs
    n = 1_000_000
    func = from_source(textwrap.dedent(f"""
        @T.prim_func
        def f(A: T.Buffer(({n},), "float32"), B: T.Buffer((64,), "float32")):
            for bx in T.thread_binding(2, thread="blockIdx.x"):
                for tx in T.thread_binding(32, thread="threadIdx.x"):
                    B[bx * 32 + tx] = T.float32(0)
                    for i in range({n}):
                        B[bx * 32 + tx] = B[bx * 32 + tx] + A[i]
    """))
    f = mlc.build(func, target="cuda-sim")
    f.check_budget = 0.5
    a = np.ones(n, "float32")
    b = np.zeros(64, "float32")
    with pytest.warns(UserWarning, match=r"the time ran out at kernel f_kernel, line \d+, "
                                         r"iterations? \d+ (to \d+ )?of loop i "
                                         r"\(1000000 in all"):
        f(a, b)
    np.testing.assert_allclose(b, np.full(64, n, "float32"), rtol=1e-3)
    assert not f.last_check.complete and "iteration" in f.last_check.stopped


def test_a_deadline_in_the_past_checks_nothing_and_says_so() -> None:
    f = _build("""
        for bx in T.thread_binding(4, thread="blockIdx.x"):
            for tx in T.thread_binding(64, thread="threadIdx.x"):
                B[bx * 64 + tx] = A[bx * 64 + tx]
    """)
    report = check_program(f.func, [np.ones(256, "float32"), np.zeros(256, "float32")],
                           deadline=0.0)
    assert not report.complete and report.stopped is not None
    assert "stopped at" in repr(report)


def _run(func: object, arrays: list[np.ndarray], at_once: bool) -> list[np.ndarray]:
    from mlc.target.cuda_sim.checks import Checker
    from mlc.target.cuda_sim.interp import Interpreter

    copies = [a.copy() for a in arrays]
    interp = Interpreter(func, [Checker()])
    interp.vectorize_loops = at_once
    interp.run(*copies)
    return copies


@pytest.mark.parametrize("seed", range(12))
def test_loops_run_at_once_compute_what_one_by_one_computes(seed: int) -> None:
    # a local array updated in a 2-deep loop nest at (i * a + j * b + c) % 16 from
    # (i * a2 + j * b2 + c2) % 16: some nests are independent, some carried, some only in
    # their outer loop; the checker's fast path must give the same numbers either way
    r = np.random.default_rng(seed)
    a, b, c, a2, b2, c2 = (int(x) for x in r.integers(0, 9, 6))
    ni, nj = (int(x) for x in r.integers(1, 6, 2))
    func = from_source(textwrap.dedent(f"""
        @T.prim_func
        def f(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
            for bx in T.thread_binding(2, thread="blockIdx.x"):
                for tx in T.thread_binding(4, thread="threadIdx.x"):
                    L = T.alloc_buffer((16,), "float32", scope="local")
                    for z in range(16):
                        L[z] = A[(bx * 4 + tx) * 16 + z]
                    for i in range({ni}):
                        for j in range({nj}):
                            L[(i * {a} + j * {b} + {c}) % 16] = (
                                L[(i * {a2} + j * {b2} + {c2}) % 16] * T.float32(0.5)
                                + A[(bx * 4 + tx) * 16 + (i + j) % 16])
                    for z in range(16):
                        B[(bx * 4 + tx) * 16 + z] = L[z]
    """))
    f = mlc.build(func, target="cuda-sim")
    from mlc.target.cuda_sim.interp import gpu_program

    program = gpu_program(f)
    arrays = [r.random(128, dtype="float32"), np.zeros(128, "float32")]
    one_by_one = _run(program, arrays, False)
    at_once = _run(program, arrays, True)
    np.testing.assert_array_equal(at_once[1], one_by_one[1])
    f.check_calls = "never"
    out = arrays[1].copy()
    f(arrays[0], out)
    np.testing.assert_allclose(at_once[1], out, rtol=1e-6)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_sums_folded_at_once_equal_the_loop_bit_for_bit(seed: int, dtype: str) -> None:
    # a per-thread sum, reset to a value in one iteration, some updates under a condition:
    # folded in iteration order it must round (float32) or wrap (int32) as the loop does
    r = np.random.default_rng(seed)
    k_len, reset, skip = int(r.integers(2, 40)), int(r.integers(0, 5)), int(r.integers(2, 5))
    func = from_source(textwrap.dedent(f"""
        @T.prim_func
        def f(A: T.Buffer((512,), "{dtype}"), B: T.Buffer((32,), "{dtype}")):
            for bx in T.thread_binding(2, thread="blockIdx.x"):
                for tx in T.thread_binding(16, thread="threadIdx.x"):
                    for k in range({k_len}):
                        if k == {reset}:
                            B[bx * 16 + tx] = A[(bx * 16 + tx) * 16 + k % 16]
                        if k % {skip} != 0:
                            B[bx * 16 + tx] = (B[bx * 16 + tx]
                                               + A[(bx * 16 + tx) * 16 + k % 16] * A[k])
    """))
    f = mlc.build(func, target="cuda-sim")
    from mlc.target.cuda_sim.interp import gpu_program

    if dtype == "float32":
        a = (r.standard_normal(512) * 10.0 ** r.integers(-3, 8, 512)).astype(dtype)
    else:
        a = r.integers(-(2**31), 2**31, 512).astype(dtype)
    arrays = [a, r.integers(-5, 5, 32).astype(dtype)]
    one_by_one = _run(gpu_program(f), arrays, False)
    at_once = _run(gpu_program(f), arrays, True)
    np.testing.assert_array_equal(at_once[1].view("uint32"), one_by_one[1].view("uint32"))
    f.check_calls = "never"
    out = arrays[1].copy()
    f(a, out)  # compiled: LLVM may fuse the multiply-add (one rounding instead of two)
    if dtype == "int32":
        np.testing.assert_array_equal(at_once[1], out)
    else:
        np.testing.assert_allclose(at_once[1], out, rtol=1e-5, atol=1e-30)


def test_two_threads_summing_into_one_element_race_when_folded() -> None:
    f = _build("""
        S = T.alloc_buffer((8,), "float32", scope="shared")
        for bx in T.thread_binding(2, thread="blockIdx.x"):
            for tx in T.thread_binding(16, thread="threadIdx.x"):
                S[tx // 2] = T.float32(0)
                for k in range(8):
                    S[tx // 2] = S[tx // 2] + A[bx * 128 + tx * 8 + k]
                B[bx * 16 + tx] = S[tx // 2]
    """)
    with pytest.raises(RaceError, match=r"race.*S_?\w*\[|race"):
        f.check(np.arange(256, dtype="float32"), np.zeros(256, "float32"))


def test_an_accumulator_outside_its_array_is_an_error_only_if_a_store_reaches_it() -> None:
    # thread 31 of block 1 would sum into B[64], but only when k == 100: never
    func = from_source(textwrap.dedent("""
        @T.prim_func
        def f(A: T.Buffer((512,), "float32"), B: T.Buffer((64,), "float32"), off: T.int32):
            for bx in T.thread_binding(2, thread="blockIdx.x"):
                for tx in T.thread_binding(32, thread="threadIdx.x"):
                    for k in range(8):
                        if k + off == 100 or bx * 32 + tx < 63:
                            B[bx * 32 + tx + (bx * 32 + tx) // 63] = (
                                B[bx * 32 + tx + (bx * 32 + tx) // 63] + A[k])
    """))
    f = mlc.build(func, target="cuda-sim")
    a, b = np.ones(512, "float32"), np.zeros(64, "float32")
    f.check(a, b, 0)
    np.testing.assert_array_equal(b[:63], 8.0)
    with pytest.raises(GPUIndexError, match=r"blockIdx \(1\), threadIdx \(31\) reads element "
                                            r"64 of B"):
        f.check(a, np.zeros(64, "float32"), 95)

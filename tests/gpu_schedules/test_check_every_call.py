"""cuda-sim checks every block of every call when it can afford to, and says what it checked
when it cannot. A race whose indices come from data (a scatter ``B[I[i]] = A[i]``) happens
only for some inputs and only between the blocks that hold the duplicate index: the check of
the first call on 16 sampled blocks missed a duplicate between blocks 3 and 4, and a second
call with other indices was never checked at all."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest

import mlc
from mlc.errors import GPUIndexError, RaceError
from mlc.script import from_source


def _scatter(blocks: int) -> mlc.runtime.Module:
    n = blocks * 32
    func = from_source(textwrap.dedent(f"""
        @T.prim_func
        def scatter(A: T.Buffer(({n},), "float32"), I: T.Buffer(({n},), "int32"),
                    B: T.Buffer(({n},), "float32")):
            for bx in T.thread_binding({blocks}, thread="blockIdx.x"):
                for tx in T.thread_binding(32, thread="threadIdx.x"):
                    B[I[bx * 32 + tx]] = A[bx * 32 + tx]
    """))
    return mlc.build(func, target="cuda-sim")


def _indices(n: int, dup: tuple[int, int] | None) -> np.ndarray:
    """A permutation of range(n); with ``dup=(i, j)`` element j repeats element i."""
    idx = np.random.default_rng(1).permutation(n).astype("int32")
    if dup is not None:
        idx[dup[1]] = idx[dup[0]]
    return idx


@pytest.mark.parametrize("blocks, first, second", [
    (64, 0, 1), (64, 3, 4), (64, 40, 41), (64, 7, 60), (200, 111, 112),
])
def test_data_dependent_race_between_any_two_blocks_is_found(blocks, first, second) -> None:
    f = _scatter(blocks)
    n = blocks * 32
    a = np.arange(n, dtype="float32")
    idx = _indices(n, (first * 32 + 5, second * 32 + 9))
    with pytest.raises(RaceError, match=r"write-write race.*different blocks") as info:
        f(a, idx, np.zeros(n, "float32"))
    assert f"blockIdx ({first})" in str(info.value) and f"blockIdx ({second})" in str(info.value)


def test_race_on_a_later_call_is_found() -> None:
    f = _scatter(64)
    n = 64 * 32
    a = np.arange(n, dtype="float32")
    b = np.zeros(n, "float32")
    good = _indices(n, None)
    f(a, good, b)                       # a permutation: no race
    np.testing.assert_array_equal(b[good], a)
    f(a, good, b)                       # the same indices again
    with pytest.raises(RaceError, match=r"write-write race.*blockIdx \(3\).*blockIdx \(4\)"):
        f(a, _indices(n, (3 * 32 + 1, 4 * 32 + 2)), b)


def test_out_of_range_index_on_a_later_call_names_the_thread() -> None:
    f = _scatter(64)
    n = 64 * 32
    a = np.arange(n, dtype="float32")
    f(a, _indices(n, None), np.zeros(n, "float32"))
    bad = _indices(n, None)
    bad[45 * 32 + 7] = n + 3
    with pytest.raises(GPUIndexError, match=r"blockIdx \(45\), threadIdx \(7\) writes element "
                       rf"{n + 3} of B"):
        f(a, bad, np.zeros(n, "float32"))


def test_a_passing_check_says_which_blocks_it_ran() -> None:
    f = _scatter(64)
    n = 64 * 32
    f(np.ones(n, "float32"), _indices(n, None), np.zeros(n, "float32"))
    report = f.last_check
    assert report.complete
    assert report.blocks == {"scatter_kernel": (64, 64)}
    assert "64 of 64 blocks" in repr(report)


def test_a_sampled_check_names_the_blocks_it_ran() -> None:
    f = _scatter(64)
    n = 64 * 32
    f.check_budget = 0.0            # nothing is affordable: the check samples
    with pytest.warns(UserWarning, match=r"checked 1[0-9] of the 64 blocks of scatter_kernel"):
        f(np.ones(n, "float32"), _indices(n, None), np.zeros(n, "float32"))
    report = f.last_check
    assert not report.complete
    checked, total = report.blocks["scatter_kernel"]
    assert total == 64 and checked < 64
    sampled = report.sampled["scatter_kernel"]
    assert len(sampled) == checked and (0,) in sampled and (63,) in sampled
    assert "blockIdx (0), (1)" in repr(report)


@pytest.mark.parametrize("name, value", [
    ("check_budget", -1), ("check_budget", float("nan")), ("check_budget", "3"),
    ("check_budget", True), ("check_calls", "sometimes"), ("check_calls", None),
])
def test_bad_check_settings_are_refused_when_set(name, value) -> None:
    from mlc.errors import ArgumentError

    f = _scatter(4)
    with pytest.raises(ArgumentError, match=name):
        setattr(f, name, value)


def test_check_calls_first_checks_only_the_first_call() -> None:
    f = _scatter(64)
    n = 64 * 32
    a = np.arange(n, dtype="float32")
    f.check_calls = "first"
    f(a, _indices(n, None), np.zeros(n, "float32"))
    f(a, _indices(n, (3 * 32 + 1, 4 * 32 + 2)), np.zeros(n, "float32"))  # not checked
    f.check_calls = "every"
    with pytest.raises(RaceError):
        f(a, _indices(n, (3 * 32 + 1, 4 * 32 + 2)), np.zeros(n, "float32"))


def test_a_race_that_wrote_equal_values_is_checked_again_with_other_values() -> None:
    # two blocks write B[0]: with A all ones they write the same value (harmless for that
    # call); with other values the same two writes race
    f = _scatter(8)
    n = 8 * 32
    idx = _indices(n, (5, 40))
    a = np.ones(n, "float32")
    f(a, idx, np.zeros(n, "float32"))
    assert f.last_check.same_value_writes > 0
    with pytest.raises(RaceError, match="write-write race"):
        f(np.arange(n, dtype="float32"), idx, np.zeros(n, "float32"))


def test_a_grid_of_millions_of_threads_is_sampled_not_held_in_memory() -> None:
    # 4M threads doing one add each: cheap per thread, but the interpreter would hold
    # several arrays of 4M numbers at once; the call's check samples blocks and says so
    n = 1 << 22
    func = from_source(textwrap.dedent(f"""
        @T.prim_func
        def add(A: T.Buffer(({n},), "float32"), B: T.Buffer(({n},), "float32")):
            for bx in T.thread_binding({n // 256}, thread="blockIdx.x"):
                for tx in T.thread_binding(256, thread="threadIdx.x"):
                    B[bx * 256 + tx] = A[bx * 256 + tx] + T.float32(1)
    """))
    f = mlc.build(func, target="cuda-sim")
    a = np.ones(n, "float32")
    b = np.zeros(n, "float32")
    with pytest.warns(UserWarning, match=rf"checked \d+ of the {n // 256} blocks of add_kernel"):
        f(a, b)
    np.testing.assert_array_equal(b, 2.0)

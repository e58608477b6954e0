"""The pictures and measurements of mlc.viz refuse what they cannot draw or time, by name:
zero or negative sizes, counts and rates divided by zero (ZeroDivisionError), NaN on a log
scale, a loop pinned outside its range (numpy wrapped -1 to the last row: a wrong picture)."""

from __future__ import annotations

import pytest

import mlc.viz as viz
from mlc import te
from mlc.errors import MLCTypeError
from mlc.viz import perf


def _matmul(n: int = 8):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), "k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


@pytest.mark.parametrize("pin", [-1, 8, 10**9, 1.5, True])
def test_a_tile_pinned_outside_its_loop_is_refused(pin):
    with pytest.raises(MLCTypeError, match=r"loop 'i' around block 'C' runs over 0\.\.7"):
        viz.footprint(_matmul(), "C", at={"i": pin})


def test_a_tile_pinned_inside_its_loop_is_drawn():
    counts = viz.footprint(_matmul(), "C", at={"i": 7})
    # row 7 of C: each element read and written once per step of k
    assert counts["C"][7].sum() == 2 * 8 * 8 and counts["C"][:7].sum() == 0


@pytest.mark.parametrize("call, message", [
    (lambda: perf.roofline({"a": (1.0, 2.0)}, -3.0, 10.0), "peak_gflops is -3.0"),
    (lambda: perf.roofline({"a": (1.0, 2.0)}, 100.0, 0.0), "bandwidth_gbs is 0.0"),
    (lambda: perf.roofline({"a": (float("nan"), 2.0)}, 100.0, 10.0), "GFLOPS of 'a' is nan"),
    (lambda: perf.roofline({"a": (1.0, 0.0)}, 100.0, 10.0), "intensity of 'a' is 0.0"),
    (lambda: perf.gflops_bars({"a": float("nan")}), "'a' is nan"),
    (lambda: perf.gflops_bars({"a": 1.0}, reference={"numpy": 0.0}), "reference 'numpy'"),
    (lambda: perf.matmul_intensity(0), "n=0 must be a whole number"),
    (lambda: perf.matmul_intensity(8, k=-2), "k=-2 must be a whole number"),
    (lambda: perf.seconds_per_call(lambda: None, number=0), "number=0"),
    (lambda: perf.measure_bandwidth(0), "copy at least 131072 bytes"),
    (lambda: perf.measure_peak(-1), "give a time of 0 or more"),
    (lambda: perf.arithmetic_intensity(None), "takes a PrimFunc or a tir.Schedule"),
    (lambda: perf.arithmetic_intensity(_matmul(), cache_bytes=0), "cache_bytes=0"),
    (lambda: viz.loop_context_table(None), "takes a PrimFunc or a tir.Schedule"),
])
def test_numbers_a_picture_cannot_use_are_refused_by_name(call, message):
    with pytest.raises(MLCTypeError, match=message):
        call()


def test_good_numbers_still_draw():
    assert perf.matmul_intensity(8, 4, 2) == pytest.approx(2 * 8 * 4 * 2 / (4 * (16 + 8 + 32)))
    perf.roofline({"a": (1.0, 2.0)}, 100.0, 10.0)
    perf.gflops_bars({"a": 0.0, "b": 2.0}, reference={"numpy": 4.0})

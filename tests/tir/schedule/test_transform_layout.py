"""transform_layout: a buffer stored at index_map(indices); accesses, regions and the
allocation follow, results do not change; a packed panel compacts to BLIS's layout."""

from __future__ import annotations

import json

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import ScheduleError
from mlc.tir.schedule import state
from mlc.transform import lower


def _matmul(n: int = 32, m: int = 32, k: int = 16):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return te.create_prim_func([A, B, C])


def _packed() -> tir.Schedule:
    """B copied per 16-column panel (k x 16 of a 16 x 32 B), under the column-panel loop."""
    sch = tir.Schedule(_matmul())
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    jo, ji = sch.split(j, factors=[None, 16])
    sch.reorder(jo, i, k, ji)
    panel = sch.cache_read(c, 1, "global")
    sch.compute_at(panel, jo)
    return sch


def _run(func, n: int = 32, m: int = 32, k: int = 16) -> None:
    rng = np.random.default_rng(0)
    a = rng.random((n, k), dtype="float32")
    b = rng.random((k, m), dtype="float32")
    c = np.zeros((n, m), "float32")
    mlc.build(func)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_accesses_regions_and_allocation_follow_the_map() -> None:
    sch = _packed()
    sch.transform_layout(sch.get_block("B_global"), "B_global",
                         lambda k, j: (j // 8, k, j % 8))
    text = str(sch.mod)
    assert "B_global = alloc_buffer((4, 16, 8)" in text
    assert "B_global[v1 // 8, v0, v1 % 8] = B[v0, v1]" in text
    assert "B_global[vj // 8, vr, vj % 8]" in text
    loc = state.find_block(sch.mod, "C")
    assert loc is not None
    (read,) = [r for r in loc.stmt.block.reads if r.buffer.name == "B_global"]  # type: ignore[attr-defined]
    assert [str(r.min) for r in read.region] == ["vj // 8", "vr", "vj % 8"]
    _run(sch.mod)


def test_packed_panel_compacts_to_panels_of_rows() -> None:
    # [k][16 columns] becomes [2 slivers][k][8 columns]: a sliver is one contiguous stream
    sch = _packed()
    sch.transform_layout(sch.get_block("B_global"), "B_global",
                         lambda k, j: (j // 8, k, j % 8))
    text = str(lower(sch.mod))
    assert "B_global = alloc_buffer((256,)" in text
    assert "B_global[ax1 // 8 * 128 + ax0 * 8 + ax1 % 8] = B[ax0 * 32 + j_0 * 16 + ax1]" in text
    assert "B_global[j_1 // 8 * 128 + r * 8 + j_1 % 8]" in text
    _run(sch.mod)


def test_the_trace_records_the_map_as_text_and_replays() -> None:
    sch = _packed()
    sch.transform_layout(sch.get_block("B_global"), "B_global", lambda k, j: (j // 8, k, j % 8))
    last = sch.trace.insts[-1]
    assert last.kind == "transform_layout"
    assert last.inputs["index_map"] == "lambda k, j: (j // 8, k, j % 8,)"
    assert "sch.transform_layout(block=b" in sch.trace.as_python()
    again = tir.Schedule(_matmul())
    tir.Trace.apply_json_to_schedule(json.dumps(sch.trace.as_json()), again)
    assert tir.structural_equal(again.mod, sch.mod)
    # the text form gives the same program
    text = _packed()
    text.transform_layout(text.get_block("B_global"), "B_global",
                          "lambda k, j: (j // 8, k, j % 8)")
    assert tir.structural_equal(text.mod, sch.mod)


def test_a_permutation_and_a_fused_map() -> None:
    sch = _packed()
    sch.transform_layout(sch.get_block("B_global"), "B_global", "lambda k, j: (j, k)")
    assert "alloc_buffer((32, 16)" in str(sch.mod)
    _run(sch.mod)
    sch = _packed()
    sch.transform_layout(sch.get_block("B_global"), "B_global", "lambda k, j: (k * 32 + j,)")
    assert "alloc_buffer((512,)" in str(sch.mod)
    _run(sch.mod)


@pytest.mark.parametrize(("index_map", "message"), [
    ("lambda k, j: (j // 5, k, j % 5)", "not one-to-one"),      # 32 columns, 5 does not divide
    ("lambda k, j: (j, k - 1)", "indices must be >= 0"),
    ("lambda k, j: (k, j // 0)", "divides by zero"),
    ("lambda k, j: (j % 16, k)", "not one-to-one"),
    ("lambda k: (k,)", "takes 1 indices but 'B_global' has 2 dimensions"),
    ("lambda k, j: (n, j)", "uses 'n'"),
    ("lambda k, j: (j / 2, k)", "may only use"),
    ("lambda k, j: (k, j, 1.5)", "only integers"),
    ("lambda k, j: (__import__('os'), j)", "contains Call"),
    ("(1, 2)", "must be a lambda"),
    ("lambda k, j: (", "is not Python"),
])
def test_bad_maps_are_refused_with_the_reason(index_map: str, message: str) -> None:
    sch = _packed()
    before = sch.mod
    with pytest.raises(ScheduleError, match=message.replace("(", r"\(").replace(")", r"\)")):
        sch.transform_layout(sch.get_block("B_global"), "B_global", index_map)
    assert sch.mod is before
    assert sch.trace.insts[-1].kind != "transform_layout"


def test_parameters_and_unknown_buffers_are_refused() -> None:
    sch = _packed()
    with pytest.raises(ScheduleError, match="'B' is a parameter of the function"):
        sch.transform_layout(sch.get_block("B_global"), "B", "lambda k, j: (j, k)")
    with pytest.raises(ScheduleError, match="does not access a buffer named 'X'"):
        sch.transform_layout(sch.get_block("C"), "X", "lambda k, j: (j, k)")


def test_a_strided_buffer_is_refused() -> None:
    sch = _packed()
    sch.storage_align(sch.get_block("B_global"), 0, axis=0, factor=8, offset=1)
    with pytest.raises(ScheduleError, match="only compact buffers of constant shape"):
        sch.transform_layout(sch.get_block("B_global"), "B_global", "lambda k, j: (j, k)")


def test_callables_that_are_not_integer_maps_are_refused() -> None:
    sch = _packed()
    for fn, message in [(lambda k, j: (k * 0.5, j), "only integers"),
                        (lambda k: (k,), "takes 1 indices"),
                        (lambda k, j: (abs(k), j), "could not be read")]:
        with pytest.raises(ScheduleError, match=message):
            sch.transform_layout(sch.get_block("B_global"), "B_global", fn)


def test_a_reversal_and_a_huge_buffer() -> None:
    sch = _packed()
    sch.transform_layout(sch.get_block("B_global"), "B_global", lambda k, j: (15 - k, 31 - j))
    _run(sch.mod)
    big = tir.Schedule(_matmul(n=8, m=8192, k=4096))
    c = big.get_block("C")
    big.cache_read(c, 1, "global")
    with pytest.raises(ScheduleError, match="at most 16777216 elements"):
        big.transform_layout(big.get_block("B_global"), "B_global", "lambda k, j: (j, k)")

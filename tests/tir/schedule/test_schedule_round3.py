"""Third round of hostile schedules (issue 26). Each test failed on the code before its fix."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import ScheduleError

RNG = np.random.default_rng(26)


def _two_stages() -> tir.Schedule:
    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[i, j] * 2, name="B")
    C = te.compute((64, 64), lambda i, j: B[i, j] + 1, name="C")
    return tir.Schedule(te.create_prim_func([A, C]))


def _check(sch: tir.Schedule) -> None:
    a = RNG.random((64, 64), dtype=np.float32)
    c = np.zeros_like(a)
    mlc.build(sch.mod)(a, c)
    np.testing.assert_allclose(c, a * 2 + 1, rtol=1e-6)


def test_compute_at_of_a_blockized_row_block_moves_it_into_the_consumer() -> None:
    # refused with "block 'B' runs between 'B_o' and loop 'i'" though B is inside B_o
    sch = _two_stages()
    _, j = sch.get_loops(sch.get_block("B"))
    outer = sch.blockize(j)
    ci, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(outer, ci)
    (loop,) = sch.get_loops(outer)
    assert loop == ci  # B_o now runs once per row of C
    _check(sch)


def test_compute_at_of_a_blockized_tile_of_rows() -> None:
    sch = _two_stages()
    i, _ = sch.get_loops(sch.get_block("B"))
    _, ii = sch.split(i, factors=[None, 8])
    outer = sch.blockize(ii)
    ci, _ = sch.get_loops(sch.get_block("C"))
    cio, _ = sch.split(ci, factors=[None, 8])
    sch.compute_at(outer, cio)
    assert "vi0 = axis.spatial(8, i_0" in str(sch.mod)
    _check(sch)


def test_compute_at_of_a_blockized_block_still_refuses_a_real_conflict() -> None:
    sch = _two_stages()
    _, j = sch.get_loops(sch.get_block("B"))
    outer = sch.blockize(j)
    with pytest.raises(ScheduleError, match="compute_at"):
        sch.compute_at(outer, sch.get_loops(outer)[0])  # its own loop, not a consumer's


def test_unknown_pragma_is_refused_naming_the_known_ones() -> None:
    # sch.annotate(loop, "pragma_bogus", 1) was accepted and did nothing
    sch = _two_stages()
    i, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match=r"unknown pragma 'bogus'.*auto_unroll_max_step"):
        sch.annotate(i, "pragma_bogus", 1)
    sch.annotate(i, "pragma_auto_unroll_max_step", 16)  # TVM's hint stays accepted
    sch.annotate(i, "my_own_note", 1)  # an annotation that is not a pragma too
    _check(sch)

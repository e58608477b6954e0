"""Loop context vectors (the rows ``itervar_features`` is built from), checked by hand."""

from __future__ import annotations

import math

from mlc import te, tir
from mlc.tir.stmt import ForKind
from mlc.tune.features import (
    KINDS,
    MAX_LOOPS,
    PER_LOOP,
    LoopContext,
    itervar_features,
    loop_context,
)


def lg(x: float) -> float:
    return math.log2(1 + x)


def _paper_matmul(n: int = 8, dtype: str = "float32"):
    """``for y, x, k: C[y, x] += A[k, y] * B[k, x]``, the TVM paper's example."""
    A = te.placeholder((n, n), name="A", dtype=dtype)
    B = te.placeholder((n, n), name="B", dtype=dtype)
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda y, x: te.sum(A[k, y] * B[k, x], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def touched(row: LoopContext) -> dict[str, int]:
    return {b.buffer: b.touched_bytes for b in row.buffers}


def test_the_papers_table():
    rows = loop_context(_paper_matmul())
    assert [r.loop for r in rows] == ["k", "x", "y"]  # innermost first
    assert [r.extent for r in rows] == [8, 8, 8]
    assert [r.outer for r in rows] == [64, 8, 1]  # the paper's "outer loop length"
    assert [r.top_down for r in rows] == [512, 64, 8]
    assert [r.bottom_up for r in rows] == [8, 64, 512]
    # touched memory in elements: k: C 1, A 8, B 8; x: 8, 8, 64; y: 64, 64, 64 (x 4 bytes)
    assert touched(rows[0]) == {"C": 4, "A": 32, "B": 32}
    assert touched(rows[1]) == {"C": 32, "A": 32, "B": 256}
    assert touched(rows[2]) == {"C": 256, "A": 256, "B": 256}
    k, x, y = ({b.buffer: b for b in r.buffers} for r in rows)
    assert (k["C"].stride, k["A"].stride, k["B"].stride) == (0.0, 8.0, 8.0)
    assert (x["C"].stride, x["A"].stride, x["B"].stride) == (1.0, 0.0, 1.0)
    # reuse: iterations per element touched; C is reused across all of k, A across x
    assert (k["C"].reuse, k["A"].reuse, k["B"].reuse) == (8.0, 1.0, 1.0)
    assert (x["C"].reuse, x["A"].reuse, x["B"].reuse) == (8.0, 8.0, 1.0)
    assert all(dict(r.ops) == {"fadd": 512, "fmul": 512, "fdiv": 0, "call": 0} for r in rows)


def test_a_tiled_vectorized_schedule():
    sch = tir.Schedule(_paper_matmul(16))
    y, x, k = sch.get_loops(sch.get_block("C"))
    xo, xi = sch.split(x, factors=[None, 4])
    sch.reorder(y, xo, k, xi)
    sch.vectorize(xi)
    rows = loop_context(sch.mod)
    assert [r.extent for r in rows] == [4, 16, 4, 16]  # xi, k, xo, y
    assert [r.kind for r in rows] == [ForKind.VECTORIZED, ForKind.SERIAL, ForKind.SERIAL,
                                      ForKind.SERIAL]
    assert [r.outer for r in rows] == [16 * 4 * 16, 16 * 4, 16, 1]
    xi_row, k_row, xo_row, _ = rows
    assert touched(xi_row) == {"C": 16, "A": 4, "B": 16}  # A[k, y] does not move with xi
    assert touched(k_row) == {"C": 16, "A": 64, "B": 256}  # a 16 x 4 block of B
    assert touched(xo_row) == {"C": 64, "A": 64, "B": 1024}  # all of B, one row of C
    assert {b.buffer: b.reuse for b in k_row.buffers} == {"C": 16.0, "A": 4.0, "B": 1.0}


def test_itervar_features_are_the_rows_log_scaled():
    sch = tir.Schedule(_paper_matmul(16))
    _, x, _ = sch.get_loops(sch.get_block("C"))
    sch.split(x, factors=[None, 4])
    rows = loop_context(sch.mod)
    f = itervar_features(sch.mod)
    for n, row in enumerate(rows):
        vec = f[n * PER_LOOP : (n + 1) * PER_LOOP]
        assert vec[:4] == [lg(row.extent), float(row.depth), lg(row.top_down),
                           lg(row.bottom_up)]
        assert vec[4 : 4 + len(KINDS)] == [float(row.kind == kd) for kd in KINDS]
        per_buffer = vec[8 + len(KINDS) :]
        for b, buf in enumerate(row.buffers):
            assert per_buffer[3 * b : 3 * b + 3] == [lg(buf.stride), lg(buf.touched_bytes),
                                                     lg(buf.reuse)]
    assert len(rows) == 4 and f[-2:] == [lg(16**3), 4.0]


def test_element_size_counts_in_bytes():
    rows = loop_context(_paper_matmul(8, "int8"))
    assert touched(rows[0]) == {"C": 1, "A": 8, "B": 8}


def test_a_deep_nest_keeps_every_loop_but_the_features_keep_the_innermost():
    sch = tir.Schedule(_paper_matmul(64))
    y, x, k = sch.get_loops(sch.get_block("C"))
    for loop in (y, x, k):
        a, b = sch.split(loop, factors=[None, 2])
        sch.split(a, factors=[None, 2])
    rows = loop_context(sch.mod)
    assert len(rows) == 9 > MAX_LOOPS
    assert math.prod(r.extent for r in rows) == 64 ** 3
    assert rows[-1].outer == 1 and rows[0].bottom_up == rows[0].extent
    f = itervar_features(sch.mod)
    assert f[-1] == 9.0
    assert f[(MAX_LOOPS - 1) * PER_LOOP] == lg(rows[MAX_LOOPS - 1].extent)


def test_symbolic_extents_count_as_64():
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    (row,) = loop_context(te.create_prim_func([A, B]))
    assert row.extent == 64 and row.outer == 1
    assert len(itervar_features(te.create_prim_func([A, B]))) > 0


def test_a_program_without_blocks_has_no_context():
    empty = tir.PrimFunc(_paper_matmul().params, tir.Evaluate(tir.IntImm(0)))
    assert loop_context(empty) == []
    assert set(itervar_features(empty)) == {0.0}

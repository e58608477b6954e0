"""The cost model's features, checked against values worked out by hand."""

from __future__ import annotations

import math

from mlc import te, tir
from mlc.tune.features import KINDS, LENGTH, PER_LOOP, flop_count, itervar_features


def lg(x: float) -> float:
    return math.log2(1 + x)


def _bias_add():
    A = te.placeholder((4, 8), name="A")
    B = te.placeholder((8,), name="B")
    C = te.compute((4, 8), lambda i, j: A[i, j] + B[j], name="C")
    return te.create_prim_func([A, B, C])


def test_innermost_loop_features_by_hand():
    sch = tir.Schedule(_bias_add())
    _, j = sch.get_loops(sch.get_block("C"))
    sch.vectorize(j)
    f = itervar_features(sch.mod)
    assert len(f) == LENGTH
    inner = f[:PER_LOOP]
    # extent 8, depth 1, 4*8 iterations above and including, 8 below
    assert inner[:4] == [lg(8), 1.0, lg(32), lg(8)]
    kinds = inner[4 : 4 + len(KINDS)]
    assert kinds == [0.0, 0.0, 1.0, 0.0, 0.0]  # vectorized
    ops = inner[4 + len(KINDS) : 8 + len(KINDS)]
    assert ops == [lg(32), 0.0, 0.0, 0.0]  # 32 float adds in the whole nest
    buffers = inner[8 + len(KINDS) :]
    # A, B, C: unit stride along j, 8 elements (32 bytes) touched, each used once
    assert buffers == [1.0, lg(32), 1.0] * 3


def test_outer_loop_sees_reuse_of_the_broadcast_operand():
    f = itervar_features(_bias_add())
    outer = f[PER_LOOP : 2 * PER_LOOP]
    assert outer[:4] == [lg(4), 0.0, lg(4), lg(32)]
    a, b, c = (outer[8 + len(KINDS) + 3 * k : 8 + len(KINDS) + 3 * k + 3] for k in range(3))
    assert a == [lg(8), lg(128), 1.0]  # stride 8 along i; the whole 4x8 array; no reuse
    assert b == [0.0, lg(32), lg(4)]  # B does not move with i: 8 elements reused 4 times
    assert c == a


def test_flop_count_of_matmul():
    A = te.placeholder((32, 16), name="A")
    B = te.placeholder((16, 8), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((32, 8), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    assert flop_count(te.create_prim_func([A, B, C])) == 2 * 32 * 16 * 8

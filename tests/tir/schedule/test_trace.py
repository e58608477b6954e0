"""Traces of loop and sampling primitives: JSON round trip, replay, decisions."""

from __future__ import annotations

import json

import numpy as np

from mlc import te, tir
from mlc.testing import eval_prim_func


def _matmul(n: int = 16):  # type: ignore[no-untyped-def]
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def _schedule(sch: tir.Schedule) -> None:
    blk = sch.get_block("C")
    i, j, k = sch.get_loops(blk)
    ti = sch.sample_perfect_tile(i, n=2, max_innermost_factor=8)
    i0, i1 = sch.split(i, factors=ti)
    j0, j1 = sch.split(j, factors=[None, 3])
    k0, k1 = sch.split(k, factors=[2, None])
    sch.reorder(i0, j0, k0, i1, k1, j1)
    f = sch.fuse(i0, j0)
    sch.parallel(f)
    sch.vectorize(j1)
    u = sch.sample_categorical([1, 2, 4], [1.0, 1.0, 1.0])
    sch.annotate(f, "pragma_auto_unroll_max_step", u)
    sch.unroll(k1)


def test_json_round_trip_replays_the_same_program() -> None:
    func = _matmul()
    sch = tir.Schedule(func, seed=7)
    _schedule(sch)
    text = json.dumps(sch.trace.as_json())
    sch2 = tir.Schedule(func, seed=12345)  # another seed: the decisions come from the trace
    tir.Trace.apply_json_to_schedule(json.loads(text), sch2)
    assert str(sch2.mod) == str(sch.mod)
    assert sch2.trace.as_json() == sch.trace.as_json()
    sch3 = tir.Schedule(func)
    tir.Trace.apply_json_to_schedule(text, sch3)  # the JSON text itself works too
    assert str(sch3.mod) == str(sch.mod)


def test_trace_prints_as_python() -> None:
    sch = tir.Schedule(_matmul())
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 4])
    assert str(sch.trace).splitlines() == [
        "b0 = sch.get_block(name='C')",
        "l1, l2, l3 = sch.get_loops(block=b0)",
        "l4, l5 = sch.split(loop=l1, factors=[None, 4], preserve_unit_iters=True)",
    ]


def test_same_seed_same_program_other_seeds_differ() -> None:
    func = _matmul()
    programs = set()
    for seed in range(8):
        a, b = tir.Schedule(func, seed=seed), tir.Schedule(func, seed=seed)
        _schedule(a)
        _schedule(b)
        assert str(a.mod) == str(b.mod)
        programs.add(str(a.mod))
    assert len(programs) > 1


def test_replay_with_new_decisions_and_result() -> None:
    func = _matmul()
    sch = tir.Schedule(func, seed=0)
    _schedule(sch)
    decisions = sch.trace.decisions
    assert sorted(decisions) == [2, 10]  # the two sampling instructions
    sch2 = tir.Schedule(func)
    sch.trace.apply_to_schedule(sch2, decisions={2: [2, 8], 10: 0})
    text = str(sch2.mod)
    assert "for i_1 in range(8):" in text
    assert '"pragma_auto_unroll_max_step": 1' in text
    assert sch2.trace.decisions == {2: [2, 8], 10: 0}
    rng = np.random.default_rng(0)
    a, b = rng.random((16, 16), dtype=np.float32), rng.random((16, 16), dtype=np.float32)
    c = np.zeros((16, 16), np.float32)
    eval_prim_func(sch2.mod, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_copy_is_independent() -> None:
    sch = tir.Schedule(_matmul(), seed=3)
    i, _, _ = sch.get_loops(sch.get_block("C"))
    other = sch.copy()
    sch.split(i, factors=[None, 4])
    assert "i_0" not in str(other.mod) and len(other.trace) == 2
    other.split(i, factors=[None, 8])
    assert "range(8)" in str(other.mod)

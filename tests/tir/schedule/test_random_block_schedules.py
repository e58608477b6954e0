"""Property: any sequence of block primitives the Schedule accepts (mixed with split and
reorder) still computes what numpy computes. Refused steps are skipped; a refusal must be a
ScheduleError, never another exception."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mlc import te, tir
from mlc.errors import ScheduleError
from mlc.testing import eval_prim_func

N, M, K = 6, 4, 5


def _program() -> tir.PrimFunc:
    A = te.placeholder((N, K), name="A")
    W = te.placeholder((K, M), name="W")
    B = te.compute((N, K), lambda i, k: A[i, k] * 2.0, name="B")
    r = te.reduce_axis((0, K), name="r")
    C = te.compute((N, M), lambda i, j: te.sum(B[i, r] * W[r, j], axis=r), name="C")
    D = te.compute((N, M), lambda i, j: C[i, j] + 1.0, name="D")
    return te.create_prim_func([A, W, D])


FUNC = _program()
RNG = np.random.default_rng(1)
A_IN = RNG.random((N, K), dtype=np.float32)
W_IN = RNG.random((K, M), dtype=np.float32)
EXPECTED = (A_IN * 2) @ W_IN + 1

STEPS = [
    "split", "reorder", "compute_at", "reverse_compute_at", "compute_inline",
    "reverse_compute_inline", "cache_read", "cache_write", "decompose_reduction", "rfactor",
    "set_scope", "storage_align", "transform_layout",
]

LAYOUTS = ["lambda a, b: (b, a)", "lambda a, b: (b // 2, a, b % 2)",
           "lambda a, b: (a // 2, b, a % 2)", "lambda a, b: (a * 1000 + b,)"]


def _live_blocks(sch: tir.Schedule) -> list[str]:
    from mlc.tir.schedule import state

    return [loc.stmt.block.name for loc in state.all_blocks(sch.mod)]  # type: ignore[attr-defined]


def _apply(sch: tir.Schedule, step: str, data: st.DataObject) -> None:
    names = _live_blocks(sch)
    block = sch.get_block(data.draw(st.sampled_from(names)))
    other = sch.get_block(data.draw(st.sampled_from(names)))
    loops = sch.get_loops(other)
    own = sch.get_loops(block)
    if step == "split" and own:
        loop = data.draw(st.sampled_from(own))
        sch.split(loop, factors=[None, data.draw(st.integers(1, 4))])
    elif step == "reorder" and len(own) >= 2:
        a, b = data.draw(st.permutations(own[-2:]))
        sch.reorder(a, b)
    elif step in ("compute_at", "reverse_compute_at"):
        # mostly a loop of a consumer (producer), sometimes any loop: refusals are tested too
        near = sch.get_consumers(block) if step == "compute_at" else sch.get_producers(block)
        if near and data.draw(st.integers(0, 3)) > 0:
            loops = sch.get_loops(data.draw(st.sampled_from(near)))
        if loops:
            getattr(sch, step)(block, data.draw(st.sampled_from(loops)))
    elif step == "compute_inline":
        sch.compute_inline(block)
    elif step == "reverse_compute_inline":
        sch.reverse_compute_inline(block)
    elif step == "cache_read":
        sch.cache_read(block, data.draw(st.integers(0, 1)), "shared")
    elif step == "cache_write":
        sch.cache_write(block, 0, "local")
    elif step == "decompose_reduction" and own:
        sch.decompose_reduction(block, data.draw(st.sampled_from(own)))
    elif step == "rfactor":
        target = sch.get_block("C") if "C" in names else block
        own = sch.get_loops(target)
        if own:
            sch.rfactor(data.draw(st.sampled_from(own)), data.draw(st.integers(0, 2)))
    elif step == "set_scope":
        sch.set_scope(block, 0, "local")
    elif step == "storage_align":
        sch.storage_align(block, 0, 0, data.draw(st.integers(1, 4)), 0)
    elif step == "transform_layout":
        written = sch.get(block).writes[0].buffer.name  # type: ignore[union-attr]
        sch.transform_layout(block, written, data.draw(st.sampled_from(LAYOUTS)))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_random_block_schedules_compute_numpy(data: st.DataObject) -> None:
    sch = tir.Schedule(FUNC, seed=0)
    applied = 0
    for step in data.draw(st.lists(st.sampled_from(STEPS), min_size=1, max_size=6)):
        try:
            _apply(sch, step, data)
            applied += 1
        except ScheduleError:
            pass
    out = np.full((N, M), np.nan, "float32")
    eval_prim_func(sch.mod, A_IN, W_IN, out)
    np.testing.assert_allclose(out, EXPECTED, rtol=1e-5, err_msg=str(sch.trace))
    # the trace replays to the same program
    sch2 = tir.Schedule(FUNC)
    sch.trace.apply_to_schedule(sch2)
    assert str(sch2.mod) == str(sch.mod)

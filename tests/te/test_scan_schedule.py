"""Scans are scheduled through their stages as in TVM's scan tutorial: ``s[s_init]``,
``s[s_update]`` (its first axis is the time loop) and, in a multi-stage scan, the stages
between the state and the update, computed inside the time loop (compute_at works there)."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.errors import MLCError, ScheduleError


def _cumsum() -> tuple[te.Tensor, ...]:
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
    s_scan = te.scan(s_init, s_update, s_state, inputs=[X])
    return X, s_init, s_update, s_scan


@pytest.mark.parametrize("shape", [(5, 70), (1, 3), (4, 0), (3, 1)])
def test_cumsum_stages_split_vectorize_parallel(shape: tuple[int, int]) -> None:
    X, s_init, s_update, s_scan = _cumsum()
    s = te.create_schedule(s_scan.op)
    xo, xi = s[s_update].split(s_update.op.axis[1], factor=8)
    s[s_update].vectorize(xi)
    s[s_update].parallel(xo)
    io, ii = s[s_init].split(s_init.op.axis[1], factor=4)
    s[s_init].unroll(ii)
    text = str(mlc.lower(s, [X, s_scan]))
    assert "ramp(" in text  # the update's row is vectorized inside the time loop
    f = mlc.build(s, [X, s_scan])
    x = np.random.default_rng(0).random(shape, dtype="float32")
    y = np.zeros_like(x)
    f(x, y)
    np.testing.assert_allclose(y, np.cumsum(x, axis=0), rtol=1e-5)


def test_scan_stage_itself_is_still_its_update() -> None:
    X, s_init, s_update, s_scan = _cumsum()
    s = te.create_schedule(s_scan.op)
    assert s[s_scan].block_name == s[s_update].block_name
    assert s[s_init].block_name != s[s_update].block_name


def test_empty_time_axis_is_an_error_not_a_crash() -> None:
    X, s_init, s_update, s_scan = _cumsum()
    f = mlc.build(te.create_schedule(s_scan.op), [X, s_scan])
    with pytest.raises(MLCError):  # the init writes row 0 of a 0-row state
        f(np.zeros((0, 3), "float32"), np.zeros((0, 3), "float32"))


def test_multi_stage_scan_with_compute_at_in_the_time_loop() -> None:
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s1 = te.compute((m, n), lambda t, i: s_state[t - 1, i] * 2.0, name="s1")
    s2 = te.compute((m, n), lambda t, i: s1[t, i] + X[t, i], name="s2")
    s_scan = te.scan(s_init, s2, s_state, inputs=[X])
    s = te.create_schedule(s_scan.op)
    xo, xi = s[s2].split(s2.op.axis[1], factor=32)
    s[s1].compute_at(s[s2], xo)
    f = mlc.build(s, [X, s_scan])
    x = np.random.default_rng(1).random((6, 40), dtype="float32")
    y = np.zeros_like(x)
    f(x, y)
    ref = x.copy()
    for t in range(1, 6):
        ref[t] = ref[t - 1] * 2 + x[t]
    np.testing.assert_allclose(y, ref, rtol=1e-5)
    from mlc.testing import evaluate  # the reference evaluator steps the stages too

    np.testing.assert_allclose(evaluate([s_scan], {X: x})[s_scan.name], ref, rtol=1e-5)


def test_gpu_scan_runs_its_time_loop_on_the_host() -> None:
    X, s_init, s_update, s_scan = _cumsum()
    s = te.create_schedule(s_scan.op)
    for stage, axis in ((s_init, 1), (s_update, 1)):
        bx, tx = s[stage].split(stage.op.axis[axis], factor=32)
        s[stage].bind(bx, te.thread_axis("blockIdx.x"))
        s[stage].bind(tx, te.thread_axis("threadIdx.x"))
    f = mlc.build(s, [X, s_scan], target="cuda-sim")  # one launch of the update per step
    x = np.random.default_rng(0).random((6, 40), dtype=np.float32)
    y = np.zeros_like(x)
    f(x, y)
    np.testing.assert_allclose(y, np.cumsum(x, axis=0), rtol=1e-5)


def test_time_loop_may_not_move_inside_a_spatial_loop() -> None:
    # step t reads column i + 1 of step t - 1: with i outside t, column i's later steps would
    # read column i + 1 before it was computed (this reorder was accepted: a wrong answer)
    m, n = te.var("m"), te.var("n")
    X = te.placeholder((m, n), name="X")
    state = te.placeholder((m, n))
    init = te.compute((1, n), lambda _, i: X[0, i])
    update = te.compute(
        (m, n), lambda t, i: te.if_then_else(i + 1 < n, state[t - 1, i + 1], 0.0) + X[t, i]
    )
    scan = te.scan(init, update, state, inputs=[X])
    s = te.create_schedule(scan.op)
    with pytest.raises(ScheduleError, match=r"ordered \(scan\).*would move inside 'i'"):
        s[update].reorder(update.op.axis[1], update.op.axis[0])
    with pytest.raises(ScheduleError, match=r"ordered \(scan\)"):
        s[update].parallel(update.op.axis[0])
    s[update].unroll(update.op.axis[0])  # the steps still run in order

"""A te.scan on a GPU target: the time loop runs on the host and launches the kernel of the
update once per step (TVM's scan tutorial, the cumulative sum over rows)."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.tir.stmt import For, KernelLaunch


def _cumsum_schedule(num_thread: int = 256) -> tuple[te.Schedule, list[te.Tensor]]:
    m = te.var("m")
    n = te.var("n")
    X = te.placeholder((m, n), name="X")
    s_state = te.placeholder((m, n))
    s_init = te.compute((1, n), lambda _, i: X[0, i])
    s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
    s_scan = te.scan(s_init, s_update, s_state, inputs=[X])
    s = te.create_schedule(s_scan.op)
    block_x = te.thread_axis("blockIdx.x")
    thread_x = te.thread_axis("threadIdx.x")
    xo, xi = s[s_init].split(s_init.op.axis[1], factor=num_thread)
    s[s_init].bind(xo, block_x)
    s[s_init].bind(xi, thread_x)
    xo, xi = s[s_update].split(s_update.op.axis[1], factor=num_thread)
    s[s_update].bind(xo, block_x)
    s[s_update].bind(xi, thread_x)
    return s, [X, s_scan]


def test_scan_time_loop_runs_on_the_host_around_the_update_kernel() -> None:
    s, args = _cumsum_schedule()
    body = mlc.lower(s, args, target="cuda-sim").body
    loops = [n for n in getattr(body, "seq", [body]) if isinstance(n, For)]
    assert len(loops) == 1, body
    (time_loop,) = loops
    assert isinstance(time_loop.body, KernelLaunch)
    assert time_loop.loop_var in time_loop.body.size_vars  # the step is a kernel argument


@pytest.mark.parametrize("shape", [(10, 300), (1, 7), (5, 256)])
def test_scan_cumsum_on_cuda_sim_matches_numpy(shape: tuple[int, int]) -> None:
    s, args = _cumsum_schedule()
    f = mlc.build(s, args, target="cuda-sim")
    assert len(f.kernels) == 2  # the init and the update
    assert "int32_t t)" in f.get_source("cuda")
    x = np.random.default_rng(0).random(shape, dtype=np.float32)
    y = np.full(shape, np.nan, np.float32)
    f(x, y)
    np.testing.assert_allclose(y, np.cumsum(x, axis=0), rtol=1e-5)

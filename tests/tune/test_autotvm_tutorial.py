"""TVM's "Writing Tunable Templates and Using the Auto-tuner" tutorial, as a user types it
(``tvm`` -> ``mlc``, ``autotvm`` -> ``mlc.tune``), vs numpy."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import te
from mlc import tune as autotvm
from mlc.errors import TuneError
from mlc.target import Target


@autotvm.template("tutorial/matmul_v2")
def matmul(N, L, M, dtype):  # noqa: N803 - the tutorial's names
    A = te.placeholder((N, L), name="A", dtype=dtype)
    B = te.placeholder((L, M), name="B", dtype=dtype)
    k = te.reduce_axis((0, L), name="k")
    C = te.compute((N, M), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = s[C].op.axis
    k = s[C].op.reduce_axis[0]
    cfg = autotvm.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    s[C].reorder(yo, xo, k, yi, xi)
    return s, [A, B, C]


def test_the_autotvm_matmul_tutorial_runs_as_written(tmp_path):
    N, L, M = 32, 32, 32
    task = autotvm.task.create("tutorial/matmul_v2", args=(N, L, M, "float32"), target="llvm")
    assert "tile_y (split" in str(task.config_space)
    measure_option = autotvm.measure_option(builder="local",
                                            runner=autotvm.LocalRunner(number=2))
    tuner = autotvm.tuner.RandomTuner(task)
    log = tmp_path / "matmul.log"
    tuner.tune(n_trial=6, measure_option=measure_option,
               callbacks=[autotvm.callback.log_to_file(str(log))])
    assert len(log.read_text().splitlines()) == 6
    with autotvm.apply_history_best(str(log)):
        with Target("llvm"):
            s, arg_bufs = matmul(N, L, M, "float32")
            func = mlc.build(s, arg_bufs)
    a = np.random.default_rng(0).uniform(size=(N, L)).astype(np.float32)
    b = np.random.default_rng(1).uniform(size=(L, M)).astype(np.float32)
    c = np.empty((N, M), np.float32)
    func(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def test_a_with_target_block_is_the_default_target():
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    assert Target.current() is None
    with Target("c") as t:
        assert Target.current() is t
        f = mlc.build([A, B])
    assert Target.current() is None
    assert "void" in f.get_source("c")  # built for the C target


def test_what_mlc_cannot_measure_with_is_a_tune_error():
    with pytest.raises(TuneError, match="mlc builds locally"):
        autotvm.measure_option(builder="rpc")
    with pytest.raises(TuneError, match="LocalRunner"):
        autotvm.measure_option(runner="rpc")
    opt = autotvm.measure_option(runner=autotvm.LocalRunner(number=5, repeat=2, timeout=4))
    assert (opt.number, opt.repeat) == (5, 2)

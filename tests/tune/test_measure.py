"""Measurement survives bad candidates; tuning resumes from its log; the best record rebuilds."""

from __future__ import annotations

import json

import numpy as np
import pytest

import mlc
from mlc import te, tune
from mlc.examples.tuning import MATMUL
from mlc.tune.measure import Measurer


def _crashing():
    """A candidate whose code ends its process: it calls C's ``abort()`` (an access past the
    end of an array, the crash this test used before, is now refused by lowering even in a
    hand-written loop program, and checked at run time where it depends on data)."""
    from mlc import tir

    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2.0 + tir.call_extern("float32", "abort"), name="B")
    return te.create_prim_func([A, B])


def _scale(factor: float, bad: str | None = None):
    A = te.placeholder((64,), name="A")
    if bad == "hang":  # about 2**31 sequential float adds per element
        k = te.reduce_axis((0, 2**31 - 1), name="k")
        B = te.compute((64,), lambda i: te.sum(A[i] * 1.0001, axis=k), name="B")
    else:
        B = te.compute((64,), lambda i: A[i] * factor, name="B")
    return te.create_prim_func([A, B])


@pytest.mark.timeout(180)
def test_crash_hang_and_wrong_answers_are_errors_and_measuring_goes_on():
    option = tune.measure_option(number=2, timeout=3.0)
    with Measurer(_scale(2.0), option, key="scale") as m:
        results = m.measure(
            [_scale(2.0), _crashing(), _scale(3.0), _scale(2.0, "hang"), _scale(2.0)]
        )
    good, crash, wrong, hang, good_again = results
    assert good.ok and len(good.costs) == 1 and good.costs[0] > 0
    assert crash.error is not None and crash.error.startswith("crash")
    assert wrong.error is not None and wrong.error.startswith("wrong answer in B")
    assert hang.error is not None and hang.error.startswith("timeout")
    assert good_again.ok


@pytest.mark.timeout(300)
def test_tuning_resumes_from_its_log_without_measuring_twice(matmul_task, tmp_path):
    log = tmp_path / "mm.json"
    option = tune.measure_option(number=1, timeout=20)
    first = tune.RandomTuner(matmul_task, seed=0)
    first.tune(6, measure_option=option, callbacks=[tune.callback.log_to_file(log)])
    second = tune.XGBTuner(matmul_task, seed=1, batch_size=4)
    second.tune(6, measure_option=option, callbacks=[tune.callback.log_to_file(log)])
    records = [json.loads(line) for line in log.read_text().splitlines()]
    indexes = [r["config"]["index"] for r in records]
    assert len(records) == 12
    assert len(set(indexes)) == 12  # nothing measured twice
    assert all(r["error"] is None for r in records)
    assert len(second.xs) == 12  # the second tuner knew the first six

    # the best record rebuilds into a kernel that matches numpy
    with tune.apply_history_best(log):
        s, args = tune.task._TEMPLATES[MATMUL](16, "float32")
    best = min(records, key=lambda r: sum(r["costs"]) / len(r["costs"]))
    s_best, args_best = matmul_task.instantiate(best["config"]["index"])
    assert str(s.to_prim_func(args)) == str(s_best.to_prim_func(args_best))
    a = np.random.rand(16, 16).astype("float32")
    b = np.random.rand(16, 16).astype("float32")
    c = np.zeros((16, 16), "float32")
    mlc.build(s, args)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)


def test_a_plain_script_can_tune_without_a_main_guard(tmp_path):
    """Workers are fresh interpreters that never re-import the user's script."""
    import subprocess
    import sys

    script = tmp_path / "tune_me.py"
    script.write_text(
        "from mlc import te, tune\n"
        "A = te.placeholder((64,), name='A')\n"
        "B = te.compute((64,), lambda i: A[i] * 2.0, name='B')\n"
        "best = tune.tune_tir(te.create_prim_func([A, B]), max_trials=2, progress=False)\n"
        "print('best', best.tuner.best_index is not None)\n"
    )
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "best True" in out.stdout

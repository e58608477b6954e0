"""The MLC course's MetaSchedule calls, as written (tvm -> mlc): ms.tune_tir with a TuneConfig,
work_dir and task_name, a ScheduleFn space, and a GPU tag target measured (without a GPU) by
cuda-sim's performance model."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import meta_schedule as ms
from mlc.errors import TargetError, TuneError
from mlc.script import T, ir_module


@ir_module
class MyModule:
    @T.prim_func
    def main(A: T.Buffer((64, 64), "float32"), B: T.Buffer((64, 64), "float32"),
             C: T.Buffer((64, 64), "float32")):
        T.func_attr({"global_symbol": "main", "tir.noalias": True})
        for i, j, k in T.grid(64, 64, 64):
            with T.block("C"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    C[vi, vj] = 0.0
                C[vi, vj] = C[vi, vj] + A[vi, vk] * B[vk, vj]


def stochastic_schedule_mm(sch):
    block_C = sch.get_block("C", "main")
    i, j, k = sch.get_loops(block=block_C)
    i_factors = sch.sample_perfect_tile(loop=i, n=2)
    j_factors = sch.sample_perfect_tile(loop=j, n=2)
    i_0, i_1 = sch.split(loop=i, factors=i_factors)
    j_0, j_1 = sch.split(loop=j, factors=j_factors)
    sch.reorder(i_0, j_0, i_1, k, j_1)
    sch.decompose_reduction(block_C, k)
    return sch


def _check(func, target: str) -> None:
    rng = np.random.default_rng(0)
    a = rng.random((64, 64), dtype=np.float32)
    b = rng.random((64, 64), dtype=np.float32)
    c = np.zeros((64, 64), "float32")
    mlc.build(func, target=target)(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4)


def test_course_tune_tir_with_tune_config(tmp_path) -> None:
    sch_tuned = ms.tune_tir(
        mod=MyModule,
        target="llvm --num-cores=1",
        config=ms.TuneConfig(
            max_trials_global=4,
            num_trials_per_iter=4,
        ),
        space=ms.space_generator.ScheduleFn(stochastic_schedule_mm),
        work_dir=str(tmp_path / "tune_tmp"),
        task_name="main",
        progress=False,
    )
    assert (tmp_path / "tune_tmp" / "tuning_log.json").exists()
    assert "timed on this machine" in sch_tuned.measured_with
    _check(sch_tuned.mod, "llvm")


def test_gpu_tag_without_a_gpu_uses_the_performance_model(tmp_path) -> None:
    from mlc.runtime import cuda_driver

    if cuda_driver.available():
        pytest.skip("a GPU is here: tune_tir times on it (the model is used without one)")
    with pytest.warns(UserWarning, match="performance model of the NVIDIA Tesla P100"):
        sch_tuned = ms.tune_tir(
            mod=MyModule,
            target="nvidia/tesla-p100",
            config=ms.TuneConfig(max_trials_global=4, num_trials_per_iter=4),
            work_dir=str(tmp_path / "tune_tmp"),
            task_name="main",
            progress=False,
        )
    assert "nothing was timed" in sch_tuned.measured_with
    assert "blockIdx.x" in str(sch_tuned.mod) and "threadIdx.x" in str(sch_tuned.mod)
    ok = [r for r in sch_tuned.tuner.results if r.ok]
    assert ok and all(0 < r.mean < 1 for r in ok)  # predicted seconds
    _check(sch_tuned.mod, "cuda-sim")


def test_tune_config_and_targets_are_checked() -> None:
    with pytest.raises(TuneError, match="max_trials_global"):
        ms.TuneConfig(max_trials_global=0)
    with pytest.raises(TuneError, match="strategy"):
        ms.TuneConfig(strategy="annealing")
    with pytest.raises(TargetError, match="unknown target tag"):
        ms.tune_tir(mod=MyModule, target="nvidia/tesla-k9000", config=ms.TuneConfig())
    with pytest.raises(TuneError, match="give the budget once"):
        ms.tune_tir(mod=MyModule, config=ms.TuneConfig(), max_trials_global=3)
    with pytest.raises(TuneError, match="mod is a PrimFunc or an IRModule"):
        ms.tune_tir(mod=42)


def test_num_cores_target_option_sets_the_thread_team() -> None:
    from mlc import te
    from mlc.target import parse_target

    assert parse_target("llvm --num-cores=1").num_cores == 1
    with pytest.raises(TargetError, match="num-cores"):
        parse_target("llvm --num-cores=zero")
    n = 1 << 12
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, _ = s[B].split(B.op.axis[0], factor=64)
    s[B].parallel(xo)
    f = mlc.build(s, [A, B], "llvm --num-cores=1")
    calls = [ln for ln in f.get_source("ll-unopt").splitlines()
             if "call" in ln and "GOMP_parallel" in ln]
    if calls:  # libgomp present: the team is the target's one thread
        assert all(", i32 1, i32 0)" in ln for ln in calls)
    a = np.arange(n, dtype="float32")
    b = np.zeros(n, "float32")
    f(a, b)
    np.testing.assert_allclose(b, a * 2)

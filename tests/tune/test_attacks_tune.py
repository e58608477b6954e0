"""A hostile student on the tuner: tuning logs edited by hand or cut short, programs whose
outputs are NaN or that fail on any input, two programs that looked like one task, and
settings that make no sense. Each must end in the right answer or a TuneError that says what
would work; n_trial stays small."""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import mlc
from mlc import te, tune
from mlc.errors import TuneError
from mlc.tune.measure import Measurer
from mlc.tune.model import XGBoostCostModel
from mlc.tune.record import ApplyHistoryBest
from mlc.tune.sa import anneal
from mlc.tune.sampled import SampledSpace
from mlc.tune.tiling import default_space

FAST = dict(number=1, repeat=1, timeout=30)

# ---------------------------------------------------------------------------------------------
# tampered logs: a bad record is skipped, never "the best", never a crash

GOOD_INDEX, GOOD_COST = 7, 2e-6
BAD_INDEX = 5


def _good(key: str) -> dict[str, Any]:
    return {"task": key, "config": {"index": GOOD_INDEX}, "trace": None,
            "costs": [GOOD_COST], "error": None, "time": 0.0}


def _bad(key: str, **fields: Any) -> dict[str, Any]:
    rec = {"task": key, "config": {"index": BAD_INDEX}, "trace": None, "costs": [1e-9],
           "error": None, "time": 0.0}
    rec.update(fields)
    return rec


TAMPERED: dict[str, Any] = {
    "a list, not a record": "[1, 2]",
    "a string, not a record": '"hello"',
    "a NaN run time": lambda k: _bad(k, costs=[math.nan]),
    "a negative run time": lambda k: _bad(k, costs=[-1.0]),
    "a zero run time": lambda k: _bad(k, costs=[0.0]),
    "an infinite run time": lambda k: _bad(k, costs=[math.inf]),
    "a run time that is a string": lambda k: _bad(k, costs=["fast"]),
    "costs that are a number": lambda k: _bad(k, costs=1e-9),
    "an index that is a string": lambda k: _bad(k, config={"index": "abc"}),
    "an index outside the space": lambda k: _bad(k, config={"index": 10**9}),
    "a negative index": lambda k: _bad(k, config={"index": -1}),
    "an index that is a float": lambda k: _bad(k, config={"index": 2.5}),
    "a config that is a list": lambda k: _bad(k, config=[1, 2]),
    "a task that is a list": lambda k: _bad(k, task=[1]),
    "an error that is a number": lambda k: _bad(k, error=5),
    "a line cut short": lambda k: json.dumps(_bad(k))[:40],
    "a line nested 100000 deep": "[" * 100_000 + "]" * 100_000,  # RecursionError in json
}


def _log(tmp_path: Path, key: str, how: Any) -> Path:
    bad = how if isinstance(how, str) else how(key)
    # the bad record first: a NaN first stayed "best" (no comparison with NaN is true)
    lines = [bad if isinstance(bad, str) else json.dumps(bad), json.dumps(_good(key))]
    path = tmp_path / "tampered.json"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("how", list(TAMPERED), ids=list(TAMPERED))
def test_apply_history_best_skips_a_tampered_record(matmul_task, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                    how: str) -> None:
    """A NaN or negative run time won every comparison (NaN stayed "best" forever); a line
    that was not a record, or a cost that was a string, raised AttributeError/TypeError; an
    index outside the space won and then made the template fail."""
    key = matmul_task.workload_key
    log = _log(tmp_path, key, TAMPERED[how])
    with tune.apply_history_best(log) as ctx:
        assert ctx.query(key, lambda: matmul_task.config_space).index == GOOD_INDEX


@pytest.mark.parametrize("how", list(TAMPERED), ids=list(TAMPERED))
def test_a_tuner_resuming_from_a_tampered_log_keeps_only_the_good_record(  # type: ignore[no-untyped-def]
        matmul_task, tmp_path: Path, how: str) -> None:
    """A negative run time became the tuner's best (best_cost -1.0); an index that was a
    string raised ValueError."""
    log = _log(tmp_path, matmul_task.workload_key, TAMPERED[how])
    tuner = tune.RandomTuner(matmul_task, seed=0)
    tuner._resume([tune.callback.log_to_file(log)])
    assert tuner.xs == [GOOD_INDEX]
    assert tuner.best_index == GOOD_INDEX and tuner.best_cost == GOOD_COST


def test_apply_history_best_falls_back_to_the_next_record_that_fits_the_space(  # type: ignore[no-untyped-def]
        matmul_task, tmp_path: Path) -> None:
    """A record of another version of the template (an index the space no longer has) was
    the best, and every call of the template raised TuneError."""
    key = matmul_task.workload_key
    path = tmp_path / "two.json"
    path.write_text(json.dumps(_good(key)) + "\n"
                    + json.dumps(_bad(key, config={"index": 10**6})) + "\n")
    context = ApplyHistoryBest(path)
    assert context.query(key, lambda: matmul_task.config_space).index == GOOD_INDEX


def test_decisions_of_another_length_name_no_point() -> None:
    """A shorter list of decisions (a record of another space) mapped to some other point."""
    space = SampledSpace(_matmul("float32"), default_space)
    whole = space.config_json(3)["decisions"]
    assert space.index_of_decisions(whole) == 3
    assert space.index_of_decisions(whole[:-1]) is None
    assert space.index_of_decisions([*whole, 1]) is None


# ---------------------------------------------------------------------------------------------
# tune_tir's task key, and programs the measurement could not check


def _matmul(dtype: str) -> Any:
    A = te.placeholder((32, 32), name="A", dtype=dtype)
    B = te.placeholder((32, 32), name="B", dtype=dtype)
    k = te.reduce_axis((0, 32), name="k")
    C = te.compute((32, 32), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def test_a_float32_and_a_float64_matmul_are_two_tasks() -> None:
    """The key held the first 200 characters of the body, which do not show the dtypes: a
    tune_tir of the float64 matmul in the float32 one's work_dir measured nothing and took
    the float32 timings as its own."""
    a = SampledSpace(_matmul("float32"), default_space)
    b = SampledSpace(_matmul("float64"), default_space)
    assert a.key != b.key
    assert SampledSpace(_matmul("float32"), default_space).key == a.key


@pytest.mark.timeout(300)
def test_tune_tir_in_another_programs_work_dir_measures_its_own(tmp_path: Path) -> None:
    opt = tune.measure_option(**FAST)
    tune.tune_tir(_matmul("float32"), max_trials=2, work_dir=tmp_path, measure_option=opt,
                  progress=False)
    log = tmp_path / "tuning_log.json"
    first = len(log.read_text().splitlines())
    best = tune.tune_tir(_matmul("float64"), max_trials=2, work_dir=tmp_path,
                         measure_option=opt, progress=False)
    assert len(log.read_text().splitlines()) == first + 2  # two float64 trials measured
    assert len(best.tuner.xs) == 2  # and none of the float32 records taken as its own
    f = mlc.build(best.mod)
    a, b = np.random.default_rng(0).random((2, 32, 32))
    c = np.zeros((32, 32))
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-10)


@pytest.mark.timeout(180)
def test_a_candidate_whose_output_has_nan_where_the_reference_does_is_right() -> None:
    """log of inputs in [-1, 1) is NaN for half of them: every candidate was "wrong answer in
    B: max abs error nan" and tuning found nothing."""
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: te.log(A[i]), name="B")
    func = te.create_prim_func([A, B])
    with Measurer(func, tune.measure_option(**FAST), key="log") as m:
        (result,) = m.measure([func])
    assert result.ok, result.error


@pytest.mark.timeout(180)
def test_an_integer_division_by_an_input_can_be_tuned() -> None:
    """Random integer inputs held zeros, so the reference raised IntegerDivisionError and
    the tuner a bare RuntimeError quoting a MeasureResult."""
    A = te.placeholder((64,), name="A", dtype="int32")
    B = te.placeholder((64,), name="B", dtype="int32")
    C = te.compute((64,), lambda i: A[i] // B[i], name="C")
    func = te.create_prim_func([A, B, C])
    with Measurer(func, tune.measure_option(**FAST), key="div") as m:
        (result,) = m.measure([func])
    assert result.ok, result.error


@pytest.mark.timeout(180)
def test_a_program_that_fails_on_any_input_is_a_tune_error() -> None:
    A = te.placeholder((64,), name="A", dtype="int32")
    B = te.placeholder((64,), name="B", dtype="int32")
    C = te.compute((64,), lambda i: A[i] // (B[i] - 1), name="C")  # B holds 1s
    func = te.create_prim_func([A, B, C])
    with pytest.raises(TuneError, match="fails before any schedule is tried.*"
                                        "IntegerDivisionError") as info:
        tune.tune_tir(func, max_trials=2, measure_option=tune.measure_option(**FAST),
                      progress=False)
    assert "mlc.errors" not in str(info.value)  # the error's name once, not twice


@pytest.mark.timeout(180)
def test_a_target_that_cannot_build_the_program_is_a_tune_error_naming_it() -> None:
    """It was a RuntimeError quoting a MeasureResult."""
    with pytest.raises(TuneError, match="built for target 'nope'.*unknown target kind"):
        tune.tune_tir(_matmul("float32"), max_trials=2, target="nope",
                      measure_option=tune.measure_option(**FAST), progress=False)


def test_tune_tir_refuses_a_space_that_is_not_a_function_and_a_work_dir_that_is_a_file(
        tmp_path: Path) -> None:
    with pytest.raises(TuneError, match="space=5 must be a function of a tir.Schedule"):
        tune.tune_tir(_matmul("float32"), max_trials=2, space=5,  # type: ignore[arg-type]
                      progress=False)
    afile = tmp_path / "notes.txt"
    afile.write_text("mine")
    with pytest.raises(TuneError, match="work_dir=.*is a file; it must be a folder"):
        tune.tune_tir(_matmul("float32"), max_trials=2, work_dir=afile, progress=False)
    assert afile.read_text() == "mine"


@pytest.mark.parametrize("args, message", [
    ((16,), r"cannot take args=\(16,\): missing a required argument: 'dtype'"),
    ((16, "float32", 3), "cannot take args"),
    (None, "args is the tuple of the template's arguments"),
])
def test_create_task_refuses_arguments_the_template_cannot_take(args: Any, message: str) -> None:
    """They were the TypeError of calling the template."""
    with pytest.raises(TuneError, match=message):
        tune.create_task("mlc.examples.matmul", args=args)


@pytest.mark.parametrize("index", ["1", 1.5, True])
def test_a_config_index_that_is_not_an_int_of_the_space_is_a_tune_error(  # type: ignore[no-untyped-def]
        matmul_task, index: Any) -> None:
    """"1" and 1.5 raised TypeError; True was config #True."""
    with pytest.raises(TuneError, match="outside the space of 50 points: use an int from 0"):
        matmul_task.config_space.get(index)
    assert matmul_task.config_space.get(np.int64(3)).index == 3


# ---------------------------------------------------------------------------------------------
# settings that make no sense: refused before anything is measured


@pytest.mark.parametrize("early_stopping", [0, -1, 2.5, "x", True])
def test_tune_refuses_a_meaningless_early_stopping(matmul_task, early_stopping: Any) -> None:  # type: ignore[no-untyped-def]
    """"x" raised TypeError after the first batch; 0 and -1 stopped after it silently."""
    tuner = tune.RandomTuner(matmul_task, seed=0)
    with pytest.raises(TuneError, match="early_stopping"):
        tuner.tune(2, early_stopping=early_stopping)
    assert tuner.xs == []


def test_tune_refuses_a_measure_option_that_is_not_one(matmul_task) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TuneError, match="measure_option='fast' must come from"):
        tune.RandomTuner(matmul_task).tune(2, measure_option="fast")  # type: ignore[arg-type]


@pytest.mark.parametrize("kwargs, message", [
    (dict(plan_size=0), "plan_size=0"),
    (dict(batch_size=0), "batch_size=0"),
    (dict(n_chains=0), "n_chains=0"),
    (dict(n_iter=-5), "n_iter=-5"),
    (dict(epsilon=2.0), "epsilon=2.0"),
    (dict(epsilon=math.nan), "epsilon=nan"),
    (dict(loss="x"), "loss must be 'rank' or 'reg'"),
])
def test_xgb_tuner_refuses_meaningless_settings(matmul_task, kwargs: dict[str, Any],  # type: ignore[no-untyped-def]
                                                message: str) -> None:
    """plan_size=0 was an IndexError and n_chains=0 a ValueError from xgboost, after the
    first batches were measured; loss="x" a plain ValueError."""
    with pytest.raises(TuneError, match=message):
        tune.XGBTuner(matmul_task, **kwargs)


# ---------------------------------------------------------------------------------------------
# the cost model and the annealer on odd data


def _features(i: int) -> list[float]:
    return [float(i % 3), float(i % 5)]


@pytest.mark.parametrize("bad", [math.nan, math.inf, -1.0])
def test_the_cost_model_counts_a_non_finite_throughput_as_a_failure(bad: float) -> None:
    """xgboost refused NaN / infinite labels with an XGBoostError."""
    model = XGBoostCostModel(_features)
    model.fit([1, 2, 3, 4], [1.0, bad, 2.0, 3.0])
    reference = XGBoostCostModel(_features)
    reference.fit([1, 2, 3, 4], [1.0, 0.0, 2.0, 3.0])
    np.testing.assert_array_equal(model.predict([1, 2, 3, 4]), reference.predict([1, 2, 3, 4]))


def test_the_cost_model_refuses_mismatched_or_ragged_data() -> None:
    with pytest.raises(TuneError, match="one throughput per config: got 4 configs and 2"):
        XGBoostCostModel(_features).fit([1, 2, 3, 4], [1.0, 2.0])
    ragged = XGBoostCostModel(lambda i: [0.0] * (i % 3))
    with pytest.raises(TuneError, match="vectors of different lengths"):
        ragged.fit([0, 1, 2, 3], [1.0, 2.0, 3.0, 4.0])


def test_a_trained_cost_model_predicts_nothing_for_no_configs() -> None:
    model = XGBoostCostModel(_features)
    model.fit([1, 2, 3, 4], [1.0, 2.0, 3.0, 4.0])
    assert model.trained and len(model.predict([])) == 0


@pytest.mark.parametrize("kwargs, message", [
    (dict(dims=[0, 3]), "at least one choice"),
    (dict(dims=[4, 4], n_chains=0), "n_chains=0"),
])
def test_anneal_refuses_an_empty_knob_or_no_chains(kwargs: dict[str, Any], message: str) -> None:
    args: dict[str, Any] = dict(n_pick=2, exclude=set(), rng=random.Random(0))
    args.update(kwargs)
    with pytest.raises(TuneError, match=message):
        anneal(lambda points: np.zeros(len(points)), **args)



@pytest.mark.parametrize("content, message", [
    (None, "there is no log file"),
    ("", "is empty"),
    ('{"input": ["llvm", "matmul"], "result": [[0.1], 0], "version": 0.2}\n',
     "none of the 1 line"),
])
def test_apply_history_best_on_a_log_it_cannot_use_is_a_tune_error(  # type: ignore[no-untyped-def]
        matmul_task, tmp_path: Path, content: str | None, message: str) -> None:
    """A mistyped path, an empty file or another tool's log (TVM's) silently built the
    template's default config: the student believed the tuned one was used."""
    log = tmp_path / "mm.json"
    if content is not None:
        log.write_text(content)
    with pytest.raises(TuneError, match=message):
        with tune.apply_history_best(log):
            pass


@pytest.mark.timeout(120)
def test_a_program_whose_reference_run_never_ends_is_a_tune_error(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The worker runs the unscheduled program once to check candidates against; one that
    never finished gave, after two minutes, "RuntimeError: ... could not build the reference
    program: None"."""
    from mlc.tune import measure

    monkeypatch.setattr(measure, "REFERENCE_WAIT", 3.0)
    A = te.placeholder((64,), name="A")
    k = te.reduce_axis((0, 2**31 - 1), name="k")  # about 2**37 float adds
    B = te.compute((64,), lambda i: te.sum(A[i] * 1.0001, axis=k), name="B")
    func = te.create_prim_func([A, B])
    with pytest.raises(TuneError, match="did not finish within 3 s.*check=False"):
        with Measurer(func, tune.measure_option(number=1, timeout=1.0), key="hang") as m:
            m.measure([func])


@pytest.mark.timeout(180)
def test_tune_takes_one_callback_not_in_a_list_and_refuses_one_that_is_not_callable(  # type: ignore[no-untyped-def]
        matmul_task, tmp_path: Path) -> None:
    """callbacks=log_to_file(path) was "TypeError: 'log_to_file' object is not iterable";
    callbacks=[5] a TypeError after the first batch had been measured."""
    tuner = tune.RandomTuner(matmul_task, seed=0)
    with pytest.raises(TuneError, match="callbacks holds 5, which is not callable"):
        tuner.tune(2, callbacks=[5])  # type: ignore[list-item]
    assert tuner.xs == []
    log = tmp_path / "one.json"
    tuner.tune(2, measure_option=tune.measure_option(**FAST),
               callbacks=tune.callback.log_to_file(log))  # type: ignore[arg-type]
    assert len(log.read_text().splitlines()) == 2


@pytest.mark.parametrize("kwargs, message", [
    (dict(timeout=math.inf), "timeout=inf must be a number above 0"),
    (dict(timeout=1e12), "at most 1e"),
    (dict(min_repeat_ms=math.inf), "min_repeat_ms=inf"),
    (dict(n_parallel=10**6), "n_parallel=1000000 worker processes"),
])
def test_measure_option_refuses_what_it_cannot_honour(kwargs: dict[str, Any], message: str) -> None:
    """timeout=inf (or 1e12) was an OverflowError from the pipe's poll at the first
    measurement; min_repeat_ms=inf failed every candidate; n_parallel=10**6 started one
    Python process per candidate of a batch."""
    with pytest.raises(TuneError, match=message):
        tune.measure_option(**kwargs)


@pytest.mark.timeout(300)
def test_a_program_without_arithmetic_is_ranked_by_speed() -> None:
    """A transpose has 0 FLOP, so every success scored 0 FLOP/s like a failure: the cost
    model never trained and confirm re-measured nothing."""
    A = te.placeholder((64, 64), name="A")
    B = te.compute((64, 64), lambda i, j: A[j, i], name="B")

    def split_rows(sch: Any) -> None:  # the default space of a copy has one point
        (i, _) = sch.get_loops(sch.get_block("B"))
        sch.split(i, sch.sample_perfect_tile(i, n=2))

    best = tune.tune_tir(te.create_prim_func([A, B]), max_trials=4, confirm=2,
                         space=split_rows, measure_option=tune.measure_option(**FAST),
                         progress=False)
    tuner = best.tuner  # type: ignore[attr-defined]
    ok = [y for y, r in zip(tuner.ys, tuner.results) if r.ok]
    assert len(ok) >= 2 and all(y > 0 for y in ok)
    assert tuner.confirmed  # the fastest were measured again
    f = mlc.build(best.mod)
    a = np.random.default_rng(0).random((64, 64), dtype=np.float32)
    b = np.zeros((64, 64), np.float32)
    f(a, b)
    np.testing.assert_array_equal(b, a.T)


def test_a_local_cluster_of_a_hundred_thousand_workers_is_refused_before_starting() -> None:
    """"local:100000" started a LocalCluster of 100000 processes."""
    pytest.importorskip("distributed")
    from mlc.errors import ClusterError
    from mlc.tune.executor import start_local_cluster

    with pytest.raises(ClusterError, match="would start 100000 worker processes"):
        start_local_cluster("local:100000")


def test_features_of_a_program_nested_1500_loops_deep() -> None:
    """flop_count and itervar_features walk the program recursively: 1500 nested loops ran
    out of Python's recursion limit (RecursionError). They run again on a deep stack."""
    import dataclasses

    from mlc.tir import For, ForKind, Var, const
    from mlc.tune.features import flop_count, itervar_features, memory_traffic

    A = te.placeholder((16,), name="A")
    B = te.compute((16,), lambda i: A[i] * 2.0 + 1.0, name="B")
    shallow = te.create_prim_func([A, B])
    body = shallow.body
    for d in range(1500):  # loops of one iteration: the same work
        body = For(Var(f"d{d}", "int32"), const(0), const(1), ForKind.SERIAL, body)
    deep = dataclasses.replace(shallow, body=body)
    assert flop_count(deep) == flop_count(shallow) == 32.0
    assert len(itervar_features(deep)) == len(itervar_features(shallow))
    assert memory_traffic(deep, 1 << 20) == memory_traffic(shallow, 1 << 20)


def test_log_to_file_refuses_a_folder_or_a_path_under_a_file(tmp_path: Path) -> None:
    """log_to_file(folder) raised IsADirectoryError after the first batch had been
    measured (and lost); a path under a file, NotADirectoryError/FileExistsError."""
    with pytest.raises(TuneError, match="is a folder; give a file in it"):
        tune.callback.log_to_file(tmp_path)
    afile = tmp_path / "notes.txt"
    afile.write_text("mine")
    with pytest.raises(TuneError, match="is a file, not a folder"):
        tune.callback.log_to_file(afile / "log.json")
    tune.callback.log_to_file(tmp_path / "new" / "log.json")  # a folder to be made: fine

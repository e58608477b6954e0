"""The tuner records a candidate that mlc refuses as a failure, and lets a bug in mlc through."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

from mlc import te, tune
from mlc.errors import ScheduleError
from mlc.tune import features
from mlc.tune.measure import MeasureOption, _worker_main, _WorkerBug
from mlc.tune.tuner import RandomTuner, XGBTuner


def _internal_bug(*args: Any, **kwargs: Any) -> Any:
    raise AttributeError("'For' object has no attribute 'extnet'")  # a typo inside mlc


def test_a_bug_in_the_feature_extractor_is_not_swallowed(matmul_task, monkeypatch):
    tuner = XGBTuner(matmul_task, seed=0)
    assert len(tuner._features(0)) == features.LENGTH
    monkeypatch.setattr(features, "itervar_features", _internal_bug)
    with pytest.raises(AttributeError, match="extnet"):
        tuner._features(0)


def test_a_refused_config_is_a_failed_trial_but_a_bug_stops_tuning(matmul_task, monkeypatch):
    def refuse(index: int) -> Any:
        raise ScheduleError(f"config {index} refused")

    tuner = RandomTuner(matmul_task, seed=0)
    monkeypatch.setattr(tuner.space, "build", refuse)
    tuner.tune(3, measure_option=tune.measure_option(number=1))
    assert [r.error for r in tuner.results] == [
        f"ScheduleError: config {i} refused" for i in tuner.xs
    ]

    buggy = RandomTuner(matmul_task, seed=0)
    monkeypatch.setattr(buggy.space, "build", _internal_bug)
    with pytest.raises(AttributeError, match="extnet"):
        buggy.tune(3, measure_option=tune.measure_option(number=1))


class _Conn:
    """The worker's end of the pipe, in this process."""

    def __init__(self, messages: list[Any]) -> None:
        self.inbox = list(messages)
        self.sent: list[Any] = []

    def recv(self) -> Any:
        if not self.inbox:
            raise EOFError
        return self.inbox.pop(0)

    def send(self, obj: Any) -> None:
        self.sent.append(obj)


def test_a_bug_while_building_a_candidate_reaches_the_tuner(monkeypatch):
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    func = te.create_prim_func([A, B])
    o = MeasureOption()
    candidate = {"key": "k", "func": pickle.dumps(func), "target": "llvm", "number": 1,
                 "repeat": 1, "min_repeat_ms": 0, "check": True, "rtol": o.rtol}
    ref = {"key": "k", "ref": pickle.dumps(func), "target": "llvm", "check": True}
    conn = _Conn([ref, candidate])
    _worker_main(conn)
    ready, waiting, locked, result = conn.sent  # the timing-lock phases, with their times
    assert ready == "ready" and result.ok
    assert waiting[0] == "waiting" and locked[0] == "locked" and waiting[1] <= locked[1]

    import mlc

    monkeypatch.setattr(mlc, "build", _internal_bug)
    conn = _Conn([candidate])
    _worker_main(conn)
    (bug,) = conn.sent
    assert isinstance(bug, _WorkerBug) and "extnet" in bug.traceback
    with pytest.raises(RuntimeError, match="a bug in mlc while measuring"):
        bug.raise_()


def test_redefining_a_template_resets_its_search_space():
    def define(knob_values: list[int]) -> None:
        @tune.template("test_redefined")
        def scale(n: int):
            A = te.placeholder((n,), name="A")
            B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
            s = te.create_schedule(B.op)
            tune.get_config().define_knob("k", knob_values)
            return s, [A, B]

    define([1, 2])
    assert len(tune.create_task("test_redefined", args=(8,)).config_space) == 2
    define([1, 2, 3])  # the notebook cell, edited and run again
    assert len(tune.create_task("test_redefined", args=(8,)).config_space) == 3

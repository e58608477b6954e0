"""Threads of a parallel loop on CPUs of their own (mlc.runtime.parallel.on_own_cpus):
woken through the kernel, libgomp's sleeping threads were often run on their waker's CPU,
and two threads then ran at the speed of one."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from llvm_helpers import build, loop

from mlc.runtime import parallel
from mlc.tir import Buffer, BufferStore, ForKind, Var

pytestmark = pytest.mark.skipif(
    not parallel.available(warn=False) or len(os.sched_getaffinity(0)) < 2,
    reason="needs libgomp and two CPUs",
)
ROWS, COLS = 64, 1 << 14


@pytest.fixture(autouse=True)
def pinning_on(monkeypatch):
    monkeypatch.setenv("MLC_PIN_THREADS", "1")


def _scale_rows():
    A = Buffer("A", (ROWS * COLS,), "float32")
    B = Buffer("B", (ROWS * COLS,), "float32")
    r, i = Var("r", "int32"), Var("i", "int32")
    body = loop(i, COLS, BufferStore(B, A[r * COLS + i] * 3.0, (r * COLS + i,)))
    return build((A, B), loop(r, ROWS, body, ForKind.PARALLEL))


def _thread_cpus() -> dict[str, str]:
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:  # a thread of a larger libgomp team that ran before may be exiting meanwhile
            status = (task / "status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("Cpus_allowed_list:"):
                out[task.name] = line.split(":", 1)[1].strip()
    return out


def test_a_long_call_pins_the_team_and_gives_the_caller_its_cpus_back(monkeypatch):
    monkeypatch.setattr(parallel, "PIN_AFTER_S", 0.0)
    f = _scale_rows()
    mine = os.sched_getaffinity(0)
    a = np.random.default_rng(0).random(ROWS * COLS, dtype=np.float32)
    b = np.zeros_like(a)
    for _ in range(3):
        f(a, b)
    np.testing.assert_array_equal(b, a * 3)
    assert os.sched_getaffinity(0) == mine
    second = str(sorted(mine)[1])
    assert second in _thread_cpus().values()  # libgomp's thread 1, on the second CPU


def test_short_calls_are_not_pinned(monkeypatch):
    monkeypatch.setattr(parallel, "PIN_AFTER_S", 3600.0)
    seen: list[object] = []
    real = os.sched_setaffinity
    monkeypatch.setattr(os, "sched_setaffinity", lambda *a: (seen.append(a), real(*a)))
    f = _scale_rows()
    a = np.ones(ROWS * COLS, np.float32)
    b = np.zeros_like(a)
    f(a, b)
    f(a, b)
    assert seen == []
    np.testing.assert_array_equal(b, 3.0)


def test_where_cpus_cannot_be_pinned_the_call_runs_as_it_is(monkeypatch):
    monkeypatch.setattr(parallel, "PIN_AFTER_S", 0.0)

    def refuse(*_: object) -> None:
        raise PermissionError("sched_setaffinity: operation not permitted")

    monkeypatch.setattr(os, "sched_setaffinity", refuse)
    f = _scale_rows()
    a = np.ones(ROWS * COLS, np.float32)
    b = np.zeros_like(a)
    f(a, b)
    f(a, b)
    np.testing.assert_array_equal(b, 3.0)


def test_pinning_is_off_unless_mlc_pin_threads_is_set(monkeypatch):
    import ctypes

    def native(f):  # under the interrupt guard (mlc.runtime.interrupt)
        return getattr(f._cfunc, "__wrapped__", f._cfunc)

    monkeypatch.delenv("MLC_PIN_THREADS")
    assert isinstance(native(_scale_rows()), ctypes._CFuncPtr)  # off by default
    monkeypatch.setenv("MLC_PIN_THREADS", "0")
    f = _scale_rows()
    assert isinstance(native(f), ctypes._CFuncPtr)  # called as it is, never pinned
    monkeypatch.setenv("MLC_PIN_THREADS", "1")
    assert not isinstance(native(_scale_rows()), ctypes._CFuncPtr)

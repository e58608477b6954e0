"""Measuring candidates safely: build and run in reusable worker processes.

A candidate that crashes its process (a segfault), runs past the timeout, or computes a
wrong answer costs one trial and is recorded as an error; the tuner carries on. Workers are
long-lived processes (one per ``n_parallel``) that are restarted only after a crash or a
timeout, so a trial does not pay for a fresh interpreter.

Correctness is checked against the *unscheduled* program of the same computation, built once
per task in the worker and run on seeded random inputs.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import time
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

from mlc.errors import MLCError
from mlc.tir.stmt import PrimFunc
from mlc.tune.record import MeasureResult


@dataclass
class MeasureOption:
    """How to time a candidate: ``repeat`` results, each the mean of ``number`` runs (grown
    until one result lasts ``min_repeat_ms``); ``timeout`` seconds per candidate (build
    included); ``n_parallel`` worker processes; ``check`` compares outputs with the reference."""

    number: int = 3
    repeat: int = 1
    min_repeat_ms: int = 0
    timeout: float = 10.0
    n_parallel: int = 1
    check: bool = True
    rtol: float = 1e-3


def measure_option(
    number: int = 3,
    repeat: int = 1,
    min_repeat_ms: int = 0,
    timeout: float = 10.0,
    n_parallel: int = 1,
    check: bool = True,
) -> MeasureOption:
    """The measurement settings (AutoTVM's ``measure_option``, flattened to one call)."""
    return MeasureOption(number, repeat, min_repeat_ms, timeout, n_parallel, check)


# ---------------------------------------------------------------------------------------------
# the worker side


def _written_params(func: PrimFunc) -> list[int]:
    from mlc.tir.functor import post_order_visit
    from mlc.tir.stmt import BufferStore

    written: set[Any] = set()

    def visit(n: object) -> None:
        if isinstance(n, BufferStore):
            written.add(n.buffer.data)

    post_order_visit(func.body, visit)
    return [k for k, b in enumerate(func.params) if b.data in written]


def _random_inputs(func: PrimFunc, seed: int) -> list[Any]:
    import numpy as np

    from mlc.tir.expr import IntImm

    rng = np.random.default_rng(seed)
    arrays = []
    for buf in func.params:
        shape = tuple(d.value if isinstance(d, IntImm) else 1 for d in buf.shape)
        if buf.dtype.startswith("float"):
            arrays.append(rng.uniform(-1, 1, size=shape).astype(buf.dtype))
        elif buf.dtype == "bool":
            arrays.append(rng.integers(0, 2, size=shape).astype(bool))
        else:
            arrays.append(rng.integers(0, 8, size=shape).astype(buf.dtype))
    return arrays


def _worker_main(conn: Any) -> None:
    import numpy as np

    import mlc

    references: dict[str, tuple[list[Any], list[int], list[Any]]] = {}
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        try:
            key = msg["key"]
            if "ref" in msg:  # prepare: build and run the reference once
                ref_func: PrimFunc = pickle.loads(msg["ref"])
                arrays = _random_inputs(ref_func, seed=0)
                outs = _written_params(ref_func)
                if msg["check"]:
                    mlc.build(ref_func, target=msg["target"])(*arrays)
                references[key] = (arrays, outs, [arrays[k].copy() for k in outs])
                conn.send("ready")
                continue
            func: PrimFunc = pickle.loads(msg["func"])
            t0 = time.perf_counter()
            module = mlc.build(func, target=msg["target"])
            build_seconds = time.perf_counter() - t0
            arrays, outs, expected = references[key]
            work = [a.copy() if k in outs else a for k, a in enumerate(arrays)]
            for k in outs:
                work[k][...] = 0
            module(*work)
            if msg["check"]:
                for k, want in zip(outs, expected):
                    if not np.allclose(work[k], want, rtol=msg["rtol"], atol=msg["rtol"]):
                        worst = float(np.max(np.abs(work[k].astype("float64") - want)))
                        raise _WrongAnswer(
                            f"wrong answer in {func.params[k].name}: max abs error {worst:.3g}"
                        )
            timer = module.time_evaluator(
                number=msg["number"], repeat=msg["repeat"], min_repeat_ms=msg["min_repeat_ms"]
            )
            costs = [float(c) for c in timer(*work).results]
            conn.send(MeasureResult(costs, None, build_seconds))
        except _WrongAnswer as err:
            conn.send(MeasureResult([], str(err)))
        except (MLCError, MemoryError) as err:  # this candidate cannot be built or run
            last = traceback.format_exception_only(type(err), err)[-1].strip()
            conn.send(MeasureResult([], f"{type(err).__name__}: {last}"[:2000]))
        except Exception:  # a bug in mlc, not a bad candidate: the tuner must stop and say so
            conn.send(_WorkerBug(traceback.format_exc()))


class _WrongAnswer(Exception):
    pass


@dataclass(frozen=True)
class _WorkerBug:
    """Sent by a worker when building or running raised something no candidate should."""

    traceback: str

    def raise_(self) -> None:
        raise RuntimeError(
            "a bug in mlc while measuring a candidate (not a refused configuration); "
            f"the worker's traceback:\n{self.traceback}"
        )


# ---------------------------------------------------------------------------------------------
# the tuner side


class _Duplex:
    """Two one-way pipes used as one connection (``send``, ``recv``, ``poll``)."""

    def __init__(self, inbox: Connection, outbox: Connection) -> None:
        self.inbox, self.outbox = inbox, outbox

    def send(self, obj: Any) -> None:
        self.outbox.send(obj)

    def recv(self) -> Any:
        return self.inbox.recv()

    def poll(self, timeout: float) -> bool:
        return self.inbox.poll(timeout)

    def close(self) -> None:
        self.inbox.close()
        self.outbox.close()


def _serve(read_fd: int, write_fd: int) -> None:
    """Entry point of a worker process (started with ``python -c``)."""
    _worker_main(_Duplex(Connection(read_fd, writable=False), Connection(write_fd, readable=False)))


class _Worker:
    """A worker: a fresh ``python`` running :func:`_serve`. Started as a plain subprocess
    rather than through ``multiprocessing`` so that a user's script is never re-imported in
    the worker (no ``if __name__ == "__main__":`` needed around tuning code)."""

    def __init__(self) -> None:
        to_child_r, to_child_w = os.pipe()
        to_parent_r, to_parent_w = os.pipe()
        code = f"from mlc.tune.measure import _serve; _serve({to_child_r}, {to_parent_w})"
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], pass_fds=(to_child_r, to_parent_w), close_fds=True
        )
        os.close(to_child_r)
        os.close(to_parent_w)
        self.conn = _Duplex(
            Connection(to_parent_r, writable=False), Connection(to_child_w, readable=False)
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def exitcode(self) -> int | None:
        return self.proc.poll()

    def kill(self) -> None:
        if self.alive():
            self.proc.kill()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover
            pass
        self.conn.close()


class Measurer:
    """Runs candidates of one computation in worker processes.

    ``measure(funcs)`` takes scheduled PrimFuncs and returns one MeasureResult each."""

    def __init__(self, reference: PrimFunc, option: MeasureOption, target: Any = "llvm",
                 key: str = "task") -> None:
        self.option = option
        self.target = target
        self.key = key
        self._ref = pickle.dumps(reference)
        self._workers: list[_Worker | None] = [None] * max(1, option.n_parallel)

    def _worker(self, slot: int) -> _Worker:
        w = self._workers[slot]
        if w is None or not w.alive():
            if w is not None:
                w.kill()
            w = _Worker()
            w.conn.send({"key": self.key, "ref": self._ref, "target": self.target,
                         "check": self.option.check})
            # starting Python, importing mlc and running the reference can take a while
            reply = w.conn.recv() if w.conn.poll(max(120.0, self.option.timeout)) else None
            if reply != "ready":
                w.kill()
                if isinstance(reply, _WorkerBug):
                    reply.raise_()
                raise RuntimeError(
                    f"the measurement worker could not build the reference program: {reply}"
                )
            self._workers[slot] = w
        return w

    def _restart(self, slot: int) -> None:
        w = self._workers[slot]
        if w is not None:
            w.kill()
        self._workers[slot] = None

    def measure(self, funcs: list[PrimFunc]) -> list[MeasureResult]:
        results: list[MeasureResult | None] = [None] * len(funcs)
        pending = list(range(len(funcs)))
        while pending:
            batch = []
            for slot in range(len(self._workers)):
                if not pending:
                    break
                k = pending.pop(0)
                w = self._worker(slot)
                w.conn.send(self._message(funcs[k]))
                batch.append((slot, k, time.perf_counter()))
            for slot, k, start in batch:
                results[k] = self._receive(slot, start)
        return [r if r is not None else MeasureResult([], "not measured") for r in results]

    def _message(self, func: PrimFunc) -> dict[str, Any]:
        o = self.option
        return {
            "key": self.key, "func": pickle.dumps(func), "target": self.target,
            "number": o.number, "repeat": o.repeat, "min_repeat_ms": o.min_repeat_ms,
            "check": o.check, "rtol": o.rtol,
        }

    def _receive(self, slot: int, start: float) -> MeasureResult:
        w = self._workers[slot]
        assert w is not None
        remaining = self.option.timeout - (time.perf_counter() - start)
        try:
            if w.conn.poll(max(remaining, 0.0)):
                result: MeasureResult | _WorkerBug = w.conn.recv()
                if isinstance(result, _WorkerBug):
                    result.raise_()
                assert isinstance(result, MeasureResult)
                return result
            self._restart(slot)
            return MeasureResult([], f"timeout: no result within {self.option.timeout:g} s")
        except (EOFError, ConnectionResetError, BrokenPipeError):
            w.proc.wait(timeout=5)
            code = w.exitcode()
            self._restart(slot)
            why = f"signal {-code}" if code is not None and code < 0 else f"exit code {code}"
            return MeasureResult([], f"crash: the worker process died ({why})")

    def close(self) -> None:
        for slot in range(len(self._workers)):
            self._restart(slot)

    def __enter__(self) -> Measurer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

"""Measuring candidates safely: build and run in reusable worker processes.

A candidate that crashes its process (a segfault), runs past the timeout, or computes a
wrong answer costs one trial and is recorded as an error; the tuner carries on. Workers are
long-lived processes (one per ``n_parallel``) that are restarted only after a crash or a
timeout, so a trial does not pay for a fresh interpreter.

Where the workers run is the *runner*'s choice: by default here, in a local pool; with
``measure_option(runner=DaskRunner(client))`` on the workers of a Dask cluster, each of which
keeps such a local worker process (so a crashing candidate costs a trial there too, never the
Dask worker). Either way a candidate is built and checked freely, but timed only while
holding its machine's timing lock (:func:`mlc.tune.executor.timing_lock`), so two
measurements never share a machine's cores; the wait for the lock does not count against the
candidate's timeout.

Correctness is checked against the *unscheduled* program of the same computation, built once
per task in the worker and run on seeded random inputs.
"""

from __future__ import annotations

import operator
import os
import pickle
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, replace
from multiprocessing.connection import Connection
from typing import Any

from mlc.errors import MLCError, TuneError
from mlc.tir.stmt import PrimFunc
from mlc.tune.executor import DaskExecutor, Executor, as_executor, timing_lock
from mlc.tune.record import MeasureResult

LOCK_WAIT_LIMIT = 1800.0  # seconds a candidate may wait for its machine's timing lock
MAX_TIMEOUT = 1e6  # seconds (11 days); larger ones overflow the pipes' poll
REFERENCE_WAIT = 120.0  # seconds a new worker may take to start and run the reference once


@dataclass
class MeasureOption:
    """How to time a candidate: ``repeat`` results, each the mean of ``number`` runs (grown
    until one result lasts ``min_repeat_ms``); ``timeout`` seconds per candidate (build
    included, waiting for the timing lock not); ``n_parallel`` worker processes; ``check``
    compares outputs with the reference; ``runner`` where they run (None: this machine, or a
    :class:`DaskRunner`)."""

    number: int = 3
    repeat: int = 1
    min_repeat_ms: int = 0
    timeout: float = 10.0
    n_parallel: int = 1
    check: bool = True
    rtol: float = 1e-3
    runner: DaskRunner | None = None


@dataclass
class LocalBuilder:
    """AutoTVM's ``LocalBuilder``: candidates are built in the measuring worker processes
    (``measure_option(builder=LocalBuilder())`` or ``builder="local"``, the default)."""

    timeout: float = 10.0
    n_parallel: int | None = None


@dataclass
class LocalRunner:
    """AutoTVM's ``LocalRunner(number=5, repeat=1, min_repeat_ms=0, timeout=4)``: time on this
    machine; ``measure_option(runner=LocalRunner(...))`` takes its numbers."""

    number: int = 4
    repeat: int = 3
    min_repeat_ms: int = 0
    timeout: float = 10.0


def measure_option(
    number: int = 3,
    repeat: int = 1,
    min_repeat_ms: int = 0,
    timeout: float = 10.0,
    n_parallel: int | None = None,
    check: bool = True,
    runner: DaskRunner | LocalRunner | str | None = None,
    builder: LocalBuilder | str | None = None,
) -> MeasureOption:
    """The measurement settings (AutoTVM's ``measure_option``, flattened to one call).

    ``runner=mlc.tune.DaskRunner(client)`` measures on a Dask cluster; ``n_parallel`` then
    defaults to the number of its workers (candidates in flight at once), else to 1.
    AutoTVM's form ``measure_option(builder="local", runner=LocalRunner(number=5))`` works
    too: the runner's and builder's numbers are taken."""
    if isinstance(builder, LocalBuilder):
        timeout = builder.timeout
        n_parallel = builder.n_parallel if n_parallel is None else n_parallel
    elif builder not in (None, "local"):
        raise TuneError(f"builder={builder!r}: mlc builds locally (builder='local' or "
                        "LocalBuilder()); measure elsewhere with runner=DaskRunner(client)")
    if isinstance(runner, LocalRunner):
        number, repeat, min_repeat_ms = runner.number, runner.repeat, runner.min_repeat_ms
        timeout = max(timeout, runner.timeout)
        runner = None
    elif runner == "local":
        runner = None
    elif runner is not None and not isinstance(runner, DaskRunner):
        raise TuneError(f"runner={runner!r}: use LocalRunner(...) or DaskRunner(client)")
    if n_parallel is None:
        n_parallel = runner.n_workers if runner is not None else 1
    for name, value in (("number", number), ("repeat", repeat), ("n_parallel", n_parallel)):
        whole_number(f"measure_option: {name}", value)
    for name, amount in (("timeout", timeout), ("min_repeat_ms", min_repeat_ms)):
        least = 0.0 if name == "min_repeat_ms" else 1e-9
        if isinstance(amount, bool) or not isinstance(amount, (int, float)) or not (
                least <= amount <= MAX_TIMEOUT):
            raise TuneError(f"measure_option: {name}={amount!r} must be a number "
                            f"{'above 0 (seconds)' if name == 'timeout' else 'of ms, 0 or more'}"
                            f", and at most {MAX_TIMEOUT:g}")
    local_limit = max(8, 4 * (os.cpu_count() or 1))
    if runner is None and n_parallel > local_limit:
        raise TuneError(
            f"measure_option: n_parallel={n_parallel} worker processes on this machine of "
            f"{os.cpu_count()} CPUs (each a Python process with mlc loaded); at most "
            f"{local_limit} here. Measure on a cluster with runner=DaskRunner(client)")
    return MeasureOption(number, repeat, min_repeat_ms, timeout, n_parallel, check, 1e-3, runner)


def whole_number(what: str, value: object, least: int = 1,
                 error: type[Exception] = TuneError) -> int:
    """``value`` if it is a whole number of at least ``least``, else ``error`` (a TuneError
    unless the caller names another class) naming it."""
    try:
        n = operator.index(value)  # type: ignore[arg-type]  # int, numpy ints; not floats
    except TypeError:
        n = least - 1
    if isinstance(value, bool) or n < least:
        raise error(f"{what}={value!r} must be a whole number, at least {least}")
    return n


# ---------------------------------------------------------------------------------------------
# the worker side


def _written_params(func: PrimFunc) -> list[int]:
    """The positions, in the call's argument list, of the buffers the program writes."""
    from mlc.tir.functor import post_order_visit
    from mlc.tir.stmt import Buffer, BufferStore

    written: set[Any] = set()

    def visit(n: object) -> None:
        if isinstance(n, BufferStore):
            written.add(n.buffer.data)

    post_order_visit(func.body, visit)
    return [k for k, a in enumerate(func.arguments)
            if isinstance(a, Buffer) and a.data in written]


def _random_inputs(func: PrimFunc, seed: int) -> list[Any]:
    """One argument per parameter of the call: random arrays (a symbolic size is 1), and
    for a scalar parameter a number of its type: a float in [0.5, 1.5), an int 1 (it may
    be an offset or a count), True. Integer arrays hold 1..7, so that a program dividing by
    one of its inputs can be tuned."""
    import numpy as np

    from mlc.tir import dtype as dt
    from mlc.tir.expr import IntImm
    from mlc.tir.stmt import Buffer

    rng = np.random.default_rng(seed)
    args: list[Any] = []
    for a in func.arguments:
        if not isinstance(a, Buffer):
            if a.dtype == "bool":
                args.append(True)
            elif dt.is_float(a.dtype):
                args.append(float(rng.uniform(0.5, 1.5)))
            else:
                args.append(1)
            continue
        shape = tuple(d.value if isinstance(d, IntImm) else 1 for d in a.shape)
        if a.dtype.startswith("float"):
            args.append(rng.uniform(-1, 1, size=shape).astype(a.dtype))
        elif a.dtype == "bool":
            args.append(rng.integers(0, 2, size=shape).astype(bool))
        else:
            args.append(rng.integers(1, 8, size=shape).astype(a.dtype))  # no zero divisor
    return args


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
                    # NaN where the reference has NaN is right (log of a negative input)
                    if not np.allclose(work[k], want, rtol=msg["rtol"], atol=msg["rtol"],
                                       equal_nan=True):
                        worst = float(np.max(np.abs(work[k].astype("float64") - want)))
                        raise _WrongAnswer(
                            f"wrong answer in {func.params[k].name}: max abs error {worst:.3g}"
                        )
            timer = module.time_evaluator(
                number=msg["number"], repeat=msg["repeat"], min_repeat_ms=msg["min_repeat_ms"]
            )
            conn.send(("waiting", time.monotonic()))
            with timing_lock():  # one timing at a time on this machine
                conn.send(("locked", time.monotonic()))
                costs = [float(c) for c in timer(*work).results]
            conn.send(MeasureResult(costs, None, build_seconds))
        except _WrongAnswer as err:
            conn.send(MeasureResult([], str(err)))
        except (MLCError, MemoryError) as err:  # this candidate cannot be built or run
            text = str(err).strip() or "(no message)"
            conn.send(MeasureResult([], f"{type(err).__name__}: {text}"[:2000]))
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
    conn = _Duplex(Connection(read_fd, writable=False), Connection(write_fd, readable=False))
    try:
        _worker_main(conn)
    except (BrokenPipeError, ConnectionResetError):
        pass  # the tuner (or the Dask worker) that started this process is gone


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
            wait = max(REFERENCE_WAIT, self.option.timeout)
            reply = w.conn.recv() if w.conn.poll(wait) else None
            if reply != "ready":
                w.kill()
                if isinstance(reply, _WorkerBug):
                    reply.raise_()
                if isinstance(reply, MeasureResult):  # the student's program itself fails
                    raise TuneError(
                        "the program being tuned fails before any schedule is tried: its "
                        f"unscheduled version, built for target {self.target!r} and run on "
                        "the tuner's random inputs (floats in [-1, 1), integers 1..7), "
                        f"raised {reply.error}. Tune a program that builds for that target "
                        "and runs on any input (guard divisors and indices read from data)"
                    )
                if reply is None:
                    raise TuneError(
                        f"the program being tuned did not finish within {wait:g} s: its "
                        "unscheduled version, built and run once on the tuner's random inputs "
                        "to check the candidates against, is still running. Tune a smaller "
                        "instance of it, or pass measure_option(check=False)"
                    )
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
        if self.option.runner is not None:
            return self.option.runner.measure(self, funcs)
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
                batch.append((slot, k, time.monotonic()))
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
        """The worker's result; ``timeout`` counts from the send until it waits for the timing
        lock, and again from when it holds the lock (its messages carry the time)."""
        w = self._workers[slot]
        assert w is not None
        timeout = self.option.timeout
        deadline = start + timeout
        try:
            while w.conn.poll(max(deadline - time.monotonic(), 0.0)):
                reply: MeasureResult | _WorkerBug | tuple[str, float] = w.conn.recv()
                if isinstance(reply, tuple):
                    phase, at = reply
                    deadline = at + (LOCK_WAIT_LIMIT if phase == "waiting" else timeout)
                    continue
                if isinstance(reply, _WorkerBug):
                    reply.raise_()
                assert isinstance(reply, MeasureResult)
                return reply
            self._restart(slot)
            if deadline - start > LOCK_WAIT_LIMIT:
                return MeasureResult(
                    [], f"timeout: the machine's timing lock stayed taken {LOCK_WAIT_LIMIT:g} s")
            return MeasureResult([], f"timeout: no result within {timeout:g} s")
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


# ---------------------------------------------------------------------------------------------
# measuring on a Dask cluster


class DaskRunner:
    """Measure on the workers of a Dask cluster (TVM's RPC runner, on an existing engine).

        client = distributed.Client("tcp://scheduler:8786")   # or LocalCluster()
        option = mlc.tune.measure_option(runner=mlc.tune.DaskRunner(client))
        tuner.tune(64, measure_option=option)

    Every candidate is one Dask task: the worker builds it, checks it against the reference
    and times it in a local worker process of its own (kept between tasks), holding its
    machine's timing lock for the timing only. A worker that dies mid-task has its tasks run
    again elsewhere by Dask; each candidate gives exactly one result, in the order given.
    ``where`` is a ``distributed.Client``, a scheduler address, ``"local:N"`` or an
    :class:`~mlc.tune.executor.Executor`."""

    def __init__(self, where: Any) -> None:
        self.executor: Executor = as_executor(where)

    @property
    def n_workers(self) -> int:
        return max(1, self.executor.n_workers)

    def measure(self, measurer: Measurer, funcs: list[PrimFunc]) -> list[MeasureResult]:
        o = measurer.option
        if isinstance(self.executor, DaskExecutor):
            self.executor.require_workers()
        job = _RemoteJob(measurer.key, measurer._ref, measurer.target,
                         replace(o, runner=None, n_parallel=1))
        futures = [self.executor.submit(_measure_remote, job, pickle.dumps(f)) for f in funcs]
        where = {id(f): k for k, f in enumerate(futures)}
        results: list[MeasureResult] = [MeasureResult([], "not measured")] * len(funcs)
        for fut in self.executor.as_completed(futures):
            try:
                results[where[id(fut)]] = fut.result()
            except RuntimeError:
                raise  # a bug in mlc, raised on the worker (see _WorkerBug): stop and say so
            except Exception as err:  # noqa: BLE001 - e.g. KilledWorker: the task kept dying
                results[where[id(fut)]] = MeasureResult(
                    [], f"crash: the Dask task failed ({type(err).__name__}: {err})"[:2000])
        return results

    def close(self) -> None:
        self.executor.close()


@dataclass(frozen=True)
class _RemoteJob:
    key: str
    reference: bytes
    target: Any
    option: MeasureOption


_idle: dict[tuple[str, int], list[Measurer]] = {}
_idle_lock = threading.Lock()


def _measure_remote(job: _RemoteJob, func: bytes) -> MeasureResult:
    """On a Dask worker: measure one candidate with a local :class:`Measurer` of this worker
    process (one per task key and worker thread, kept for the next task)."""
    slot = (job.key, hash(job.reference))
    with _idle_lock:
        pool = _idle.setdefault(slot, [])
        measurer = pool.pop() if pool else None
    if measurer is None:
        measurer = Measurer(pickle.loads(job.reference), job.option, job.target, job.key)
    measurer.option = job.option
    try:
        return measurer.measure([pickle.loads(func)])[0]
    finally:
        with _idle_lock:
            _idle.setdefault(slot, []).append(measurer)

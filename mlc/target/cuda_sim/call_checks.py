"""Which calls of a cuda-sim module are checked, and how much of each.

A module built with ``target="cuda-sim"`` runs :func:`~mlc.target.cuda_sim.checks.check`
(races, uninitialised shared reads, out-of-range indices, divergent barriers) on copies of
the arrays before a call whose verdict could differ from every call checked so far:

* the first call;
* a call with other shapes or other scalar arguments (other addresses, another grid);
* a call whose *data* decides addresses: a kernel with ``B[I[i]] = A[i]`` races only when
  ``I`` repeats an index, so the check runs again whenever the arrays that feed indices,
  conditions or loop bounds (here ``I``) hold other values than in a checked call;
* a call with other values when a checked call saw two threads write the same value to one
  element (a harmless race for those values only).

Each check runs **every block** of every kernel when its estimated cost fits
``check_budget`` seconds (of CPU time, so that a check covers as much on a busy machine as
on an idle one); otherwise it runs :data:`CHECK_BLOCKS` blocks spread over the grid, each
with its neighbours, and warns naming the blocks it ran. A check that runs out of its
budget stops where it is (every block it runs has run up to that point): what ran before
was checked, and the warning says where it stopped. ``f.last_check`` is the report of the
latest check: the blocks it ran per kernel, whether that was all of them, how long it took::

    f = mlc.build(sch.mod, target="cuda-sim")
    f(a, idx, b)             # checked: every block, since the grid is small enough
    f.last_check             # main_kernel: 64 of 64 blocks; ...
    f.check_budget = 30      # seconds a check may take before it samples blocks
    f.check_calls = "first"  # "auto" (the default), "every", "first" or "never"
"""

from __future__ import annotations

import hashlib
import time
import warnings
from collections import OrderedDict
from typing import Any

import numpy as np

from mlc.errors import ArgumentError
from mlc.target.cuda_sim.checks import CheckReport, check_program
from mlc.target.cuda_sim.vectorize import loop_shape
from mlc.tir import expr as E
from mlc.tir import stmt as S
from mlc.tir.arith import evaluate_known
from mlc.tir.functor import IRVisitor, post_order_visit

CHECK_BLOCKS = 16
"""Blocks per kernel a sampled check runs (spread over the grid; each comes with its
neighbours in x and y, so up to about three times as many run)."""

CHECK_BUDGET = 3.0
"""Seconds a check before a call may take by default (``f.check_budget``)."""

SECONDS_PER_ACCESS = 30e-9
"""What the checking interpreter spends per thread and memory access (measured on a busy
2-vCPU Xeon: 20 to 40 ns with loops run at once, about 60 without), for deciding before it
starts whether every block fits the budget."""

SECONDS_PER_STEP = 30e-6
"""What it spends per statement it runs for all threads at once (numpy's overhead)."""

MAX_THREADS = 1 << 20
"""Threads of one kernel past which a call's check samples blocks whatever the budget: the
interpreter keeps several numbers per thread at once (an elementwise kernel of 2M threads
took 300 MB more; a notebook on Binder has 2 GB)."""

MODES = ("auto", "every", "first", "never")
_KEPT = 64  # verdicts remembered (a digest each)


class CallChecks:
    """The checks of one cuda-sim module's calls (see the module docstring)."""

    def __init__(self, func: S.PrimFunc) -> None:
        self.func = func
        self._mode = "auto"
        self._budget = CHECK_BUDGET
        feeding, written = address_inputs(func)
        names = {id(b.data): i for i, b in enumerate(func.params)}
        self.data_dependent = bool(feeding)
        if feeding and all(k in names for k in feeding) and not feeding & written:
            self._feeding: list[int] | None = sorted(names[k] for k in feeding)
        else:
            self._feeding = None if feeding else []  # None: every array decides
        self.value_dependent = False
        self.checked: OrderedDict[Any, bool] = OrderedDict()  # digest -> full check ran
        self.last: CheckReport | None = None
        self.count = 0

    @property
    def mode(self) -> str:
        return self._mode

    @mode.setter
    def mode(self, mode: str) -> None:
        if not isinstance(mode, str) or mode not in MODES:
            raise ArgumentError(f"check_calls={mode!r}: use one of "
                                f"{', '.join(repr(m) for m in MODES)}")
        self._mode = mode

    @property
    def budget(self) -> float:
        return self._budget

    @budget.setter
    def budget(self, seconds: float) -> None:
        ok = isinstance(seconds, (int, float, np.integer, np.floating)) and not isinstance(
            seconds, bool) and float(seconds) >= 0  # NaN fails the comparison
        if not ok:
            raise ArgumentError(f"check_budget={seconds!r}: give the CPU seconds a check "
                                "may take, a number >= 0 (float('inf'): never sample)")
        self._budget = float(seconds)

    # -- which calls --------------------------------------------------------------------------
    def _digest(self, args: tuple[Any, ...], positions: list[int] | None) -> Any:
        h = hashlib.blake2b(digest_size=16)
        arrays = [a for a in args if isinstance(a, np.ndarray)]
        for k, a in enumerate(arrays):
            if positions is None or k in positions:
                h.update(np.ascontiguousarray(a).view(np.uint8).reshape(-1).data)
        return h.digest()

    def _shape_key(self, args: tuple[Any, ...]) -> Any:
        return tuple((a.shape, a.dtype.str) if isinstance(a, np.ndarray) else repr(a)
                     for a in args)

    def wanted(self, args: tuple[Any, ...]) -> Any | None:
        """The key of this call's verdict when it needs a check, else None."""
        if self.mode == "never" or (self.mode == "first" and self.count):
            return None
        positions = None if self.value_dependent else self._feeding
        key = (self._shape_key(args),
               self._digest(args, positions) if positions != [] else None)
        if self.mode == "every" or key not in self.checked:
            return key
        self.checked.move_to_end(key)
        return None

    def before_call(self, args: tuple[Any, ...]) -> None:
        """Check this call (on copies of its arrays) if its verdict is not known yet."""
        key = self.wanted(args)
        if key is None:
            return
        copies = [np.array(a) if isinstance(a, np.ndarray) else a for a in args]
        report = self.run(copies)
        self.count += 1
        if report.same_value_writes and not self.value_dependent:
            self.value_dependent = True  # a later call with other values may race
            key = (key[0], self._digest(args, None))
        self.checked[key] = report.complete
        while len(self.checked) > _KEPT:
            self.checked.popitem(last=False)

    # -- how much of it -------------------------------------------------------------------
    def run(self, arrays: list[Any]) -> CheckReport:
        """Every block if it should fit the budget, else a sample; stopped at the budget
        either way; a warning when not everything ran."""
        budget = self.budget
        start = time.process_time()
        if estimate(self.func, arrays) <= 2 * budget and \
                threads(self.func, arrays) <= MAX_THREADS:
            # every block; if the estimate was low, the check stops at the deadline having
            # run every block up to the same point (what a sample would not give)
            report = check_program(self.func, arrays, deadline=start + budget)
        else:  # hopeless: a sample, with at least a second
            report = check_program(self.func, arrays, blocks=CHECK_BLOCKS,
                                   deadline=start + max(budget, 1.0))
        report.seconds = time.process_time() - start
        self.last = report
        if not report.complete:
            warnings.warn(f"cuda-sim {report.summary()} (f.check_budget = {budget:g} s; "
                          "f.check(...) checks every block however long it takes)",
                          UserWarning, stacklevel=4)
        return report


# -- what decides addresses ------------------------------------------------------------------

class _Feeds(IRVisitor):
    """The buffers (data ids) whose values reach an index, a condition or a loop bound of a
    kernel, and the buffers the program writes."""

    def __init__(self) -> None:
        self.lets: dict[int, frozenset[int]] = {}
        self.feeding: set[int] = set()
        self.written: set[int] = set()

    def deps(self, e: Any) -> frozenset[int]:
        found: set[int] = set()

        class Loads(IRVisitor):
            def visit_BufferLoad(inner, op: E.BufferLoad) -> None:  # noqa: N805
                found.add(id(op.buffer.data))
                inner.generic_visit(op)

            def visit_Var(inner, op: E.Var) -> None:  # noqa: N805
                found.update(self.lets.get(id(op), ()))

            visit_SizeVar = visit_Var

        Loads().visit(e)
        return frozenset(found)

    def address(self, *exprs: Any) -> None:
        for e in exprs:
            self.feeding |= self.deps(e)

    def visit_LetStmt(self, op: S.LetStmt) -> None:
        self.visit(op.value)
        self.lets[id(op.var)] = self.deps(op.value)
        self.visit(op.body)

    def visit_Let(self, op: E.Let) -> None:
        self.visit(op.value)
        self.lets[id(op.var)] = self.deps(op.value)
        self.visit(op.body)

    def visit_BufferStore(self, op: S.BufferStore) -> None:
        self.written.add(id(op.buffer.data))
        self.address(*op.indices)
        self.generic_visit(op)

    def visit_BufferLoad(self, op: E.BufferLoad) -> None:
        self.address(*op.indices)
        self.generic_visit(op)

    def visit_IfThenElse(self, op: S.IfThenElse) -> None:
        self.address(op.condition)
        self.generic_visit(op)

    def visit_Select(self, op: E.Select) -> None:
        self.address(op.condition)
        self.generic_visit(op)

    def visit_For(self, op: S.For) -> None:
        self.address(op.min, op.extent)
        self.generic_visit(op)

    def visit_Call(self, op: E.Call) -> None:
        if op.op != "check_index":
            self.address(*op.args[:1] if op.op == "tvm_warp_shuffle_down" else ())
        self.generic_visit(op)


def address_inputs(func: S.PrimFunc) -> tuple[frozenset[int], frozenset[int]]:
    """(the buffers whose values decide an address, a condition or a loop bound; the
    buffers the program writes), as data-variable ids."""
    v = _Feeds()
    v.visit(func.body)
    return frozenset(v.feeding), frozenset(v.written)


# -- what a full check costs --------------------------------------------------------------------

def estimate(func: S.PrimFunc, arrays: list[Any]) -> float:
    """Seconds a check of every block should take: each statement run costs a step
    (:data:`SECONDS_PER_STEP`), each access by each thread :data:`SECONDS_PER_ACCESS`. The
    iterations of a loop without a barrier inside may run as one step
    (:mod:`~mlc.target.cuda_sim.vectorize`), so they count as one; a loop whose bounds are
    not known before the run counts once. The deadline catches what this misses."""
    env = _sizes(func, arrays)
    total = 0.0

    def walk(s: Any, steps: float, times: float, threads: float) -> None:
        nonlocal total
        if isinstance(s, S.SeqStmt):
            for c in s.seq:
                walk(c, steps, times, threads)
        elif isinstance(s, S.KernelLaunch):
            walk(s.body, steps, times, _blocks(s, env) * s.threads_per_block)
        elif isinstance(s, S.For):
            trips = evaluate_known(s.extent, env)
            n = float(trips) if trips is not None else 1.0
            at_once = loop_shape(s) is not None
            walk(s.body, steps if at_once else steps * n, times * n, threads)
        elif isinstance(s, (S.LetStmt, S.Allocate)):
            if isinstance(s, S.LetStmt):
                total += times * _accesses(s.value) * threads * SECONDS_PER_ACCESS
            walk(s.body, steps, times, threads)
        elif isinstance(s, S.IfThenElse):
            walk(s.then_case, steps, times, threads)
            if s.else_case is not None:
                walk(s.else_case, steps, times, threads)
        elif isinstance(s, (S.BufferStore, S.Evaluate)):
            n = _accesses(s) if isinstance(s, S.BufferStore) else _accesses(s.value)
            total += steps * SECONDS_PER_STEP + times * n * threads * SECONDS_PER_ACCESS

    walk(func.body, 1.0, 1.0, 1.0)
    return total


def threads(func: S.PrimFunc, arrays: list[Any]) -> float:
    """The most threads one kernel of ``func`` launches for these arguments (a grid extent
    not known before the run counts as one block)."""
    env = _sizes(func, arrays)
    most = 0.0

    def visit(n: object) -> None:
        nonlocal most
        if isinstance(n, S.KernelLaunch):
            most = max(most, _blocks(n, env) * n.threads_per_block)

    post_order_visit(func.body, visit)
    return most


def _blocks(launch: S.KernelLaunch, env: dict[int, Any]) -> float:
    """The blocks of ``launch``'s grid for these sizes (an unknown extent counts as one)."""
    blocks = 1.0
    for _, extent in launch.grid_extents:
        known = evaluate_known(extent, env)
        blocks *= float(known) if known is not None else 1.0
    return blocks


def _accesses(node: Any) -> int:
    count = 0

    class Count(IRVisitor):
        def visit_BufferLoad(self, op: E.BufferLoad) -> None:
            nonlocal count
            count += max(1, _lanes(op.dtype))
            self.generic_visit(op)

    Count().visit(node)
    if isinstance(node, S.BufferStore):
        count += max(1, _lanes(node.value.dtype))
    return count


def _lanes(dtype: str) -> int:
    from mlc.tir import dtype as dt

    return dt.lanes(dtype)


def _sizes(func: S.PrimFunc, arrays: list[Any]) -> dict[int, Any]:
    """The size variables and scalar parameters of ``func`` for these arguments."""
    env: dict[int, Any] = {}
    for param, value in zip(func.arguments, arrays):
        if isinstance(param, E.Var):
            if isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
                env[id(param)] = value
            continue
        for extent, size in zip(param.shape, np.shape(value)):
            if isinstance(extent, E.Var):
                env.setdefault(id(extent), int(size))
    return env

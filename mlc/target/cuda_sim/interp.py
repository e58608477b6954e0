"""Run a GPU program the way a GPU does, thread by thread, and watch every memory access.

:mod:`mlc.target.cuda_sim.simulate` compiles a kernel into fast CPU loops; this module
*interprets* the same kernel (the program after ``split_host_device`` and
``insert_thread_sync``) with numpy, all threads at once: every value is an array with one
entry per thread (a *lane*), an ``if`` whose condition differs between threads runs both
sides under a mask, as a warp does. Because every access is seen with the thread that makes
it, an :class:`Observer` can check it (:mod:`mlc.target.cuda_sim.checks`), count memory
transactions (:mod:`mlc.target.cuda_sim.model`) or record it for a picture
(:mod:`mlc.viz.gpu`)::

    interp = Interpreter(func, observers=[recorder])
    interp.run(x, w, y)            # numpy arrays, as for the compiled function

Only some blocks need to run: ``blocks=`` picks them (the counting model runs a few and
scales up). Values are per-lane arrays of shape ``(lanes, 1)`` (vectors from ``Ramp`` have
shape ``(lanes, width)``) or numpy scalars when every thread agrees.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from mlc.errors import (
    ArgumentError,
    BarrierDivergenceError,
    CodegenError,
)
from mlc.runtime.args import ArgumentChecker, Scalar
from mlc.target.cuda_sim import fold, vectorize
from mlc.target.cuda_sim.evaluate import _Evaluator, _scope, _tdiv, _tmod  # noqa: F401
from mlc.target.cuda_sim.lanes import (  # noqa: F401  (re-exported: the old import path)
    WARP_SIZE,
    Lanes,
    _tup,
    np_dtype,
    pick_blocks,
)
from mlc.target.cuda_sim.observer import Access, Observer, stmt_line  # noqa: F401
from mlc.target.gpu.split_host_device import BLOCK_AXES, THREAD_AXES, is_barrier
from mlc.tir import expr as E
from mlc.tir import stmt as S
from mlc.tir.functor import post_order_visit


def grid_of(kernel: S.KernelLaunch, env: dict[int, Any]) -> dict[str, int]:
    out = {}
    for tag, extent in kernel.grid_extents:
        out[tag] = int(_const(extent, env))
    return out


def _const(e: E.PrimExpr, env: dict[int, Any]) -> Any:
    if isinstance(e, E.IntImm):
        return e.value
    if isinstance(e, E.Var):
        if id(e) not in env:
            raise ArgumentError(f"the launch extent {e.name} is not known")
        return env[id(e)]
    return Interpreter._eval_static(e, env)


def _count_or_none(name: str, value: Any) -> int | None:
    """``value`` if it is None or a whole number >= 1, else an ArgumentError."""
    if value is None or (isinstance(value, (int, np.integer)) and not isinstance(value, bool)
                         and value >= 1):
        return None if value is None else int(value)
    raise ArgumentError(f"{name}={value!r}: give a whole number >= 1 (how many to run), or "
                        f"{name}=None to run them all")


class _Stop(Exception):
    pass


class OutOfTime(Exception):
    """The interpreter's ``deadline`` passed (raised between two statements, caught by the
    check that set it): ``where`` says what ran last."""

    def __init__(self, where: str) -> None:
        super().__init__(where)
        self.where = where


class Interpreter(_Evaluator):
    """Runs the kernels of a GPU program (a PrimFunc whose body launches kernels) on numpy
    arrays, all threads of the chosen blocks as lanes, telling ``observers`` everything."""

    def __init__(self, func: S.PrimFunc, observers: Sequence[Observer] = (),
                 blocks: int | None = None, loops: int | None = None,
                 neighbours: bool = False, deadline: float | None = None) -> None:
        self.func = func
        # ``deadline`` (a time.process_time() value: the CPU time this process has used, so
        # that a check covers as much on a busy machine as on an idle one): stop with
        # OutOfTime once it has passed
        self.deadline = deadline
        self.observers = list(observers)
        self.block_limit = _count_or_none("blocks", blocks)
        # ``neighbours``: of a grid larger than ``blocks``, run each picked block with the
        # next one in x and in y (the checker: two neighbours touching one element race)
        self.neighbours = neighbours
        # ``loops=m``: of a serial loop with a barrier in its body (the k loop of a tiled
        # kernel: the same barrier intervals over and over), run m iterations spread over its
        # range; what happens there counts for the iterations skipped (``weight``). For
        # counting only: the results are then wrong.
        self.loop_limit = _count_or_none("loops", loops)
        self.weight = 1.0
        self._has_barrier: dict[int, bool] = {}
        self._running_kernel: S.KernelLaunch | None = None
        self._running_lanes: Lanes | None = None
        self.epoch = 0
        self.stmt: S.Stmt = func.body
        self._count_flops = any(type(o).flops is not Observer.flops for o in self.observers)
        # the serial loops running, outer first: (loop, first iteration, iterations in this
        # step, iterations in all)
        self._loops: list[tuple[S.For, int, int, int]] = []
        # ``vectorize_loops``: run a thread's loop iterations at once where no iteration
        # touches what another writes (mlc.target.cuda_sim.vectorize; the checker sets it:
        # counters see the same accesses, grouped otherwise than a warp makes them)
        self.vectorize_loops = False
        self._lane_map: np.ndarray | None = None  # lane of the step -> thread, when it differs
        self._approved: frozenset[int] = frozenset()
        self._shapes: dict[int, Any] = {}
        self._plans: dict[Any, Any] = {}
        self._inner: dict[int, frozenset[int]] = {}
        self._free: dict[int, tuple[E.Var, ...]] = {}
        self._arrays: dict[Any, tuple[Any, np.ndarray]] = {}  # repeated arrays, per kernel
        self._fold: dict[int, Any] | None = None  # accumulating stores (mlc...cuda_sim.fold)
        self._fold_records: list[Any] | None = None

    # -- entry ----------------------------------------------------------------------------
    def run(self, *args: Any) -> None:
        """Run on the call's arguments: an array per buffer, a number per scalar parameter
        (checked and converted as the compiled function does)."""
        func = self.func
        arguments = func.arguments
        if len(args) != len(arguments):
            raise ArgumentError(
                f"{func.name} takes {len(arguments)} arguments "
                f"({', '.join(p.name for p in arguments)}), got {len(args)}"
            )
        # the checks of the compiled function: dtypes, shapes, sizes that agree
        ArgumentChecker(func).native_args(args)
        self.env: dict[int, Any] = {}
        self.mem: dict[int, np.ndarray] = {}
        self.buffers: dict[int, S.Buffer] = {}
        arrays = []
        for a, value in zip(arguments, args):
            if isinstance(a, E.Var):  # a scalar parameter, as the numpy scalar of its dtype
                self.env[id(a)] = np_dtype(a.dtype).type(Scalar(a, func.name)(value))
            else:
                arrays.append(value)
        for buf, arr in zip(func.params, arrays):
            if not isinstance(arr, np.ndarray):
                raise ArgumentError(f"argument {buf.name} must be a numpy array")
            for extent, size in zip(buf.shape, arr.shape):
                if isinstance(extent, E.Var):
                    self.env.setdefault(id(extent), int(size))
            if arr.size and not arr.flags.c_contiguous:
                raise ArgumentError(f"argument {buf.name} must be C-contiguous")
            self.mem[id(buf.data)] = arr.reshape(-1)
            self.buffers[id(buf.data)] = buf
        self._host(func.body)

    def _host(self, s: S.Stmt) -> None:
        if isinstance(s, S.SeqStmt):
            for c in s.seq:
                self._host(c)
        elif isinstance(s, S.KernelLaunch):
            self._kernel(s)
        elif isinstance(s, S.Allocate):
            n = 1
            for d in s.buffer.shape:
                n *= int(_const(d, self.env))
            self.mem[id(s.buffer.data)] = np.zeros(n, np_dtype(s.buffer.dtype))
            self.buffers[id(s.buffer.data)] = s.buffer
            self._host(s.body)
        elif isinstance(s, S.LetStmt):
            self.env[id(s.var)] = self._eval_static(s.value, self.env)
            self._host(s.body)
        elif isinstance(s, S.For):  # a host loop around launches (a scan's time loop)
            lo = int(self._eval_static(s.min, self.env))
            for step in range(lo, lo + int(self._eval_static(s.extent, self.env))):
                self.env[id(s.loop_var)] = np.int64(step)
                self._host(s.body)
        elif isinstance(s, S.Evaluate):
            pass
        else:
            raise CodegenError(
                f"the GPU interpreter cannot run a {type(s).__name__} outside a kernel; run the "
                "GPU passes first (mlc.lower(..., target='cuda-sim'))"
            )

    @staticmethod
    def _eval_static(e: E.PrimExpr, env: dict[int, Any]) -> Any:
        from mlc.tir.arith import evaluate_known

        value = evaluate_known(e, env)
        if value is None:
            raise ArgumentError(f"cannot evaluate {e} before the kernel runs")
        return value

    # -- one kernel -----------------------------------------------------------------------
    def _kernel(self, k: S.KernelLaunch) -> None:
        grid = grid_of(k, self.env)
        n_blocks = int(np.prod(list(grid.values()))) if grid else 1
        if n_blocks == 0:
            return
        steps = (1, grid.get("blockIdx.x", 1)) if self.neighbours else ()
        chosen = pick_blocks(n_blocks, self.block_limit, steps)
        tpb = k.threads_per_block
        axis: dict[str, np.ndarray] = {}
        block_ids = np.repeat(chosen, tpb)
        thread_ids = np.tile(np.arange(tpb), len(chosen))
        rest = block_ids.copy()
        for tag in BLOCK_AXES:  # x fastest
            if tag in grid:
                axis[tag] = rest % grid[tag]
                rest = rest // grid[tag]
        rest = thread_ids.copy()
        threads = k.threads
        for tag in THREAD_AXES:
            if tag in threads:
                axis[tag] = rest % threads[tag]
                rest = rest // threads[tag]
        self._running_lanes = Lanes(block_ids, np.repeat(np.arange(len(chosen)), tpb),
                                    thread_ids, axis, len(chosen), tpb)
        self.grid = grid
        self.n_blocks_total = n_blocks
        self._running_kernel = k
        self._plans = {}
        self._arrays = {}
        self.epoch = 0
        L = len(block_ids)
        self.n_lanes = L
        for tag, var in k.thread_vars:
            self.env[id(var)] = axis[tag].reshape(L, 1) if tag in axis else np.int64(0)
        local_mem: dict[int, np.ndarray] = {}
        for buf in k.shared:
            local_mem[id(buf.data)] = self._alloc(buf, len(chosen))
            self.buffers[id(buf.data)] = buf
        self.mem.update(local_mem)
        for o in self.observers:
            o.begin_kernel(self, k)
        try:
            self._stmt(k.body, None)
        finally:
            for key in local_mem:
                self.mem.pop(key, None)
        for o in self.observers:
            o.end_kernel(self, k)

    def _alloc(self, buf: S.Buffer, rows: int) -> np.ndarray:
        n = 1
        for d in buf.shape:
            n *= int(_const(d, self.env))
        dtype = np_dtype(buf.dtype)
        fill = np.nan if dtype.kind == "f" else 0
        return np.full((rows, n), fill, dtype)

    # -- statements -------------------------------------------------------------------------
    def _stmt(self, s: S.Stmt, mask: np.ndarray | None) -> None:
        if isinstance(s, S.SeqStmt):
            for c in s.seq:
                self._stmt(c, mask)
            return
        self.stmt = s
        if self.deadline is not None and time.process_time() > self.deadline:
            raise OutOfTime(self._position())
        if isinstance(s, S.BufferStore):
            if self._fold is not None and id(s) in self._fold:
                fold.record(self, s, mask)  # an accumulator's update, folded after the loop
                return
            value = self._eval(s.value, mask)
            self._store(s.buffer, s.indices, value, mask)
        elif isinstance(s, S.For):
            self._for(s, mask)
        elif isinstance(s, S.IfThenElse):
            cond = self._eval(s.condition, mask)
            if np.ndim(cond) == 0:
                if bool(cond):
                    self._stmt(s.then_case, mask)
                elif s.else_case is not None:
                    self._stmt(s.else_case, mask)
                return
            cond = np.asarray(cond, bool)
            then_mask = cond if mask is None else mask & cond
            if then_mask.any():
                self._stmt(s.then_case, then_mask)
            if s.else_case is not None:
                else_mask = ~cond if mask is None else mask & ~cond
                if else_mask.any():
                    self._stmt(s.else_case, else_mask)
        elif isinstance(s, S.LetStmt):
            old = self.env.get(id(s.var))
            self.env[id(s.var)] = self._eval(s.value, mask)
            self._stmt(s.body, mask)
            if old is None:
                self.env.pop(id(s.var), None)
            else:
                self.env[id(s.var)] = old
        elif isinstance(s, S.Allocate):
            rows = self.lanes.n_blocks if s.buffer.scope == "shared" else self.n_lanes
            self.mem[id(s.buffer.data)] = self._alloc(s.buffer, rows)
            self.buffers[id(s.buffer.data)] = s.buffer
            self._stmt(s.body, mask)
            self.mem.pop(id(s.buffer.data), None)
        elif isinstance(s, S.Evaluate):
            if is_barrier(s):
                self._barrier(s, mask)
            else:
                self._eval(s.value, mask)
        else:
            raise CodegenError(f"the GPU interpreter cannot run a {type(s).__name__} in a kernel")

    def _for(self, s: S.For, mask: np.ndarray | None) -> None:
        lo = self._eval(s.min, mask)
        ext = self._eval(s.extent, mask)
        var = id(s.loop_var)
        old = self.env.get(var)
        if np.ndim(lo) == 0 and np.ndim(ext) == 0:
            values: Sequence[int] = range(int(lo), int(lo) + int(ext))
            weight = self.weight
            if self.loop_limit is not None and len(values) > self.loop_limit \
                    and self._barrier_inside(s):
                values = [values[i] for i in pick_blocks(len(values), self.loop_limit)]
                self.weight = weight * int(ext) / len(values)
            if self.vectorize_loops and len(values) > 1 and self.loop_limit is None:
                self._for_at_once(s, int(lo), int(ext), mask)
            else:
                for v in values:
                    self._iteration(s, v, len(values), mask)
            self.weight = weight
        else:
            lo_a = np.broadcast_to(np.asarray(lo, np.int64), (self.n_lanes, 1))
            hi_a = lo_a + np.asarray(ext, np.int64)
            active = np.ones((self.n_lanes, 1), bool) if mask is None else mask
            if active.any():
                start = int(lo_a[active].min())
                stop = int(hi_a[active].max())
                for v in range(start, stop):
                    m = active & (lo_a <= v) & (v < hi_a)
                    if m.any():
                        self.env[var] = np.int64(v)
                        self._stmt(s.body, m)
        if old is None:
            self.env.pop(var, None)
        else:
            self.env[var] = old

    def _iteration(self, s: S.For, v: int, count: int, mask: np.ndarray | None) -> None:
        self.env[id(s.loop_var)] = np.int64(v)
        self._loops.append((s, v, 1, count))
        self._stmt(s.body, mask)
        self._loops.pop()

    # -- loops run at once (the checker's fast path: mlc.target.cuda_sim.vectorize) -----------
    def _for_at_once(self, s: S.For, lo: int, ext: int, mask: np.ndarray | None) -> None:
        """The iterations of ``s`` in as few steps as :func:`~mlc.target.cuda_sim.vectorize.
        independent` allows: all at once, in chunks, or one by one."""
        if id(s) in self._approved:  # an outer loop's plan covered this one's iterations
            self._run_at_once(s, lo, ext, mask, nest=True)
            return
        key = id(s)
        if key not in self._shapes:
            shape = vectorize.loop_shape(s)
            self._shapes[key] = (shape, vectorize.trips(s), vectorize.accumulators(s, shape)) \
                if shape is not None else None
        known = self._shapes[key]
        if known is None:
            for v in range(lo, lo + ext):
                self._iteration(s, v, ext, mask)
            return
        shape, trips, accumulators = known
        step = vectorize.chunk(self, shape, ext, trips)
        for start in range(lo, lo + ext, step):
            count = min(step, lo + ext - start)
            plan_key = (key, start, count, self.n_lanes, _mask_key(mask),
                        *(self._value_key(self.env.get(id(v))) for v in shape.key_vars))
            verdict = self._plans.get(plan_key)
            if verdict is None:
                verdict = vectorize.independent(self, s, shape, start, count, mask) \
                    if count > 1 else (False, False)
                # keep the arrays of the key alive: their ids stay theirs
                self._plans[plan_key] = verdict = (
                    *verdict, [self.env.get(id(v)) for v in shape.key_vars])
            if verdict[0]:
                self._run_at_once(s, start, count, mask, nest=verdict[1])
            elif count > 1 and accumulators is not None and \
                    fold.run(self, s, start, count, mask, accumulators):
                pass  # a sum (or a chain of sets and sums) per thread, folded in order
            else:
                for v in range(start, start + count):
                    self._iteration(s, v, ext, mask)

    @staticmethod
    def _value_key(value: Any) -> Any:
        if isinstance(value, np.ndarray) and value.ndim:
            return ("array", id(value))
        return ("value", None if value is None else repr(value))

    def _run_at_once(self, s: S.For, lo: int, count: int, mask: np.ndarray | None,
                     nest: bool) -> None:
        """Iterations ``lo .. lo + count - 1`` of ``s`` as extra lanes of the same threads
        (``_lane_map`` gives each lane's thread); with ``nest`` the loops inside too."""
        n = self.n_lanes
        if id(s) not in self._free:
            self._free[id(s)] = vectorize.free_vars(s)
        saved: dict[int, Any] = {}
        for var in self._free[id(s)]:  # per-thread values the body reads: one per lane
            value = self.env.get(id(var))
            if isinstance(value, np.ndarray) and value.ndim == 2 and value.shape[0] == n:
                saved[id(var)] = value
        for key, value in saved.items():
            self.env[key] = self._repeated(value, count)
        old_map, old_approved = self._lane_map, self._approved
        self._lane_map = self._repeated(old_map if old_map is not None else None, count, n)
        if nest:
            if id(s) not in self._inner:
                self._inner[id(s)] = vectorize.inner_loops(s)
            self._approved = old_approved | self._inner[id(s)]
        self.n_lanes = n * count
        self.env[id(s.loop_var)] = self._tiled(lo, count, n)
        if mask is not None and mask.shape[0] == n:
            mask = self._repeated(mask, count)
        extent = s.extent.value if isinstance(s.extent, E.IntImm) else lo + count
        self._loops.append((s, lo, count, extent))
        try:
            self._stmt(s.body, mask)
        finally:
            self._loops.pop()
            self.n_lanes = n
            self._lane_map, self._approved = old_map, old_approved
            self.env.update(saved)

    def _repeated(self, value: np.ndarray | None, count: int, n: int = 0) -> np.ndarray:
        """``value`` with each row ``count`` times (``arange(n)`` for None), kept for the
        kernel: a loop run at once over and over repeats the same arrays."""
        key = ("repeat", id(value), count, n)
        hit = self._arrays.get(key)
        if hit is None or hit[0] is not value:
            out = np.repeat(value if value is not None else np.arange(n), count, axis=0)
            hit = self._arrays[key] = (value, out)
        return hit[1]

    def _tiled(self, lo: int, count: int, n: int) -> np.ndarray:
        """``lo .. lo + count - 1`` for each of ``n`` lanes, as a column."""
        key = ("tile", lo, count, n)
        hit = self._arrays.get(key)
        if hit is None:
            column = np.tile(np.arange(lo, lo + count, dtype=np.int64), n).reshape(-1, 1)
            hit = self._arrays[key] = (None, column)
        return hit[1]

    def real_lane(self, lane: Any) -> Any:
        """The thread (lane of :attr:`lanes`) of a lane of the running step."""
        return lane if self._lane_map is None else self._lane_map[lane]

    def _position(self) -> str:
        """Where the run is: the kernel, the statement's line, the loops' iterations."""
        if self._running_kernel is None:
            return "before the first kernel"
        line, _ = stmt_line(self.func, self.stmt)
        where = f"kernel {self.kernel.name}, line {line}"
        for loop, value, count, total in self._loops:
            name = loop.loop_var.name
            if count == 1:
                where += f", iteration {value} of loop {name} ({total} in all)"
            else:
                where += (f", iterations {value} to {value + count - 1} of loop {name} "
                          f"({total} in all, run at once)")
        return where

    def _barrier_inside(self, s: S.For) -> bool:
        key = id(s)
        if key not in self._has_barrier:
            found = False

            def visit(n: object) -> None:
                nonlocal found
                found = found or (isinstance(n, S.Evaluate) and is_barrier(n))

            post_order_visit(s.body, visit)
            self._has_barrier[key] = found
        return self._has_barrier[key]

    def _barrier(self, s: S.Stmt, mask: np.ndarray | None) -> None:
        if mask is not None and not mask.all():
            lanes = self.lanes
            per_block = mask.reshape(lanes.n_blocks, lanes.threads_per_block)
            partial = per_block.any(axis=1) & ~per_block.all(axis=1)
            if partial.any():
                b = int(np.nonzero(partial)[0][0])
                row = per_block[b]
                waiting = b * lanes.threads_per_block + int(np.nonzero(row)[0][0])
                skipping = b * lanes.threads_per_block + int(np.nonzero(~row)[0][0])
                raise BarrierDivergenceError(self._barrier_message(s, waiting, skipping))
        self.epoch += 1
        for o in self.observers:
            o.barrier(self, s)

    def _barrier_message(self, s: S.Stmt, waiting: int, skipping: int) -> str:
        k = self.kernel
        line, text = stmt_line(self.func, s)
        return (
            f"kernel {k.name}: __syncthreads() at line {line} is reached by "
            f"{self.lanes.describe(waiting)} but not by {self.lanes.describe(skipping)}; "
            "on a GPU the threads that arrive wait forever for the others. Every thread of a "
            "block must reach each barrier: move the guard (the `if` around it) inside the "
            "stage, or make the loop bounds the same for every thread.\n" + text
        )


def _mask_key(mask: np.ndarray | None) -> Any:
    if mask is None:
        return None
    return (mask.shape, np.packbits(mask).tobytes())


def gpu_program(obj: Any) -> S.PrimFunc:
    """The GPU program (kernel launches) of a cuda/cuda-sim Module, or of a PrimFunc that
    already has them (after the GPU passes)."""
    func = getattr(obj, "func", obj)
    if isinstance(func, S.PrimFunc):
        found = []

        def visit(n: object) -> None:
            if isinstance(n, S.KernelLaunch):
                found.append(n)

        from mlc.tir.functor import post_order_visit

        post_order_visit(func.body, visit)
        if found or isinstance(getattr(obj, "kernels", None), tuple):
            return func  # a GPU module, maybe with no kernel (every array empty)
    raise ArgumentError(
        f"expected a module built with target='cuda-sim' or 'cuda' (or a PrimFunc after the "
        f"GPU passes), got {type(obj).__name__}; build it with "
        "f = mlc.build(sch.mod, target='cuda-sim')"
    )

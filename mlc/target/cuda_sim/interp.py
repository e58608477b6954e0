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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlc.errors import (
    ArgumentError,
    BarrierDivergenceError,
    CodegenError,
    GPUIndexError,
    InterpreterError,
)
from mlc.target.gpu.split_host_device import BLOCK_AXES, THREAD_AXES, is_barrier
from mlc.tir import dtype as dt
from mlc.tir import expr as E
from mlc.tir import intrin
from mlc.tir import stmt as S
from mlc.tir.functor import post_order_visit
from mlc.tir.printer import to_str

WARP_SIZE = 32


def np_dtype(dtype: str) -> np.dtype:
    e = dt.element(dtype)
    return np.dtype("bool" if e == "bool" else e)


@dataclass
class Lanes:
    """The threads an interpreter runs at once: one lane per (sampled block, thread)."""

    block_ids: np.ndarray      # (L,) linear block index in the whole grid
    block_slot: np.ndarray     # (L,) index of the lane's block among the sampled blocks
    thread_ids: np.ndarray     # (L,) linear thread index in its block (x fastest)
    axis: dict[str, np.ndarray]  # blockIdx.x, threadIdx.y, ... -> (L,) values
    n_blocks: int              # sampled blocks
    threads_per_block: int

    def describe(self, lane: int) -> str:
        """``block (0, 1), thread (3, 2)``: the lane's blockIdx and threadIdx as (x, y[, z])."""
        b = tuple(int(self.axis[a][lane]) for a in BLOCK_AXES if a in self.axis)
        t = tuple(int(self.axis[a][lane]) for a in THREAD_AXES if a in self.axis)
        return f"blockIdx {_tup(b)}, threadIdx {_tup(t)}"

    @property
    def warp_ids(self) -> np.ndarray:
        """A number per (block, warp) pair: the lanes of one warp share it."""
        warps_per_block = -(-self.threads_per_block // WARP_SIZE)
        return self.block_slot * warps_per_block + self.thread_ids // WARP_SIZE


def _tup(t: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, t)) + ")" if t else "()"


@dataclass
class Access:
    """One statement's access of one buffer by the active lanes (flat element indices)."""

    kernel: S.KernelLaunch
    stmt: S.Stmt
    buffer: S.Buffer
    scope: str                 # "global", "shared" or "local"
    lanes: np.ndarray          # (K,) lane of each access
    elems: np.ndarray          # (K,) flat element index in the buffer
    is_write: bool
    epoch: int                 # barriers passed since the kernel began
    values: np.ndarray | None = None  # (K,) what a write stores (the buffer still holds the old)
    weight: float = 1.0        # iterations this one stands for (``loops=``: sampled loops)


class Observer:
    """Told about every kernel, access, barrier and floating-point operation."""

    def begin_kernel(self, interp: Interpreter, kernel: S.KernelLaunch) -> None:
        pass

    def access(self, interp: Interpreter, a: Access) -> None:
        pass

    def barrier(self, interp: Interpreter, stmt: S.Stmt) -> None:
        pass

    def flops(self, count: float) -> None:
        pass

    def end_kernel(self, interp: Interpreter, kernel: S.KernelLaunch) -> None:
        pass


def stmt_line(func: S.PrimFunc, stmt: S.Stmt) -> tuple[int, str]:
    """The 1-based line of ``stmt`` in the printed program, and the program with that line
    marked ``# <-- here``."""
    text = to_str(func, mark={stmt: "here"})
    for number, line in enumerate(text.splitlines(), 1):
        if line.rstrip().endswith("# <-- here"):
            return number, text
    return 0, text


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


def pick_blocks(n: int, limit: int | None) -> np.ndarray:
    """``limit`` of the ``n`` blocks, spread evenly, the first and the last included."""
    if limit is None or n <= limit:
        return np.arange(n)
    return np.unique(np.linspace(0, n - 1, limit).round().astype(np.int64))


class _Stop(Exception):
    pass


class Interpreter:
    """Runs the kernels of a GPU program (a PrimFunc whose body launches kernels) on numpy
    arrays, all threads of the chosen blocks as lanes, telling ``observers`` everything."""

    def __init__(self, func: S.PrimFunc, observers: Sequence[Observer] = (),
                 blocks: int | None = None, loops: int | None = None) -> None:
        self.func = func
        self.observers = list(observers)
        self.block_limit = blocks
        # ``loops=m``: of a serial loop with a barrier in its body (the k loop of a tiled
        # kernel: the same barrier intervals over and over), run m iterations spread over its
        # range; what happens there counts for the iterations skipped (``weight``). For
        # counting only: the results are then wrong.
        self.loop_limit = loops
        self.weight = 1.0
        self._has_barrier: dict[int, bool] = {}
        self._running_kernel: S.KernelLaunch | None = None
        self._running_lanes: Lanes | None = None
        self.epoch = 0
        self.stmt: S.Stmt = func.body
        self._count_flops = any(type(o).flops is not Observer.flops for o in self.observers)

    @property
    def kernel(self) -> S.KernelLaunch:
        """The kernel being run (observers read it during a run)."""
        if self._running_kernel is None:
            raise RuntimeError("no kernel is running")  # pragma: no cover - internal misuse
        return self._running_kernel

    @property
    def lanes(self) -> Lanes:
        """The simulated threads of the kernel being run, one numpy lane each."""
        if self._running_lanes is None:
            raise RuntimeError("no kernel is running")  # pragma: no cover - internal misuse
        return self._running_lanes

    # -- entry ----------------------------------------------------------------------------
    def run(self, *arrays: np.ndarray) -> None:
        func = self.func
        if len(arrays) != len(func.params):
            raise ArgumentError(
                f"{func.name} takes {len(func.params)} arrays "
                f"({', '.join(p.name for p in func.params)}), got {len(arrays)}"
            )
        self.env: dict[int, Any] = {}
        self.mem: dict[int, np.ndarray] = {}
        self.buffers: dict[int, S.Buffer] = {}
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
        chosen = pick_blocks(n_blocks, self.block_limit)
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
        if isinstance(s, S.BufferStore):
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
            for v in values:
                self.env[var] = np.int64(v)
                self._stmt(s.body, mask)
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

    # -- memory -------------------------------------------------------------------------------
    def _flat(self, buf: S.Buffer, indices: tuple[E.PrimExpr, ...],
              mask: np.ndarray | None) -> Any:
        if len(indices) == 1:
            return self._eval(indices[0], mask)
        strides: list[Any] = []
        if buf.strides:
            strides = [self._eval(st, mask) for st in buf.strides]
        else:
            acc: Any = 1
            for d in reversed(buf.shape):
                strides.insert(0, acc)
                acc = acc * self._eval(d, mask)
        flat: Any = 0
        for i, st in zip(indices, strides):
            flat = flat + self._eval(i, mask) * st
        return flat

    def _where(self, buf: S.Buffer, idx: Any, mask: np.ndarray | None,
               is_write: bool) -> tuple[np.ndarray, np.ndarray, tuple[int, ...]]:
        """The active lanes and their flat element indices, checked against the buffer."""
        idx = np.asarray(idx, np.int64)
        L = self.n_lanes
        shape = np.broadcast_shapes(idx.shape if idx.ndim == 2 else (1, 1), (L, 1))
        if mask is not None:
            shape = np.broadcast_shapes(shape, mask.shape)
        full = np.broadcast_to(idx.reshape(idx.shape if idx.ndim == 2 else (1, 1)), shape)
        if mask is None:
            lanes = np.repeat(np.arange(L), shape[1])
            elems = full.reshape(-1)
        else:
            m = np.broadcast_to(mask, shape)
            rows, _ = np.nonzero(m)
            lanes = rows
            elems = full[m]
        key = id(buf.data)
        if key not in self.mem:
            raise InterpreterError(f"the buffer {buf.name} is not allocated here")
        size = self.mem[key].shape[-1]
        bad = (elems < 0) | (elems >= size)
        if bad.any():
            from mlc.target.cuda_sim.checks import out_of_range

            j = int(np.nonzero(bad)[0][0])
            raise out_of_range(self, buf, int(elems[j]), size, int(lanes[j]), is_write)
        return lanes, elems, shape

    def _notify(self, buf: S.Buffer, lanes: np.ndarray, elems: np.ndarray,
                is_write: bool, values: np.ndarray | None = None) -> None:
        if not self.observers:
            return
        a = Access(self.kernel, self.stmt, buf, _scope(buf), lanes, elems, is_write, self.epoch,
                   values, self.weight)
        for o in self.observers:
            o.access(self, a)

    def _row(self, buf: S.Buffer, lanes: np.ndarray) -> np.ndarray | None:
        scope = _scope(buf)
        if scope == "shared":
            return self.lanes.block_slot[lanes]
        if scope == "local":
            return lanes
        return None

    def _load(self, buf: S.Buffer, indices: tuple[E.PrimExpr, ...],
              mask: np.ndarray | None) -> Any:
        idx = self._flat(buf, indices, mask)
        lanes, elems, shape = self._where(buf, idx, mask, False)
        self._notify(buf, lanes, elems, False)
        arr = self.mem[id(buf.data)]
        row = self._row(buf, lanes)
        got = arr[elems] if row is None else arr[row, elems]
        if mask is None:
            return got.reshape(shape)
        out = np.zeros(shape, arr.dtype)
        out[np.broadcast_to(mask, shape)] = got
        return out

    def _store(self, buf: S.Buffer, indices: tuple[E.PrimExpr, ...], value: Any,
               mask: np.ndarray | None) -> None:
        idx = self._flat(buf, indices, mask)
        lanes, elems, shape = self._where(buf, idx, mask, True)
        arr = self.mem[id(buf.data)]
        v = np.broadcast_to(np.asarray(value), shape)
        v = v.reshape(-1) if mask is None else v[np.broadcast_to(mask, shape)]
        v = v.astype(arr.dtype, copy=False)
        self._notify(buf, lanes, elems, True, v)
        row = self._row(buf, lanes)
        if row is None:
            arr[elems] = v
        else:
            arr[row, elems] = v

    # -- expressions --------------------------------------------------------------------------
    def _eval(self, e: E.PrimExpr, mask: np.ndarray | None) -> Any:
        method = getattr(self, "_e_" + type(e).__name__, None)
        if method is None:
            raise CodegenError(f"the GPU interpreter cannot evaluate a {type(e).__name__}: {e}")
        return method(e, mask)

    def _e_Var(self, e: E.Var, mask: Any) -> Any:
        try:
            return self.env[id(e)]
        except KeyError:
            raise InterpreterError(f"the variable {e.name} has no value here") from None

    _e_SizeVar = _e_Var

    def _e_IntImm(self, e: E.IntImm, mask: Any) -> Any:
        return np.bool_(e.value) if e.dtype == "bool" else np.int64(e.value)

    def _e_FloatImm(self, e: E.FloatImm, mask: Any) -> Any:
        return np_dtype(e.dtype).type(e.value)

    def _e_Cast(self, e: E.Cast, mask: Any) -> Any:
        v = self._eval(e.value, mask)
        target = np_dtype(e.dtype)
        if target.kind in "iu":
            target = np.dtype(np.int64) if target.itemsize <= 8 else target
        with np.errstate(all="ignore"):
            return np.asarray(v).astype(target)[()] if np.ndim(v) == 0 else v.astype(target)

    def _count(self, e: E.PrimExpr, mask: Any, result: Any) -> None:
        if self._count_flops and dt.is_float(e.dtype):
            n = int(np.size(result)) if mask is None else int(
                np.broadcast_to(mask, np.broadcast_shapes(np.shape(result), mask.shape)).sum())
            if np.ndim(result) == 0:
                n = self.n_lanes if mask is None else int(mask.sum())
            for o in self.observers:
                o.flops(n * self.weight if self.weight != 1.0 else n)

    def _bin(self, e: E.BinaryOp, mask: Any, fn: Any) -> Any:
        a = self._eval(e.a, mask)
        b = self._eval(e.b, mask)
        with np.errstate(all="ignore"):
            r = fn(a, b)
        self._count(e, mask, r)
        return r

    def _e_Add(self, e: E.Add, mask: Any) -> Any:
        return self._bin(e, mask, np.add)

    def _e_Sub(self, e: E.Sub, mask: Any) -> Any:
        return self._bin(e, mask, np.subtract)

    def _e_Mul(self, e: E.Mul, mask: Any) -> Any:
        return self._bin(e, mask, np.multiply)

    def _e_Div(self, e: E.Div, mask: Any) -> Any:
        if dt.is_float(e.dtype):
            return self._bin(e, mask, np.divide)
        return self._bin(e, mask, _tdiv)

    def _e_Mod(self, e: E.Mod, mask: Any) -> Any:
        if dt.is_float(e.dtype):
            return self._bin(e, mask, np.fmod)
        return self._bin(e, mask, _tmod)

    def _e_FloorDiv(self, e: E.FloorDiv, mask: Any) -> Any:
        if dt.is_float(e.dtype):
            return self._bin(e, mask, lambda a, b: np.floor(a / b))
        return self._bin(e, mask, lambda a, b: np.floor_divide(a, np.where(b == 0, 1, b)))

    def _e_FloorMod(self, e: E.FloorMod, mask: Any) -> Any:
        return self._bin(e, mask, lambda a, b: np.mod(a, np.where(b == 0, 1, b)))

    def _e_Min(self, e: E.Min, mask: Any) -> Any:
        return self._bin(e, mask, np.minimum)

    def _e_Max(self, e: E.Max, mask: Any) -> Any:
        return self._bin(e, mask, np.maximum)

    def _e_EQ(self, e: E.EQ, mask: Any) -> Any:
        return self._bin(e, mask, np.equal)

    def _e_NE(self, e: E.NE, mask: Any) -> Any:
        return self._bin(e, mask, np.not_equal)

    def _e_LT(self, e: E.LT, mask: Any) -> Any:
        return self._bin(e, mask, np.less)

    def _e_LE(self, e: E.LE, mask: Any) -> Any:
        return self._bin(e, mask, np.less_equal)

    def _e_GT(self, e: E.GT, mask: Any) -> Any:
        return self._bin(e, mask, np.greater)

    def _e_GE(self, e: E.GE, mask: Any) -> Any:
        return self._bin(e, mask, np.greater_equal)

    def _e_And(self, e: E.And, mask: Any) -> Any:
        return self._bin(e, mask, np.logical_and)

    def _e_Or(self, e: E.Or, mask: Any) -> Any:
        return self._bin(e, mask, np.logical_or)

    def _e_Not(self, e: E.Not, mask: Any) -> Any:
        return np.logical_not(self._eval(e.a, mask))

    def _e_Select(self, e: E.Select, mask: Any) -> Any:
        cond = self._eval(e.condition, mask)
        if np.ndim(cond) == 0:
            return self._eval(e.true_value if bool(cond) else e.false_value, mask)
        cond = np.asarray(cond, bool)
        m_true = cond if mask is None else mask & cond
        m_false = ~cond if mask is None else mask & ~cond
        t = self._eval(e.true_value, m_true) if m_true.any() else np.zeros((), np.int64)
        f = self._eval(e.false_value, m_false) if m_false.any() else np.zeros((), np.int64)
        return np.where(cond, t, f).astype(np_dtype(e.dtype) if dt.is_float(e.dtype)
                                           else np.result_type(t, f))

    def _e_Let(self, e: E.Let, mask: Any) -> Any:
        old = self.env.get(id(e.var))
        self.env[id(e.var)] = self._eval(e.value, mask)
        try:
            return self._eval(e.body, mask)
        finally:
            if old is None:
                self.env.pop(id(e.var), None)
            else:
                self.env[id(e.var)] = old

    def _e_StringImm(self, e: E.StringImm, mask: Any) -> Any:
        return e.value

    def _e_Call(self, e: E.Call, mask: Any) -> Any:
        if e.op == "check_index":
            return self._check_index(e, mask)
        fn = intrin.lookup(e.op)
        if fn is None:
            raise CodegenError(f"the GPU interpreter does not know the intrinsic {e.op!r}")
        args = [self._eval(a, mask) for a in e.args]
        with np.errstate(all="ignore"):
            r = fn.numpy(*args)
        self._count(e, mask, r)
        r = np.asarray(r)
        if dt.is_float(e.dtype):
            r = r.astype(np_dtype(e.dtype))
        return r[()] if r.ndim == 0 else r

    def _check_index(self, e: E.Call, mask: Any) -> Any:
        i = self._eval(e.args[0], mask)
        n = self._eval(e.args[1], mask)
        bad = np.broadcast_to((np.asarray(i) < 0) | (np.asarray(i) >= n), (self.n_lanes, 1))
        if mask is not None:
            bad = bad & mask
        if bad.any():
            lane = int(np.nonzero(bad)[0][0])
            value = int(np.broadcast_to(np.asarray(i), (self.n_lanes, 1))[lane, 0])
            line, text = stmt_line(self.func, self.stmt)
            raise GPUIndexError(
                f"kernel {self.kernel.name}: {self.lanes.describe(lane)} indexes "
                f"{self._eval(e.args[2], mask)} with {value} at line {line}: out of range. "
                "Check the data used as an index.\n" + text
            )
        return i

    def _e_Ramp(self, e: E.Ramp, mask: Any) -> Any:
        base = np.asarray(self._eval(e.base, mask), np.int64)
        stride = np.asarray(self._eval(e.stride, mask), np.int64)
        return base.reshape(base.shape if base.ndim == 2 else (1, 1)) + stride.reshape(
            stride.shape if stride.ndim == 2 else (1, 1)) * np.arange(e.lanes)

    def _e_Broadcast(self, e: E.Broadcast, mask: Any) -> Any:
        v: Any = np.asarray(self._eval(e.value, mask))
        v = v.reshape(v.shape if v.ndim == 2 else (1, 1))
        return np.broadcast_to(v, (v.shape[0], e.lanes))

    def _e_BufferLoad(self, e: E.BufferLoad, mask: Any) -> Any:
        return self._load(e.buffer, e.indices, mask)


def _scope(buf: S.Buffer) -> str:
    if buf.scope == "shared":
        return "shared"
    if buf.scope.startswith("local"):
        return "local"
    return "global"


def _tdiv(a: Any, b: Any) -> Any:
    b = np.where(b == 0, 1, b)
    q = np.floor_divide(np.abs(a), np.abs(b))
    return np.where((a < 0) != (b < 0), -q, q)


def _tmod(a: Any, b: Any) -> Any:
    return a - _tdiv(a, b) * np.where(b == 0, 1, b)


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
        if found:
            return func
    raise ArgumentError(
        f"expected a module built with target='cuda-sim' or 'cuda' (or a PrimFunc after the "
        f"GPU passes), got {type(obj).__name__}; build it with "
        "f = mlc.build(sch.mod, target='cuda-sim')"
    )

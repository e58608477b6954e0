"""Memory access and expression evaluation for the GPU interpreter, all lanes at once: loads and
stores with bounds checks that tell observers every access, and every IR expression as a numpy
array with one entry per lane (a mixin of :class:`~mlc.target.cuda_sim.interp.Interpreter`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import numpy as np

from mlc.errors import (
    CodegenError,
    GPUIndexError,
    IntegerDivisionError,
    InterpreterError,
    ShuffleDivergenceError,
)
from mlc.target.cuda_sim.lanes import WARP_SIZE, Lanes, np_dtype
from mlc.target.cuda_sim.observer import Access, Observer, stmt_line
from mlc.tir import dtype as dt
from mlc.tir import expr as E
from mlc.tir import intrin
from mlc.tir import stmt as S
from mlc.tir.float_int import float_array_to_int

if TYPE_CHECKING:
    from mlc.target.cuda_sim.interp import Interpreter

SHUFFLE = "tvm_warp_shuffle_down"


class _Evaluator:
    """Memory access and expression evaluation of the
    :class:`~mlc.target.cuda_sim.interp.Interpreter` (a mixin: the interpreter sets these
    attributes when it runs a kernel)."""

    func: S.PrimFunc
    observers: list[Observer]
    weight: float
    epoch: int
    stmt: S.Stmt
    env: dict[int, Any]
    mem: dict[int, np.ndarray]
    n_lanes: int
    _count_flops: bool
    _running_kernel: S.KernelLaunch | None
    _running_lanes: Lanes | None
    _lane_map: np.ndarray | None

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
        if mask is None and shape[1] == 1 and self._lane_map is not None:
            lanes = self._lane_map  # iterations run as lanes: the thread of each
            elems = full.reshape(-1)
        else:
            if mask is None:
                lanes = np.repeat(np.arange(L), shape[1])
                elems = full.reshape(-1)
            else:
                m = np.broadcast_to(mask, shape)
                rows, _ = np.nonzero(m)
                lanes = rows
                elems = full[m]
            if self._lane_map is not None:  # iterations run as lanes: the thread of each
                lanes = self._lane_map[lanes]
        key = id(buf.data)
        if key not in self.mem:
            raise InterpreterError(f"the buffer {buf.name} is not allocated here")
        size = self.mem[key].shape[-1]
        bad = (elems < 0) | (elems >= size)
        if bad.any():
            from mlc.target.cuda_sim.checks import out_of_range

            j = int(np.nonzero(bad)[0][0])
            raise out_of_range(cast("Interpreter", self), buf, int(elems[j]), size, int(lanes[j]),
                               is_write)
        return lanes, elems, shape

    def _notify(self, buf: S.Buffer, lanes: np.ndarray, elems: np.ndarray,
                is_write: bool, values: np.ndarray | None = None) -> None:
        if not self.observers:
            return
        a = Access(self.kernel, self.stmt, buf, _scope(buf), lanes, elems, is_write, self.epoch,
                   values, self.weight)
        for o in self.observers:
            o.access(cast("Interpreter", self), a)

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
        if e.dtype == "bool":
            return np.bool_(e.value)
        # integers are int64 here: a uint64 past 2**63 wraps to its two's complement (the
        # same bits; a store to a uint64 buffer gives the value back)
        value = e.value - (1 << 64) if e.value >= 1 << 63 else e.value
        return np.int64(value)

    def _e_FloatImm(self, e: E.FloatImm, mask: Any) -> Any:
        return np_dtype(e.dtype).type(e.value)

    def _e_Cast(self, e: E.Cast, mask: Any) -> Any:
        v = self._eval(e.value, mask)
        target = np_dtype(e.dtype)
        if target.kind in "iu" and dt.is_float(e.value.dtype):  # what the GPU's cvt.rzi does
            return np.asarray(float_array_to_int(v, e.dtype)).astype(np.int64)[()]
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

    def _int_division(self, e: E.BinaryOp, mask: Any, fn: Any) -> Any:
        """An integer division or modulo: a divisor 0 (or the smallest integer divided by
        -1) in a thread that runs it is an IntegerDivisionError, as the compiled function
        raises; the other threads divide by 1."""
        a = self._eval(e.a, mask)
        b = self._eval(e.b, mask)
        smallest = -(1 << (dt.bits(e.dtype) - 1)) if dt.is_int(e.dtype) else None
        bad = np.asarray(b == 0)
        if smallest is not None:
            bad = bad | ((np.asarray(a) == smallest) & (np.asarray(b) == -1))
        bad = np.broadcast_to(bad, np.broadcast_shapes(bad.shape, (self.n_lanes, 1)))
        if mask is not None:
            bad = bad & np.broadcast_to(mask, bad.shape)
        if bad.any():
            row = int(np.nonzero(bad)[0][0])
            lane = row if self._lane_map is None else int(self._lane_map[row])
            value = int(np.broadcast_to(np.asarray(b), bad.shape)[np.nonzero(bad)][0])
            line, text = stmt_line(self.func, self.stmt)
            raise IntegerDivisionError(
                f"kernel {self.kernel.name}: {self.lanes.describe(lane)} computes {e} with "
                f"divisor {value} at line {line}: division by zero, or the smallest integer "
                "divided by -1, has no integer result. Guard the divisor "
                "(te.if_then_else(b != 0, a // b, 0)) or use floats.\n" + text
            )
        b = np.where(np.asarray(b) == 0, 1, b)
        with np.errstate(all="ignore"):
            r = fn(a, b)
        self._count(e, mask, r)
        return r

    def _e_Div(self, e: E.Div, mask: Any) -> Any:
        if dt.is_float(e.dtype):
            return self._bin(e, mask, np.divide)
        return self._int_division(e, mask, _tdiv)

    def _e_Mod(self, e: E.Mod, mask: Any) -> Any:
        if dt.is_float(e.dtype):
            return self._bin(e, mask, np.fmod)
        return self._int_division(e, mask, _tmod)

    def _e_FloorDiv(self, e: E.FloorDiv, mask: Any) -> Any:
        if dt.is_float(e.dtype):
            return self._bin(e, mask, lambda a, b: np.floor(a / b))
        return self._int_division(e, mask, np.floor_divide)

    def _e_FloorMod(self, e: E.FloorMod, mask: Any) -> Any:
        if dt.is_float(e.dtype):
            return self._bin(e, mask, lambda a, b: np.mod(a, np.where(b == 0, 1, b)))
        return self._int_division(e, mask, np.mod)

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
        if e.op == SHUFFLE:
            return self._shuffle(e, mask)
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

    def _shuffle(self, e: E.Call, mask: Any) -> Any:
        """``tvm_warp_shuffle_down(lanes, value, delta, width)`` as a warp runs it: every
        lane that reaches it gets, at once, the ``value`` of the lane ``delta`` places down
        in its warp; its own where that lane is past its group of ``width`` lanes, past the
        block or does not reach the shuffle. Misuse is an error
        (:class:`~mlc.errors.ShuffleDivergenceError`): a lane the mask names that does not
        reach the shuffle, lanes of a warp passing different masks, a lane missing from its
        own mask or reading a lane its mask does not name."""
        n = self.n_lanes
        lanes = self.lanes
        active = np.ones(n, bool) if mask is None else np.broadcast_to(mask, (n, 1))[:, 0]

        def per_lane(x: Any) -> np.ndarray:
            return np.broadcast_to(np.asarray(x), (n, 1))[:, 0]

        names_v, value_v, delta_v, width_v = (self._eval(a, mask) for a in e.args)
        names = per_lane(names_v).astype(np.int64) & 0xFFFFFFFF
        value = per_lane(value_v)
        delta = per_lane(delta_v).astype(np.int64)
        width = per_lane(width_v).astype(np.int64)
        tpb = lanes.threads_per_block
        tid = lanes.thread_ids
        lane = tid % WARP_SIZE
        warp = lanes.warp_ids
        me = np.flatnonzero(active)
        w = width[me]
        bad_width = (w < 1) | (w > WARP_SIZE) | (w & (w - 1) != 0)
        if bad_width.any():
            j = int(me[np.argmax(bad_width)])
            self._shuffle_error(f"{lanes.describe(j)} passes the width {int(width[j])}; a "
                                "width is a power of two from 1 to 32")
        arrived = np.zeros(int(warp.max()) + 1, np.int64)
        np.bitwise_or.at(arrived, warp[me], np.left_shift(1, lane[me]))
        count = np.minimum(WARP_SIZE, tpb - (tid - lane))  # lanes of the warp that exist
        exists = (np.left_shift(1, count) - 1).astype(np.int64)
        not_own = (np.right_shift(names[me], lane[me]) & 1) == 0
        if not_own.any():
            j = int(me[np.argmax(not_own)])
            self._shuffle_error(
                f"{lanes.describe(j)} calls it with the mask {int(names[j]):#010x}, which "
                "does not name its own lane; every calling lane must be in its mask")
        named = names[me] & exists[me]
        missing = named & ~arrived[warp[me]]
        if missing.any():
            k = int(np.argmax(missing != 0))
            j = int(me[k])
            miss = int(missing[k])
            other = j - int(lane[j]) + (miss & -miss).bit_length() - 1
            self._shuffle_error(
                f"it is reached by {lanes.describe(j)} but not by {lanes.describe(other)}, "
                f"which its mask {int(names[j]):#010x} names; on a GPU the result is undefined "
                "(the warp may hang). Every lane the mask names must reach the shuffle: keep "
                "it out of conditions that differ within a warp, or name only the lanes that "
                "take part")
        for b in range(WARP_SIZE):  # lanes that shuffle together pass the same mask
            sel = ((np.right_shift(named, b) & 1) == 1) & (lane[me] != b)
            if not sel.any():
                continue
            other = me[sel] - lane[me[sel]] + b
            differ = names[other] != names[me[sel]]
            if differ.any():
                j, o = int(me[sel][np.argmax(differ)]), int(other[np.argmax(differ)])
                self._shuffle_error(
                    f"{lanes.describe(j)} passes the mask {int(names[j]):#010x} and "
                    f"{lanes.describe(o)}, which it names, {int(names[o]):#010x}; the lanes "
                    "of one shuffle must pass the same mask")
        inside = ((lane % width) + delta < width) & (tid + delta < tpb) & active
        src = np.minimum(np.arange(n) + delta, n - 1)
        inside &= active[src]  # a lane that does not take part: the caller keeps its own
        src_lane = np.minimum(lane + delta, WARP_SIZE - 1)
        unnamed = inside & ((np.right_shift(names, src_lane) & 1) == 0)
        if unnamed.any():
            j = int(np.argmax(unnamed))
            self._shuffle_error(
                f"{lanes.describe(j)} reads {lanes.describe(j + int(delta[j]))}, which its "
                f"mask {int(names[j]):#010x} does not name (the value is undefined on a GPU)")
        out = value.copy()
        take = np.flatnonzero(inside)
        out[take] = value[take + delta[take]]
        for observer in self.observers:
            observer.shuffle(cast("Interpreter", self), self.stmt,
                             len(np.unique(warp[me])) * self.weight)
        return out.reshape(n, 1)

    def _shuffle_error(self, what: str) -> None:
        line, text = stmt_line(self.func, self.stmt)
        raise ShuffleDivergenceError(
            f"kernel {self.kernel.name}: the warp shuffle at line {line}: {what}.\n" + text)

    def _check_index(self, e: E.Call, mask: Any) -> Any:
        i = self._eval(e.args[0], mask)
        n = self._eval(e.args[1], mask)
        bad = np.broadcast_to((np.asarray(i) < 0) | (np.asarray(i) >= n), (self.n_lanes, 1))
        if mask is not None:
            bad = bad & mask
        if bad.any():
            row = int(np.nonzero(bad)[0][0])
            lane = row if self._lane_map is None else int(self._lane_map[row])
            value = int(np.broadcast_to(np.asarray(i), (self.n_lanes, 1))[row, 0])
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

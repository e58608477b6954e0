"""``evaluate``: compute tensor expressions with numpy, straight from their definitions.

This is the reference that compiled code is compared against. It does not go through
``create_prim_func`` or any loop program: each ``te.compute`` is evaluated on whole index
grids at once (``i`` is ``np.arange(n)`` shaped to broadcast), a reduction adds its axes as
extra grid dimensions and folds them away, and a scan steps over its first axis::

    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    out = evaluate([B], {A: np.arange(4, dtype="float32")})
    out["B"]        # array([0., 2., 4., 6.], dtype=float32)

Symbolic sizes bind from the input arrays' shapes (``sizes={"n": 4}`` for any that do not
appear in an input). A load outside a tensor raises, except on the side of an
``if_then_else`` that is not taken (padding works as written).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mlc.errors import EvaluationError
from mlc.te.tensor import ComputeOp, PlaceholderOp, ScanOp, Tensor
from mlc.tir import dtype as dt
from mlc.tir import expr as E
from mlc.tir import intrin
from mlc.tir.float_int import float_array_to_int

_np_dtype = dt.to_numpy


def _cast(value: Any, dtype: str) -> np.ndarray:
    a = np.asarray(value)
    if dt.is_bool(dtype):
        return a != 0
    if dt.is_int(dtype) and a.dtype.kind == "f":
        return np.asarray(float_array_to_int(a, dtype))
    return a.astype(_np_dtype(dtype))


class _Evaluator:
    """Evaluates expressions on broadcastable numpy grids. ``env`` maps variables to
    arrays or ints; ``arrays`` maps buffers (by identity) to computed arrays."""

    def __init__(self, arrays: dict[int, np.ndarray], env: dict[Any, Any]) -> None:
        self.arrays = arrays
        self.env = env
        self.mask: Any = None  # where the current value matters (inside a Select)

    def __call__(self, e: E.PrimExpr) -> Any:
        method = getattr(self, "e_" + type(e).__name__, None)
        if method is None:
            raise EvaluationError(f"cannot evaluate {type(e).__name__}: {e}")
        return method(e)

    def e_Var(self, e: E.Var) -> Any:
        if id(e) in self.env:
            return self.env[id(e)]
        if ("name", e.name) in self.env:  # a size given by name in sizes=
            return self.env[("name", e.name)]
        raise EvaluationError(
            f"the size or variable {e.name!r} has no value; pass it as sizes={{'{e.name}': "
            "...} or give an input whose shape contains it"
        )

    e_SizeVar = e_Var

    def e_IntImm(self, e: E.IntImm) -> Any:
        return _cast(e.value, e.dtype)

    def e_FloatImm(self, e: E.FloatImm) -> Any:
        return _cast(e.value, e.dtype)

    def e_Cast(self, e: E.Cast) -> Any:
        return _cast(self(e.value), e.dtype)

    def _bin(self, e: E.BinaryOp, fn: Any) -> Any:
        return _cast(fn(np.asarray(self(e.a)), np.asarray(self(e.b))), e.dtype)

    def e_Add(self, e: E.Add) -> Any:
        return self._bin(e, np.add)

    def e_Sub(self, e: E.Sub) -> Any:
        return self._bin(e, np.subtract)

    def e_Mul(self, e: E.Mul) -> Any:
        return self._bin(e, np.multiply)

    def e_Div(self, e: E.Div) -> Any:
        if dt.is_float(e.dtype):
            return self._bin(e, np.divide)
        return self._bin(e, lambda a, b: np.trunc(np.divide(a, np.where(b == 0, 1, b))))

    def e_Mod(self, e: E.Mod) -> Any:
        return self._bin(e, lambda a, b: np.fmod(a, np.where(b == 0, 1, b)))

    def e_FloorDiv(self, e: E.FloorDiv) -> Any:
        return self._bin(e, lambda a, b: np.floor_divide(a, np.where(b == 0, 1, b)))

    def e_FloorMod(self, e: E.FloorMod) -> Any:
        return self._bin(e, lambda a, b: np.mod(a, np.where(b == 0, 1, b)))

    def e_Min(self, e: E.Min) -> Any:
        return self._bin(e, np.minimum)

    def e_Max(self, e: E.Max) -> Any:
        return self._bin(e, np.maximum)

    def e_EQ(self, e: E.EQ) -> Any:
        return self._bin(e, np.equal)

    def e_NE(self, e: E.NE) -> Any:
        return self._bin(e, np.not_equal)

    def e_LT(self, e: E.LT) -> Any:
        return self._bin(e, np.less)

    def e_LE(self, e: E.LE) -> Any:
        return self._bin(e, np.less_equal)

    def e_GT(self, e: E.GT) -> Any:
        return self._bin(e, np.greater)

    def e_GE(self, e: E.GE) -> Any:
        return self._bin(e, np.greater_equal)

    def e_And(self, e: E.And) -> Any:
        return self._bin(e, np.logical_and)

    def e_Or(self, e: E.Or) -> Any:
        return self._bin(e, np.logical_or)

    def e_Not(self, e: E.Not) -> Any:
        return np.logical_not(self(e.a))

    def e_Select(self, e: E.Select) -> Any:
        cond = np.asarray(self(e.condition), dtype=bool)
        outer = self.mask
        self.mask = cond if outer is None else (outer & cond)
        t = self(e.true_value)
        self.mask = ~cond if outer is None else (outer & ~cond)
        f = self(e.false_value)
        self.mask = outer
        return _cast(np.where(cond, t, f), e.dtype)

    def e_Let(self, e: E.Let) -> Any:
        self.env[id(e.var)] = self(e.value)
        return self(e.body)

    def e_Call(self, e: E.Call) -> Any:
        fn = intrin.lookup(e.op)
        if fn is None:
            raise EvaluationError(f"no numpy reference for the intrinsic {e.op!r}")
        return _cast(fn.numpy(*(np.asarray(self(a)) for a in e.args)), e.dtype)

    def e_BufferLoad(self, e: E.BufferLoad) -> Any:
        arr = self.arrays.get(id(e.buffer))
        if arr is None:
            raise EvaluationError(f"tensor {e.buffer.name!r} has no value yet (missing input?)")
        idx = [np.asarray(self(i)) for i in e.indices]
        shapes = [i.shape for i in idx]
        if self.mask is not None:
            shapes.append(np.shape(self.mask))
        shape = np.broadcast_shapes(*shapes) if shapes else ()
        idx = [np.broadcast_to(i, shape) for i in idx]
        active = None if self.mask is None else np.broadcast_to(self.mask, shape)
        safe = []
        for d, (i, n) in enumerate(zip(idx, arr.shape)):
            bad = (i < 0) | (i >= n)
            if active is not None:
                bad = bad & active
            if np.any(bad):
                where = tuple(np.argwhere(bad)[0])
                raise EvaluationError(
                    f"out-of-bounds read of {e.buffer.name!r} (shape {arr.shape}): index "
                    f"{int(i[where])} in dimension {d}"
                )
            safe.append(np.clip(i, 0, n - 1))
        return arr[tuple(safe)]

    def e_Reduce(self, e: E.Reduce) -> Any:
        raise EvaluationError("a reducer must be the whole body of a te.compute")


def _grid(extents: Sequence[int], mins: Sequence[int]) -> list[np.ndarray]:
    """One index array per dimension, shaped to broadcast against the others."""
    n = len(extents)
    out = []
    for d, (lo, ext) in enumerate(zip(mins, extents)):
        shape = [1] * n
        shape[d] = ext
        out.append(np.arange(lo, lo + ext, dtype=np.int64).reshape(shape))
    return out


def _fold(reducer: E.CommReducer, src: np.ndarray, mask: np.ndarray | None, dtype: str,
          env: dict[Any, Any], arrays: dict[int, np.ndarray]) -> np.ndarray:
    """Reduce the last axis of ``src`` with ``reducer``, one step at a time."""
    ident = np.broadcast_to(_cast(_Evaluator(arrays, env)(reducer.identity), dtype),
                            src.shape[:-1]).copy()
    acc = ident
    for r in range(src.shape[-1]):
        sub = dict(env)
        sub[id(reducer.lhs)] = acc
        sub[id(reducer.rhs)] = src[..., r]
        new = np.broadcast_to(_cast(_Evaluator(arrays, sub)(reducer.result), dtype), acc.shape)
        acc = new if mask is None else np.where(mask[..., r], new, acc)
    return np.asarray(acc)


def _compute(op: ComputeOp, arrays: dict[int, np.ndarray], env: dict[Any, Any],
             fixed: dict[int, int] | None = None) -> np.ndarray:
    """The values of ``op`` on its whole domain (axes in ``fixed`` held at one value)."""
    fixed = fixed or {}
    ev = _Evaluator(arrays, env)
    free_axes = [a for a in op.axis if id(a.var) not in fixed]
    body = op.body[0]
    raxes = list(body.axis) if isinstance(body, E.Reduce) else []
    doms = [(int(ev(a.dom.min)), int(ev(a.dom.extent))) for a in free_axes + raxes]
    grids = _grid([d[1] for d in doms], [d[0] for d in doms])
    local = dict(env)
    for a, g in zip(free_axes + raxes, grids):
        local[id(a.var)] = g
    for k, v in fixed.items():
        local[k] = np.int64(v)
    ev = _Evaluator(arrays, local)
    out_shape = tuple(d[1] for d in doms[: len(free_axes)])
    if not isinstance(body, E.Reduce):
        return np.broadcast_to(_cast(ev(body), op.output(0).dtype), out_shape).copy()
    full = tuple(d[1] for d in doms)
    src = np.broadcast_to(ev(body.source), full)
    cond = np.broadcast_to(np.asarray(ev(body.condition), dtype=bool), full)
    # (-1 cannot be inferred when the output is empty: give the reduced size explicitly)
    reduced = int(np.prod(full[len(out_shape):], dtype=np.int64))
    src = src.reshape(out_shape + (reduced,))
    cond = cond.reshape(out_shape + (reduced,))
    return _fold(body.combiner, src, None if cond.all() else cond, body.dtype, local, arrays)


def _bind_sizes(placeholders: Sequence[Tensor], given: dict[int, np.ndarray],
                sizes: Mapping[Any, int | float] | None, env: dict[Any, Any]) -> None:
    by_name: dict[str, int] = {}
    for k, v in (sizes or {}).items():
        if isinstance(k, E.Var):  # a size, or the value of a scalar parameter (te.var)
            env[id(k)] = _np_dtype(k.dtype).type(v) if not dt.is_int(k.dtype) else int(v)
        elif isinstance(v, (float, np.floating)):  # a float scalar parameter, by name
            env[("name", str(k))] = v
        else:
            by_name[str(k)] = int(v)
            env[("name", str(k))] = int(v)
    for t in placeholders:
        arr = given[id(t)]
        if arr.ndim != t.ndim:
            raise EvaluationError(
                f"input {t.name!r} must have {t.ndim} dimensions (shape {t.shape}), "
                f"got an array of shape {arr.shape}"
            )
        for s, n in zip(t.shape, arr.shape):
            if isinstance(s, E.Var):
                if s.name in by_name:
                    env.setdefault(id(s), by_name[s.name])
                env.setdefault(id(s), n)
    for t in placeholders:
        ev = _Evaluator({}, env)
        want = tuple(int(ev(s)) for s in t.shape)
        if want != given[id(t)].shape:
            raise EvaluationError(
                f"input {t.name!r} should have shape {want} (from the sizes bound so far), "
                f"got {given[id(t)].shape}"
            )


def evaluate(
    tensors: Sequence[Tensor] | Tensor,
    inputs: Mapping[Tensor | str, np.ndarray],
    sizes: Mapping[Any, int | float] | None = None,
) -> dict[str, np.ndarray]:
    """Compute ``tensors`` from ``inputs`` with numpy and return ``{name: array}``.

    ``inputs`` maps each placeholder (the Tensor or its name) to an array; symbolic sizes
    bind from their shapes, or from ``sizes`` (keyed by name or by ``te.var``), which also
    gives the values of scalar parameters (``sizes={bias: 2.5}``). Every tensor computed on
    the way is returned as well, under its name."""
    from mlc.te.prim_func import _topo_order

    outs = [tensors] if isinstance(tensors, Tensor) else list(tensors)
    order = _topo_order(outs)
    placeholders = [t for t in order if isinstance(t.op, PlaceholderOp)]
    given: dict[int, np.ndarray] = {}
    for t in placeholders:
        arr = inputs.get(t) if t in inputs else inputs.get(t.name)  # type: ignore[operator]
        if arr is None:
            raise EvaluationError(f"no input array for placeholder {t.name!r}")
        arr = np.asarray(arr)
        if arr.dtype != _np_dtype(t.dtype):
            raise EvaluationError(f"input {t.name!r} must be {t.dtype}, got {arr.dtype}")
        given[id(t)] = arr
    env: dict[Any, Any] = {}
    _bind_sizes(placeholders, given, sizes, env)
    arrays: dict[int, np.ndarray] = {id(t.buffer): given[id(t)] for t in placeholders}
    results: dict[str, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for t in order:
            op = t.op
            if isinstance(op, ComputeOp):
                arrays[id(t.buffer)] = _compute(op, arrays, env)
            elif isinstance(op, ScanOp):
                arrays[id(t.buffer)] = _scan(op, arrays, env)
            elif not isinstance(op, PlaceholderOp):
                raise EvaluationError(
                    f"{t.name!r} is computed by a {type(op).__name__} (te.extern: a call out "
                    "of the program), which the numpy reference cannot run; build the "
                    "function and compare its outputs with numpy instead"
                )
            if not isinstance(op, PlaceholderOp):
                results[t.name] = arrays[id(t.buffer)]
    return results


def _scan(op: ScanOp, arrays: dict[int, np.ndarray], env: dict[Any, Any]) -> np.ndarray:
    ev = _Evaluator(arrays, env)
    shape = tuple(int(ev(s)) for s in op.output(0).shape)
    state = np.zeros(shape, dtype=_np_dtype(op.output(0).dtype))
    arrays = dict(arrays)
    arrays[id(op.state_placeholder.buffer)] = state
    init_op, upd_op = op.init.op, op.update.op
    assert isinstance(init_op, ComputeOp) and isinstance(upd_op, ComputeOp)
    init = _compute(init_op, arrays, env)
    k = init.shape[0]
    state[:k] = init
    t_var = upd_op.axis[0].var
    body = op.body_ops  # a multi-stage scan's stages between the state and the update
    for b in body:
        rows = tuple(int(ev(x)) for x in b.output(0).shape)
        arrays[id(b.output(0).buffer)] = np.zeros(rows, dtype=_np_dtype(b.output(0).dtype))
    for t in range(k, shape[0]):
        for b in body:
            arrays[id(b.output(0).buffer)][t] = _compute(
                b, arrays, env, fixed={id(b.axis[0].var): t})
        state[t] = _compute(upd_op, arrays, env, fixed={id(t_var): t})
    return state


__all__ = ["evaluate", "EvaluationError"]

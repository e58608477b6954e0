"""What the Python that :mod:`mlc.testing.interpreter` writes calls while it runs: bounds-
checked vector loads and stores, dtype casts that wrap and saturate as compiled code does
(float -> int by :func:`mlc.tir.float_int.float_array_to_int`), C's truncating division,
NaN-propagating min/max, the math intrinsics, and buffers (NaN-filled, so a read of an
element nobody wrote shows in the result). :data:`GLOBALS` is the namespace it runs in.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlc.errors import InterpreterError
from mlc.tir import dtype as dt
from mlc.tir import intrin
from mlc.tir.float_int import float_array_to_int


def _oob(name: str, idx: Any, shape: tuple[int, ...]) -> InterpreterError:
    return InterpreterError(f"out-of-bounds access {name}[{idx}] of a buffer of shape {shape}")


def _raise_oob(arr: np.ndarray, idx: tuple[Any, ...], name: str) -> Any:
    raise _oob(name, idx, arr.shape)


def _vidx(arr: np.ndarray, idx: tuple[Any, ...], mask: Any, name: str) -> tuple[Any, ...]:
    """Vector indices, checked where ``mask`` is true and clamped elsewhere."""
    out = []
    for i, n in zip(idx, arr.shape):
        a = np.asarray(i)
        active = a if mask is None else a[np.broadcast_to(mask, a.shape)] if a.ndim else a
        if np.any(active < 0) or np.any(active >= n):
            raise _oob(name, idx, arr.shape)
        out.append(np.clip(a, 0, n - 1) if mask is not None else a)
    return tuple(out)


def _vld(arr: np.ndarray, idx: tuple[Any, ...], mask: Any, name: str) -> Any:
    return arr[_vidx(arr, idx, mask, name)]


def _vst(arr: np.ndarray, idx: tuple[Any, ...], value: Any, mask: Any, name: str) -> None:
    ix = _vidx(arr, idx, mask, name)
    if mask is None:
        arr[ix] = value
    else:
        m = np.broadcast_to(mask, np.broadcast_shapes(*(np.shape(i) for i in ix)))
        sel = tuple(np.broadcast_to(i, m.shape)[m] for i in ix)
        arr[sel] = np.broadcast_to(value, m.shape)[m]


_INT_RANGE = {"int32": (-(2**31), 2**31), "int64": (-(2**63), 2**63)}
_FLOAT_TYPES = {"float16": np.float16, "float32": np.float32, "float64": np.float64}


def cast(value: Any, dtype: str) -> Any:
    """``value`` as a ``dtype`` value, converted as compiled code converts it."""
    # Fast paths for scalars (index arithmetic casts often); the general path wraps/truncates.
    if isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)):
        rng = _INT_RANGE.get(dtype)
        if rng is not None and rng[0] <= value < rng[1]:
            return int(value)
        ftype = _FLOAT_TYPES.get(dtype)
        if ftype is not None:
            return ftype(value)
    elif isinstance(value, (float, np.floating)) and dtype in _FLOAT_TYPES:
        return _FLOAT_TYPES[dtype](value)
    elem = dt.element(dtype)
    a = np.asarray(value)
    if elem == "bool":
        out = a != 0
    elif dt.is_int(elem) and a.dtype.kind == "f":
        out = np.asarray(float_array_to_int(a, elem))
    else:
        out = a.astype(elem)
    return out if out.ndim else out[()]


def _tdiv(a: Any, b: Any) -> Any:
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        q = abs(int(a)) // abs(int(b))
        return q if (a >= 0) == (b >= 0) else -q
    if np.asarray(a).dtype.kind in "iu":
        return np.trunc(np.divide(a, b)).astype(np.result_type(a, b))
    return a / b


def _tmod(a: Any, b: Any) -> Any:
    if isinstance(a, (int, np.integer)) and isinstance(b, (int, np.integer)):
        return a - b * _tdiv(a, b)
    return np.fmod(a, b)


def _max(a: Any, b: Any) -> Any:
    """``max`` that propagates NaN from either side, as ``np.maximum`` (Python's ``max``
    drops a NaN in second place)."""
    return a if (a > b or a != a) else b


def _min(a: Any, b: Any) -> Any:
    """``min`` that propagates NaN from either side, as ``np.minimum``."""
    return a if (a < b or a != a) else b


def _call(op: str, dtype: str, *args: Any) -> Any:
    fn = intrin.lookup(op)
    if fn is None:
        raise InterpreterError(f"the interpreter does not know the intrinsic {op!r}")
    with np.errstate(all="ignore"):
        return cast(fn.numpy(*args), dtype)


# Intrinsics that only matter on a real machine (synchronisation, prefetch hints).
def _view(base: np.ndarray, shape: tuple[int, ...], strides: tuple[int, ...]) -> np.ndarray:
    """``base`` (a flat array) seen with ``shape`` (and element ``strides`` when given)."""
    flat = base.reshape(-1)
    if strides:
        item = flat.itemsize
        return np.lib.stride_tricks.as_strided(
            flat, shape=shape, strides=tuple(s * item for s in strides)
        )
    n = int(np.prod(shape)) if shape else 1
    if n > flat.size:
        raise InterpreterError(f"a buffer of shape {shape} does not fit in {flat.size} elements")
    return flat[:n].reshape(shape)


def _alloc(shape: tuple[int, ...], strides: tuple[int, ...], dtype: str) -> np.ndarray:
    if strides:
        n = 1 + sum((d - 1) * s for d, s in zip(shape, strides)) if shape else 1
    else:
        n = int(np.prod(shape)) if shape else 1
    # NaN-filled float memory makes a read of an unwritten element visible in the result.
    fill = np.nan if dt.is_float(dtype) else 0
    return np.full(max(n, 1), fill, dtype=dt.element(dtype))


GLOBALS: dict[str, Any] = {
    "np": np,
    "_raise_oob": _raise_oob,
    "_vld": _vld,
    "_vst": _vst,
    "_cast": cast,
    "_tdiv": _tdiv,
    "_tmod": _tmod,
    "_call": _call,
    "_max": _max,
    "_min": _min,
    "_view": _view,
    "_alloc": _alloc,
    "InterpreterError": InterpreterError,
}

"""Converting a float to an integer type, as mlc defines it everywhere.

C and LLVM leave ``(int8_t)300.0f`` undefined (LLVM's ``fptosi`` gives *poison*: the
optimiser may assume it never happens), and numpy's answer depends on the platform and comes
with ``RuntimeWarning: invalid value encountered in cast``. mlc gives it one meaning, the
one CUDA's hardware, Rust and WebAssembly's ``trunc_sat`` use:

- the value is truncated toward zero (``2.7 -> 2``, ``-2.7 -> -2``);
- a value past either end of the type's range becomes that end (``300.0 -> 127`` for
  ``int8``, ``-1.0 -> 0`` for ``uint8``, ``inf -> 2147483647`` for ``int32``);
- NaN becomes 0.

The compiled code (``llvm.fptosi.sat``, helpers in the C and CUDA sources), the constant
folder, the GPU simulator and the reference evaluators all call into this definition, so
a program computes the same numbers wherever it runs.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from mlc.tir import dtype as dt


def int_range(dtype: str) -> tuple[int, int]:
    """The smallest and largest value of an integer ``dtype`` (``bool``: 0 and 1)."""
    e = dt.element(dtype)
    if e == "bool":
        return 0, 1
    bits = dt.bits(e)
    if dt.is_uint(e):
        return 0, 2**bits - 1
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


def float_to_int(value: float, dtype: str) -> int:
    """One float converted to the integer ``dtype`` (see the module docstring)."""
    if math.isnan(value):
        return 0
    lo, hi = int_range(dtype)
    if value <= lo:
        return lo
    if value >= hi:
        return hi
    return int(value)  # int() truncates toward zero


def float_array_to_int(value: Any, dtype: str) -> Any:
    """A numpy float array (or scalar) converted to the integer ``dtype`` element-wise;
    the result has ``dtype``'s numpy type (a 0-d input gives a numpy scalar)."""
    a = np.asarray(value, dtype=np.float64)  # every float16/32/64 value exactly
    lo, hi = int_range(dtype)
    t = np.trunc(np.nan_to_num(a, nan=0.0, posinf=math.inf, neginf=-math.inf))
    # lo and hi as float64 round up for 64-bit types (2**63): compare before converting
    below, above = t <= float(lo), t >= float(hi)
    inside = np.where(below | above, 0.0, t)
    out = inside.astype(np.dtype(dt.element(dtype)))
    out = np.where(below, np.array(lo, out.dtype), out)
    out = np.where(above, np.array(hi, out.dtype), out)
    return out if out.ndim else out[()]

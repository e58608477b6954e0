"""Data types as strings: ``"float32"``, ``"int64"``, ``"bool"``, and vectors ``"float32x8"``.

A dtype is kept as the plain string students already know from numpy. These helpers read
its parts; nothing else in mlc parses dtype strings.
"""

from __future__ import annotations

import functools
import re

import numpy as np

from mlc.errors import MLCTypeError

SCALAR_DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
)

_VECTOR = re.compile(r"^([a-z]+[0-9]*)x([0-9]+)$")

# The helpers below are called for every node of every pass (thousands of times per
# build) with a handful of distinct strings: each answer is computed once.
_cached = functools.lru_cache(maxsize=4096)


@_cached
def split_lanes(dtype: str) -> tuple[str, int]:
    """``"float32x8"`` -> ``("float32", 8)``; ``"float32"`` -> ``("float32", 1)``."""
    m = _VECTOR.match(dtype)
    if m and m.group(1) in SCALAR_DTYPES:
        return m.group(1), int(m.group(2))
    return dtype, 1


def check(dtype: object) -> str:
    """Return ``dtype`` as a canonical string or raise a clear error."""
    if not isinstance(dtype, str):
        # numpy dtypes and Python types are accepted and named the numpy way.
        try:
            import numpy as np

            dtype = str(np.dtype(dtype))  # type: ignore[call-overload]
        except TypeError as err:
            raise MLCTypeError(f"{dtype!r} is not a dtype; use one of {SCALAR_DTYPES}") from err
    assert isinstance(dtype, str)
    scalar, _ = split_lanes(dtype)
    if scalar not in SCALAR_DTYPES:
        raise MLCTypeError(f"unknown dtype {dtype!r}; use one of {', '.join(SCALAR_DTYPES)}")
    return dtype


@_cached
def element(dtype: str) -> str:
    return split_lanes(dtype)[0]


@_cached
def lanes(dtype: str) -> int:
    return split_lanes(dtype)[1]


def with_lanes(dtype: str, n: int) -> str:
    scalar = element(dtype)
    return scalar if n == 1 else f"{scalar}x{n}"


@_cached
def is_float(dtype: str) -> bool:
    return element(dtype).startswith("float")


@_cached
def is_int(dtype: str) -> bool:
    """Signed or unsigned integer (not bool)."""
    e = element(dtype)
    return e.startswith("int") or e.startswith("uint")


@_cached
def is_uint(dtype: str) -> bool:
    return element(dtype).startswith("uint")


@_cached
def is_bool(dtype: str) -> bool:
    return element(dtype) == "bool"


@_cached
def bits(dtype: str) -> int:
    e = element(dtype)
    if e == "bool":
        return 1
    return int(re.sub(r"^[a-z]+", "", e))


def nbytes(dtype: str) -> int:
    """Bytes one element takes in memory (bool is stored as one byte)."""
    return max(1, bits(dtype) // 8) * lanes(dtype)


def promote(a: str, b: str) -> str:
    """The dtype of a binary operation on ``a`` and ``b`` (numpy-like, narrow on purpose)."""
    if a == b:
        return a
    ea, eb = element(a), element(b)
    la, lb = lanes(a), lanes(b)
    n = max(la, lb)
    if is_float(ea) != is_float(eb):
        scalar = ea if is_float(ea) else eb
    elif is_bool(ea) or is_bool(eb):
        scalar = eb if is_bool(ea) else ea
    else:
        scalar = ea if bits(ea) >= bits(eb) else eb
    return with_lanes(scalar, n)


def to_numpy(dtype: str) -> np.dtype:
    """The numpy dtype of one element of ``dtype`` (``"float32x8"`` -> ``float32``): the one
    table every back end, the argument checker and the reference evaluator use."""
    return np.dtype(element(dtype))

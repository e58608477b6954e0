"""mlc dtypes as LLVM types.

In registers a ``bool`` is an ``i1``; in memory it takes one byte (``i8``), as numpy stores it.
A vector dtype ``float32x8`` is the LLVM vector ``<8 x float>``. Pointers to buffers travel as
``i8*`` and are cast to the element type where they are used.
"""

from __future__ import annotations

from llvmlite import ir

from mlc.errors import CodegenError
from mlc.tir import dtype as dt

I1 = ir.IntType(1)
I8 = ir.IntType(8)
I32 = ir.IntType(32)
I64 = ir.IntType(64)
VOID = ir.VoidType()
I8P = I8.as_pointer()

_FLOATS: dict[str, ir.Type] = {
    "float16": ir.HalfType(),
    "float32": ir.FloatType(),
    "float64": ir.DoubleType(),
}


def scalar_type(dtype: str) -> ir.Type:
    """The register type of one element of ``dtype``."""
    e = dt.element(dtype)
    if e == "handle":
        return I8P
    if e == "bool":
        return I1
    if e in _FLOATS:
        return _FLOATS[e]
    if dt.is_int(e):
        return ir.IntType(dt.bits(e))
    raise CodegenError(f"the LLVM backend has no type for dtype {dtype!r}")


def value_type(dtype: str) -> ir.Type:
    """The register type of a (possibly vector) value of ``dtype``."""
    n = dt.lanes(dtype) if dtype != "handle" else 1
    t = scalar_type(dtype)
    return t if n == 1 else ir.VectorType(t, n)


def memory_type(dtype: str) -> ir.Type:
    """How one element of ``dtype`` is stored in a buffer (bool as a byte)."""
    return I8 if dt.element(dtype) == "bool" else scalar_type(dtype)


def with_lanes(t: ir.Type, n: int) -> ir.Type:
    return t if n == 1 else ir.VectorType(t, n)


def is_vector(t: ir.Type) -> bool:
    return isinstance(t, ir.VectorType)


def element_of(t: ir.Type) -> ir.Type:
    return t.element if isinstance(t, ir.VectorType) else t


def lanes_of(t: ir.Type) -> int:
    return t.count if isinstance(t, ir.VectorType) else 1


def mangle(t: ir.Type) -> str:
    """The suffix LLVM intrinsics take for a type: ``f32``, ``v8f32``, ``f64``..."""
    e = element_of(t)
    if isinstance(e, ir.HalfType):
        s = "f16"
    elif isinstance(e, ir.FloatType):
        s = "f32"
    elif isinstance(e, ir.DoubleType):
        s = "f64"
    elif isinstance(e, ir.IntType):
        s = f"i{e.width}"
    else:  # pragma: no cover - only called on numeric types
        raise CodegenError(f"no intrinsic suffix for LLVM type {t}")
    return f"v{t.count}{s}" if isinstance(t, ir.VectorType) else s

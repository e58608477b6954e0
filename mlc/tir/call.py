"""Calls out of the loop IR: packed functions (Python, by name) and C functions (by symbol).

=====================================  ======================================================
``call_packed("f", A, B, 3)``          the function registered as ``"f"``
                                       (``mlc.register_func``); buffers arrive as numpy
                                       arrays, numbers as numbers. Returns int32 (0: success)
``call_pure_extern("float32",          the C function ``expf`` of the process (libm), no side
"expf", x)``                           effects: codegen may reorder or drop it
``call_extern("float32", "f", x)``     the C function ``f``, which may have side effects
=====================================  ======================================================

All three are ``Call`` nodes whose first argument is the name (a ``StringImm``). A buffer
passed to ``call_packed`` becomes ``buffer_arg(A[0, 0], n, m)``: the address of its first
element and its sizes (the element load is never executed; it keeps the buffer visible to the
passes, which rename, flatten and shrink buffers through their loads).
"""

from __future__ import annotations

from typing import Any

from mlc.errors import MLCTypeError
from mlc.tir import dtype as dt
from mlc.tir.expr import BufferLoad, Call, PrimExpr, StringImm, const, convert
from mlc.tir.stmt import Buffer

PACKED = "call_packed"
EXTERN = "call_extern"
PURE_EXTERN = "call_pure_extern"
BUFFER_ARG = "buffer_arg"


def buffer_arg(buf: Buffer) -> Call:
    """``buf`` as an argument of a packed call: its address and its sizes."""
    zero = tuple(const(0, s.dtype if dt.is_int(s.dtype) else "int32") for s in buf.shape)
    return Call("handle", BUFFER_ARG, (BufferLoad(buf, zero), *buf.shape))


def buffer_of(arg: PrimExpr) -> Buffer | None:
    """The buffer a ``buffer_arg`` call passes (None for any other expression)."""
    if isinstance(arg, Call) and arg.op == BUFFER_ARG and isinstance(arg.args[0], BufferLoad):
        return arg.args[0].buffer
    return None


def _as_buffer(x: Any) -> Buffer | None:
    """A buffer, or a te Tensor's buffer (an expression is not a buffer, even a load)."""
    if isinstance(x, Buffer):
        return x
    buf = getattr(x, "buffer", None)
    return buf if isinstance(buf, Buffer) and not isinstance(x, PrimExpr) else None


def _name(name: Any, what: str) -> StringImm:
    if isinstance(name, StringImm):
        return name
    if not isinstance(name, str) or not name:
        raise MLCTypeError(f"{what}: the first argument is the function's name, got {name!r}")
    return StringImm(name)


def _scalar(x: Any, what: str, k: int) -> PrimExpr:
    if isinstance(x, (str, StringImm)):
        raise MLCTypeError(f"{what}: argument {k} is a string {x!r}; pass numbers or buffers")
    e = convert(x)
    if dt.lanes(e.dtype) != 1 or e.dtype == "handle":
        raise MLCTypeError(f"{what}: argument {k} `{e}` is a {e.dtype}; pass scalars or buffers")
    return e


def call_packed(name: str, *args: Any) -> Call:
    """Call the packed function registered as ``name`` (``mlc.register_func``) with buffers
    (``ins[0]`` in a ``te.extern``), integers and floats. As in TVM::

        C = te.extern((n, m), [A, B], lambda ins, outs: tir.call_packed(
            "tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], False, False), name="C")
    """
    what = f"call_packed({name!r})"
    out: list[PrimExpr] = [_name(name, "call_packed")]
    for k, a in enumerate(args, start=1):
        buf = _as_buffer(a)  # a te Tensor passes its buffer
        if buf is not None:
            out.append(buffer_arg(buf))
        else:
            out.append(_scalar(a, what, k))
    return Call("int32", PACKED, tuple(out))


def _extern(op: str, dtype: str, name: str, args: tuple[Any, ...]) -> Call:
    what = f"{op}({dtype!r}, {name!r})"
    dtype = dt.check(dtype)
    vals = []
    for k, a in enumerate(args, start=1):
        if _as_buffer(a) is not None:
            raise MLCTypeError(
                f"{what}: argument {k} is a buffer; a C function takes values here "
                "(pass A[i]), or use call_packed for whole buffers"
            )
        vals.append(_scalar(a, what, k))
    return Call(dtype, op, (_name(name, op), *vals))


def call_pure_extern(dtype: str, func_name: str, *args: Any) -> Call:
    """Call the C function ``func_name`` (e.g. libm's ``"expf"``) returning ``dtype``; it
    has no side effects. ``te.compute(A.shape, lambda i: tir.call_pure_extern("float32",
    "expf", A[i]))``."""
    return _extern(PURE_EXTERN, dtype, func_name, args)


def call_extern(dtype: str, func_name: str, *args: Any) -> Call:
    """Call the C function ``func_name`` returning ``dtype`` (it may have side effects)."""
    return _extern(EXTERN, dtype, func_name, args)

"""Checking the numpy arrays a compiled function is called with, before any native code runs.

A wrong call must never crash the Python process: a too-small array would let the kernel
write past its end. So every call checks, for each parameter buffer, that the argument is a
numpy array of the right dtype and number of dimensions, that its shape matches the buffer's
(constant sizes, and symbolic sizes bound from the arrays: ``n`` in two places must agree),
that it is C-contiguous, and that an array the function writes is writeable. A scalar
parameter (``PrimFunc.scalars``) takes a number that fits its dtype (:class:`Scalar`).

The check on the hot path is lean (it only detects that something is wrong); when it fails,
:meth:`ArgumentChecker.explain` walks the arguments again to say exactly what and where.
"""

from __future__ import annotations

import ctypes
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mlc.errors import ArgumentError, ArgumentTypeError
from mlc.tir import dtype as dt
from mlc.tir.arith import evaluate_known
from mlc.tir.expr import (
    IntImm,
    PrimExpr,
    SizeVar,
    Var,
)
from mlc.tir.float_int import int_range
from mlc.tir.functor import IRVisitor
from mlc.tir.stmt import Buffer, BufferStore, PrimFunc

_CONST, _BIND, _EXPR = 0, 1, 2


def _data_offset() -> int:
    """Where an ndarray object keeps its data pointer, right after the object header.

    ``a.ctypes.data`` costs microseconds (it builds a helper object); reading the pointer
    from the array object itself costs a tenth of that. The offset is checked against
    ``a.ctypes.data`` here, on a fresh array and on a view; 0 means "use a.ctypes.data"."""
    offset = object.__basicsize__
    probe = np.arange(8, dtype=np.int64)
    try:
        for x in (probe, probe[3:], probe[::2]):
            if ctypes.c_void_p.from_address(id(x) + offset).value != x.ctypes.data:
                return 0
    except (ValueError, OverflowError):  # pragma: no cover - unusual Python build
        return 0
    return offset


_OFFSET = _data_offset()
_read_pointer = ctypes.c_void_p.from_address


def written_params(func: PrimFunc) -> set[int]:
    """Positions of the parameters the function stores into (its outputs)."""
    data = {id(p.data): k for k, p in enumerate(func.params)}
    out: set[int] = set()

    class _Stores(IRVisitor):
        def visit_BufferStore(self, op: BufferStore) -> None:
            k = data.get(id(op.buffer.data))
            if k is not None:
                out.add(k)
            self.generic_visit(op)

    _Stores().visit(func.body)
    return out


class ArgumentChecker:
    """Precomputed checks for one PrimFunc's parameters; ``native_args(args)`` -> the values
    to pass to the native function (pointers, then symbolic sizes, then scalars)."""

    def __init__(self, func: PrimFunc) -> None:
        self.func = func
        self.params = func.params
        self.size_vars = func.size_vars
        slot = {id(v): k for k, v in enumerate(self.size_vars)}
        arguments = func.arguments
        self.buffer_positions = [k for k, a in enumerate(arguments) if isinstance(a, Buffer)]
        """Where each parameter buffer is in the call's arguments (scalars may sit between)."""
        self.scalars: list[tuple[int, Var, Scalar]] = [
            (k, a, Scalar(a, func.name)) for k, a in enumerate(arguments) if isinstance(a, Var)
        ]
        """The scalar parameters: (position in the call, variable, its conversion)."""
        self.scalar_args = func.scalar_args
        writes = written_params(func)
        self._specs: list[tuple[np.dtype, int, tuple[tuple[int, int, Any], ...], bool]] = []
        self._exprs: list[tuple[int, int, PrimExpr]] = []  # (param, axis, expr) checked last
        bound: set[int] = set()
        for k, buf in enumerate(self.params):
            dims: list[tuple[int, int, Any]] = []
            for axis, extent in enumerate(buf.shape):
                if isinstance(extent, int):
                    dims.append((axis, _CONST, extent))
                elif isinstance(extent, IntImm):
                    dims.append((axis, _CONST, extent.value))
                elif isinstance(extent, Var) and id(extent) in slot:
                    dims.append((axis, _BIND, slot[id(extent)]))
                    bound.add(id(extent))
                else:
                    self._exprs.append((k, axis, extent))
            self._specs.append((_np_dtype(buf), len(buf.shape), tuple(dims), k in writes))
        # the sizes no shape gives but a scalar argument does (n in A: float32[n * 2], n)
        self._by_scalar = {id(v) for _, v, _ in self.scalars if id(v) in slot} - bound
        self._unbound = [v for v in self.size_vars
                         if id(v) not in bound and id(v) not in self._by_scalar]
        self._outputs = sorted(writes) if len(self.params) > 1 else []
        self._nargs = len(arguments)
        self.source = self._generate()
        self._fast = self._compile()

    # -- the hot path -------------------------------------------------------------------------
    def native_args(self, args: Sequence[Any]) -> list[int]:
        """Pointers and sizes for the native call, or an :class:`ArgumentError`.

        This is replaced, per function, by straight-line code written for its parameters
        (see :attr:`source`), which checks the same things without any loops."""
        return self._fast(args)

    def _generate(self) -> str:
        """Python source of the check for these parameters, e.g. for ``A: float32[n, 4]``::

            def native_args(args):
                if len(args) != 1: explain(args)
                a0, = args
                if not ((type(a0) is ndarray or plain(a0)) and (a0.dtype is d0 or a0.dtype == d0)
                        and a0.ndim == 2): explain(args)
                s0 = a0.shape
                z0 = s0[0]
                if not (s0[1] == 4 and a0.flags.c_contiguous): explain(args)
                p0 = read(id(a0) + 16).value
                return [p0, z0]
        """
        n = len(self.params)
        out = ["def native_args(args):", f"    if len(args) != {self._nargs}: explain(args)"]
        if self._unbound:
            out.append("    explain(args)")
        names = [f"a{k}" for k in range(n)]
        for j, (position, _, _) in enumerate(self.scalars):
            names.insert(position, f"v{j}")
        if names:
            out.append(f"    {', '.join(names)}, = args")
        slot = {id(v): k for k, v in enumerate(self.size_vars)}
        bound: set[int] = set()
        for j, (_, var, scalar) in enumerate(self.scalars):
            out.append(f"    x{j} = {scalar.fast_path(f'v{j}', f'c{j}')}")
            if id(var) in self._by_scalar:  # a size no shape gives: the scalar does
                out.append(f"    z{slot[id(var)]} = x{j}")
                bound.add(slot[id(var)])
        for k, (_, ndim, dims, writes) in enumerate(self._specs):
            a = f"a{k}"
            out.append(
                f"    if not ((type({a}) is ndarray or plain({a})) and ({a}.dtype is d{k} or "
                f"{a}.dtype == d{k}) and {a}.ndim == {ndim}): explain(args)"
            )
            out.append(f"    s{k} = {a}.shape")
            conds = []
            for axis, kind, value in dims:
                if kind == _CONST:
                    conds.append(f"s{k}[{axis}] == {value}")
                elif value in bound:
                    conds.append(f"s{k}[{axis}] == z{value}")
                else:
                    bound.add(value)
                    out.append(f"    z{value} = s{k}[{axis}]")
                    most = _size_max(self.size_vars[value])
                    if most is not None:  # an int32 n: a longer axis would wrap around
                        out.append(f"    if z{value} > {most}: explain(args)")
            conds.append(f"{a}.flags.c_contiguous")
            if writes:
                conds.append(f"{a}.flags.writeable")
            out.append(f"    if not ({' and '.join(conds)}): explain(args)")
            read = f"read(id({a}) + {_OFFSET}).value" if _OFFSET else f"{a}.ctypes.data"
            out.append(f"    p{k} = {read}")
        sizes = [f"z{j}" for j in range(len(self.size_vars))]
        for j, (_, var, _) in enumerate(self.scalars):
            if id(var) in slot and id(var) not in self._by_scalar:  # also read from a shape
                z = f"z{slot[id(var)]}"
                out.append(f"    if x{j} != {z}: c{j}.differs(x{j}, {z})")
        if self._exprs:
            out.append(f"    if not check_exprs(args, [{', '.join(sizes)}]): explain(args)")
        # an output may not overlap any other array (the code is compiled with noalias)
        for k in range(n) if self._outputs else ():
            out.append(f"    e{k} = p{k} + a{k}.nbytes")
        for k in self._outputs:
            for j in range(n):
                if j != k:
                    out.append(f"    if p{k} < e{j} and p{j} < e{k}: explain(args)")
        by_value = {id(v) for v in self.scalar_args}
        values = [f"x{j}" for j, (_, v, _) in enumerate(self.scalars) if id(v) in by_value]
        out.append(f"    return [{', '.join([f'p{k}' for k in range(n)] + sizes + values)}]")
        return "\n".join(out) + "\n"

    def _compile(self) -> Callable[[Sequence[Any]], list[int]]:
        namespace: dict[str, Any] = {
            "ndarray": np.ndarray,
            "plain": _plain_subclass,
            "explain": self.explain,
            "check_exprs": self._check_exprs,
            "read": _read_pointer,
        }
        namespace.update({f"d{k}": spec[0] for k, spec in enumerate(self._specs)})
        namespace.update({f"c{j}": scalar for j, (_, _, scalar) in enumerate(self.scalars)})
        exec(compile(self.source, f"<argument check of {self.func.name}>", "exec"), namespace)
        return namespace["native_args"]  # type: ignore[no-any-return]

    def _check_exprs(self, args: Sequence[Any], sizes: list[int | None]) -> bool:
        env = {id(v): s for v, s in zip(self.size_vars, sizes) if s is not None}
        for k, axis, e in self._exprs:
            if evaluate_known(e, env) != args[self.buffer_positions[k]].shape[axis]:
                return False
        return True

    # -- the error path -----------------------------------------------------------------------
    def explain(self, args: Sequence[Any]) -> None:
        """Raise the error that says what is wrong with ``args``."""
        if self._unbound:
            names = ", ".join(v.name for v in self._unbound)
            raise ArgumentError(
                f"the size(s) {names} cannot be read from the arrays' shapes (they appear "
                "only inside expressions like n*2); give each symbolic size a dimension of "
                "its own in some parameter, or pass it as an argument"
            )
        if len(args) != self._nargs:
            what = "arrays" if not self.scalars else "arguments"
            raise ArgumentTypeError(
                f"{self.func.name}() takes {self._nargs} {what} ({self.signature()}) but "
                f"got {len(args)}"
            )
        env: dict[int, int] = {}
        origin: dict[int, str] = {}
        for position, var, scalar in self.scalars:
            value = scalar(args[position])
            if id(var) in self._by_scalar:  # an integer: a size
                env[id(var)] = int(value)
                origin[id(var)] = f"argument {position} {var.name!r}"
        for k, buf in enumerate(self.params):
            a = args[self.buffer_positions[k]]
            what = f"argument {self.buffer_positions[k]} {buf.name!r}"
            dtype, ndim, dims, writes = self._specs[k]
            if not isinstance(a, np.ndarray):
                raise ArgumentTypeError(
                    f"{what} must be a numpy array, got {type(a).__name__}; pass "
                    f"np.asarray(..., dtype={str(dtype)!r})"
                )
            if isinstance(a, np.ma.MaskedArray):
                raise ArgumentTypeError(
                    f"{what} is a masked array; compiled code reads and writes the data and "
                    "would ignore the mask (masked elements computed, an output's mask left "
                    "as it was). Pass a plain array: a.filled(0) for an input, or "
                    f"np.asarray(a) and mask the result yourself"
                )
            if a.dtype != dtype:
                raise ArgumentTypeError(
                    f"{what} has dtype {a.dtype} but the function expects {dtype}; convert "
                    f"it with .astype({str(dtype)!r})"
                )
            if a.ndim != ndim:
                raise ArgumentError(
                    f"{what} has {a.ndim} dimension(s), shape {tuple(a.shape)}, but the "
                    f"function expects {ndim}: {self._shape_text(buf, env)}"
                )
            for axis, extent in enumerate(buf.shape):
                if isinstance(extent, Var) and id(extent) not in env:
                    most = _size_max(extent)
                    if most is not None and a.shape[axis] > most:
                        raise ArgumentError(
                            f"{what} has shape {tuple(a.shape)}: its size {extent.name} = "
                            f"{a.shape[axis]} does not fit {extent.name}'s dtype "
                            f"{extent.dtype} (at most {most}), and the loops over it would "
                            f"wrap around. Declare it te.var({extent.name!r}, 'int64') (or "
                            f"T.int64) for arrays this long"
                        )
                    env[id(extent)] = a.shape[axis]
                    origin[id(extent)] = what
                want = evaluate_known(extent, env)
                if want != a.shape[axis]:
                    note = ""
                    if isinstance(extent, Var) and id(extent) in origin:
                        note = f" ({extent.name} = {want}, from {origin[id(extent)]})"
                    raise ArgumentError(
                        f"{what} has shape {tuple(a.shape)} but the function expects "
                        f"{self._shape_text(buf, env)}{note}"
                    )
            if not a.flags.c_contiguous:
                raise ArgumentError(
                    f"{what} is not C-contiguous (a transposed or sliced view?); pass "
                    "np.ascontiguousarray(...)"
                )
            if writes and not a.flags.writeable:
                raise ArgumentError(
                    f"{what} is written by the function but the array is read-only; pass a "
                    "writeable array (e.g. np.empty(...))"
                )
        for position, var, scalar in self.scalars:
            if id(var) in env and id(var) not in self._by_scalar:
                scalar.differs(scalar(args[position]), env[id(var)])
        pos = self.buffer_positions
        for k in self._outputs:
            for j in range(len(self.params)):
                if j != k and _overlap(args[pos[k]], args[pos[j]]):
                    same = args[pos[k]].ctypes.data == args[pos[j]].ctypes.data
                    raise ArgumentError(
                        f"argument {pos[k]} {self.params[k].name!r} is written by the function "
                        f"and {'is the same memory as' if same else 'overlaps'} argument "
                        f"{pos[j]} {self.params[j].name!r}; the compiled code assumes its "
                        "arrays do not overlap, so pass a copy"
                    )
        raise ArgumentError(f"the arguments do not fit {self.signature()}")  # pragma: no cover

    def _shape_text(self, buf: Buffer, env: dict[int, int]) -> str:
        dims = []
        for e in buf.shape:
            v = evaluate_known(e, env)
            dims.append(str(v) if v is not None else _expr_text(e))
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"

    def signature(self) -> str:
        """``A: float32[n, 4], B: float32[n, 4]``."""
        parts = []
        for a in self.func.arguments:
            if isinstance(a, Var):
                parts.append(f"{a.name}: {a.dtype}")
                continue
            dims = ", ".join(_expr_text(e) for e in a.shape)
            parts.append(f"{a.name}: {a.dtype}[{dims}]")
        return ", ".join(parts)


class Scalar:
    """The check and conversion of one scalar parameter's argument: ``scalar(value)`` is the
    value the native function gets (a Python int or float), or an :class:`ArgumentError`
    naming the parameter. Integers must fit the dtype (a ``te.var``, a size, must also be
    >= 0); a float parameter takes ints and floats (NaN and infinities included) that fit;
    a bool parameter takes True/False. numpy scalars (and 0-d arrays) of those kinds work."""

    def __init__(self, var: Var, func_name: str) -> None:
        self.var = var
        self.dtype = var.dtype
        self.what = f"{func_name}: the scalar parameter {var.name!r} ({var.dtype})"
        self.lo, self.hi = int_range(self.dtype) if dt.is_int(self.dtype) else (0, 0)
        if isinstance(var, SizeVar):
            self.lo = max(self.lo, 0)

    def fast_path(self, arg: str, me: str) -> str:
        """A Python expression that takes the common case without a call."""
        if dt.is_int(self.dtype):
            fits = f"type({arg}) is int and {self.lo} <= {arg} <= {self.hi}"
            return f"{arg} if {fits} else {me}({arg})"
        if self.dtype == "float64":
            return f"{arg} if type({arg}) is float else {me}({arg})"
        if self.dtype == "float32":
            big = repr(float(np.finfo(np.float32).max))
            return f"{arg} if type({arg}) is float and -{big} <= {arg} <= {big} else {me}({arg})"
        return f"{me}({arg})"

    def __call__(self, value: Any) -> int | float:
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        if self.dtype == "bool":
            if isinstance(value, (bool, np.bool_)):
                return int(value)
            raise ArgumentTypeError(f"{self.what} takes True or False, got {_show(value)}")
        if dt.is_int(self.dtype):
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
                raise ArgumentTypeError(
                    f"{self.what} takes an integer, got {_show(value)}"
                    + ("; pass int(x) if you mean to drop the fraction"
                       if isinstance(value, (float, np.floating)) else "")
                )
            n = int(value)
            if not self.lo <= n <= self.hi:
                why = (" (it is a te.var, a size: mlc knows it is >= 0)"
                       if isinstance(self.var, SizeVar) and n < 0 else "")
                raise ArgumentError(
                    f"{self.what} must be in [{self.lo}, {self.hi}]{why}; got {n}"
                )
            return n
        # a float parameter
        if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (int, float, np.integer, np.floating)
        ):
            raise ArgumentTypeError(f"{self.what} takes a number, got {_show(value)}")
        try:
            x = float(value)
        except OverflowError:
            raise ArgumentError(f"{self.what}: {value} is too large for a float") from None
        if self.dtype == "float32" and math.isfinite(x) and abs(x) > _FLOAT32_MAX:
            raise ArgumentError(f"{self.what}: {x} is too large for float32 (max {_FLOAT32_MAX:g})")
        return x

    def differs(self, given: int | float, from_shape: int) -> None:
        """A scalar that is also a size must agree with the arrays' shapes."""
        if given != from_shape:
            raise ArgumentError(
                f"{self.what} is {given} but the arrays' shapes say {self.var.name} = "
                f"{from_shape}; a size passed as an argument must match the arrays"
            )


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def _size_max(var: Var) -> int | None:
    """The largest length a size variable of a narrow dtype can hold (None for int64)."""
    if not dt.is_int(var.dtype):
        return None
    most = int_range(var.dtype)[1]
    return most if most < 2**63 - 1 else None


def _show(value: Any) -> str:
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{text} ({type(value).__name__})"


SCALAR_CTYPES: dict[str, Any] = {
    "bool": ctypes.c_uint8, "int8": ctypes.c_int8, "int16": ctypes.c_int16,
    "int32": ctypes.c_int32, "int64": ctypes.c_int64, "uint8": ctypes.c_uint8,
    "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
    "float32": ctypes.c_float, "float64": ctypes.c_double,
}
"""The C type of a scalar parameter in the native signature (a bool as a byte)."""


def _plain_subclass(a: Any) -> bool:
    """An ndarray subclass whose elements are its data (np.matrix, np.memmap), not a masked
    array, whose mask compiled code would ignore."""
    return isinstance(a, np.ndarray) and not isinstance(a, np.ma.MaskedArray)


def _overlap(a: np.ndarray, b: np.ndarray) -> bool:
    """Do the bytes of two (contiguous) arrays overlap? Views of one array may: ``x[1:]``
    and ``x[:-1]``."""
    pa, pb = a.ctypes.data, b.ctypes.data
    return bool(pa < pb + b.nbytes and pb < pa + a.nbytes)


def _expr_text(e: PrimExpr | int) -> str:
    if isinstance(e, int):
        return str(e)
    if isinstance(e, IntImm):
        return str(e.value)
    if isinstance(e, Var):
        return e.name
    return str(e)


def _np_dtype(buf: Buffer) -> np.dtype:
    return dt.to_numpy(buf.dtype)

"""Checking the numpy arrays a compiled function is called with, before any native code runs.

A wrong call must never crash the Python process: a too-small array would let the kernel
write past its end. So every call checks, for each parameter buffer, that the argument is a
numpy array of the right dtype and number of dimensions, that its shape matches the buffer's
(constant sizes, and symbolic sizes bound from the arrays: ``n`` in two places must agree),
that it is C-contiguous, and that an array the function writes is writeable.

The check on the hot path is lean (it only detects that something is wrong); when it fails,
:meth:`ArgumentChecker.explain` walks the arguments again to say exactly what and where.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mlc.errors import ArgumentError, ArgumentTypeError
from mlc.tir import dtype as dt
from mlc.tir.arith import evaluate_known
from mlc.tir.expr import (
    IntImm,
    PrimExpr,
    Var,
)
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
    to pass to the native function (pointers, then symbolic sizes)."""

    def __init__(self, func: PrimFunc) -> None:
        self.func = func
        self.params = func.params
        self.size_vars = func.size_vars
        slot = {id(v): k for k, v in enumerate(self.size_vars)}
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
        self._unbound = [v for v in self.size_vars if id(v) not in bound]
        self._outputs = sorted(writes) if len(self.params) > 1 else []
        self._nargs = len(self.params)
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
                if not (isinstance(a0, ndarray) and (a0.dtype is d0 or a0.dtype == d0)
                        and a0.ndim == 2): explain(args)
                s0 = a0.shape
                z0 = s0[0]
                if not (s0[1] == 4 and a0.flags.c_contiguous): explain(args)
                p0 = read(id(a0) + 16).value
                return [p0, z0]
        """
        n = self._nargs
        out = ["def native_args(args):", f"    if len(args) != {n}: explain(args)"]
        if self._unbound:
            out.append("    explain(args)")
        if n:
            out.append(f"    {', '.join(f'a{k}' for k in range(n))}, = args")
        bound: set[int] = set()
        for k, (_, ndim, dims, writes) in enumerate(self._specs):
            a = f"a{k}"
            out.append(
                f"    if not (isinstance({a}, ndarray) and ({a}.dtype is d{k} or "
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
            conds.append(f"{a}.flags.c_contiguous")
            if writes:
                conds.append(f"{a}.flags.writeable")
            out.append(f"    if not ({' and '.join(conds)}): explain(args)")
            read = f"read(id({a}) + {_OFFSET}).value" if _OFFSET else f"{a}.ctypes.data"
            out.append(f"    p{k} = {read}")
        sizes = [f"z{j}" for j in range(len(self.size_vars))]
        if self._exprs:
            out.append(f"    if not check_exprs(args, [{', '.join(sizes)}]): explain(args)")
        for k in self._outputs:
            others = ", ".join(f"p{j}" for j in range(n) if j != k)
            out.append(f"    if p{k} in ({others},): explain(args)")
        out.append(f"    return [{', '.join([f'p{k}' for k in range(n)] + sizes)}]")
        return "\n".join(out) + "\n"

    def _compile(self) -> Callable[[Sequence[Any]], list[int]]:
        namespace: dict[str, Any] = {
            "ndarray": np.ndarray,
            "explain": self.explain,
            "check_exprs": self._check_exprs,
            "read": _read_pointer,
        }
        namespace.update({f"d{k}": spec[0] for k, spec in enumerate(self._specs)})
        exec(compile(self.source, f"<argument check of {self.func.name}>", "exec"), namespace)
        return namespace["native_args"]  # type: ignore[no-any-return]

    def _check_exprs(self, args: Sequence[Any], sizes: list[int | None]) -> bool:
        env = {id(v): s for v, s in zip(self.size_vars, sizes) if s is not None}
        for k, axis, e in self._exprs:
            if evaluate_known(e, env) != args[k].shape[axis]:
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
                "its own in some parameter"
            )
        if len(args) != self._nargs:
            raise ArgumentTypeError(
                f"{self.func.name}() takes {self._nargs} arrays ({self.signature()}) but "
                f"got {len(args)}"
            )
        env: dict[int, int] = {}
        origin: dict[int, str] = {}
        for k, (buf, a) in enumerate(zip(self.params, args)):
            what = f"argument {k} {buf.name!r}"
            dtype, ndim, dims, writes = self._specs[k]
            if not isinstance(a, np.ndarray):
                raise ArgumentTypeError(
                    f"{what} must be a numpy array, got {type(a).__name__}; pass "
                    f"np.asarray(..., dtype={str(dtype)!r})"
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
        for k in self._outputs:
            for j, other in enumerate(args):
                if j != k and _shares_start(args[k], other):
                    raise ArgumentError(
                        f"argument {k} {self.params[k].name!r} is written by the function and "
                        f"is the same memory as argument {j} {self.params[j].name!r}; the "
                        "compiled code assumes its arrays do not overlap, so pass a copy"
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
        for buf in self.params:
            dims = ", ".join(_expr_text(e) for e in buf.shape)
            parts.append(f"{buf.name}: {buf.dtype}[{dims}]")
        return ", ".join(parts)


def _shares_start(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(a.ctypes.data == b.ctypes.data)


def _expr_text(e: PrimExpr | int) -> str:
    if isinstance(e, int):
        return str(e)
    if isinstance(e, IntImm):
        return str(e.value)
    if isinstance(e, Var):
        return e.name
    return str(e)


def _np_dtype(buf: Buffer) -> np.dtype:
    e = dt.element(buf.dtype)
    return np.dtype(bool) if e == "bool" else np.dtype(e)

"""Syntax-tree vocabulary shared by the TIR parser: dotted TVMScript names, loop/axis kinds,
the per-function scope table (:class:`_Func`) and small helpers over ``ast`` nodes and
extents.
"""

from __future__ import annotations

import ast
from typing import Any

from mlc.errors import MLCError
from mlc.tir import dtype as dt
from mlc.tir.analysis import structural_equal
from mlc.tir.expr import (
    Add,
    IntImm,
    IterKind,
    PrimExpr,
    Range,
    Var,
    const,
)
from mlc.tir.stmt import (
    Buffer,
    ForKind,
)

# Leading parts of a dotted name that only say "this is TVMScript": T.axis.spatial, tir.grid,
# tvm.script.tir.Buffer and the printer's bare axis.spatial are the same thing.
_PREFIXES = {"T", "tir", "tvm", "script", "mlc"}


_LOOP_KINDS = {
    "range": ForKind.SERIAL,
    "serial": ForKind.SERIAL,
    "parallel": ForKind.PARALLEL,
    "vectorized": ForKind.VECTORIZED,
    "unroll": ForKind.UNROLLED,
    "thread_binding": ForKind.THREAD_BINDING,
}

_AXIS_KINDS = {
    "spatial": IterKind.SPATIAL, "S": IterKind.SPATIAL,
    "reduce": IterKind.REDUCE, "R": IterKind.REDUCE,
    "scan": IterKind.ORDERED, "opaque": IterKind.OPAQUE,
}  # fmt: skip

_HEADER_CALLS = {"reads", "writes", "where", "block_attr"}


def dotted(node: ast.AST) -> str | None:
    """``T.axis.spatial`` -> "T.axis.spatial"; None for anything that is not a dotted name."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    parts.append(node.id)
    return ".".join(reversed(parts))


def normalize_name(name: str) -> str:
    """Drop the leading ``T.`` / ``tir.`` / ``tvm.script.tir.`` parts of a dotted name."""
    parts = name.split(".")
    while len(parts) > 1 and parts[0] in _PREFIXES:
        parts = parts[1:]
    return ".".join(parts)


def is_prim_func_decorator(node: ast.expr) -> bool:
    target = node.func if isinstance(node, ast.Call) else node
    name = dotted(target)
    return name is not None and normalize_name(name) == "prim_func"


def _is_dtype(name: str) -> bool:
    try:
        dt.check(name)
    except MLCError:
        return False
    return name not in ("handle",)


class _Func:
    """What the parser knows while reading one function."""

    def __init__(self) -> None:
        self.scopes: list[dict[str, Any]] = [{}]
        self.loops: dict[Var, Range] = {}  # enclosing loop variables and their ranges
        self.attrs: list[tuple[str, Any]] = []
        self.handles: dict[str, Buffer | None] = {}
        self.block_names: set[str] = set()  # a schedule finds blocks by name
        self.parallel_loops: list[tuple[Any, Any]] = []  # (For, its ast.For), checked at the end

    def lookup(self, name: str) -> Any:
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def define(self, name: str, value: Any) -> None:
        self.scopes[-1][name] = value


def _call_of(s: ast.stmt) -> ast.Call | None:
    if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
        return s.value
    return None


def _assign_parts(s: ast.stmt) -> tuple[ast.expr | None, ast.expr | None]:
    if isinstance(s, ast.Assign):
        return (s.targets[0] if len(s.targets) == 1 else None), s.value
    if isinstance(s, ast.AnnAssign):
        return s.target, s.value
    return None, None


def _target_names(node: ast.expr) -> list[str] | None:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Name)
                                                       for e in node.elts):
        return [e.id for e in node.elts]  # type: ignore[attr-defined]
    return None


def _first_line(s: ast.AST) -> str:
    return ast.unparse(s).split("\n")[0]


def _mul(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return const(a.value * b.value, a.dtype)
    if isinstance(b, IntImm) and b.value == 1:
        return a
    if isinstance(a, IntImm) and a.value == 1:
        return b
    return a * b


def _numel(buf: Buffer) -> PrimExpr:
    """Elements in a buffer's memory, as lowering's flatten pass computes it."""
    if buf.strides:
        return _mul(buf.strides[0], buf.shape[0])
    total: PrimExpr = const(1)
    for dim in buf.shape:
        total = _mul(total, dim)
    return total


def _zero_like(e: PrimExpr) -> PrimExpr:
    return IntImm(0, e.dtype) if dt.is_int(e.dtype) else const(0)


def _extent(lo: PrimExpr, hi: PrimExpr) -> PrimExpr:
    """``hi - lo``, folded for constants; ``lo + e`` gives back ``e`` exactly (the printer
    writes [lo, lo + e) that way)."""
    if isinstance(lo, IntImm) and isinstance(hi, IntImm):
        return IntImm(hi.value - lo.value, hi.dtype)
    if isinstance(hi, Add) and structural_equal(hi.a, lo):
        return hi.b
    if isinstance(lo, IntImm) and lo.value == 0:
        return hi
    return hi - lo

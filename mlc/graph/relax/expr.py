"""The graph level as the MLC course writes it: a function of named bindings.

A :class:`Function` has parameters, blocks of bindings (``lv0 = R.add(x, y)``; a dataflow
block is side-effect free and marks its outputs with ``R.output``) and a returned value. A
binding's value is a :class:`Call` of a registered graph op (``relax.add``,
``relax.nn.dense``...) or of ``call_tir``, which runs a tensor program of the module in
destination-passing style::

    @R.function
    def main(x: R.Tensor((1, 784), "float32"), w0: R.Tensor((128, 784), "float32"), ...):
        with R.dataflow():
            lv0 = R.call_tir(linear0, (x, w0, b0), out_sinfo=R.Tensor((1, 128), "float32"))
            ...
            R.output(out)
        return out

The ops are :mod:`mlc.graph`'s registry (pattern, type inference, numpy reference, topi
compute), so a function of op calls converts to a :class:`mlc.graph.Graph` and back
(:mod:`mlc.graph.relax.bridge`) and fusion, folding and memory planning apply.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlc.errors import GraphError
from mlc.graph.op import OpDef, OpPattern, TensorType, get_op, register_op

__all__ = [
    "Expr", "Var", "DataflowVar", "Constant", "GlobalVar", "Tuple", "Call", "Binding",
    "VarBinding", "BindingBlock", "DataflowBlock", "Function", "Op", "CALL_TIR", "const",
    "call_tir", "remove_all_unused", "TensorStructInfo", "Tensor",
]

_ids = itertools.count()


class Expr:
    """Base of graph-level values. ``struct_info`` is a :class:`TensorType` (shape, dtype)
    or None when unknown."""

    struct_info: TensorType | None

    @property
    def shape(self) -> tuple[int, ...]:
        if self.struct_info is None:
            raise GraphError(f"{self} has no known shape")
        return self.struct_info.shape

    @property
    def dtype(self) -> str:
        if self.struct_info is None:
            raise GraphError(f"{self} has no known dtype")
        return self.struct_info.dtype

    __hash__ = object.__hash__


def TensorStructInfo(shape: Sequence[int], dtype: str = "float32") -> TensorType:  # noqa: N802
    """``R.Tensor((1, 784), "float32")``: the type of a tensor value."""
    try:
        dims = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise GraphError(f"a tensor shape is a tuple of ints, got {shape!r} (symbolic "
                         "graph-level shapes are not supported)") from None
    return TensorType(dims, str(np.dtype(dtype)))


Tensor = TensorStructInfo


@dataclass(eq=False)
class Var(Expr):
    """A named value: a parameter or the variable a binding defines."""

    name_hint: str
    struct_info: TensorType | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name_hint})"


@dataclass(eq=False)
class DataflowVar(Var):
    """A variable local to a dataflow block (not visible after it unless output)."""


@dataclass(eq=False)
class Constant(Expr):
    """A tensor known when compiling (weights)."""

    data: np.ndarray
    name: str = ""
    struct_info: TensorType | None = field(default=None)

    def __post_init__(self) -> None:
        self.data = np.ascontiguousarray(self.data)
        self.struct_info = TensorType(tuple(self.data.shape), str(self.data.dtype))

    def __repr__(self) -> str:
        return f"Constant({self.name or '?'}: {self.struct_info})"


def const(value: Any, struct_info: Any = None, name: str = "") -> Constant:
    """``relax.const(array)``: a constant tensor (float32 for Python numbers)."""
    dtype = struct_info.dtype if isinstance(struct_info, TensorType) else None
    if dtype is None and not isinstance(value, np.ndarray):
        dtype = "float32"
    return Constant(np.array(value, dtype=dtype), name)


@dataclass(eq=False)
class GlobalVar(Expr):
    """The name of a function of the module (what ``call_tir`` calls)."""

    name_hint: str
    struct_info: TensorType | None = None

    def __repr__(self) -> str:
        return f"GlobalVar({self.name_hint})"


@dataclass(eq=False)
class Tuple(Expr):
    fields: tuple[Expr, ...]
    struct_info: TensorType | None = None

    def __init__(self, fields: Sequence[Expr]) -> None:
        self.fields = tuple(fields)
        self.struct_info = None


def _no_infer(ts: Sequence[TensorType], attrs: dict[str, Any]) -> TensorType:
    raise GraphError("call_tir's type is its out_sinfo")


def _no_ref(*args: Any, **attrs: Any) -> np.ndarray:
    raise GraphError("call_tir runs a prim_func of the module; it has no numpy reference")


CALL_TIR = OpDef("call_tir", OpPattern.OPAQUE, _no_infer, _no_ref)


class RelaxOp:
    """A registered graph op as the graph level's calls show it: ``name`` is TVM's
    ``"relax.nn.relu"`` (the key the course's ``op_map`` uses with ``call.op.name``), the
    rest is the :class:`OpDef`'s. It equals and hashes as its OpDef, so maps keyed by
    ``Op.get(...)`` or by OpDefs find it, and ``op.base`` is the OpDef itself."""

    __slots__ = ("base",)

    def __init__(self, base: OpDef) -> None:
        self.base = base

    @property
    def name(self) -> str:
        return "relax." + self.base.name

    @property
    def short_name(self) -> str:
        """The graph registry's name (``"nn.relu"``)."""
        return self.base.name

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.base, attr)

    def __eq__(self, other: object) -> bool:
        return self.base is _base(other)

    def __ne__(self, other: object) -> bool:
        return self.base is not _base(other)

    def __hash__(self) -> int:
        return hash(self.base)

    def __repr__(self) -> str:
        return f"Op({self.name})"


def _base(op: Any) -> Any:
    return op.base if isinstance(op, RelaxOp) else op


def op_def(op: Any) -> OpDef:
    """The OpDef behind a call's ``op`` (a RelaxOp or an OpDef)."""
    return _base(op)  # type: ignore[no-any-return]


def _relax_op(op: Any) -> Any:
    if isinstance(op, RelaxOp) or op is CALL_TIR or not isinstance(op, OpDef):
        return op
    return RelaxOp(op)


class Op:
    """``Op.get("relax.add")``: the registered op (the ``relax.`` prefix is optional); its
    ``name`` is ``"relax.add"``."""

    @staticmethod
    def get(name: str) -> Any:
        short = name.removeprefix("relax.")
        if short == "call_tir":
            return CALL_TIR
        return RelaxOp(get_op(short))


class Call(Expr):
    """``op(args)``: ``Call(op, args, attrs=None, sinfo_args=None)`` as in the course. The
    type is inferred from the arguments' types (for ``call_tir``, ``sinfo_args[0]``)."""

    def __init__(self, op: OpDef | str, args: Sequence[Any], attrs: dict[str, Any] | None = None,
                 sinfo_args: Sequence[TensorType] | None = None) -> None:
        self.op: Any = Op.get(op) if isinstance(op, str) else _relax_op(op)
        self.args: list[Expr] = [_as_expr(a) for a in args]
        self.attrs: dict[str, Any] = dict(attrs or {})
        self.sinfo_args: list[TensorType] = list(sinfo_args or [])
        self.struct_info = self._infer()

    def _infer(self) -> TensorType | None:
        if self.op is CALL_TIR:
            if not self.sinfo_args:
                raise GraphError("call_tir needs out_sinfo, the type of its output")
            return self.sinfo_args[0]
        types = [a.struct_info for a in self.args]
        if any(t is None for t in types):
            return None
        if self.op.num_inputs is not None and len(types) != self.op.num_inputs:
            raise GraphError(f"{self.op.name} takes {self.op.num_inputs} inputs, got "
                             f"{len(types)}")
        try:
            return self.op.infer([t for t in types if t is not None], self.attrs)
        except GraphError as e:
            shapes = ", ".join(str(t) for t in types)
            raise GraphError(f"relax.{op_def(self.op).name}({shapes}): {e}") from None

    def __repr__(self) -> str:
        return f"Call({self.op.name})"


def _as_expr(a: Any) -> Expr:
    if isinstance(a, Expr):
        return a
    if isinstance(a, (list, tuple)):
        return Tuple([_as_expr(x) for x in a])
    if isinstance(a, (int, float, np.ndarray, np.number)):
        return const(a)
    raise GraphError(f"cannot use {type(a).__name__} {a!r} as a graph-level value")


def call_tir(func: GlobalVar | str, args: Sequence[Expr], out_sinfo: TensorType) -> Call:
    """``R.call_tir(func, (x, w), out_sinfo)``: run the module's prim_func ``func`` on the
    arguments and a fresh output of type ``out_sinfo`` (destination-passing style)."""
    gv = func if isinstance(func, GlobalVar) else GlobalVar(func)
    return Call(CALL_TIR, [gv, Tuple(list(args))], None, [out_sinfo])


@dataclass(eq=False)
class Binding:
    """``var = value``."""

    var: Var
    value: Expr


VarBinding = Binding


@dataclass(eq=False)
class BindingBlock:
    bindings: list[Binding]


@dataclass(eq=False)
class DataflowBlock(BindingBlock):
    """``with R.dataflow():`` bindings; the Vars (not DataflowVars) are its outputs."""


@dataclass(eq=False)
class Function(Expr):
    """A graph-level function: ``params``, ``blocks`` of bindings, the returned ``body``."""

    params: list[Var]
    blocks: list[BindingBlock]
    body: Expr
    name: str = "main"
    struct_info: TensorType | None = None

    def __post_init__(self) -> None:
        self.struct_info = self.body.struct_info

    def bindings(self) -> list[Binding]:
        return [b for blk in self.blocks for b in blk.bindings]

    def script(self) -> str:
        return function_to_str(self)

    def show(self) -> None:
        print(self.script())

    def __str__(self) -> str:
        return self.script()

    __repr__ = __str__


# ---------------------------------------------------------------------------------------------
# ewise_fma: the fused op of the course's rewrite example


def _infer_fma(ts: Sequence[TensorType], attrs: dict[str, Any]) -> TensorType:
    from mlc.graph.ops.tensor import broadcast_shape, same_dtype

    shape = broadcast_shape(broadcast_shape(ts[0].shape, ts[1].shape), ts[2].shape)
    return TensorType(shape, same_dtype(ts))


EWISE_FMA = register_op("ewise_fma", OpPattern.ELEMWISE, _infer_fma,
                        lambda a, b, c: a * b + c, topi=None, num_inputs=3)


# ---------------------------------------------------------------------------------------------
# analysis


def remove_all_unused(fn: Function) -> Function:
    """Drop the bindings nothing uses (dead-code elimination), as
    ``relax.analysis.remove_all_unused`` does."""
    used: set[int] = set()

    def mark(e: Expr) -> None:
        if isinstance(e, Var):
            used.add(id(e))
        elif isinstance(e, Call):
            for a in e.args:
                mark(a)
        elif isinstance(e, Tuple):
            for f in e.fields:
                mark(f)

    mark(fn.body)
    kept_rev: list[list[Binding]] = []
    for blk in reversed(fn.blocks):
        kept: list[Binding] = []
        for b in reversed(blk.bindings):
            if id(b.var) in used:
                kept.append(b)
                mark(b.value)
        kept_rev.append(list(reversed(kept)))
    blocks = [type(blk)(bs) for blk, bs in zip(fn.blocks, reversed(kept_rev))]
    return Function(fn.params, blocks, fn.body, fn.name)


# ---------------------------------------------------------------------------------------------
# printing


def sinfo_str(t: TensorType | None) -> str:
    if t is None:
        return "R.Tensor(None)"
    shape = "(" + ", ".join(str(s) for s in t.shape) + ("," if len(t.shape) == 1 else "") + ")"
    return f'R.Tensor({shape}, "{t.dtype}")'


def expr_str(e: Expr) -> str:
    if isinstance(e, (Var, GlobalVar)):
        return e.name_hint
    if isinstance(e, Constant):
        return f'metadata["{e.name or "const"}"]'
    if isinstance(e, Tuple):
        inner = ", ".join(expr_str(f) for f in e.fields)
        return f"({inner}{',' if len(e.fields) == 1 else ''})"
    if isinstance(e, Call):
        if e.op is CALL_TIR:
            func, targs = e.args[0], e.args[1]
            return (f"R.call_tir({expr_str(func)}, {expr_str(targs)}, "
                    f"out_sinfo={sinfo_str(e.sinfo_args[0])})")
        args = [expr_str(a) for a in e.args]
        args += [f"{k}={v!r}" for k, v in e.attrs.items()]
        return f"R.{op_def(e.op).name}({', '.join(args)})"
    return repr(e)


def function_to_str(fn: Function) -> str:
    params = ", ".join(f"{p.name_hint}: {sinfo_str(p.struct_info)}" for p in fn.params)
    lines = ["@R.function", f"def {fn.name}({params}) -> {sinfo_str(fn.body.struct_info)}:"]
    for blk in fn.blocks:
        ind = "    "
        if isinstance(blk, DataflowBlock):
            lines.append("    with R.dataflow():")
            ind = "        "
        for b in blk.bindings:
            lines.append(f"{ind}{b.var.name_hint}: {sinfo_str(b.var.struct_info)} = "
                         f"{expr_str(b.value)}")
        if isinstance(blk, DataflowBlock):
            outs = [b.var.name_hint for b in blk.bindings if not isinstance(b.var, DataflowVar)]
            if outs:
                lines.append(f"{ind}R.output({', '.join(outs)})")
    lines.append(f"    return {expr_str(fn.body)}")
    return "\n".join(lines)

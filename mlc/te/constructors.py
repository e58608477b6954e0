"""The constructors of te: ``var``, ``reduce_axis``, ``placeholder``, ``compute``, ``scan``,
``thread_axis`` (``te.extern`` is in :mod:`mlc.te.external`).

    n = te.var("n")
    A = te.placeholder((n,), name="A")            # an input
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    B.op.axis        # (IterVar(i, [0, n), SPATIAL),) -- `i` is the lambda's own variable
    B.op.body        # (A[i] * 2,)
    B.op.input_tensors   # [A]

``te.create_prim_func([A, B])`` turns such a graph of operations into a loop program.
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mlc.errors import MLCTypeError, TEError
from mlc.te.operation import (
    ComputeOp,
    PlaceholderOp,
    ScanOp,
    Tensor,
    _shape_str,
    _simplify_sub,
)
from mlc.tir import dtype as dt
from mlc.tir.expr import (
    CommReducer,
    FloatImm,
    IntImm,
    IterKind,
    IterVar,
    PrimExpr,
    Range,
    Reduce,
    SizeVar,
    Var,
    const,
    convert,
)
from mlc.tir.functor import post_order_visit
from mlc.tir.thread_tag import ALL_TAGS

# Variables made by te.reduce_axis, to catch a reduce axis used outside a reducer.
_REDUCE_VARS: weakref.WeakSet[Var] = weakref.WeakSet()


# ---------------------------------------------------------------------------------------------
# variables and axes


def var(name: str = "v", dtype: str = "int32") -> SizeVar:
    """A symbolic size, e.g. ``n = te.var("n")`` for ``te.placeholder((n,))``. It binds from
    the arrays' shapes when the function is called. (TVM's ``te.var``; here it is always a
    :class:`~mlc.tir.SizeVar`, a variable known to be >= 0.)"""
    return SizeVar(name, dt.check(dtype))


def size_var(name: str = "size", dtype: str = "int32") -> SizeVar:
    """Same as :func:`var` (TVM has both names)."""
    return var(name, dtype)


def _as_range(dom: Any, what: str) -> Range:
    if isinstance(dom, Range):
        return dom
    if isinstance(dom, (tuple, list)) and len(dom) == 2:
        lo, hi = (_as_int_expr(x, what) for x in dom)
        return Range(lo, _simplify_sub(hi, lo))
    raise TEError(f"{what} needs a domain (lo, hi), e.g. te.reduce_axis((0, n)); got {dom!r}")


def reduce_axis(dom: Any, name: str = "rv") -> IterVar:
    """An axis to reduce over: ``k = te.reduce_axis((0, n), name="k")`` ranges over
    ``0 <= k < n``. Use it inside a reducer: ``te.sum(A[i, k], axis=k)``."""
    rng = _as_range(dom, f"te.reduce_axis(name={name!r})")
    if isinstance(rng.extent, IntImm) and rng.extent.value < 0:
        raise TEError(f"te.reduce_axis(name={name!r}): the domain {tuple(dom)} ends before it "
                      "starts; write (lo, hi) with lo <= hi, e.g. te.reduce_axis((0, n))")
    v = Var(name, rng.extent.dtype if dt.is_int(rng.extent.dtype) else "int32")
    _REDUCE_VARS.add(v)
    return IterVar(v, rng, IterKind.REDUCE)


def is_reduce_var(v: Var) -> bool:
    """True for the variable of a ``te.reduce_axis``."""
    return v in _REDUCE_VARS


def _as_int_expr(x: Any, what: str) -> PrimExpr:
    if isinstance(x, bool) or isinstance(x, float) or isinstance(x, FloatImm):
        raise TEError(f"{what}: sizes must be integers, got {x!r}")
    try:
        e = convert(x)
    except MLCTypeError as err:
        raise TEError(f"{what}: sizes must be integers or te.var(...), got {x!r}") from err
    if not dt.is_int(e.dtype):
        raise TEError(f"{what}: sizes must be integers, got `{e}` of dtype {e.dtype}")
    return e


def _as_shape(shape: Any, what: str) -> tuple[PrimExpr, ...]:
    if isinstance(shape, (int, PrimExpr)):
        shape = (shape,)
    if not isinstance(shape, (tuple, list)):
        raise TEError(f"{what}: shape must be a tuple like (n, m), got {shape!r}")
    out = []
    for s in shape:
        e = _as_int_expr(s, what)
        if isinstance(e, IntImm) and e.value < 0:
            raise TEError(f"{what}: shape {tuple(shape)!r} has a negative size {e.value}")
        out.append(e)
    return tuple(out)


# ---------------------------------------------------------------------------------------------
# tensors


def placeholder(shape: Any, dtype: str = "float32", name: str = "placeholder") -> Tensor:
    """An input tensor: ``A = te.placeholder((n, m), name="A")`` (dtype float32 by default)."""
    _check_name(name, "te.placeholder")
    if dtype is None:  # np.dtype(None) would make it float64
        dtype = "float32"
    op = PlaceholderOp(name, _as_shape(shape, f"te.placeholder(name={name!r})"), dt.check(dtype))
    return op.output(0)


def _check_name(name: Any, what: str) -> None:
    if not isinstance(name, str):
        raise TEError(f"{what}(name={name!r}): a name is a string, e.g. name=\"B\"")


def _arg_names(fcompute: Callable[..., Any], ndim: int, name: str) -> list[str]:
    try:
        params = list(inspect.signature(fcompute).parameters.values())
    except (TypeError, ValueError):
        return [f"i{d}" for d in range(ndim)]
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return [f"i{d}" for d in range(ndim)]
    positional = [
        p
        for p in params
        if p.kind in (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    ]
    required = [p for p in positional if p.default is inspect.Parameter.empty]
    if not (len(required) <= ndim <= len(positional)):
        raise TEError(
            f"te.compute(name={name!r}): the shape has {ndim} dimension"
            f"{'s' if ndim != 1 else ''} so fcompute must take {ndim} index argument"
            f"{'s' if ndim != 1 else ''}, but it takes {len(positional)} "
            f"({', '.join(p.name for p in positional) or 'none'})"
        )
    return [p.name for p in positional[:ndim]]


def compute(
    shape: Any,
    fcompute: Callable[..., Any],
    name: str = "compute",
    tag: str = "",
    attrs: dict[str, Any] | None = None,
) -> Tensor:
    """A tensor whose element at each index is ``fcompute(*index)``.

    ``fcompute`` gets one loop variable per dimension and returns an expression, or a
    reducer call (``te.sum(..., axis=k)``) as the whole body::

        C = te.compute((m, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    """
    _check_name(name, "te.compute")
    what = f"te.compute(name={name!r})"
    if not callable(fcompute):
        raise TEError(f"{what}: the second argument is the function of the indices, e.g. "
                      f"lambda i: A[i] * 2; got {fcompute!r}")
    shp = _as_shape(shape, what)
    names = _arg_names(fcompute, len(shp), name)
    axis = tuple(
        IterVar(Var(nm, s.dtype if dt.is_int(s.dtype) else "int32"), Range(const(0, s.dtype), s))
        for nm, s in zip(names, shp)
    )
    try:
        body = fcompute(*(iv.var for iv in axis))
    except TypeError as err:
        _refuse_numpy_function(err, what)
        raise
    if isinstance(body, (tuple, list)):
        if len(body) == 1:
            body = body[0]
        else:
            raise TEError(f"{what}: fcompute returned {len(body)} values; return one expression")
    if isinstance(body, Tensor):
        raise TEError(
            f"{what}: fcompute returned the tensor {body.name!r} itself; return an element of "
            f"it, e.g. {body.name}[i]"
        )
    try:
        body = convert(body)
    except MLCTypeError as err:
        raise TEError(f"{what}: fcompute must return an expression, got {body!r}") from err
    _check_size(body, what)
    _check_body(body, what)
    return ComputeOp(name, tag, attrs or {}, axis, body).output(0)


# The compiler walks expressions recursively: deeper than this, Python's recursion limit
# (RecursionError) is near. Chains of one operator (a sum of 10,000 terms) stay shallow as
# they are built (mlc.tir.expr's chain); alternating ones (Horner's e = e * x + c) do not.
MAX_EXPR_DEPTH = 250
# An expression that reuses a subexpression (e = e * 1.5 + e, 25 times) is a tree of 2**25
# nodes once written out: every pass would walk all of them.
MAX_EXPR_NODES = 1_000_000


def _check_size(body: PrimExpr, what: str) -> None:
    """Refuse an expression too deep for the compiler's recursive walks, or too large once
    its shared subexpressions are written out (counted without walking them twice)."""
    depth: dict[int, int] = {}
    size: dict[int, int] = {}
    stack: list[tuple[Any, bool]] = [(body, False)]
    while stack:
        node, done = stack.pop()
        if id(node) in size:
            continue
        kids = [c for f in getattr(node, "__dataclass_fields__", {})
                for c in _children(getattr(node, f))]
        if not done:
            stack.append((node, True))
            stack.extend((c, False) for c in kids if id(c) not in size)
            continue
        depth[id(node)] = 1 + max((depth[id(c)] for c in kids), default=0)
        size[id(node)] = 1 + sum(size[id(c)] for c in kids)
        too = (f"nested more than {MAX_EXPR_DEPTH} levels deep" if depth[id(node)] > MAX_EXPR_DEPTH
               else f"of more than {MAX_EXPR_NODES} terms written out"
               if size[id(node)] > MAX_EXPR_NODES else None)
        if too is not None:
            raise TEError(
                f"{what}: the expression is {too} (at most {MAX_EXPR_DEPTH} levels and "
                f"{MAX_EXPR_NODES} terms); compute a part in a te.compute of its own and read "
                "it back, e.g. step = te.compute(shape, lambda i: ...), then use step[i]"
            )


def _children(value: Any) -> list[Any]:
    if isinstance(value, (PrimExpr, IterVar, Range, CommReducer)):
        return [value]
    if isinstance(value, tuple):
        return [v for v in value if isinstance(v, (PrimExpr, IterVar, Range, CommReducer))]
    return []


def _check_body(body: PrimExpr, what: str) -> None:
    """Reducers only at the top; reduce axes only inside their reducer."""
    top_reduce = body if isinstance(body, Reduce) else None
    allowed: set[int] = set()
    if top_reduce is not None:
        allowed = {id(iv.var) for iv in top_reduce.axis}

    def visit_reduce(n: Any) -> None:
        if isinstance(n, Reduce) and n is not top_reduce:
            raise TEError(
                f"{what}: a reducer (te.sum/te.max/...) must be the whole body of te.compute, "
                "not part of a larger expression such as te.sum(...) + 1. Compute the "
                "reduction in its own te.compute and use it in a second one."
            )

    post_order_visit(body, visit_reduce)

    def visit(n: Any) -> None:
        if isinstance(n, Var) and n in _REDUCE_VARS and id(n) not in allowed:
            raise TEError(
                f"{what}: the reduce axis {n.name!r} is used outside a reducer over it; "
                f"use it inside te.sum(..., axis={n.name}) (or te.max/te.min)"
            )

    post_order_visit(body, visit)


def scan(
    init: Tensor | Sequence[Tensor],
    update: Tensor | Sequence[Tensor],
    state_placeholder: Tensor | Sequence[Tensor],
    inputs: Sequence[Tensor] | None = None,
    name: str = "scan",
    tag: str = "",
) -> Tensor:
    """A recurrence over the first dimension (TVM's ``te.scan``), e.g. cumulative sum::

        s_state = te.placeholder((m, n))
        s_init = te.compute((1, n), lambda _, i: X[0, i])
        s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
        Y = te.scan(s_init, s_update, s_state, inputs=[X])

    Row ``t`` of the result is ``s_init[t]`` for ``t < s_init.shape[0]`` and ``s_update[t]``
    after that, where ``s_update`` reads earlier rows through ``s_state``."""

    def one(x: Tensor | Sequence[Tensor], what: str) -> Tensor:
        if isinstance(x, Tensor):
            return x
        if len(x) == 1 and isinstance(x[0], Tensor):
            return x[0]
        raise TEError(f"te.scan(name={name!r}): {what} must be one tensor (one state)")

    ini, upd, state = one(init, "init"), one(update, "update"), one(state_placeholder, "state")
    if not isinstance(state.op, PlaceholderOp):
        raise TEError(f"te.scan(name={name!r}): the state must be a te.placeholder")
    for t, what in ((ini, "init"), (upd, "update")):
        if not isinstance(t.op, ComputeOp):
            raise TEError(f"te.scan(name={name!r}): {what} must be a te.compute")
        if t.ndim != state.ndim or t.ndim == 0:
            raise TEError(
                f"te.scan(name={name!r}): {what} {t.name!r} has shape {_shape_str(t.shape)} "
                f"but the state has {_shape_str(state.shape)}; they need the same rank"
            )
        if t.dtype != state.dtype:
            raise TEError(
                f"te.scan(name={name!r}): {what} {t.name!r} is {t.dtype} but the state is "
                f"{state.dtype}"
            )
    return ScanOp(name, tag, ini, upd, state, inputs or []).output(0)


@dataclass(frozen=True, eq=False, repr=False)
class ThreadAxis(IterVar):
    """A GPU thread axis for ``s[C].bind(ax, te.thread_axis("threadIdx.x"))``."""

    thread_tag: str = ""

    def __repr__(self) -> str:
        return f"thread_axis({self.thread_tag!r})"


def thread_axis(dom: Any = None, tag: str = "", name: str = "") -> ThreadAxis:
    """A thread axis by its tag: ``te.thread_axis("threadIdx.x")`` or, with an extent,
    ``te.thread_axis((0, 32), "threadIdx.x")``."""
    if isinstance(dom, str):
        dom, tag = None, dom
    if tag not in ALL_TAGS:
        raise TEError(f"te.thread_axis: unknown tag {tag!r}; use one of {', '.join(ALL_TAGS)}")
    rng = _as_range(dom, f"te.thread_axis({tag!r})") if dom is not None else Range(
        const(0), SizeVar(tag + ".extent")
    )
    return ThreadAxis(Var(name or tag), rng, IterKind.OPAQUE, tag)


# numpy ufuncs a student reaches for, and the te function that does the same on expressions
_NUMPY_TO_TE = {"exp": "te.exp", "log": "te.log", "sqrt": "te.sqrt", "tanh": "te.tanh",
                "sin": "te.sin", "cos": "te.cos", "abs": "te.abs", "absolute": "te.abs",
                "maximum": "te.max", "minimum": "te.min",
                "floor": "te.floor", "ceil": "te.ceil", "sigmoid": "te.sigmoid",
                "log2": "te.log2", "log10": "te.log10", "exp2": "te.exp2", "erf": "te.erf",
                "round": "te.round", "rint": "te.round", "where": "te.if_then_else",
                "clip": "te.max(te.min(x, hi), lo)"}


def _refuse_numpy_function(err: TypeError, what: str) -> None:
    """A numpy function applied to an expression (``np.exp(A[i])``) fails inside numpy with
    "loop of ufunc does not support argument 0 of type BufferLoad which has no callable exp
    method". Say which te function to use instead."""
    text = str(err)
    if "is symbolic: Python's `if`" in text:  # np.maximum(A[i], 0), max(A[i], 0), np.where
        raise type(err)(
            f"{what}: {text} A numpy function such as np.maximum/np.minimum/np.where, or "
            "Python's max/min, compares its arguments that way: use te.max(a, b), "
            "te.min(a, b) or te.if_then_else(cond, a, b)") from None
    if "ufunc" not in text and "numpy" not in text:
        return
    import re

    found = re.search(r"callable (\w+) method", text) or re.search(r"ufunc '(\w+)'", text)
    fn = found.group(1) if found else None
    te_fn = _NUMPY_TO_TE.get(fn or "", "the te function of the same name (te.exp, te.log, "
                                       "te.sqrt, te.tanh, te.max...)")
    np_name = f"np.{fn}" if fn else "a numpy function"
    raise TEError(
        f"{what}: {np_name} was applied to an expression ({text}); numpy functions work "
        f"on arrays, not on the symbolic expressions inside te.compute. Use {te_fn}, e.g. "
        f"lambda i: {te_fn.split('(')[0]}(A[i])") from None

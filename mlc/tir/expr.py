"""Expressions of the loop IR.

Every node is a small frozen dataclass. Python operators on expressions build new nodes, so
``A[i] + 1`` in a ``te.compute`` lambda is already IR. Because ``==`` builds an ``EQ`` node
(as in TVM), nodes compare and hash by identity; use :func:`mlc.tir.structural_equal` to ask
whether two programs are the same.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar, Union

import numpy as np

from mlc.errors import MLCTypeError, ZeroDivisorError
from mlc.tir import dtype as dt

if TYPE_CHECKING:
    from mlc.tir.stmt import Buffer

ExprLike = Union["PrimExpr", int, float, bool]


if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**kwargs: Any) -> Any:
        return lambda fn: fn


T = TypeVar("T")


@dataclass_transform(frozen_default=True, eq_default=False)
def _node(cls: type[T]) -> type[T]:
    """Frozen dataclass with identity equality/hash (``==`` is an IR operator here); the
    decorator of every IR node, expressions here and statements in stmt.py."""
    return dataclass(frozen=True, eq=False, repr=False)(cls)


class PrimExpr:
    """Base class of scalar (or vector) expressions. ``self.dtype`` is a dtype string."""

    dtype: str

    # -- arithmetic -------------------------------------------------------------------------
    def __add__(self, other: ExprLike) -> PrimExpr:
        return _binary(Add, self, other)

    def __radd__(self, other: ExprLike) -> PrimExpr:
        return _binary(Add, other, self)

    def __sub__(self, other: ExprLike) -> PrimExpr:
        return _binary(Sub, self, other)

    def __rsub__(self, other: ExprLike) -> PrimExpr:
        return _binary(Sub, other, self)

    def __mul__(self, other: ExprLike) -> PrimExpr:
        return _binary(Mul, self, other)

    def __rmul__(self, other: ExprLike) -> PrimExpr:
        return _binary(Mul, other, self)

    def __truediv__(self, other: ExprLike) -> PrimExpr:
        return _true_div(self, other)

    def __rtruediv__(self, other: ExprLike) -> PrimExpr:
        return _true_div(other, self)

    def __floordiv__(self, other: ExprLike) -> PrimExpr:
        return _binary(FloorDiv, self, other)

    def __rfloordiv__(self, other: ExprLike) -> PrimExpr:
        return _binary(FloorDiv, other, self)

    def __mod__(self, other: ExprLike) -> PrimExpr:
        return _binary(FloorMod, self, other)

    def __rmod__(self, other: ExprLike) -> PrimExpr:
        return _binary(FloorMod, other, self)

    def __neg__(self) -> PrimExpr:
        return _binary(Sub, const(0, self.dtype), self)

    # -- comparison ---------------------------------------------------------------------------
    def __lt__(self, other: ExprLike) -> PrimExpr:
        return _binary(LT, self, other)

    def __le__(self, other: ExprLike) -> PrimExpr:
        return _binary(LE, self, other)

    def __gt__(self, other: ExprLike) -> PrimExpr:
        return _binary(GT, self, other)

    def __ge__(self, other: ExprLike) -> PrimExpr:
        return _binary(GE, self, other)

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        return _binary(EQ, self, other)  # type: ignore[arg-type]

    def __ne__(self, other: object) -> Any:  # type: ignore[override]
        return _binary(NE, self, other)  # type: ignore[arg-type]

    def __hash__(self) -> int:
        return id(self)

    # -- logic --------------------------------------------------------------------------------
    def __and__(self, other: ExprLike) -> PrimExpr:
        return _binary(And, self, other)

    def __rand__(self, other: ExprLike) -> PrimExpr:
        return _binary(And, other, self)

    def __or__(self, other: ExprLike) -> PrimExpr:
        return _binary(Or, self, other)

    def __ror__(self, other: ExprLike) -> PrimExpr:
        return _binary(Or, other, self)

    def __invert__(self) -> PrimExpr:
        return Not(self)

    def __bool__(self) -> bool:
        raise MLCTypeError(
            f"the expression `{self}` is symbolic: Python's `if`, `and`, `or` and `not` cannot "
            "look at its value. Use te.if_then_else(cond, a, b), te.all(...), te.any(...), or "
            "the operators &, |, ~ instead."
        )

    def astype(self, dtype: str) -> PrimExpr:
        """Convert to ``dtype`` (``Cast``), e.g. ``A[i].astype("float64")``."""
        dtype = dt.check(dtype)
        if dtype == self.dtype:
            return self
        return Cast(dtype, self)

    def __repr__(self) -> str:
        from mlc.tir.printer import expr_to_str

        return expr_to_str(self)

    __str__ = __repr__


# ---------------------------------------------------------------------------------------------
# leaves


@_node
class Var(PrimExpr):
    """A named variable: a loop variable, a block iteration variable or a symbolic size."""

    name: str
    dtype: str = "int32"


@_node
class SizeVar(Var):
    """A variable known to be >= 0 (``te.var`` for a shape)."""


@_node
class IntImm(PrimExpr):
    """An integer (or bool) constant. Like TVM's, it converts to a Python number:
    ``int(c)``, ``float(c)``, ``bool(c)``, and it is usable wherever Python wants an index
    (``__index__``), so ``np.zeros(A.shape)`` and ``range(A.shape[0])`` work."""

    value: int
    dtype: str = "int32"

    def __int__(self) -> int:
        return self.value

    def __index__(self) -> int:
        return self.value

    def __float__(self) -> float:
        return float(self.value)

    def __bool__(self) -> bool:
        return self.value != 0


@_node
class FloatImm(PrimExpr):
    """A float constant; ``float(c)`` and ``int(c)`` (truncating, as Python's) work."""

    value: float
    dtype: str = "float32"

    def __float__(self) -> float:
        return self.value

    def __int__(self) -> int:
        return int(self.value)

    def __bool__(self) -> bool:
        return self.value != 0.0


@_node
class StringImm(PrimExpr):
    value: str
    dtype: str = "handle"


# ---------------------------------------------------------------------------------------------
# operators


@_node
class Cast(PrimExpr):
    dtype: str
    value: PrimExpr


@_node
class BinaryOp(PrimExpr):
    a: PrimExpr
    b: PrimExpr
    dtype: str = field(default="")

    def __post_init__(self) -> None:
        if not self.dtype:
            object.__setattr__(self, "dtype", self._result_dtype())

    def _result_dtype(self) -> str:
        return self.a.dtype


@_node
class Add(BinaryOp):
    pass


@_node
class Sub(BinaryOp):
    pass


@_node
class Mul(BinaryOp):
    pass


@_node
class Div(BinaryOp):
    """True division of floats; truncated integer division (C's ``/``) of integers."""


@_node
class Mod(BinaryOp):
    """Truncated remainder (C's ``%``); te's ``%`` builds FloorMod instead."""


@_node
class FloorDiv(BinaryOp):
    pass


@_node
class FloorMod(BinaryOp):
    pass


@_node
class Min(BinaryOp):
    pass


@_node
class Max(BinaryOp):
    pass


class CmpOp(BinaryOp):
    def _result_dtype(self) -> str:
        return dt.with_lanes("bool", dt.lanes(self.a.dtype))


@_node
class EQ(CmpOp):
    def __bool__(self) -> bool:
        return _equality_truth(self.a, self.b, "==")


@_node
class NE(CmpOp):
    def __bool__(self) -> bool:
        return not _equality_truth(self.a, self.b, "!=")


def _imm_value(e: PrimExpr) -> int | float | None:
    """The Python value of a constant, looking through the Cast that mixing dtypes adds."""
    while isinstance(e, Cast):
        e = e.value
    if isinstance(e, (IntImm, FloatImm)):
        return e.value
    return None


def _equality_truth(a: PrimExpr, b: PrimExpr, op: str) -> bool:
    """What Python's ``if`` sees in ``a == b`` (an ``EQ`` node).

    * the same node on both sides: True (``x == x``);
    * two constants: their values compare (``A.shape[0] == 4``);
    * two distinct variables: False. Variables have identity semantics, and Python asks this
      question in ``v in [i, j]``, ``list.index(v)`` and other container lookups;
    * anything else (``i == 0``, ``i + 1 == j``) depends on values known only when the
      program runs, so Python cannot decide it: a typed error says what to write instead.
      (TVM answers False here, which silently takes the wrong branch.)
    """
    if a is b:
        return True
    va, vb = _imm_value(a), _imm_value(b)
    if va is not None and vb is not None:
        return va == vb
    if isinstance(a, Var) and isinstance(b, Var):
        return False
    raise MLCTypeError(
        f"`{a} {op} {b}` is a symbolic condition: its value is known only when the program "
        "runs, so Python's `if`/`and`/`or`/`not` cannot decide it. Inside te.compute use "
        f"te.if_then_else({a} {op} {b}, then_value, else_value); to compare constants, "
        "use int(...) on them; to ask whether two expressions are the same program, use "
        "tir.structural_equal(a, b)."
    )


@_node
class LT(CmpOp):
    pass


@_node
class LE(CmpOp):
    pass


@_node
class GT(CmpOp):
    pass


@_node
class GE(CmpOp):
    pass


@_node
class And(BinaryOp):
    pass


@_node
class Or(BinaryOp):
    pass


@_node
class Not(PrimExpr):
    a: PrimExpr
    dtype: str = "bool"


@_node
class Select(PrimExpr):
    """``true_value if condition else false_value``. Only the chosen side is evaluated, so a
    Select may guard an out-of-bounds load (this is what ``te.if_then_else`` builds)."""

    condition: PrimExpr
    true_value: PrimExpr
    false_value: PrimExpr
    dtype: str = field(default="")

    def __post_init__(self) -> None:
        if not self.dtype:
            object.__setattr__(self, "dtype", self.true_value.dtype)


@_node
class Let(PrimExpr):
    var: Var
    value: PrimExpr
    body: PrimExpr
    dtype: str = field(default="")

    def __post_init__(self) -> None:
        if not self.dtype:
            object.__setattr__(self, "dtype", self.body.dtype)


@_node
class Call(PrimExpr):
    """A math intrinsic by name: ``exp log sqrt rsqrt tanh sigmoid fabs pow floor ceil erf
    round exp2 log2 log10 sin cos`` (and ``nearbyint``). Codegen maps names to LLVM intrinsics
    or libm."""

    dtype: str
    op: str
    args: tuple[PrimExpr, ...]


# ---------------------------------------------------------------------------------------------
# memory and vectors


@_node
class BufferLoad(PrimExpr):
    """``buffer[indices]``. After flattening there is one index; a ``Ramp`` index loads a
    vector."""

    buffer: Buffer
    indices: tuple[PrimExpr, ...]
    dtype: str = field(default="")

    def __post_init__(self) -> None:
        if not self.dtype:
            n = max((dt.lanes(i.dtype) for i in self.indices), default=1)
            object.__setattr__(self, "dtype", dt.with_lanes(self.buffer.dtype, n))


@_node
class Ramp(PrimExpr):
    """The vector ``[base, base + stride, ..., base + (lanes - 1) * stride]``."""

    base: PrimExpr
    stride: PrimExpr
    lanes: int
    dtype: str = field(default="")

    def __post_init__(self) -> None:
        if not self.dtype:
            object.__setattr__(self, "dtype", dt.with_lanes(self.base.dtype, self.lanes))


@_node
class Broadcast(PrimExpr):
    """The vector with ``value`` in every one of ``lanes`` lanes."""

    value: PrimExpr
    lanes: int
    dtype: str = field(default="")

    def __post_init__(self) -> None:
        if not self.dtype:
            object.__setattr__(self, "dtype", dt.with_lanes(self.value.dtype, self.lanes))


# ---------------------------------------------------------------------------------------------
# reductions (te level; create_prim_func turns them into blocks with an init)


@_node
class CommReducer(PrimExpr):
    """A commutative reducer: ``result`` combines ``lhs`` (the running value) with ``rhs``
    (the new value); ``identity`` is its start value. ``te.sum`` is
    ``CommReducer(x, y, x + y, 0)``."""

    lhs: Var
    rhs: Var
    result: PrimExpr
    identity: PrimExpr
    name: str = "reducer"
    dtype: str = "handle"


@_node
class Reduce(PrimExpr):
    """``combiner`` applied over ``axis`` to ``source`` (where ``condition`` holds)."""

    combiner: CommReducer
    source: PrimExpr
    axis: tuple[IterVar, ...]
    condition: PrimExpr
    dtype: str = field(default="")

    def __post_init__(self) -> None:
        if not self.dtype:
            object.__setattr__(self, "dtype", self.source.dtype)


# ---------------------------------------------------------------------------------------------
# iteration


@_node
class Range:
    """The half-open interval ``[min, min + extent)``."""

    min: PrimExpr
    extent: PrimExpr

    @staticmethod
    def from_min_extent(min: ExprLike, extent: ExprLike) -> Range:
        return Range(convert(min), convert(extent))

    def __repr__(self) -> str:
        return f"Range({self.min}, {self.extent})"


class IterKind(enum.Enum):
    """What a block iteration variable means: a point of the output (SPATIAL), a step of a
    reduction (REDUCE), or a step that must run in order (ORDERED, used by scan)."""

    SPATIAL = "S"
    REDUCE = "R"
    ORDERED = "O"
    OPAQUE = "X"


@_node
class IterVar:
    """A variable with a domain and a kind: block iteration variables, te axes."""

    var: Var
    dom: Range
    kind: IterKind = IterKind.SPATIAL

    @property
    def name(self) -> str:
        return self.var.name

    def __repr__(self) -> str:
        return f"IterVar({self.var.name}, [{self.dom.min}, {self.dom.extent}), {self.kind.name})"

    if TYPE_CHECKING:  # arithmetic forwards to ``var`` (set below), as in TVM: ``y + ky``
        def __add__(self, other: Any) -> PrimExpr: ...
        def __radd__(self, other: Any) -> PrimExpr: ...
        def __sub__(self, other: Any) -> PrimExpr: ...
        def __rsub__(self, other: Any) -> PrimExpr: ...
        def __mul__(self, other: Any) -> PrimExpr: ...
        def __rmul__(self, other: Any) -> PrimExpr: ...
        def __floordiv__(self, other: Any) -> PrimExpr: ...
        def __rfloordiv__(self, other: Any) -> PrimExpr: ...
        def __mod__(self, other: Any) -> PrimExpr: ...
        def __rmod__(self, other: Any) -> PrimExpr: ...
        def __neg__(self) -> PrimExpr: ...
        def __lt__(self, other: Any) -> PrimExpr: ...
        def __le__(self, other: Any) -> PrimExpr: ...
        def __gt__(self, other: Any) -> PrimExpr: ...
        def __ge__(self, other: Any) -> PrimExpr: ...

    def __hash__(self) -> int:
        return id(self)


def _forward_to_var(name: str) -> Any:
    def op(self: IterVar, *args: Any) -> Any:
        return getattr(self.var, name)(*args)

    return op


# An IterVar in arithmetic stands for its variable, as in TVM: `y + ky` for a reduce axis ky.
for _name in ("__add__", "__radd__", "__sub__", "__rsub__", "__mul__", "__rmul__",
              "__floordiv__", "__rfloordiv__", "__mod__", "__rmod__", "__neg__",
              "__lt__", "__le__", "__gt__", "__ge__"):  # fmt: skip
    setattr(IterVar, _name, _forward_to_var(_name))


# ---------------------------------------------------------------------------------------------
# constructors


def const(value: int | float | bool, dtype: str | None = None) -> PrimExpr:
    """A constant; the dtype defaults to int32, float32 or bool from the Python value."""
    if dtype is None:
        if isinstance(value, bool):
            dtype = "bool"
        elif isinstance(value, int):
            dtype = "int32" if -(2**31) <= value < 2**31 else "int64"
        elif isinstance(value, float):
            dtype = "float32"
        else:
            raise MLCTypeError(f"cannot make a constant of {value!r} ({type(value).__name__})")
    dtype = dt.check(dtype)
    if dt.is_float(dtype):
        return FloatImm(float(value), dtype)
    if dt.is_bool(dtype):
        return IntImm(int(bool(value)), dtype)
    if isinstance(value, float) and not value.is_integer():
        raise MLCTypeError(f"cannot make a {dtype} constant of {value!r}")
    return IntImm(int(value), dtype)


def convert(value: Any, dtype: str | None = None) -> PrimExpr:
    """Python numbers become constants (of ``dtype`` when given); expressions pass through."""
    if isinstance(value, PrimExpr):
        return value
    if isinstance(value, IterVar):
        return value.var
    if isinstance(value, (bool, int, float)):
        return const(value, dtype)
    if isinstance(value, np.generic):
        return const(value.item(), dtype or str(value.dtype))
    raise MLCTypeError(
        f"expected an expression or a number, got {type(value).__name__}: {value!r}"
    )


def _coerce(a: Any, b: Any) -> tuple[PrimExpr, PrimExpr]:
    """Make two operands expressions of one dtype (constants take the other side's dtype)."""
    a = a.var if isinstance(a, IterVar) else a
    b = b.var if isinstance(b, IterVar) else b
    if not isinstance(a, PrimExpr) and isinstance(b, PrimExpr):
        a = _const_like(a, b.dtype)
    elif not isinstance(b, PrimExpr) and isinstance(a, PrimExpr):
        b = _const_like(b, a.dtype)
    else:
        a, b = convert(a), convert(b)
    if a.dtype != b.dtype:
        target = dt.promote(a.dtype, b.dtype)
        a = a if a.dtype == target else _cast_lanes(a, target)
        b = b if b.dtype == target else _cast_lanes(b, target)
    return a, b


def _cast_lanes(e: PrimExpr, target: str) -> PrimExpr:
    n = dt.lanes(target)
    if dt.lanes(e.dtype) == 1 and n > 1:
        scalar = e if e.dtype == dt.element(target) else Cast(dt.element(target), e)
        return Broadcast(scalar, n)
    return Cast(target, e)


def _const_like(value: Any, dtype: str) -> PrimExpr:
    if isinstance(value, float) and not dt.is_float(dtype):
        return const(value, "float32" if dt.bits(dtype) <= 32 else "float64")
    if isinstance(value, bool) and not dt.is_bool(dtype):
        return const(int(value), dt.element(dtype))
    return const(value, dt.element(dtype))


def check_divisor(cls: type[BinaryOp], a: PrimExpr, b: PrimExpr) -> None:
    """Refuse an integer division or modulo by the constant 0 as a user writes it (``A[i] //
    0``, ``te.truncmod(x, 0)``): it has no value for any input. Only what a user builds is
    checked; a pass that folds a divisor to 0 (under a guard that keeps it from running,
    say) leaves it to the run-time check."""
    divisor = b.value if isinstance(b, Broadcast) else b
    if not (isinstance(divisor, IntImm) and divisor.value == 0):
        return
    if not dt.is_int(dt.element(a.dtype)):
        return
    op = {Div: "truncdiv", Mod: "truncmod", FloorDiv: "//", FloorMod: "%"}.get(cls)
    if op is None:
        return
    shown = f"{a} {op} 0" if op in ("//", "%") else f"{op}({a}, 0)"
    raise ZeroDivisorError(
        f"integer division by the constant 0: `{shown}` has no value for any input. Divide "
        "by a non-zero constant, or guard a divisor that may be zero: "
        "te.if_then_else(b != 0, a // b, 0)"
    )


def _binary(cls: type[BinaryOp], a: Any, b: Any) -> PrimExpr:
    x, y = _coerce(a, b)
    check_divisor(cls, x, y)
    if cls in (And, Or):
        if not (dt.is_bool(x.dtype) and dt.is_bool(y.dtype)):
            raise MLCTypeError(
                f"& and | combine conditions (bool), got {x.dtype} and {y.dtype}: `{x}`, `{y}`"
            )
    if cls in (FloorDiv, FloorMod) and dt.is_float(x.dtype):
        if cls is FloorMod:
            raise MLCTypeError(f"% needs integers, got {x.dtype}: `{x} % {y}`")
        return Call(x.dtype, "floor", (Div(x, y),))
    if cls in _ASSOCIATIVE:
        return chain(cls, x, y)
    return cls(x, y)


# ---------------------------------------------------------------------------------------------
# long chains of one associative operator
#
# ``sum(A[i, j] for j in range(10000))`` builds ``((A[i,0] + A[i,1]) + A[i,2]) + ...``, a tree
# 10,000 levels deep that every recursive walk (printer, simplifier, verifier, codegen) would
# overflow Python's stack on. Chains built with the operators are therefore kept shallow as
# they grow: the first RUN terms stay exactly as written (left to right); after that, every
# RUN terms become a unit and units are merged pairwise like a binary counter, so the depth
# is about RUN + 2 * log2(terms / RUN) and building stays linear.
#
# The terms keep their order; only the grouping changes. For integers, min, max, & and |
# that changes nothing. For floats it changes the rounding of long sums and products: the
# result is that of a pairwise (tree) sum of left-to-right runs, whose error bound grows
# like log(n) instead of n for a strict left-to-right sum, so it may differ from numpy's
# left-to-right loop in the last bits (np.sum itself sums pairwise).

_ASSOCIATIVE = (Add, Mul, Min, Max, And, Or)
RUN = 32


@dataclass(frozen=True)
class _ChainInfo:
    """Bookkeeping hidden on the top node of a chain built by :func:`chain`.

    ``units`` are the finished, balanced groups (left to right) with their sizes in units;
    ``run`` counts the terms of the open run on top of them (0: the node is the fold of
    ``units`` itself); ``bottom`` is the first term when no unit exists yet."""

    units: tuple[tuple[PrimExpr, int], ...]
    run: int


def _info(e: PrimExpr, cls: type[BinaryOp], dtype: str) -> _ChainInfo | None:
    if type(e) is not cls or e.dtype != dtype:
        return None
    info: _ChainInfo | None = getattr(e, "_chain", None)
    return info


def _tag(e: PrimExpr, info: _ChainInfo) -> PrimExpr:
    object.__setattr__(e, "_chain", info)
    return e


def chain(cls: type[BinaryOp], x: PrimExpr, y: PrimExpr) -> PrimExpr:
    """``cls(x, y)`` for an associative operator, keeping long chains shallow (see above).
    ``x`` and ``y`` already have one dtype."""
    node = cls(x, y)
    left = _info(x, cls, node.dtype)
    if left is None:
        return _tag(node, _ChainInfo((), 2))
    run = left.run + 1
    if run < RUN:
        return _tag(node, _ChainInfo(left.units, run))
    # The open run is full: take its terms off the top and make them a unit.
    terms = [y]
    cur: PrimExpr = x
    for _ in range(run - 1 - (0 if left.units else 1)):
        terms.append(cur.b)  # type: ignore[attr-defined]
        cur = cur.a  # type: ignore[attr-defined]
    if not left.units:
        terms.append(cur)
    terms.reverse()
    unit = terms[0]
    for t in terms[1:]:
        unit = cls(unit, t)
    # Merge equal-sized units from the right, like carrying in a binary counter.
    units = list(left.units)
    size = 1
    while units and units[-1][1] == size:
        prev, _ = units.pop()
        unit, size = cls(prev, unit), size * 2
    units.append((unit, size))
    top = units[0][0]
    for u, _ in units[1:]:
        top = cls(top, u)
    return _tag(top, _ChainInfo(tuple(units), 0))


def _true_div(a: Any, b: Any) -> PrimExpr:
    x, y = _coerce(a, b)
    if not dt.is_float(x.dtype):
        raise MLCTypeError(
            f"`/` on integers ({x} / {y}) is ambiguous; use `//` for floor division or cast "
            "with .astype(\"float32\") first"
        )
    return Div(x, y)


def is_const_int(e: object, value: int | None = None) -> bool:
    """True when ``e`` is an integer constant (equal to ``value`` when given)."""
    return isinstance(e, IntImm) and (value is None or e.value == value)


def as_int(e: PrimExpr) -> int | None:
    """The Python int of a constant, or None for anything symbolic."""
    return e.value if isinstance(e, IntImm) else None

"""Expressions of the loop IR.

Every node is a small frozen dataclass. Python operators on expressions build new nodes, so
``A[i] + 1`` in a ``te.compute`` lambda is already IR. Because ``==`` builds an ``EQ`` node
(as in TVM), nodes compare and hash by identity; use :func:`mlc.tir.structural_equal` to ask
whether two programs are the same.
"""

from __future__ import annotations

from dataclasses import field
from typing import TYPE_CHECKING, Any, Union

from mlc.errors import MLCTypeError
from mlc.tir import dtype as dt
from mlc.tir.node import _node

if TYPE_CHECKING:
    from mlc.tir.stmt import Buffer

ExprLike = Union["PrimExpr", int, float, bool]


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

    def equal(self, other: object) -> Any:
        """TVM's spelling of ``self == other`` (an ``EQ`` node): ``tx.var.equal(0)``."""
        return _binary(EQ, self, other)  # type: ignore[arg-type]

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
        if not dt.is_bool(self.dtype):
            return no_bitwise("~", self)
        return Not(self)

    # -- bits: refused, with the arithmetic that does the same --------------------------------
    def __lshift__(self, other: ExprLike) -> PrimExpr:
        return no_bitwise("<<", self, other)

    def __rlshift__(self, other: ExprLike) -> PrimExpr:
        return no_bitwise("<<", other, self)

    def __rshift__(self, other: ExprLike) -> PrimExpr:
        return no_bitwise(">>", self, other)

    def __rrshift__(self, other: ExprLike) -> PrimExpr:
        return no_bitwise(">>", other, self)

    def __xor__(self, other: ExprLike) -> PrimExpr:
        return no_bitwise("^", self, other)

    def __rxor__(self, other: ExprLike) -> PrimExpr:
        return no_bitwise("^", other, self)

    def __abs__(self) -> PrimExpr:
        """``abs(x)``: ``fabs`` for floats, a Select for signed integers (as ``te.abs``); a
        constant's absolute value for a constant (``abs(IntImm(-3))`` is ``IntImm(3)``)."""
        if isinstance(self, (IntImm, FloatImm)):
            return type(self)(abs(self.value), self.dtype)  # type: ignore[arg-type]
        if dt.is_float(dt.element(self.dtype)):
            return Call(self.dtype, "fabs", (self,))
        if dt.is_uint(self.dtype) or dt.is_bool(self.dtype):
            return self
        return Select(self < 0, -self, self)

    def __pow__(self, other: ExprLike) -> PrimExpr:
        raise MLCTypeError(
            f"`({self}) ** {other}`: a tensor expression has no `**`; write te.pow(x, y) "
            "(floats) or multiply, e.g. x * x"
        )

    __rpow__ = __pow__

    def _symbolic(self, what: str) -> MLCTypeError:
        return MLCTypeError(
            f"{what}(`{self}`): the expression is symbolic, its value is known only when the "
            "program runs. Convert inside the program with x.astype(\"int32\") / "
            "x.astype(\"float32\"), and round with te.round(x)"
        )

    def __int__(self) -> int:
        raise self._symbolic("int")

    def __float__(self) -> float:
        raise self._symbolic("float")

    def __round__(self, ndigits: int | None = None) -> PrimExpr:
        raise self._symbolic("round")

    def __bool__(self) -> bool:
        raise MLCTypeError(
            f"the expression `{self}` is symbolic: Python's `if`, `and`, `or` and `not` cannot "
            "look at its value. Use te.if_then_else(cond, a, b), te.all(...), te.any(...), or "
            "the operators &, |, ~ instead."
        )

    def astype(self, dtype: str) -> PrimExpr:
        """Convert to ``dtype`` (``Cast``), e.g. ``A[i].astype("float64")``.

        A float becomes an integer by truncation toward zero; past either end of the
        integer type's range it becomes that end (``300.0`` -> ``127`` for int8), and NaN
        becomes 0 (:mod:`mlc.tir.float_int`; numpy's answer there depends on the platform).
        An integer becomes a narrower integer by wrapping, as in numpy."""
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
# the rest of the expression API lives beside this module; imported last, since both build on
# the node classes above (and the operators of PrimExpr call into expr_ops when used)

from mlc.tir.expr_ops import (  # noqa: E402, F401
    RUN,
    _binary,
    _coerce,
    _equality_truth,
    _imm_value,
    _true_div,
    as_int,
    chain,
    check_divisor,
    check_int_fits,
    conjuncts,
    const,
    convert,
    is_const_int,
    no_bitwise,
)
from mlc.tir.iter_var import IterKind, IterVar, Range  # noqa: E402, F401

"""The op registry: what the graph level knows about each operator.

Every op is registered once with

* its :class:`OpPattern`, the fusion kind the TVM paper names (the fusion pass reads only this),
* a shape/dtype inference function, run when a node is made, so a mismatch is reported at the
  line of the user's code that made it,
* a numpy reference implementation (used by constant folding, by the reference executor, and
  by the debug executor that checks every fused group),
* the name of its te computation in :mod:`mlc.topi` (used when a fused group is lowered).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mlc.errors import GraphError


class OpPattern(enum.IntEnum):
    """How an op may fuse. Ordered: a larger value is harder to fuse (TVM's numbering).

    ELEMWISE              out[i] = f(in[i]) for every input of the output's shape (relu, add of
                          same-shape tensors)
    BROADCAST             out[i, j] = f(a[i, j], b[j]): inputs indexed by a subset of the output's
                          axes (bias_add, add with numpy broadcasting)
    INJECTIVE             each output element is a function of one input element, any index map
                          (reshape, transpose, pad, concatenate)
    COMM_REDUCE           a commutative reduction (sum, max over axes)
    OUT_ELEMWISE_FUSABLE  a complex op whose output can take an elementwise epilogue (dense,
                          conv2d): it anchors a fused group
    TUPLE                 makes or takes apart tuples
    OPAQUE                never fused (sorting, control flow, anything we cannot see through)
    """

    ELEMWISE = 0
    BROADCAST = 1
    INJECTIVE = 2
    COMM_REDUCE = 3
    OUT_ELEMWISE_FUSABLE = 4
    TUPLE = 7
    OPAQUE = 8


@dataclass(frozen=True)
class TensorType:
    """The static type of a graph value: a shape of ints and a dtype string."""

    shape: tuple[int, ...]
    dtype: str = "float32"

    def __str__(self) -> str:
        return f"{self.shape} {self.dtype}"

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * np.dtype(self.dtype).itemsize


InferFn = Callable[[Sequence[TensorType], dict[str, Any]], TensorType]
RefFn = Callable[..., np.ndarray]


@dataclass(frozen=True, eq=False)
class OpDef:
    """One registered operator. ``topi`` is the name of its compute in :mod:`mlc.topi`; it is
    called as ``topi.<name>(*te_tensors, **attrs)``."""

    name: str
    pattern: OpPattern
    infer: InferFn
    ref: RefFn
    topi: str | None = None
    num_inputs: int | None = None  # None: variadic

    def __repr__(self) -> str:
        return f"OpDef({self.name}, {self.pattern.name})"


_REGISTRY: dict[str, OpDef] = {}


def register_op(
    name: str,
    pattern: OpPattern,
    infer: InferFn,
    ref: RefFn,
    topi: str | None = None,
    num_inputs: int | None = None,
) -> OpDef:
    """Register an operator (names are unique; registering twice replaces, for notebooks)."""
    op = OpDef(name, pattern, infer, ref, topi, num_inputs)
    _REGISTRY[name] = op
    return op


def get_op(name: str) -> OpDef:
    """The registered op called ``name``; a :class:`GraphError` lists the known ones if absent."""
    try:
        return _REGISTRY[name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY))
        raise GraphError(f"no op named {name!r} is registered; known ops: {known}") from None


def list_ops() -> list[OpDef]:
    """Every registered op, sorted by name."""
    return [_REGISTRY[k] for k in sorted(_REGISTRY)]

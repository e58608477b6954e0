"""Tensor expressions (TVM's ``te``): describe *what* to compute, index by index.

    from mlc import te
    n = te.var("n")
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    func = te.create_prim_func([A, B, C])     # the loop program, printable and schedulable
"""

from mlc.te.intrin import (
    abs,
    all,
    any,
    atan,
    ceil,
    const,
    cos,
    erf,
    exp,
    exp2,
    expm1,
    floor,
    floordiv,
    floormod,
    if_then_else,
    log,
    log1p,
    log2,
    log10,
    max_value,
    min_value,
    nearbyint,
    pow,
    round,
    rsqrt,
    sigmoid,
    sin,
    sqrt,
    tan,
    tanh,
    trunc,
    truncdiv,
    truncmod,
)
from mlc.te.prim_func import create_prim_func
from mlc.te.reduce import comm_reducer, max, min, sum
from mlc.te.tensor import (
    ComputeOp,
    ExternOp,
    Operation,
    PlaceholderOp,
    ScanOp,
    Tensor,
    ThreadAxis,
    compute,
    extern,
    placeholder,
    reduce_axis,
    scan,
    size_var,
    thread_axis,
    var,
)

__all__ = [
    "abs", "all", "any", "atan", "ceil", "const", "cos", "erf", "exp", "exp2", "expm1",
    "floor", "floordiv", "floormod", "if_then_else", "log", "log2", "log10", "log1p",
    "max_value", "min_value", "nearbyint", "pow", "round", "rsqrt", "sigmoid", "sin", "sqrt",
    "tan", "tanh", "trunc", "truncdiv", "truncmod",
    "create_prim_func", "comm_reducer", "max", "min", "sum", "ComputeOp", "Operation",
    "PlaceholderOp", "ScanOp", "Tensor", "ThreadAxis", "compute", "placeholder", "reduce_axis",
    "scan", "size_var", "thread_axis", "var", "ExternOp", "extern",
]

from mlc.te.schedule import Schedule, Stage, create_schedule  # noqa: E402
from mlc.te.tensor_intrin import decl_tensor_intrin, hardware_intrin  # noqa: E402

__all__ += ["Schedule", "Stage", "create_schedule", "decl_tensor_intrin", "hardware_intrin"]

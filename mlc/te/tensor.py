"""Tensors and the operations that produce them (re-exported from where they live).

=============================  ==============================================================
:mod:`mlc.te.operation`        ``Tensor`` and the operations: ``PlaceholderOp``, ``ComputeOp``,
                               ``ScanOp``, ``ExternOp``
:mod:`mlc.te.constructors`     ``var``, ``reduce_axis``, ``placeholder``, ``compute``, ``scan``,
                               ``thread_axis``
:mod:`mlc.te.external`           ``extern``: a stage computed by a call (a packed function)
:mod:`mlc.te.broadcast`        ``A + B`` on whole tensors, numpy broadcasting
=============================  ==============================================================

    n = te.var("n")
    A = te.placeholder((n,), name="A")            # an input
    B = te.compute((n,), lambda i: A[i] * 2, name="B")
    B.op.input_tensors   # [A]
"""

from mlc.te.broadcast import broadcast_op
from mlc.te.constructors import (
    ThreadAxis,
    compute,
    is_reduce_var,
    placeholder,
    reduce_axis,
    scan,
    size_var,
    thread_axis,
    var,
)
from mlc.te.external import extern
from mlc.te.operation import (
    ComputeOp,
    ExternOp,
    Operation,
    PlaceholderOp,
    ScanOp,
    Tensor,
    tensor_of,
    tensors_read,
)

__all__ = [
    "broadcast_op", "ThreadAxis", "compute", "is_reduce_var", "placeholder", "reduce_axis",
    "scan", "size_var", "thread_axis", "var", "extern", "ComputeOp", "ExternOp", "Operation",
    "PlaceholderOp", "ScanOp", "Tensor", "tensor_of", "tensors_read",
]

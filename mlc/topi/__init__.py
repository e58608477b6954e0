"""The operator library: each operator as a te computation, plus default CPU schedules.

    from mlc import te, topi
    x = te.placeholder((1, 64), name="x"); w = te.placeholder((128, 64), name="w")
    y = topi.nn.relu(topi.nn.dense(x, w))
    sch = topi.default_schedule([x, w, y])      # a tir.Schedule, tiled/vectorized/parallel
"""

from mlc.topi import nn
from mlc.topi.elemwise import (
    abs,
    add,
    copy,
    divide,
    erf,
    exp,
    gelu,
    log,
    maximum,
    minimum,
    multiply,
    negative,
    power,
    relu,
    sigmoid,
    sqrt,
    subtract,
    tanh,
)
from mlc.topi.reduction import max, mean, min, sum
from mlc.topi.schedule import default_schedule
from mlc.topi.transform import concatenate, flatten, pad, reshape, transpose

# ruff: noqa: F401

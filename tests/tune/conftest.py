"""Templates shared by the tuning tests: a small matmul with a few knobs."""

from __future__ import annotations

import pytest

from mlc import te, tune


@tune.template("test_matmul")
def matmul(n: int, dtype: str):
    A = te.placeholder((n, n), name="A", dtype=dtype)
    B = te.placeholder((n, n), name="B", dtype=dtype)
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = C.op.axis
    cfg = tune.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    cfg.define_knob("vec", [0, 1])
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    (kk,) = C.op.reduce_axis
    s[C].reorder(yo, xo, kk, yi, xi)
    if cfg["vec"].val:
        s[C].vectorize(xi)
    return s, [A, B, C]


@pytest.fixture
def matmul_task():
    return tune.create_task("test_matmul", args=(16, "float32"))

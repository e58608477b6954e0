"""A small tuning template: a square matmul with two split knobs and a vectorize knob.

The AutoTVM call shape of notebook 07, importable wherever a template is needed by name (the
tuning tests, the Dask benchmark, a worker process that must find the template)::

    from mlc import tune
    from mlc.examples.tuning import MATMUL
    task = tune.create_task(MATMUL, args=(64, "float32"))
"""

from __future__ import annotations

from typing import Any

from mlc import te, tune

MATMUL = "mlc.examples.matmul"


@tune.template(MATMUL)
def matmul(n: int, dtype: str) -> Any:
    """``C = A @ B`` (n x n) with knobs ``tile_y``, ``tile_x`` (two-way splits) and ``vec``."""
    A = te.placeholder((n, n), name="A", dtype=dtype)
    B = te.placeholder((n, n), name="B", dtype=dtype)
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    op: Any = C.op  # a ComputeOp: its axis and reduce_axis
    y, x = op.axis
    cfg: Any = tune.get_config()  # knob entities, typed loosely as in AutoTVM
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    cfg.define_knob("vec", [0, 1])
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    (kk,) = op.reduce_axis
    s[C].reorder(yo, xo, kk, yi, xi)
    if cfg["vec"].val:
        s[C].vectorize(xi)
    return s, [A, B, C]

"""Trusted checks of a2_gemm_schedule: the reference computation and schedule.

The student's schedule trace is replayed on ``make_func(n)`` in a separate process and timed
interleaved against ``reference_schedule``. ``--size N`` (``$AUTOGRADER_SIZE``) changes ``n``
for quick runs.
"""

import numpy as np

from autograder.cases import TraceCase


def make_func(n):
    from mlc import te

    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def reference_schedule(sch):
    """The classic first schedule: 32x32 tiles, k between the tile loops, vectorize, parallel."""
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 32])
    j0, j1 = sch.split(j, factors=[None, 32])
    sch.reorder(i0, j0, k, i1, j1)
    sch.vectorize(j1)
    sch.parallel(i0)


def reference(A, B, n):
    return (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)


def inputs(n):
    return {"A": ((n, n), "float32"), "B": ((n, n), "float32")}


CASES = [
    TraceCase("gemm_correct", make_func, reference_schedule, reference, inputs,
              params={"n": 1024}, speed=False),
    TraceCase("gemm_speed", make_func, reference_schedule, reference, inputs,
              params={"n": 1024}, speed=True, floor=0.25),
]

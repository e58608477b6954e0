"""A config index that numpy computed (np.argmax, a permutation) works like an int."""

from __future__ import annotations

import numpy as np

from mlc import te, tune
from mlc.tune.features import itervar_features
from mlc.tune.tuner import TemplateSpace


@tune.template("test_numpy_index_matmul")
def _matmul(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    cfg = tune.get_config()
    cfg.define_split("tile_x", C.op.axis[1], num_outputs=2)
    cfg["tile_x"].apply(s, C, C.op.axis[1])
    return s, [A, B, C]


def test_a_numpy_index_builds_the_same_program_and_features():
    task = tune.create_task("test_numpy_index_matmul", args=(16,))
    space = TemplateSpace(task)
    index = np.argmax([0.0, 0.0, 3.0])  # numpy's int64
    assert str(space.build(index)) == str(space.build(2))
    assert itervar_features(space.build(index)) == itervar_features(space.build(2))

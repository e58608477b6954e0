"""compute_at into the same consumer twice, the second time deeper: the producer is computed
once per iteration of the new location, never inside a copy of a shared loop."""

import sys
from pathlib import Path

import numpy as np

from mlc import tir
from mlc.testing.interpreter import eval_prim_func

sys.path.insert(0, str(Path(__file__).parent))
from test_random_schedules import _conv2d  # noqa: E402


def test_second_compute_at_deeper_keeps_the_result() -> None:
    case = _conv2d()
    sch = tir.Schedule(case.func)
    p, y = sch.get_block("P"), sch.get_block("Y")
    sch.compute_at(p, sch.get_loops(y)[0])
    sch.compute_at(p, sch.get_loops(y)[1])
    text = str(sch.mod)
    assert text.count("for f in range(3)") == 1, text
    out = np.zeros(case.out_shape, "float32")
    eval_prim_func(sch.mod, *case.inputs, out)
    np.testing.assert_allclose(out, case.expected, rtol=1e-4, atol=1e-5)

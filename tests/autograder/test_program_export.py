"""te cases are graded on the exported program, run by the grader on inputs the kernel never saw.

The attacks: an array where a program is expected (a kernel that computes numpy's answer and
fakes its cells' replies), a program with the kernel's expected values baked in, a program of
the wrong signature, text that is no program, and a huge program.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from autograder.cases import TECase, run_plain
from autograder.harness import te_program
from autograder.program import check_program
from mlc import te

REPO = Path(__file__).resolve().parents[2]
GRADER = REPO / "instructor" / "a1_tensor_expressions" / "grader.py"


def softmax(x):
    n, m = x.shape
    k = te.reduce_axis((0, m), name="k")
    mx = te.compute((n,), lambda i: te.max(x[i, k], axis=k), name="mx")
    e = te.compute((n, m), lambda i, j: te.exp(x[i, j] - mx[i]), name="e")
    k2 = te.reduce_axis((0, m), name="k2")
    s = te.compute((n,), lambda i: te.sum(e[i, k2], axis=k2), name="s")
    return te.compute((n, m), lambda i, j: e[i, j] / s[i], name="y")


def ref_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


CASE = TECase("softmax_b", inputs={"x": ((2, 9), "float32")}, reference=ref_softmax)


def program(fn) -> str:
    arrays = list(CASE.make_inputs().values())
    return te_program(fn, arrays, ["x"], {}).script()


def test_the_right_program_is_correct_on_fresh_inputs():
    assert check_program(CASE, program(softmax), seed=1) == (True, "correct on fresh inputs")
    assert check_program(CASE, program(softmax))[0]  # a random seed


def test_expected_values_baked_into_the_program_fail_on_fresh_inputs():
    (x,) = CASE.make_inputs().values()
    answer = ref_softmax(x)

    def baked(x):
        return te.compute(x.shape, lambda i, j: te.if_then_else(
            i == 0, _pick(answer[0], j), _pick(answer[1], j)), name="y")

    text = program(baked)
    ok_kernel, _ = check_program(CASE, text, seed=0)
    ok_fresh, message = check_program(CASE, text, seed=12345)
    assert ok_fresh is False and message.startswith("on fresh inputs:")
    assert ok_kernel is True  # it *would* have passed on the inputs the kernel saw


def _pick(row, j):
    out = te.const(0.0)
    for k, v in enumerate(row):
        out = te.if_then_else(j == k, float(v), out)
    return out


@pytest.mark.parametrize("text, words", [
    ("print('hi')", "cannot be read"),
    ("import os\nos.system('touch /tmp/pwned')", "cannot be read"),
    ("@T.prim_func\ndef main(A: T.Buffer((2, 9), 'float32')):\n    T.evaluate(0)\n",
     "takes 1 arrays"),
    ("@T.prim_func\ndef main(A: T.Buffer((9, 2), 'float32'), B: T.Buffer((2, 9), 'float32')):"
     "\n    T.evaluate(0)\n", "parameter 'A' is float32[9, 2]"),
    ("#" * (5 << 20), "MiB"),
    ("@T.prim_func\ndef main(A: T.Buffer((2, 9), 'float32'), B: T.Buffer((2, 9), 'float32')):"
     "\n    T.evaluate(T.call_extern('int32', 'getpid'))\n", "calls code outside it"),
    ("@T.prim_func\ndef main(A: T.Buffer((2, 9), 'float32'), B: T.Buffer((2, 9), 'float32')):"
     "\n    T.call_packed('tvm.contrib.cblas.matmul', T.buffer_arg(A[0, 0], 2, 9))\n",
     "calls code outside it (call_packed)"),
    ("@T.prim_func\ndef main(A: T.Buffer((2, 9), 'float32'), c: T.float32, "
     "B: T.Buffer((2, 9), 'float32')):\n    for i, j in T.grid(2, 9):\n"
     "        B[i, j] = A[i, j] + c\n", "scalar parameter(s) (c: float32)"),
])
def test_what_is_not_the_right_program_gets_a_reason(text, words):
    ok, message = check_program(CASE, text, seed=3)
    assert not ok and words in message, message
    assert not Path("/tmp/pwned").exists()


def test_an_array_where_the_program_is_expected_scores_nothing(tmp_path):
    exports = tmp_path / "exports"
    exports.mkdir()
    np.save(exports / "softmax_a.npy", np.zeros((7, 33), "float32"))
    case = TECase("softmax_a", inputs={"x": ((7, 33), "float32")}, reference=ref_softmax)
    fraction, message = case.check_export(exports, grader_path=GRADER, run_trusted=run_plain,
                                          workdir=tmp_path)
    assert fraction == 0.0 and "an array was exported where the program was expected" in message


def test_the_grader_runs_the_exported_program_in_its_own_process(tmp_path):
    exports = tmp_path / "exports"
    exports.mkdir()
    x = np.zeros((7, 33), "float32")
    text = te_program(softmax, [x], ["x"], {}).script()
    (exports / "softmax_a.json").write_text(json.dumps({"program": text}))
    case = TECase("softmax_a", inputs={"x": ((7, 33), "float32")}, reference=ref_softmax)
    fraction, message = case.check_export(exports, grader_path=GRADER, run_trusted=run_plain,
                                          workdir=tmp_path)
    assert (fraction, message) == (1.0, "correct on fresh inputs")

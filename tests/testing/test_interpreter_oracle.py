"""The interpreter (the tests' oracle) agrees with compiled code: reductions over nothing run
their init (a sum of no terms is 0, a max its identity, as in numpy), and programs nested
past Python's recursion limit."""

import numpy as np
import pytest

import mlc
from mlc import te
from mlc.testing.interpreter import eval_prim_func


def _row_reduction(kind: str):
    n, m = te.var("n"), te.var("m")
    A = te.placeholder((n, m), "float32", name="A")
    k = te.reduce_axis((0, m), "k")
    reducer = {"sum": te.sum, "max": te.max, "min": te.min}[kind]
    B = te.compute((n,), lambda i: reducer(A[i, k], axis=k), name="B")
    return te.create_prim_func([A, B])


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
def test_an_empty_reduction_runs_its_init_in_the_interpreter_as_in_compiled_code(kind):
    func = _row_reduction(kind)
    a = np.zeros((3, 0), "float32")
    interpreted = np.full(3, 7.0, "float32")
    compiled = np.full(3, 7.0, "float32")
    eval_prim_func(func, a, interpreted)
    mlc.build(func, target="llvm")(a, compiled)
    np.testing.assert_array_equal(interpreted, compiled)
    if kind == "sum":
        np.testing.assert_array_equal(interpreted, a.sum(axis=1))
    else:  # the identity of max / min: the lowest / highest float32
        expected = np.finfo("float32").min if kind == "max" else np.finfo("float32").max
        assert interpreted[0] in (expected, -np.inf if kind == "max" else np.inf)


def test_a_non_empty_reduction_is_unchanged():
    func = _row_reduction("sum")
    a = np.random.default_rng(0).random((4, 5), dtype="float32")
    out = np.full(4, 7.0, "float32")
    eval_prim_func(func, a, out)
    np.testing.assert_allclose(out, a.sum(axis=1), rtol=1e-6)


def test_the_interpreter_runs_a_lowered_chain_of_a_thousand_stages():
    # 1000 nested allocations: the translation ran out of Python's recursion depth
    A = te.placeholder((4,), name="A")
    stages = [A]
    for k in range(1000):
        stages.append(te.compute((4,), lambda i, p=stages[-1]: p[i] + 0.002, name=f"B{k}"))
    lowered = mlc.lower(te.create_prim_func([A, stages[-1]]))
    out = np.zeros(4, "float32")
    eval_prim_func(lowered, np.zeros(4, "float32"), out)
    np.testing.assert_allclose(out, 2.0, rtol=1e-4)


def test_loops_nested_past_what_python_can_indent_are_an_interpreter_error():
    from mlc import tir
    from mlc.errors import InterpreterError

    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] + 1.0, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    (i,) = sch.get_loops(sch.get_block("B"))
    loops = sch.split(i, [1] * 49 + [None])  # 100 loops in two splits (at most 64 each)
    sch.split(loops[-1], [1] * 50 + [None])  # (the generator raised SyntaxError)
    with pytest.raises(InterpreterError, match="at most 90 nested loops"):
        eval_prim_func(sch.mod, np.zeros(8, "float32"), np.zeros(8, "float32"))

"""Oracles for tests and students: compute what a program should compute, simply.

* ``evaluate(tensors, inputs, sizes=None) -> {name: array}`` computes tensor expressions
  (``te.compute``/``te.scan``) directly with numpy, vectorised over index grids.
* ``eval_prim_func(func, *arrays)`` runs a PrimFunc (block form or lowered form) with a
  plain Python interpreter, writing outputs in place; ``interpreter_source(func)`` shows the
  Python it runs.
* ``random_arrays(func, sizes)`` makes one random array per parameter;
  ``assert_same_result(expected_func, actual_func, sizes)`` runs two PrimFuncs on the same
  random arrays and compares every array afterwards (a schedule or pass kept the meaning).
"""

from mlc.testing.compare import assert_same_result, random_arrays
from mlc.testing.interpreter import InterpreterError, eval_prim_func
from mlc.testing.interpreter import source as interpreter_source
from mlc.testing.reference import EvaluationError, evaluate

__all__ = [
    "EvaluationError",
    "assert_same_result",
    "random_arrays",
    "InterpreterError",
    "eval_prim_func",
    "evaluate",
    "interpreter_source",
]

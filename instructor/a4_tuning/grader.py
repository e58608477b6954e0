"""Trusted checks of a4_tuning: the computation, the baseline schedule, the budget rule.

The student's best schedule is exported as a trace; it is replayed in a separate process on
``make_func(n)``, checked against numpy and timed interleaved with ``baseline_schedule``.
``--size N`` (``$AUTOGRADER_SIZE``) changes ``n`` for quick runs; the notebook reads the
same variable, so the trace's tile sizes fit.
"""

import json
from dataclasses import dataclass

import numpy as np

from autograder.cases import TraceCase


def make_func(n):
    from mlc import te

    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def baseline_schedule(sch):
    """The first thing to try by hand: loop order i, k, j (unit stride in B and C)."""
    i, j, k = sch.get_loops(sch.get_block("C"))
    sch.reorder(i, k, j)


def reference(A, B, n):
    return (A.astype(np.float64) @ B.astype(np.float64)).astype(np.float32)


def inputs(n):
    return {"A": ((n, n), "float32"), "B": ((n, n), "float32")}


def count_samples(text):
    """How many sampling instructions (the search space's coordinates) a trace holds."""
    try:
        insts = json.loads(text)
    except (TypeError, ValueError, RecursionError):  # RecursionError: nested too deeply
        return 0
    if not isinstance(insts, list):
        return 0
    return sum(1 for inst in insts
               if isinstance(inst, list) and inst and str(inst[0]).startswith("sample_"))


@dataclass
class TunedTraceCase(TraceCase):
    """A TraceCase whose trace must come from a search space: at least ``min_samples``
    sampling instructions (``sch.sample_perfect_tile`` / ``sch.sample_categorical``)."""

    min_samples: int = 0

    def _space_problem(self, text):
        found = count_samples(text)
        if found < self.min_samples:
            return (f"the schedule has {found} sampling decision(s); a search space needs at "
                    f"least {self.min_samples} (sch.sample_perfect_tile / sample_categorical)")
        return None

    def check_local(self, value):
        problem = self._space_problem(str(value))
        return (0.0, problem) if problem else super().check_local(value)

    def check_export(self, exports, **kw):
        path = exports / f"{self.id}.json"
        if path.is_file():
            try:
                problem = self._space_problem(json.loads(path.read_text())["text"])
            except (ValueError, KeyError, TypeError, RecursionError):
                problem = None  # the parent reports the unreadable export
            if problem:
                return 0.0, problem
        return super().check_export(exports, **kw)


CASES = [
    TunedTraceCase("tuned_correct", make_func, baseline_schedule, reference, inputs,
                   params={"n": 256}, speed=False, min_samples=2),
    TunedTraceCase("tuned_speed", make_func, baseline_schedule, reference, inputs,
                   params={"n": 256}, speed=True, floor=0.5, min_samples=2),
]

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


FACTOR = 1.25
"""How much faster than the baseline the tuned schedule must be before it earns speed points:
the baseline itself (ratio 1) earns none; full points from FULL times its speed."""
FULL = 2.0


def _instructions(text):
    try:
        insts = json.loads(text)
    except (TypeError, ValueError, RecursionError):  # RecursionError: nested too deeply
        return []
    if not isinstance(insts, list):
        return []
    return [inst for inst in insts if isinstance(inst, list) and len(inst) == 3]


def _references(value, found):
    """Every ``$name`` (a random variable: loop, block or sampled value) inside ``value``."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str) and item.startswith("$"):
            found.add(item[1:])
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
    return found


READ_ANNOTATIONS = frozenset()
"""Annotation keys whose value changes the compiled program. mlc's lowering and code
generator read none today (``annotate`` only labels a loop), so a sampled value that only
goes into an annotation changes nothing: two sampled decisions annotated onto a loop beside a
fixed, hand-tuned schedule would pass for a search space."""


def _takes_effect(kind, args):
    """Whether an instruction's arguments can change the program (an annotation only when
    the compiler reads its key)."""
    if kind in ("annotate", "unannotate"):
        return isinstance(args, dict) and args.get("ann_key") in READ_ANNOTATIONS
    return not str(kind).startswith("sample_")


def sampled_decisions(text):
    """The trace's sampling instructions, each as ``(position, kind, used)``: ``used`` is
    whether a later instruction that changes the program takes one of its values (a
    ``split``'s factors, say), i.e. whether the decision reaches a loop or a block at all."""
    insts = _instructions(text)
    out = []
    later = set()  # names taken by the instructions after the one looked at (one backward walk:
    for pos in range(len(insts) - 1, -1, -1):  # a trace of 100k samples must not be quadratic)
        kind, args, outputs = insts[pos]
        if str(kind).startswith("sample_"):
            names = {o for o in outputs if isinstance(o, str)} if isinstance(outputs, list) \
                else set()
            out.append((pos, str(kind), bool(names & later)))
        elif _takes_effect(str(kind), args):
            _references(args, later)
    return out[::-1]


def count_samples(text):
    """How many sampling decisions (the search space's coordinates) of a trace reach a loop or
    block; one that reaches nothing does not count."""
    return sum(1 for _, _, used in sampled_decisions(text) if used)


@dataclass
class TunedTraceCase(TraceCase):
    """A TraceCase whose trace must come from a search space: at least ``min_samples``
    sampling instructions (``sch.sample_perfect_tile`` / ``sch.sample_categorical``), each
    of which reaches a loop or a block (two unused ``sample_categorical`` calls beside the
    untuned baseline got 6/6)."""

    min_samples: int = 0

    def _space_problem(self, text):
        decisions = sampled_decisions(text)
        unused = [f"#{pos} ({kind})" for pos, kind, used in decisions if not used]
        if unused:
            return (f"the sampled decision{'s' if len(unused) > 1 else ''} "
                    f"{', '.join(unused)} reach{'' if len(unused) > 1 else 'es'} no loop or "
                    "block: no schedule primitive that changes the program takes the sampled "
                    "value (pass it to split's factors; an annotation the compiler does not "
                    "read changes nothing), so changing the decision changes nothing; a "
                    "search space samples only what it uses")
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
                   params={"n": 256}, speed=True, floor=FACTOR, full=FULL, min_samples=2),
]

import sys; sys.path.insert(0, __import__("os").path.dirname(__file__))
from nbtools import *
H = "### BEGIN HIDDEN TESTS\nfrom autograder import harness as grading  # noqa: E402, I001\n"; E = "\n### END HIDDEN TESTS"
cells = [
md("""
# Assignment 4: design a search space, let the tuner find the schedule

In assignment 2 you picked every tile size by hand. Here you write a **search space**
instead: a schedule function that *samples* its tile sizes (`sch.sample_perfect_tile`) and
choices (`sch.sample_categorical`). `mlc.tune.tune_tir` measures a few points of your space
(the budget: `TRIALS` measurements) and returns the fastest schedule it found.

The operator: `C = A @ B`, all `(N, N)` float32, `N = 256` (the grader may use a smaller `N`).

How it is graded (the grader replays your best schedule's trace in a clean process):
* **a real space, correct (2 points)**: the best schedule has at least two sampling
  decisions, every one of which reaches a loop or block (its value goes into a `split`'s
  factors: a decision nothing uses, or only an annotation, is not a coordinate of a space),
  and it computes `A @ B`;
* **speed (4 points)**: it is timed interleaved with the **baseline** — the loop order
  `i, k, j`, no other change — measured in the same run, on one core (CPU time). With
  `ratio = t_baseline / t_yours`, you get `clip((ratio - 1.25) / 0.75, 0, 1)` of the points:
  nothing until you beat the baseline by 1.25x (the baseline itself earns nothing), full
  points from 2x.

A good space is small and holds good schedules: with 8 trials the tuner cannot explore a
space of millions of points, so decide the structure (order, vectorize, parallel) yourself
and sample only the numbers that matter.
"""),
code("""
import json
import os

import numpy as np

import mlc
from mlc import te, tir, tune

N = int(os.environ.get("AUTOGRADER_SIZE", "256"))  # the grader may use a smaller N
TRIALS = 8  # the budget: measurements the tuner may make
A = te.placeholder((N, N), name="A")
B = te.placeholder((N, N), name="B")
k = te.reduce_axis((0, N), name="k")
C = te.compute((N, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
func = te.create_prim_func([A, B, C])
"""),
md("""
## Your search space

Write `space(sch)`: start from `i, j, k = sch.get_loops(sch.get_block("C"))`, split loops
with sampled factors, e.g.

```python
i0, i1 = sch.split(i, factors=sch.sample_perfect_tile(i, n=2, max_innermost_factor=8))
```

then reorder (the reduction between the tile loops), vectorize the innermost loop over `j`,
unroll a small loop over `i`. `sch.parallel` earns nothing in the grade: the grader times
both schedules on one core, by the CPU time they cost, so that a busy grading machine cannot
move your points.
`tune.SampledSpace(func, space).size` tells how many points your space has.
"""),
code("""
def space(sch):
    ### BEGIN SOLUTION
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=sch.sample_perfect_tile(i, n=2, max_innermost_factor=8))
    j0, j1 = sch.split(j, factors=sch.sample_perfect_tile(j, n=2, max_innermost_factor=64))
    k0, k1 = sch.split(k, factors=sch.sample_perfect_tile(k, n=2, max_innermost_factor=8))
    sch.reorder(i0, j0, k0, k1, i1, j1)
    sch.vectorize(j1)
    sch.unroll(i1)  # i1 rows of C accumulate in registers
    ### END SOLUTION


print("points in the space:", tune.SampledSpace(func, space).size)
"""),
md("""
## Tune (do not change the budget)

`tune_tir` measures in worker processes, checks every candidate against the unscheduled
program and keeps the fastest. `best.trace` is what the grader replays.
"""),
code("""
best = tune.tune_tir(func, max_trials=TRIALS, space=space, progress=False, seed=0,
                     measure_option=tune.measure_option(number=2, timeout=20))
print(best.trace)
"""),
md("## A real space, correct (2 points)"),
test("""
trace = best.trace.as_json()
# every argument but annotations' (no pass reads them); a sampled value is "$v4"
used = json.dumps([inst[1] for inst in trace if inst[0] != "annotate"])
samples = [inst for inst in trace if inst[0].startswith("sample_")]
unused = [inst[0] for inst in samples if not any(f'"${v}"' in used for v in inst[2])]
assert not unused, f"{unused}: a sampled value that no primitive takes changes nothing"
assert len(samples) >= 2, "sample at least two decisions (sch.sample_perfect_tile ...)"
gemm = mlc.build(best.mod, target="llvm")
rng = np.random.default_rng(0)
a = rng.uniform(-1, 1, (N, N)).astype("float32")
b = rng.uniform(-1, 1, (N, N)).astype("float32")
c = np.zeros((N, N), dtype="float32")
gemm(a, b, c)
np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
""" + H + 'grading.check_trace("tuned_correct", best)' + E, "t_correct", 2),
md("""
## Speed against the baseline (4 points)

Here is the baseline and your best, timed here (the grader measures again, interleaved):
"""),
test("""
base = tir.Schedule(func)
i, j, kk = base.get_loops(base.get_block("C"))
base.reorder(i, kk, j)
baseline = mlc.build(base.mod, target="llvm")
t_base = baseline.time_evaluator(number=3, repeat=3)(a, b, c).mean
t_best = gemm.time_evaluator(number=3, repeat=3)(a, b, c).mean
print(f"baseline {t_base * 1e3:.2f} ms, yours {t_best * 1e3:.2f} ms: {t_base / t_best:.2f}x")
""" + H + 'grading.check_trace("tuned_speed", best)' + E, "t_speed", 4),
]
save(cells, __import__("os").path.dirname(__file__) + "/../a4_tuning/a4_tuning.ipynb")

import sys; sys.path.insert(0, __import__("os").path.dirname(__file__))
from nbtools import *
H = "### BEGIN HIDDEN TESTS\nfrom autograder import harness as grading  # noqa: E402, I001\n"; E = "\n### END HIDDEN TESTS"
cells = [
md("""
# Assignment 2: schedule a matrix multiplication

`C = A @ B` with `A`, `B`, `C` of shape `(1024, 1024)`, float32, on the CPU. The computation
is fixed; you write its **schedule** with the TensorIR primitives of `mlc.tir.Schedule`:
`split`, `reorder`, `fuse`, `vectorize`, `parallel`, `unroll`, `cache_write`,
`compute_at`, `decompose_reduction`...

How it is graded:
* **correctness (2 points)**: your schedule must compute `A @ B`;
* **speed (4 points)**: your schedule is replayed from its trace (`sch.trace`) in a clean
  process on the same computation and timed against a reference schedule (32x32 tiles, `k`
  between the tile loops, vectorized, its outer loop parallel), interleaved in the same run.
  Both run on **one CPU
  with one thread** and are timed by that thread's CPU time, so a busy grading machine does
  not change your grade, and `parallel` earns nothing here (it still makes your notebook
  faster). With `ratio = t_reference / t_yours`, you get `clip((ratio - 0.25) / 0.65, 0, 1)`
  of the 4 points: full points from 0.9x the reference's speed, none at a quarter of it or
  slower, linear in between. When the measured spread cannot decide your credit, the grader
  times again and then marks the row `needs review` for your instructor. A wrong result
  scores 0.

Only the schedule counts: the grader rebuilds it from the trace, so the primitives you call
on `sch` are what is graded (timing code in this notebook is for you).
"""),
code("""
import os

import numpy as np

import mlc
from mlc import te, tir

N = int(os.environ.get("AUTOGRADER_SIZE", "1024"))  # the grader may use a smaller N
A = te.placeholder((N, N), name="A")
B = te.placeholder((N, N), name="B")
k = te.reduce_axis((0, N), name="k")
C = te.compute((N, N), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
func = te.create_prim_func([A, B, C])
print(func)
"""),
md("""
## Your schedule

Write `schedule_gemm(sch)`: it receives a fresh `tir.Schedule(func)`, applies primitives
to it and returns it. Start from `i, j, k = sch.get_loops(sch.get_block("C"))`. Ideas, in the order they
usually pay: tile `i` and `j` so a block of `C` stays in cache, move `k` outside the inner
tile loops, vectorize the innermost loop over `j` (unit stride in `B` and `C`), parallelize
the outermost loop, unroll a small loop over `i` so several rows are accumulated in
registers.
"""),
code("""
def schedule_gemm(sch):
    ### BEGIN SOLUTION
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 8])
    j0, j1 = sch.split(j, factors=[None, 64])
    k0, k1 = sch.split(k, factors=[None, 4])
    sch.reorder(i0, j0, k0, k1, i1, j1)
    sch.vectorize(j1)
    sch.unroll(i1)
    sch.parallel(i0)
    return sch
    ### END SOLUTION


sch = schedule_gemm(tir.Schedule(func))
print(sch.mod)
"""),
md("## Correctness (2 points)"),
test("""
gemm = mlc.build(sch.mod, target="llvm")
rng = np.random.default_rng(0)
a = rng.uniform(-1, 1, (N, N)).astype("float32")
b = rng.uniform(-1, 1, (N, N)).astype("float32")
c = np.zeros((N, N), dtype="float32")
gemm(a, b, c)
np.testing.assert_allclose(c, a @ b, rtol=1e-3, atol=1e-3)
""" + H + 'grading.check_trace("gemm_correct", sch)' + E, "t_correct", 2),
md("""
## Speed (4 points)

How fast is it here? (The grader measures again, interleaved with the reference.)
"""),
test("""
timer = gemm.time_evaluator(number=3, repeat=3)
t = timer(a, b, c).mean
print(f"{t * 1e3:.2f} ms, {2 * N**3 / t / 1e9:.1f} GFLOPS")
""" + H + 'grading.check_trace("gemm_speed", sch)' + E, "t_speed", 4),
]
save(cells, __import__("os").path.dirname(__file__) + "/../a2_gemm_schedule/a2_gemm_schedule.ipynb")

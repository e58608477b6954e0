# %% [markdown]
# # 02 · Schedule primitives
#
# The expression says *what*; a **schedule** says *how*: in which order, in which tiles, on
# which cores, in which vector lanes. This separation comes from Halide and is TVM's core
# idea. Every primitive is a rewrite of the loop program that keeps its meaning.
#
# mlc has TVM's two styles on one engine: the classic `s = te.create_schedule(C.op)`;
# `s[C].split(...)` and TensorIR's `sch = tir.Schedule(func)`; `sch.split(loop, ...)`.
#
# **You will:** apply split, reorder, tile, fuse, vectorize, unroll, parallel,
# compute_at/inline and cache_read/write; see the loop nest before and after each; watch the
# iteration order change; and drive a tile-size slider.

# %%
import numpy as np
%matplotlib inline
import matplotlib
matplotlib.rcParams["figure.dpi"] = 80
import mlc
from mlc import te, tir, viz

np.random.seed(0)

# %% [markdown]
# ## te style: split and reorder (the seeds' first example)

# %%
n = te.var("n")
A = te.placeholder((n,), name="A")
B = te.placeholder((n,), name="B")
C = te.compute((n,), lambda i: A[i] + B[i], name="C")
s = te.create_schedule(C.op)
xo, xi = s[C].split(C.op.axis[0], factor=32)
print(mlc.lower(s, [A, B, C]))

# %% [markdown]
# `n` need not be a multiple of 32: the outer loop runs `ceil(n / 32)` times and a guard
# keeps `i < n`. Reordering puts `xi` outside:

# %%
s[C].reorder(xi, xo)
print(mlc.lower(s, [A, B, C]))

# %% [markdown]
# ## TensorIR style: one primitive at a time, with a trace
# The MLC course's matmul: get the block, get its loops, transform them. Each primitive is
# recorded in `sch.trace`, which replays on a fresh function (that is how tuners and the
# autograder store schedules).

# %%
def matmul(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])

sch = tir.Schedule(matmul(16))
blk = sch.get_block("C")
i, j, k = sch.get_loops(blk)
i0, i1 = sch.split(i, factors=[None, 4])
j0, j1 = sch.split(j, factors=[None, 4])
sch.reorder(i0, j0, k, i1, j1)
sch.vectorize(j1)
sch.parallel(i0)
print(sch.trace)

# %% [markdown]
# Step through it: each step shows the lines that primitive changed (`-` removed,
# `+` added).

# %%
viz.print_steps(sch)

# %% [markdown]
# The same as a widget (slider and prev/next buttons):

# %% tags=["nbval-ignore-output"]
viz.step_through(sch)

# %% [markdown]
# ## What tiling does to the visiting order
# Untiled, the loops sweep `C` row by row (dark = early). Tiled, they finish one 4 x 4 tile
# before the next: the few rows of `A` and columns of `B` a tile needs stay in cache.

# %%
from matplotlib.figure import Figure
fig = Figure(figsize=(8, 3.4))
ax1, ax2 = fig.subplots(1, 2)
viz.iteration_order(matmul(16), "C", ax=ax1, title="i, j, k")
viz.iteration_order(sch, "C", ax=ax2, title="tiled 4 x 4")
fig.tight_layout()
fig

# %% [markdown]
# Which elements of each buffer one tile touches (`i_0 = 1, j_0 = 2` pinned; the inner
# loops run). 16 outputs use 4 rows of `A` and 4 columns of `B`, each element many times.

# %%
viz.tile_footprint(sch, "C", {"i_0": 1, "j_0": 2})

# %% [markdown]
# ## tile, fuse, unroll (te style)
# `tile` is two splits and a reorder; `fuse` merges two loops into one (handy to make one big
# parallel loop); `unroll` copies the body.

# %%
X = te.placeholder((16, 16), name="X")
Y = te.compute((16, 16), lambda i, j: X[i, j] * 2.0, name="Y")
s = te.create_schedule(Y.op)
yo, xo, yi, xi = s[Y].tile(Y.op.axis[0], Y.op.axis[1], 4, 4)
fused = s[Y].fuse(yo, xo)
s[Y].parallel(fused)
s[Y].unroll(yi)
s[Y].vectorize(xi)
print(mlc.lower(s, [X, Y]))

# %% [markdown]
# ## compute_at and compute_inline: where a producer runs
# A producer `B` and a consumer `C`. By default `B` is computed whole before `C`.
# `compute_inline` substitutes its formula into `C` (no buffer at all); `compute_at` computes
# just the part of `B` that one iteration of a `C` loop needs, right there.

# %%
def two_stage():
    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] + 1.0, name="B")
    C = te.compute((8, 8), lambda i, j: B[i, j] * 2.0, name="C")
    return te.create_prim_func([A, C])

sch2 = tir.Schedule(two_stage())
print(sch2.mod)

# %%
inl = tir.Schedule(two_stage())
inl.compute_inline(inl.get_block("B"))
print(inl.mod)

# %%
at = tir.Schedule(two_stage())
ci, cj = at.get_loops(at.get_block("C"))
at.compute_at(at.get_block("B"), ci)
print(at.mod)

# %% [markdown]
# ## cache_read and cache_write: staging data in a faster scope
# `cache_write` computes into a small local buffer and copies out; with
# `reverse_compute_at` the copy happens per tile, so accumulators can live in registers.

# %%
cw = tir.Schedule(matmul(16))
c = cw.get_block("C")
i, j, k = cw.get_loops(c)
i0, i1 = cw.split(i, factors=[None, 4])
j0, j1 = cw.split(j, factors=[None, 4])
cw.reorder(i0, j0, k, i1, j1)
cache = cw.cache_write(c, 0, "local")
cw.reverse_compute_at(cache, j0)
print(cw.mod)

# %%
cr = tir.Schedule(matmul(8))
a_local = cr.cache_read(cr.get_block("C"), 0, "local")
print(cr.mod)

# %% [markdown]
# Every schedule above computes the same thing. Check the most involved one against numpy:

# %%
a, b = np.random.rand(16, 16).astype("float32"), np.random.rand(16, 16).astype("float32")
c_np = np.zeros((16, 16), "float32")
mlc.build(cw.mod)(a, b, c_np)
np.testing.assert_allclose(c_np, a @ b, rtol=1e-5)
print("cache_write schedule matches numpy")

# %% [markdown]
# ## Try it: a tile-size slider
# Move the sliders: the code below them is rebuilt, checked against numpy and timed. An
# invalid choice shows its error in the widget instead of raising.

# %% tags=["nbval-ignore-output"]
explorer = viz.matmul_explorer(n=64)
explorer

# %% [markdown]
# ## Exercises
# 1. With `tir.Schedule`, split the loop `i` of `matmul(16)` into `[None, 8]` and vectorize
#    `j`; how many loops does the block have now?
# 2. Why can't you vectorize `j` *before* reordering `k` inside it? (Try it: the error names
#    the loop in the way.)

# %%
ex = tir.Schedule(matmul(16))
i, j, k = ex.get_loops(ex.get_block("C"))
io, ii = ex.split(i, factors=[None, 8])
ex.reorder(io, ii, k, j)
ex.vectorize(j)
n_loops = len(ex.get_loops(ex.get_block("C")))
try:
    bad = tir.Schedule(matmul(16))
    bad.vectorize(bad.get_loops(bad.get_block("C"))[1])
    message = ""
except mlc.errors.ScheduleError as err:
    message = str(err)
assert n_loops == 4, "split makes i_0 and i_1, so i_0, i_1, k, j"
assert "only an innermost loop can be vectorized" in message
print(n_loops, "loops;", message.splitlines()[0])

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
# iteration order change; time Halide's two-stage blur under three schedules; and drive a
# tile-size slider.

# %%
import mlc  # first: a folder named "mlc" where Jupyter started would hide the package

if not hasattr(mlc, "build"):
    raise ImportError(f"'import mlc' found the folder {list(mlc.__path__)[0]}, not the mlc "
                      "package: start Jupyter from another folder (`make lab` in the "
                      "checkout does), or rename that folder")

import matplotlib
import numpy as np
from IPython import get_ipython

import mlc
from mlc import te, tir, viz
from mlc.testing.exercises import exercise, expect, hint  # noqa: F401 (hint("1") asks for a hint)

if get_ipython() is not None:  # in Jupyter, draw figures as pictures: %matplotlib inline
    get_ipython().run_line_magic("matplotlib", "inline")
matplotlib.rcParams["figure.dpi"] = 80

np.random.seed(0)

# %% [markdown]
# **Why:** the same tensor expression runs 1x or 100x as fast depending on its loop order,
# tiling and vector lanes. A schedule changes those and never the answer, so speed can be
# explored safely, one primitive at a time.
#
# Where this chapter works, on the map of chapter 00 (its levels in blue):

# %% tags=["nbval-ignore-output"]
from mlc.viz.concepts import stack

stack(chapter=2)

# %% [markdown]
# ## te style: split and reorder
# The first schedule of Tianqi Chen's TVM lecture (UW CSE 599W): split a vector add's loop by 32.

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
# before the next: the 4 rows of `A` and 4 columns of `B` that a tile reads are reused within
# its 4 * 4 * 16 = 256 iterations, rather than once per sweep over a whole row of `C`.

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
# loops run). 16 outputs use 4 rows of `A` and 4 columns of `B`, each element 4 times (an
# element of `A` by the tile's 4 columns, one of `B` by its 4 rows).

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
lowered_xy = mlc.lower(s, [X, Y])
print(lowered_xy)

# %% [markdown]
# This is the lowered program, the first with vectors in this course. The vectorized `xi`
# loop is gone: `ramp(base, 1, 4)` is the vector of the 4 indices `base, base + 1, base + 2,
# base + 3` (one load or store of 4 neighbouring floats) and `broadcast(2.0, 4)` the constant
# 2.0 copied into all 4 lanes. The unrolled `yi` loop became 4 copies of its body, and the
# fused parallel loop runs the 16 tiles over the cores.
#
# **What `vectorize` accepts.** A loop of constant extent over spatial axes, as in TVM, even
# one with loops inside it (not a parallel or thread-bound one). The `vectorize_loops` pass
# keeps the inner loops as scalar loops and turns their body into statements over vectors:
# below, axis 0 holds axis 1, and each step of the inner loop handles a whole column of 16
# rows, `ramp(j, 16, 16)` (a strided gather, slower than neighbouring floats). That runs
# the iterations in another order, so the pass does it only when every lane provably works
# on its own elements of what it writes; otherwise it leaves the loop serial, which is
# correct, only slower. Look at the lowered program to see which you got.

# %%
text = str(lowered_xy)
assert "ramp(" in text and "broadcast(2.0, 4)" in text
outer = te.create_schedule(Y.op)
outer[Y].vectorize(Y.op.axis[0])  # axis 0 holds axis 1
lowered_outer = mlc.lower(outer, [X, Y])
print(lowered_outer)
assert "ramp(j, 16, 16)" in str(lowered_outer)

# %% [markdown]
# **When iterations may not run at once.** `parallel`, `vectorize` and `bind` run the
# iterations of a loop together, so they must not depend on each other. A block's spatial
# axes promise that, and a block written by hand can break the promise: this one reverses
# `B` in place, correct when `j` runs in order (`B[0] = B[7]`, ..., `B[3] = B[4]`), wrong
# as a vector (lanes would read elements other lanes are writing). mlc checks what every
# block under the loop reads of a buffer it writes, and refuses.

# %%
from mlc.script import tir as T


@T.prim_func
def reverse_in_place(B: T.Buffer((8,), "float32")):
    for j in range(4):
        with T.block("swap"):
            vj = T.axis.spatial(4, j)
            B[vj] = B[7 - vj]


rev = tir.Schedule(reverse_in_place)
try:
    rev.vectorize(rev.get_loops(rev.get_block("swap"))[0])
except mlc.errors.ScheduleError as err:
    print(str(err).splitlines()[0])

# %% [markdown]
# Reading the element written (`B[vi] = B[vi] * 2`, the update of a reduction) is fine, and
# so is reading within a slice that only this iteration writes: rows of a running sum
# `A[vi, vj + 1] += A[vi, vj]` may run in parallel, its columns may not.

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
# ## Halide's two-stage blur: one algorithm, three schedules
# Halide (Ragan-Kelley et al., PLDI 2013) made the case for separating the algorithm from
# the schedule with a 3 × 3 blur in two stages, the example of the Berkeley AI-Systems
# lecture on deep-learning compilers: `blurx` averages three neighbours along `x`, `out`
# averages three rows of `blurx`. Those two lines are the whole algorithm. The schedule
# decides *when* each `blurx` value is computed, and that trades redundant work against
# locality:
#
# * `compute_root`, breadth first: all of `blurx`, then all of `out`. No value is computed
#   twice, but `blurx` is a whole image written to memory and read back afterwards.
# * `compute_inline`: no `blurx` buffer; each output computes the three `blurx` values it
#   needs, so every `blurx` value is computed three times (once for each output row that
#   reads it), and no intermediate image is stored at all.
# * `compute_at(s[out], yo)`: for each tile of 8 output rows, compute the 10 rows of `blurx`
#   it reads, just before it reads them: 10 rows rather than a whole image pass between
#   a value's write and its reads, so they are likely still in cache (the timing cell
#   below compares them with this CPU's cache). Neighbouring tiles both
#   compute the 2 rows they share: 10 rows of work for 8, a quarter extra.
#
# Halide has a fourth knob, `store_at`: where the intermediate's *storage* lives, chosen
# apart from where it is computed (stored at the root but computed per tile, a tile can
# reuse the 2 rows its neighbour computed: a sliding window, no recomputation). mlc has no
# `store_at`; lowering decides the storage. Look where `blurx` is allocated in the
# `compute_at` program below.

# %%
H = W = 2048
TILE = 8

def blur_algorithm():
    inp = te.placeholder((H + 2, W + 2), name="inp")
    blurx = te.compute((H + 2, W), lambda y, x: (inp[y, x] + inp[y, x + 1] + inp[y, x + 2]) / 3.0,
                       name="blurx")
    out = te.compute((H, W), lambda y, x: (blurx[y, x] + blurx[y + 1, x] + blurx[y + 2, x]) / 3.0,
                     name="out")
    return inp, blurx, out

def blur_schedule(where):
    inp, blurx, out = blur_algorithm()
    s = te.create_schedule(out.op)
    yo, yi = s[out].split(out.op.axis[0], factor=TILE)
    xo, xi = s[out].split(out.op.axis[1], factor=8)
    s[out].vectorize(xi)
    if where == "compute_inline":
        s[blurx].compute_inline()
    else:
        if where == "compute_at":
            s[blurx].compute_at(s[out], yo)
        else:
            s[blurx].compute_root()
        s[blurx].vectorize(s[blurx].split(blurx.op.axis[1], factor=8)[1])
    return s, [inp, out]

def allocations(func):
    return [ln.strip() for ln in str(func).splitlines() if "alloc_buffer" in ln]

programs = {where: mlc.lower(*blur_schedule(where))
            for where in ["compute_root", "compute_inline", "compute_at"]}
print(programs["compute_at"])

# %% [markdown]
# `blurx` is allocated inside the `y_0` loop, 10 rows of `W` floats: the pass
# `compact_buffers` gives an intermediate the smallest storage that holds what one iteration
# of its scope touches. In Halide's words this schedule is `compute_at(out, yo)` *and*
# `store_at(out, yo)`.

# %%
at_lines = str(programs["compute_at"]).splitlines()
alloc_line = next(k for k, ln in enumerate(at_lines) if "blurx = alloc_buffer" in ln)
print(at_lines[alloc_line - 1].strip(), "->", at_lines[alloc_line].strip())
assert "for y_0" in at_lines[alloc_line - 1] and f"(({(TILE + 2) * W},)" in at_lines[alloc_line]

# %% [markdown]
# What each schedule costs: `blurx` evaluations per output value, worked out from the loop
# bounds above, and the bytes allocated for `blurx`, read from each lowered program:

# %%
work = {"compute_root": (H + 2) / H, "compute_inline": 3.0, "compute_at": (TILE + 2) / TILE}
for where, prog in programs.items():
    alloc = allocations(prog)
    size = int(alloc[0].split("((")[1].split(",")[0]) * 4 if alloc else 0
    print(f"{where:15s} {work[where]:.2f} blurx values per output, "
          f"blurx buffer {size / 2**20:.1f} MiB")
assert not allocations(programs["compute_inline"])

# %% [markdown]
# And what they cost in time, on this machine, now (the numbers change from run to run and
# from machine to machine; the sentence under the table is written from them):

# %% tags=["nbval-ignore-output"]
from mlc.target.llvm.cpu import cache_bytes

img = np.random.rand(H + 2, W + 2).astype("float32")
bx = (img[:, :-2] + img[:, 1:-1] + img[:, 2:]) / 3
expected = (bx[:-2] + bx[1:-1] + bx[2:]) / 3
times = {}
for where in programs:
    f_blur = mlc.build(*blur_schedule(where))
    res = np.zeros((H, W), "float32")
    f_blur(img, res)
    np.testing.assert_allclose(res, expected, rtol=1e-5)
    times[where] = f_blur.time_evaluator(number=5, repeat=5)(img, res).min
    print(f"{where:15s} {times[where] * 1e3:6.2f} ms")
best = min(times, key=times.get)
worst = max(times, key=times.get)
print(f"fastest here: {best}, {times[worst] / times[best]:.2f}x faster than {worst}")
tile_bytes, l2 = (TILE + 2) * W * 4, cache_bytes(2)
print(f"compute_at's blurx: {tile_bytes // 1024} KiB per tile; this CPU's L2 cache: "
      f"{l2 // 1024} KiB per core ({'fits' if tile_bytes <= l2 else 'does not fit'}); "
      f"compute_root's blurx: {(H + 2) * W * 4 // 2**20} MiB")
why = {
    "compute_inline": "recomputing was cheaper than memory here: a blurx value is three loads "
                      "from rows of inp that are in cache anyway and two adds, while "
                      "the other two schedules write blurx and read it back",
    "compute_at": "locality paid: each tile's blurx rows were still in cache when read, for "
                  "a quarter extra work",
    "compute_root": "no recomputation paid more than locality: the 16 MiB blurx streamed "
                    "through memory at full bandwidth",
}
print(f"why {best} won: {why[best]}")

# %% [markdown]
# ## cache_read and cache_write: staging data in a faster scope
# `cache_write(block, 0, "local")` makes the block compute into a new buffer `C_local` in the
# "local" scope (`0`: the first buffer the block writes) and adds a block that copies it to
# `C`. With `reverse_compute_at` the copy runs once per
# `j_0` tile, right after the tile is computed. In the schedule `C_local` is allocated as
# big as `C`: the printout below says `(16, 16)`.

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

# %% [markdown]
# It becomes small when lowered: the pass `compact_buffers` sees that one iteration of
# `j_0` touches only a 4 × 4 corner of `C_local`, so it moves the allocation inside `j_0` and
# shrinks it to those 16 floats, few enough that LLVM may keep them in registers:

# %%
before, after = allocations(cw.mod), allocations(mlc.lower(cw.mod))
print("scheduled:", before)
print("lowered:  ", after)
assert "(16, 16)" in before[0] and "(16,)" in after[0]

# %% [markdown]
# `cache_read(block, 0, "local")` stages an input the same way: `A` (the block's read number
# 0) is copied into `A_local`, and `C` reads the copy. On its own, as here, it only adds a
# copy of all of `A`; it pays once `compute_at` moves the copy into a tile loop, so that each
# tile copies just the part it reads into the faster scope (notebook 10 does that for an
# accelerator's on-chip buffers).

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
# ## Reading: Halide's tree-search autoscheduler
# *A reading section: mlc has no such search (notebook 07 has mlc's).* Adams et al.,
# "Learning to Optimize Halide with Tree Search and Random Programs" (SIGGRAPH 2019, in the
# AI-Systems lecture's reading list), chooses the schedule of a whole pipeline at once.
#
# **The tree.** A schedule is built one stage at a time, from the output back to the inputs;
# each level of the tree makes that stage's decisions: its tiling, and where it is computed
# (and stored): at the root, inlined, or at some loop of a consumer. For the blur above, the
# first two levels:
#
# ```
# out:    tile 8 x 8        tile 32 x 32       tile 8 x 2048 ...          (level 1)
#          |
# blurx:  compute_root   compute_inline   compute_at(out, yo)   compute_at(out, xo)   (level 2)
# ```
#
# Each leaf is a complete schedule; the three of the table above are three of them. A real
# pipeline (tens of stages, several tilings each) has far too many leaves to time.
#
# **The search.** A beam search keeps the `k` most promising partial schedules at each level,
# expands each by every choice for the next stage, and keeps the best `k` again; it runs
# several passes, the later ones coarse-to-fine around what the earlier found.
#
# **The cost model.** "Promising" is a prediction, not a measurement: a small neural network
# reads features of each stage under its schedule (operations, bytes touched, footprints,
# recomputation, parallelism, vector width; the blur's "blurx values per output" and
# "buffer size" columns above are two of them) and predicts the run time. It is trained on
# *random programs*: pipelines generated at random and timed under random schedules, so it
# has seen far more than any benchmark suite.
#
# Set beside notebook 07: TVM's search tunes one operator's knobs, with a model trained on
# measurements of that operator as the search goes; Halide's searches a whole pipeline's
# structural choices (the `compute_at` level of every stage) with a model trained once,
# ahead of time. Both put a learned model where timing everything would cost too much.

# %% [markdown]
# > **What to remember**
# > * A schedule transforms loops (split, reorder, tile, fuse, vectorize, unroll, parallel)
# >   and where producers run (compute_at, compute_inline, caches); it never changes the
# >   result.
# > * Tiling changes the order in which memory is touched, so that data is reused while it is
# >   still in cache.
# > * Every primitive is recorded in the trace, which can be printed and replayed.

# %% [markdown]
# ## Exercises
# Complete each function (replace `raise NotImplementedError()`) and run the check under
# it: ✓, or ✗ with what is wrong
# (`hint("1")` gives a hint for exercise 1, the idea first, when you want one). Run the next cell
# first; it defines the
# checks, and you may read it. The exercises use nothing from the cells above but the
# imports.

# %%
def matmul_func(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])

def run_matmul(func, n):
    rng = np.random.default_rng(2)
    a, b = (rng.random((n, n), dtype=np.float32) for _ in range(2))
    c = np.zeros((n, n), "float32")
    f = mlc.build(func)
    f(a, b, c)
    expect(np.allclose(c, a @ b, rtol=1e-4), "the schedule changed the result: C != A @ B")
    return f, (a, b, c)

def extents(sch, block):
    return [int(sch.get(lp).extent) for lp in sch.get_loops(sch.get_block(block))]

@exercise("1. tile", hint=[
          "a tile is a block of rows by a block of columns: each of the two loops becomes "
          "a loop over blocks and a loop within one, and the two loops within go "
          "innermost",
          "sch.split each spatial loop, then sch.reorder: the outer parts first, k next, "
          "the inner parts last"])
def check_tile(tile_matmul):
    sch = tir.Schedule(matmul_func(16))
    tile_matmul(sch)
    got = extents(sch, "C")
    expect(len(got) == 5, f"C should sit in 5 loops (i_0, j_0, k, i_1, j_1), not {len(got)}")
    expect(got == [4, 4, 16, 4, 4], f"the loop extents should be [4, 4, 16, 4, 4], not {got}: "
           "4 x 4 tiles, k between the tile loops and the loops inside a tile")
    run_matmul(sch.mod, 16)

@exercise("2. blur per tile", hint=[
          "computing blurx whole before out keeps a full-size intermediate; computing it "
          "inside out's loop over strips of rows keeps only the rows one strip needs",
          "split out's row axis into strips, then move blurx into the strip loop with "
          "compute_at"])
def check_blur_per_tile(schedule_blur):
    inp = te.placeholder((34, 34), name="inp")
    blurx = te.compute((34, 32), lambda y, x: inp[y, x] + inp[y, x + 1] + inp[y, x + 2],
                       name="blurx")
    out = te.compute((32, 32), lambda y, x: blurx[y, x] + blurx[y + 1, x] + blurx[y + 2, x],
                     name="out")
    s = te.create_schedule(out.op)
    schedule_blur(s, blurx, out)
    sch = tir.Schedule(s.to_prim_func([inp, out]))
    expect("blurx = alloc_buffer" in str(sch.mod), "blurx is gone (inlined?): keep it a stage of "
           "its own and compute it per tile with compute_at")
    bx, ot = extents(sch, "blurx"), extents(sch, "out")
    expect(len(bx) == 3 and bx[0] == ot[0] == 4,
           f"blurx should be computed inside out's outer loop over 4 tiles of 8 rows; its loops "
           f"have extents {bx}, out's {ot}")
    expect(bx[1] == 10, f"each tile of 8 output rows reads 10 rows of blurx, computed {bx[1]}")
    a = np.random.default_rng(3).random((34, 34), dtype=np.float32)
    res = np.zeros((32, 32), "float32")
    mlc.build(s, [inp, out])(a, res)
    ref = a[:, :-2] + a[:, 1:-1] + a[:, 2:]
    expect(np.allclose(res, ref[:-2] + ref[1:-1] + ref[2:], rtol=1e-5), "the blur is wrong")

@exercise("3. an eighth of numpy", hint=[
          "speed comes from three places: vector lanes along the contiguous columns, "
          "several rows sharing each loaded row of B, and both cores",
          "split j and vectorize its inner part, split i and unroll its inner part, "
          "reorder so that k sits between the tile loops and the tile, and parallel on "
          "the outermost loop"])
def check_fast_matmul(fast_matmul, n=256):
    sch = tir.Schedule(matmul_func(n))
    fast_matmul(sch)
    f, args = run_matmul(sch.mod, n)
    naive, _ = run_matmul(matmul_func(n), n)
    a, b, _ = args
    t_yours = f.time_evaluator(number=5, repeat=5)(*args).min
    t_naive = naive.time_evaluator(number=1, repeat=3)(*args).min
    t_numpy = min(viz.seconds_per_call(lambda: a @ b, number=5, repeat=1) for _ in range(5))
    expect(t_naive / t_yours >= 4, f"only {t_naive / t_yours:.1f}x faster than the unscheduled "
           "matmul; 4x is the goal")
    expect(t_numpy / t_yours >= 1 / 8, f"{t_numpy / t_yours:.3f} of numpy's speed; 1/8 = 0.125 is "
           "the goal")

# %% [markdown]
# **1. Tile.** Tile `C = A @ B` (16 × 16) into 4 × 4 tiles: split `i` and `j` by 4 and order
# the loops `i_0, j_0, k, i_1, j_1`.

# %%
def tile_matmul(sch):
    i, j, k = sch.get_loops(sch.get_block("C"))
    ### BEGIN SOLUTION
    i0, i1 = sch.split(i, factors=[None, 4])
    j0, j1 = sch.split(j, factors=[None, 4])
    sch.reorder(i0, j0, k, i1, j1)
    ### END SOLUTION

check_tile(tile_matmul)

# %% [markdown]
# **2. The blur per tile.** Schedule a 32 × 32 two-stage blur as above: split `out`'s rows
# into tiles of 8 and compute `blurx` per tile, at the outer row loop.

# %%
def schedule_blur(s, blurx, out):
    ### BEGIN SOLUTION
    yo, yi = s[out].split(out.op.axis[0], factor=8)
    s[blurx].compute_at(s[out], yo)
    ### END SOLUTION

check_blur_per_tile(schedule_blur)

# %% [markdown]
# **3. An eighth of numpy.** Schedule a 256 × 256 matmul so that it runs at least 4 times as
# fast as the unscheduled one, and at least 1/8 as fast as numpy's `a @ b` (an optimized
# BLAS library, using every core). The check times all three in the same run.

# %% tags=["nbval-ignore-output"]
def fast_matmul(sch):
    i, j, k = sch.get_loops(sch.get_block("C"))
    ### BEGIN SOLUTION
    i0, i1 = sch.split(i, factors=[None, 4])
    j0, j1 = sch.split(j, factors=[None, 16])
    sch.reorder(i0, j0, k, i1, j1)
    sch.vectorize(j1)
    sch.unroll(i1)
    sch.parallel(i0)
    ### END SOLUTION

check_fast_matmul(fast_matmul)

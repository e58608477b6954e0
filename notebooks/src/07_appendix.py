# %% [markdown]
# # 07 · Appendix: sampled search spaces, and measuring on a cluster
#
# Two paths from `07_automatic_optimization`: a schedule written once with *sampled*
# numbers, whose sampling decisions are the search space (MetaSchedule's way, with mlc's
# BLAS-style default space), and tuning whose measurements run on a pool of machines
# (Dask). Each runs on its own; the chapter's exercises need neither.

# %%
import mlc  # first: a folder named "mlc" where Jupyter started would hide the package

if not hasattr(mlc, "build"):
    raise ImportError(f"'import mlc' found the folder {list(mlc.__path__)[0]}, not the mlc "
                      "package: start Jupyter from another folder (`make lab` in the "
                      "checkout does), or rename that folder")

import numpy as np
%matplotlib inline
import matplotlib
matplotlib.rcParams["figure.dpi"] = 80
from matplotlib.figure import Figure
import mlc
from mlc import te, tune, viz

# %% [markdown]
# **Why:** writing a template with knobs for every operator does not scale; a sampled
# schedule is one function for a whole family. And tuning spends its time measuring, which a
# cluster multiplies.
#
# Where this appendix works, on the map of chapter 00 (its levels in blue):

# %% tags=["nbval-ignore-output"]
from mlc.viz.concepts import stack

stack(chapter=7)

# %% [markdown]
# The chapter's template and its 128 x 128 matmul, again (the Dask section tunes it):

# %%
@tune.template("nb07_matmul")
def matmul(n, dtype):
    A = te.placeholder((n, n), name="A", dtype=dtype)
    B = te.placeholder((n, n), name="B", dtype=dtype)
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    y, x = C.op.axis
    cfg = tune.get_config()
    cfg.define_split("tile_y", y, num_outputs=2)
    cfg.define_split("tile_x", x, num_outputs=2)
    cfg.define_knob("vec", [0, 1])
    yo, yi = cfg["tile_y"].apply(s, C, y)
    xo, xi = cfg["tile_x"].apply(s, C, x)
    (kk,) = C.op.reduce_axis
    s[C].reorder(yo, xo, kk, yi, xi)
    if cfg["vec"].val:
        s[C].vectorize(xi)
    return s, [A, B, C]

N = 128
task = tune.create_task("nb07_matmul", args=(N, "float32"))
N = 128
task = tune.create_task("nb07_matmul", args=(N, "float32"))
a = np.random.rand(N, N).astype("float32")
b = np.random.rand(N, N).astype("float32")
print(task.config_space)

# %% [markdown]
# ## A stochastic schedule is a search space (MetaSchedule style)
# Instead of knobs on a template, write the schedule once with *sampled* numbers:
# `sch.sample_perfect_tile(loop, n)` returns tile sizes that multiply to the loop's extent.
# Running the function records a trace; its sampling decisions are the coordinates of the
# space, and `tune.tune_tir` searches them with the same xgboost model (by default on the
# decisions themselves, `feature="knob"`) and the same annealer. Without a
# `space=` it uses the default space (`mlc.tune.default_space`, shown below).

# %%
def space(sch):
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, sch.sample_perfect_tile(i, n=2, max_innermost_factor=16))
    j0, j1 = sch.split(j, sch.sample_perfect_tile(j, n=2, max_innermost_factor=64))
    sch.reorder(i0, j0, k, i1, j1)
    sch.vectorize(j1)


A_ = te.placeholder((N, N), name="A")
B_ = te.placeholder((N, N), name="B")
kk = te.reduce_axis((0, N), name="k")
C_ = te.compute((N, N), lambda i, j: te.sum(A_[i, kk] * B_[kk, j], axis=kk), name="C")
func = te.create_prim_func([A_, B_, C_])
print(tune.SampledSpace(func, space).dims, "choices per sampling decision")

# %% tags=["nbval-ignore-output"]
best = tune.tune_tir(func, max_trials=8, space=space)
print(best.trace)

# %%
f = mlc.build(best.mod)
c = np.zeros((N, N), "float32")
f(a, b, c)
np.testing.assert_allclose(c, a @ b, rtol=1e-3)
print("the tuned schedule computes the right answer")

# %% [markdown]
# ### The default space: what a BLAS library decides, as samples
# For a product accumulated over a reduction (matmul, dense, conv2d) the default space
# makes the decisions of GotoBLAS / BLIS, each one `sample_categorical`: a **register tile**
# (`tile`: `mr` rows x `nr` columns of accumulators, from the tiles that fit this CPU's
# vector registers, read from LLVM's host features), the rows of a packed block of A (`mc`),
# the depth of a reduction slice (`kc`), the width of a packed panel of B (`nc`), whether to
# **pack** each operand into a contiguous buffer (one per thread), and how far to unroll the
# micro-kernel's reduction loop. The trace reads as the schedule it builds:

# %% tags=["nbval-ignore-output"]
from mlc.target.llvm.cpu import host_simd
from mlc.tune.tiling import register_tiles

simd = host_simd()
print(simd, "-> register tiles (mr, nr):", register_tiles(N, N, simd.lanes, simd.registers))
default = tune.SampledSpace(func, tune.default_space)
print(default.size, "points; one of them:")
print(default.trace)

# %% [markdown]
# ## Measuring on a pool of machines (Dask)
# Tuning spends its time measuring, and measuring is what a cluster multiplies: TVM compiles
# on the host and times candidates on a pool of devices behind an RPC tracker. mlc uses an
# existing distributed engine instead, [Dask](https://distributed.dask.org): give
# `measure_option` a `DaskRunner` and every candidate becomes a Dask task, built, checked and
# timed on some worker. Builds fan out freely, but each *machine* times one candidate at a
# time (a machine-wide lock), so timings stay trustworthy while the cluster is busy. If a
# worker dies, Dask runs its candidates again elsewhere: every trial is measured exactly once.
#
# Here a `LocalCluster` of two worker processes on this machine stands in for the pool; on a
# real one, write `Client("tcp://scheduler:8786")` instead. The dashboard link opens Dask's
# live view of the workers and their tasks (see `docs/distributed.md`).

# %% tags=["nbval-ignore-output"]
import time
try:
    from distributed import Client, LocalCluster
    HAVE_DASK = True
except ImportError:  # the optional extra: pip install -e ".[distributed]"
    HAVE_DASK = False
    print('Dask is not installed: pip install -e ".[distributed]" to run this section')
if HAVE_DASK:
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           host="127.0.0.1", dashboard_address=":0")
    client = Client(cluster)
    print("workers:", len(client.scheduler_info()["workers"]))
    print("dashboard:", client.dashboard_link)

# %% tags=["nbval-ignore-output"]
DASK_TRIALS = 8
walls = {}
for name, opt in [("local, 1 process", tune.measure_option(number=3, timeout=10)),
                  ("Dask, 2 workers", tune.measure_option(number=3, timeout=10,
                                      runner=tune.DaskRunner(client)) if HAVE_DASK else None)]:
    if opt is None:
        continue
    start = time.perf_counter()
    t = tune.RandomTuner(task, seed=1)
    t.tune(DASK_TRIALS, measure_option=opt,
           callbacks=[tune.callback.progress_bar(DASK_TRIALS, name)])
    walls[name] = (time.perf_counter() - start, t)
for name, (wall, t) in walls.items():
    print(f"{name}: {wall:.1f} s for {len(t.results)} trials, best {t.best_flops / 1e9:.1f} GFLOPS")

# %% [markdown]
# Same seed, same candidates: the two runs drew the same configurations, whichever worker
# took each one (the cell below asserts it). They did not get the same *timings*: each run
# timed every configuration once, at its own moment, so their bests can differ; the cell
# prints by how much the same configuration's two timings differ, which is all the
# difference between the bests. The wall times above compare the two on the machine that
# ran this (they change from run to run): on a machine with few cores, with milliseconds per
# candidate, Dask's overhead per task can cost more than the second worker saves. The point
# is that the same code runs on a cluster of many machines.

# %% tags=["nbval-ignore-output"]
if HAVE_DASK:
    local_run, dask_run = (t for _, t in walls.values())
    assert sorted(local_run.xs) == sorted(dask_run.xs)
    local_by, dask_by = dict(zip(local_run.xs, local_run.ys)), dict(zip(dask_run.xs, dask_run.ys))
    ratio = np.array([dask_by[i] / local_by[i] for i in local_by if local_by[i] > 0])
    print(f"the same {len(local_by)} configurations; Dask's timing / local's, per "
          f"configuration: {ratio.min():.2f}x to {ratio.max():.2f}x "
          f"(median {np.median(ratio):.2f}x)")
    print(f"best: local #{local_run.best_index} {local_run.best_flops / 1e9:.1f} GFLOPS, Dask "
          f"#{dask_run.best_index} {dask_run.best_flops / 1e9:.1f} GFLOPS"
          + (": the same configuration, timed twice" if local_run.best_index ==
             dask_run.best_index else ": two configurations whose timings cross"))
    client.close()
    cluster.close()
print("same configurations measured")

# %% [markdown]
# > **What to remember**
# > * A sampled schedule (`sample_perfect_tile`, `sample_categorical`) is a search space
# >   written once; its trace records the decisions, and a tuner searches them.
# > * The default space makes a BLAS library's decisions: register tile, block sizes,
# >   packing, unrolling.
# > * A `DaskRunner` spreads the measurements over workers, one timing per machine at a time;
# >   the same candidates are measured, each at its own moment.

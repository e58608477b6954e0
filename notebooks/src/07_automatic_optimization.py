# %% [markdown]
# # 07 · Automatic optimization
#
# Which tile sizes? Which loop to vectorize? Rather than guess, define a **search space** of
# schedules and let a tuner measure candidates. Measuring is slow, so AutoTVM learns a
# **cost model** (xgboost on features of the loop program, here trained to *rank*
# candidates) and uses **simulated annealing** on the model to pick what to measure next.
#
# **You will:** write a template with knobs (AutoTVM's call shape), tune it with random
# search and with the model-guided tuner, compare their tuning curves, and see how well the
# model's predictions rank real measurements. (Small: a 128 x 128 matmul, 16 trials each.)

# %%
import numpy as np
%matplotlib inline
import matplotlib
matplotlib.rcParams["figure.dpi"] = 80
from matplotlib.figure import Figure
import mlc
from mlc import te, tune, viz

# %% [markdown]
# ## A template: the schedule with holes
# `cfg.define_split` adds a knob with every way to split a loop; `define_knob` a list of
# choices. The space is their product.

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
print(task.config_space)
print("space size:", len(task.config_space))

# %% [markdown]
# ## Random search vs model-guided search
# Each trial builds and times one candidate in a worker process (a crash or a hang costs a
# trial, never the notebook). The progress bar shows the best GFLOPS so far.

# %% tags=["nbval-ignore-output"]
import os, tempfile
LOG = os.path.join(tempfile.mkdtemp(), "nb07_matmul.json")
option = tune.measure_option(number=3, timeout=10)
TRIALS = 16
rnd = tune.RandomTuner(task, seed=0)
rnd.tune(TRIALS, measure_option=option, callbacks=[tune.callback.progress_bar(TRIALS, "random")])
xgb = tune.XGBTuner(task, seed=0, batch_size=4, plan_size=8, feature="knob")
xgb.tune(TRIALS, measure_option=option,
         callbacks=[tune.callback.progress_bar(TRIALS, "xgb"), tune.callback.log_to_file(LOG)])

# %% tags=["nbval-ignore-output"]
a = np.random.rand(N, N).astype("float32")
b = np.random.rand(N, N).astype("float32")
numpy_gflops = 2 * N**3 / viz.seconds_per_call(lambda: a @ b, number=10, repeat=5) / 1e9
viz.tuning_curve({"random": rnd, "xgboost + annealing": xgb}, reference=numpy_gflops,
                 title=f"matmul {N}: best GFLOPS so far")

# %% [markdown]
# ## Does the model rank candidates well?
# Predict every measured candidate with the trained model and compare with the measurement.
# A ranking model needs only the *order* right: the rank correlation says how well it does.

# %% tags=["nbval-ignore-output"]
pred = xgb.model.predict(xgb.xs)
meas = np.array(xgb.ys) / 1e9
fig = Figure(figsize=(4, 3.2))
ax = fig.subplots()
ax.scatter(pred, meas)
ax.set_xlabel("model score")
ax.set_ylabel("measured GFLOPS")
ax.set_title(f"rank correlation {tune.rank_correlation(pred, meas):.2f}")
fig.tight_layout()
fig

# %% [markdown]
# ## Use the best configuration
# The log holds every measurement; `apply_history_best` makes the template pick the best
# configuration in it. Build it and check it against numpy.

# %%
with tune.apply_history_best(LOG):
    s, args = matmul(N, "float32")
f = mlc.build(s, args)
c = np.zeros((N, N), "float32")
f(a, b, c)
np.testing.assert_allclose(c, a @ b, rtol=1e-3)
print("the best schedule computes the right answer")

# %% [markdown]
# ## A stochastic schedule is a search space (MetaSchedule style)
# Instead of knobs on a template, write the schedule once with *sampled* numbers:
# `sch.sample_perfect_tile(loop, n)` returns tile sizes that multiply to the loop's extent.
# Running the function records a trace; its sampling decisions are the coordinates of the
# space, and `tune.tune_tir` searches them with the same model and annealer. Without a
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
walls = {}
for name, opt in [("local, 1 process", tune.measure_option(number=3, timeout=10)),
                  ("Dask, 2 workers", tune.measure_option(number=3, timeout=10,
                                      runner=tune.DaskRunner(client)) if HAVE_DASK else None)]:
    if opt is None:
        continue
    start = time.perf_counter()
    t = tune.RandomTuner(task, seed=1)
    t.tune(TRIALS, measure_option=opt, callbacks=[tune.callback.progress_bar(TRIALS, name)])
    walls[name] = (time.perf_counter() - start, t)
for name, (wall, t) in walls.items():
    print(f"{name}: {wall:.1f} s for {len(t.results)} trials, best {t.best_flops / 1e9:.1f} GFLOPS")

# %% [markdown]
# Same seed, same candidates: the two runs measured the same configurations, whichever
# worker took each one. (On a laptop's two cores expect little speed-up: the point is that
# the same code runs on a cluster of many machines.)

# %%
if HAVE_DASK:
    local_run, dask_run = (t for _, t in walls.values())
    assert sorted(local_run.xs) == sorted(dask_run.xs)
    client.close()
    cluster.close()
print("same configurations measured")

# %% [markdown]
# ## Exercises
# 1. Why does the model-guided curve often climb faster after its first batch?
# 2. Double `TRIALS`: does random search catch up?
#
# The check: tuning measured the trials it was asked for, and the best found beats the
# worst (there is something to gain from choosing).

# %%
assert len(rnd.ys) == TRIALS and len(xgb.ys) == TRIALS
assert max(xgb.ys) > min(y for y in xgb.ys if y > 0)
print("tuning checks pass")

# %% [markdown]
# # 07 · Automatic optimization
#
# Which tile sizes? Which loop to vectorize? Rather than guess, define a **search space** of
# schedules and let a tuner measure candidates. Measuring is slow, so AutoTVM (Chen et al.,
# *Learning to Optimize Tensor Programs*, NeurIPS 2018) learns a **cost model**: xgboost on
# **loop context vectors**, features read off each candidate's loop program, trained with a
# **rank loss** to put candidates in order. **Simulated annealing** on the model then picks
# what to measure next.
#
# **You will:** write a template with knobs (AutoTVM's call shape); print the loop context
# vectors the model learns from; measure the whole (small) space so that every claim below can
# be checked against the truth; tune with the model and compare with random search; judge the
# model on configurations it never saw; compute the rank loss by hand on three
# configurations; and watch the annealer walk. (Small on purpose: a 128 x 128 matmul whose
# space has 128 points.) Sampled search spaces and measuring on a cluster are in
# `07_appendix`.

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
# **Why:** the best tile sizes differ per shape and per machine, and a space of schedules is
# too large to measure whole. A tuner measures some, learns a cost model from them, and lets
# the model choose what to measure next.
#
# Where this chapter works, on the map of chapter 00 (its levels in blue):

# %% tags=["nbval-ignore-output"]
from mlc.viz.concepts import stack

stack(chapter=7)

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
# A configuration is a number: the knobs' choices in mixed radix, the first knob fastest
# (`index = tile_y + 8 * tile_x + 64 * vec`, where each split's choice `c` means an inner
# factor `2**c`). `space.build(index)` runs the template with that configuration and returns
# its loop program.

# %%
from mlc.tune.tuner import TemplateSpace

space = TemplateSpace(task)
DIMS = space.dims
INNER = [f"{2**c}" for c in range(DIMS[0])]  # the inner factor of each split choice
def index_of(tile_y, tile_x, vec):
    """The configuration whose splits have inner factors tile_y and tile_x."""
    return task.config_space.index_of([INNER.index(str(tile_y)), INNER.index(str(tile_x)), vec])

example = index_of(4, 16, 1)
print(task.config_space.get(example))
print(space.build(example))

# %% [markdown]
# ## What the model sees: loop context vectors
# The TVM paper (Chen et al., OSDI 2018) describes a loop program to its cost model by one
# **context vector per loop**: how long the loop is, how often it is entered (the **outer
# loop length**, the product of the extents of the loops outside it), and for every buffer how
# much memory one run of the loop **touches**. Its example is an 8 x 8 x 8 matmul
# `C[y][x] += A[k][y] * B[k][x]`. `mlc.tune.features.loop_context` computes those rows, and
# `itervar_features` (the model's input) is built from exactly these rows, innermost loop
# first. Touched memory is in bytes here (4 per float32), and **reuse** is how many
# iterations of the loop (and the loops inside) use each touched element.

# %%
from mlc.tune.features import LENGTH, PER_LOOP, itervar_features, loop_context
from mlc.viz.tuning import loop_context_table

A8 = te.placeholder((8, 8), name="A")
B8 = te.placeholder((8, 8), name="B")
k8 = te.reduce_axis((0, 8), name="k")
C8 = te.compute((8, 8), lambda y, x: te.sum(A8[k8, y] * B8[k8, x], axis=k8), name="C")
paper = te.create_prim_func([A8, B8, C8])
print(loop_context_table(paper))

# %% [markdown]
# Divide the bytes by 4 and this is the paper's table: inside `k`, C touches 1 element
# (it does not move with `k`: the loop reuses it 8 times) and A and B touch 8; inside `x`, B
# touches 64. The outer loop lengths are 1, 8 and 64.
#
# Now the same table for the configuration above (inner factors 4 and 16, vectorized):
# five loops, the vectorized `j_1` innermost.

# %%
example_func = space.build(example)
print(loop_context_table(example_func))
rows = loop_context(example_func)
features = itervar_features(example_func)
print(f"\n{len(rows)} loops -> a feature vector of {LENGTH} numbers "
      f"({PER_LOOP} per loop: log2(1 + x) of these columns, the strides and the op counts)")
k_row = next(r for r in rows if r.loop == "k")
c_at_k = next(b for b in k_row.buffers if b.buffer == "C")
assert (c_at_k.touched_bytes, c_at_k.reuse) == (4 * 16 * 4, 128.0)

# %% [markdown]
# Read the `k` row: while `k` runs, C touches 256 bytes, the 4 x 16 tile of accumulators, and
# uses each of them 128 times; B touches a 128 x 16 panel (8192 bytes) and uses each element 4
# times (once per row `i_1` of the tile), A a 4 x 128 panel (2048 bytes), each element 16
# times (once per column `j_1`). A 1 x 1 tile shows, in its `k` row, C reused the same
# 128 times but A and B each used once per element: nothing for the registers to keep (the
# cell below prints that row, and checks it). The columns name the reasons one schedule
# beats another (reuse, the bytes a loop keeps live, which loop is vectorized), so a model
# can learn from them across programs of different shapes, where a knob's value means
# nothing outside its template.

# %%
one_by_one = loop_context(space.build(index_of(1, 1, 0)))
k_one = next(r for r in one_by_one if r.loop == "k")
reuse = {b.buffer: b.reuse for b in k_one.buffers}
print("1 x 1 tile, the k row's reuse:", reuse)
assert reuse == {"C": 128.0, "A": 1.0, "B": 1.0}

# %% [markdown]
# ## The truth: measure every configuration
# The space has only 128 points, so measure them all once (each trial builds and times one
# candidate in a worker process: a crash or a hang costs a trial, never the notebook). A real
# space has millions of points; here the full sweep is the answer key that the next sections
# check their claims against.

# %% tags=["nbval-ignore-output"]
option = tune.measure_option(number=3, timeout=10)
SIZE = len(task.config_space)
sweep_tuner = tune.GridSearchTuner(task)
sweep_tuner.tune(SIZE, measure_option=option,
                 callbacks=[tune.callback.progress_bar(SIZE, "every configuration")])
sweep = np.zeros(SIZE)
sweep[sweep_tuner.xs] = np.array(sweep_tuner.ys) / 1e9  # GFLOPS of each configuration
best_index = int(np.argmax(sweep))
print(f"best {sweep.max():.1f} GFLOPS ({task.config_space.get(best_index)}), "
      f"median {np.median(sweep):.1f}, worst {sweep.min():.1f}")

# %% tags=["nbval-ignore-output"]
fig = Figure(figsize=(8.5, 3.2))
for vec, ax in enumerate(fig.subplots(1, 2, sharey=True)):
    grid = sweep.reshape(2, DIMS[1], DIMS[0])[vec]  # [tile_x choice, tile_y choice]
    im = ax.imshow(grid, origin="lower", cmap="viridis", vmin=0, vmax=sweep.max())
    ax.set_xticks(range(DIMS[0]), INNER, fontsize=7)
    ax.set_yticks(range(DIMS[1]), INNER, fontsize=7)
    ax.set_xlabel("tile_y inner factor")
    ax.set_title(f"measured landscape, vec={vec}")
fig.axes[0].set_ylabel("tile_x inner factor")
fig.colorbar(im, ax=fig.axes, label="measured GFLOPS")
fig

# %% [markdown]
# ## Model-guided search against random search
# `XGBTuner(feature="itervar")` learns from the loop context vectors above. It measures a
# batch of 4 at a time: the first batch at random (no model yet), then the configurations that
# simulated annealing finds best under the model, refit after every batch. One run depends on
# its seed's first random batch, so run three seeds.
#
# A random search needs no new measurement: it picks configurations in a random order, so its
# curve is the running maximum of the sweep over a random permutation. Two hundred orders
# give its median and its spread.

#
# The loop every tuner of this chapter runs:

# %% tags=["nbval-ignore-output"]
from mlc.viz import concepts

concepts.tuning_loop()

# %% tags=["nbval-ignore-output"]
import os, tempfile
LOG = os.path.join(tempfile.mkdtemp(), "nb07_matmul.json")
TRIALS = 16
runs = {}
for seed in (0, 1, 2):
    tuner = tune.XGBTuner(task, seed=seed, batch_size=4, plan_size=8, feature="itervar")
    callbacks = [tune.callback.progress_bar(TRIALS, f"xgboost + annealing, seed {seed}")]
    if seed == 0:  # keep one run's log, for apply_history_best below
        callbacks.append(tune.callback.log_to_file(LOG))
    tuner.tune(TRIALS, measure_option=option, callbacks=callbacks)
    runs[seed] = tuner
xgb_curves = np.array([t.best_so_far() for t in runs.values()])

orders = np.random.default_rng(0).random((200, SIZE)).argsort(axis=1)[:, :TRIALS]
random_curves = np.maximum.accumulate(sweep[orders], axis=1)

# %% tags=["nbval-ignore-output"]
a = np.random.rand(N, N).astype("float32")
b = np.random.rand(N, N).astype("float32")
numpy_gflops = 2 * N**3 / viz.seconds_per_call(lambda: a @ b, number=10, repeat=5) / 1e9
curves = {f"xgboost + annealing, seed {seed}": c for seed, c in zip(runs, xgb_curves)}
curves["random (median of 200 orders)"] = np.median(random_curves, axis=0)
fig = viz.tuning_curve(curves, reference=numpy_gflops, title=f"matmul {N}: best GFLOPS so far")
ax = fig.axes[0]
ax.fill_between(range(1, TRIALS + 1), np.percentile(random_curves, 10, axis=0),
                np.percentile(random_curves, 90, axis=0), step="post", alpha=0.2,
                color="C3", label="random, 10th-90th percentile")
ax.axhline(sweep.max(), color="k", linestyle=":", linewidth=1, label="best of the sweep")
ax.set_ylim(0, 1.1 * max(sweep.max(), xgb_curves.max(), numpy_gflops))
ax.legend(fontsize=7)
fig

# %% [markdown]
# What the curves say, computed rather than eyeballed: the share of the sweep's best each
# search holds after 4, 8 and 16 trials, the share of random orders each model-guided run is
# ahead of, and when each first comes within 10% of the best. Read them with two cautions:
# three runs are three samples (the random band shows how much a single run can vary), and the
# tuner's measurements are a second timing of configurations the sweep timed, so noise can put
# a share above 100%. The first 4 trials of a model-guided run are random too: there is no
# model before the first batch is measured.

# %% tags=["nbval-ignore-output"]
target = 0.9 * sweep.max()
def first_within(curve):
    hits = np.nonzero(np.asarray(curve) >= target)[0]
    return f"trial {hits[0] + 1}" if len(hits) else f"not within {TRIALS} trials"
for t in (4, 8, 16):
    shares = ", ".join(f"{c[t - 1] / sweep.max():.0%}" for c in xgb_curves)
    ahead = ", ".join(f"{np.mean(c[t - 1] > random_curves[:, t - 1]):.0%}" for c in xgb_curves)
    print(f"after {t:2d} trials: xgboost seeds 0-2 {shares} of the sweep's best (ahead of "
          f"{ahead} of the random orders); random median "
          f"{np.median(random_curves[:, t - 1]) / sweep.max():.0%}")
print("within 10% of the sweep's best: xgboost " + ", ".join(first_within(c) for c in xgb_curves)
      + f"; random by trial {TRIALS} in {np.mean(random_curves[:, -1] >= target):.0%} "
      "of the orders")
for seed, c in zip(runs, xgb_curves):
    gain = c[-1] / c[3]  # what the model-guided trials 5..16 added to the random first batch
    print(f"seed {seed}: the random first batch reached {c[3] / sweep.max():.0%} of the best, "
          f"the model's 12 trials after it {'added nothing' if gain < 1.02 else f'{gain:.2f}x'}")
print(f"xgboost runs ahead of random's median at trial {TRIALS}: "
      f"{sum(c[-1] > np.median(random_curves[:, -1]) for c in xgb_curves)} of {len(xgb_curves)}")

# %% [markdown]
# Three runs cannot settle whether the model helps: one lucky first batch decides a run.
# Since the sweep is the answer key, the search can be **replayed** many times without
# measuring anything: a "measurement" is a lookup in the sweep. The replay below is the same
# search (batches of 4, the first at random, the xgboost rank model on loop context vectors
# refit after every batch) over 40 seeds, except that the model scores every unmeasured point
# instead of annealing (the space is small enough to score whole; annealing is for spaces
# that are not). Random search gets the same 40 seeds. The last lines say which is ahead,
# from the numbers, and why.

# %% tags=["nbval-ignore-output"]
from math import comb

from mlc.tune.model import XGBoostCostModel

FEATURES = np.array([itervar_features(space.build(i)) for i in range(SIZE)])
def replay(seed, trials=TRIALS, batch=4):
    rng = np.random.default_rng(seed)
    measured = [int(i) for i in rng.permutation(SIZE)[:batch]]
    while len(measured) < trials:
        model = XGBoostCostModel(lambda i: FEATURES[i], seed=seed)
        model.fit(measured, sweep[measured])
        rest = [i for i in range(SIZE) if i not in measured]
        scores = model.predict(rest)
        measured += [rest[k] for k in np.argsort(-scores)[:batch]]
    return np.maximum.accumulate(sweep[measured[:trials]])

SEEDS = 40
replayed = np.array([replay(seed) for seed in range(SEEDS)]) / sweep.max()
random_share = random_curves[:SEEDS] / sweep.max()
for t in (4, 8, 12, 16):
    print(f"after {t:2d} trials, median share of the best: model "
          f"{np.median(replayed[:, t - 1]):.0%}, random "
          f"{np.median(random_share[:, t - 1]):.0%}; within 10%: model "
          f"{np.mean(replayed[:, t - 1] >= 0.9):.0%} of the seeds, random "
          f"{np.mean(random_share[:, t - 1] >= 0.9):.0%}")
near = int(np.sum(sweep >= 0.9 * sweep.max()))
p_random = 1 - comb(SIZE - near, TRIALS) / comb(SIZE, TRIALS)
lead = np.mean(replayed[:, -1] >= 0.9) - np.mean(random_share[:, -1] >= 0.9)
print(f"\n{near} of the {SIZE} configurations are within 10% of the best, so {TRIALS} random "
      f"draws hold one with probability {p_random:.0%}.")
if lead >= 0.1:
    print(f"The model is ahead: {lead * 100:.0f} points more of its seeds reach 10% of the "
          f"best by trial {TRIALS}: where few configurations are near the best, a model that "
          f"learns from the first batches where the fast tiles are finds them sooner.")
elif lead > -0.1:
    print(f"Random search is as good here (the model reaches 10% of the best in {lead * 100:+.0f} "
          f"points more of the seeds): in a space of {SIZE} points with {near} near the best, "
          f"{TRIALS} random draws already cover {TRIALS / SIZE:.0%} of it, and the model, "
          f"fitted on 4 to 12 points, has little to learn from. Its advantage needs a space "
          f"where random draws rarely land near the best.")
else:
    print(f"Random search is ahead ({-lead * 100:.0f} points more of its seeds reach 10% of "
          f"the best): "
          f"a model fitted on 4 to 12 points can lead the search away from the fast region.")

# %% tags=["nbval-ignore-output"]
fig = viz.tuning_curve({"replayed xgboost (median of 40 seeds)":
                        np.median(replayed, axis=0) * sweep.max(),
                        "random (median of 40 seeds)": np.median(random_share, axis=0)
                        * sweep.max()},
                       title=f"matmul {N}, replayed on the sweep: best GFLOPS so far")
ax = fig.axes[0]
for curves_, color in ((replayed, "C0"), (random_share, "C1")):
    ax.fill_between(range(1, TRIALS + 1), np.percentile(curves_, 25, axis=0) * sweep.max(),
                    np.percentile(curves_, 75, axis=0) * sweep.max(), step="post", alpha=0.2,
                    color=color)
ax.legend(fontsize=7)
fig

# %% [markdown]
# ## Does the model rank configurations it has not seen?
# A model scored on the points it was trained on says little: xgboost with 60 trees can
# memorise the 32 points below. The question the search asks is about configurations **not yet
# measured**. So train on 32 configurations of the sweep, predict the other 96, and score only
# those held-out ones, two ways:
#
# * **rank correlation** (Spearman): 1 when the predicted order is the measured order;
# * **pairwise accuracy**: of all pairs of held-out configurations, the share the model puts
#   in the right order: exactly the question "which of these two is faster?" that the search
#   asks. A second column counts only the pairs whose speeds differ by more than 10%:
#   timing noise decides the order of the closer ones.
#
# The same data trains a model on the knob values themselves (`feature="knob"`), for
# comparison.

# %% tags=["nbval-ignore-output"]
from mlc.tune.model import XGBoostCostModel, pairwise_accuracy, rank_correlation

split = [int(i) for i in np.random.default_rng(1).permutation(SIZE)]
train, held_out = split[:32], split[32:]
models = {
    "loop context (itervar)": XGBoostCostModel(lambda i: itervar_features(space.build(i))),
    "knob values": XGBoostCostModel(space.knob_features),
}
quality = {}
for name, model in models.items():
    model.fit(train, sweep[train])
    p_train, p_held = model.predict(train), model.predict(held_out)
    quality[name] = (rank_correlation(p_train, sweep[train]),
                     rank_correlation(p_held, sweep[held_out]),
                     pairwise_accuracy(p_held, sweep[held_out]),
                     pairwise_accuracy(p_held, sweep[held_out], margin=0.1))
print(f"{'features':24s} {'train corr':>10s} {'held-out corr':>13s} {'pairs right':>11s} "
      f"{'pairs >10% apart':>16s}")
for name, (tr, ho, pa, pa10) in quality.items():
    print(f"{name:24s} {tr:10.2f} {ho:13.2f} {pa:11.1%} {pa10:16.1%}")

# the ceiling: the same configurations timed twice (sweep, then the tuner's run)
second = {i: y / 1e9 for t in runs.values() for i, y in zip(t.xs, t.ys)}
timed_twice, again = list(second), np.array(list(second.values()))
print(f"\nmeasurement against itself ({len(again)} configurations timed twice): rank "
      f"correlation {rank_correlation(sweep[timed_twice], again):.2f}, pairs >10% apart "
      f"in the same order {pairwise_accuracy(sweep[timed_twice], again, margin=0.1):.1%}")

# %% tags=["nbval-ignore-output"]
model = models["loop context (itervar)"]
p_held = model.predict(held_out)
fig = Figure(figsize=(4.2, 3.4))
ax = fig.subplots()
ax.scatter(p_held, sweep[held_out], s=14, label="held out (96)")
ax.scatter(model.predict(train), sweep[train], s=14, marker="x", label="trained on (32)")
ax.set_xlabel("model score (no unit: only the order counts)")
ax.set_ylabel("measured GFLOPS")
ax.set_title(f"held-out rank correlation {rank_correlation(p_held, sweep[held_out]):.2f}")
ax.legend(fontsize=7)
fig.tight_layout()
fig

# %% [markdown]
# Compare the columns of the table: the training correlation is what a model scored on its
# own data reports, and only the held-out columns say how it will guide the search. Pairwise
# accuracy reads directly: 50% is a coin toss. The last line measures the measurement: the
# same configurations timed a second time agree with the first only so well, and a model's
# score against one noisy timing means no more than that agreement; a difference between two
# models smaller than the gap between the timings is noise.
#
# ## The rank loss, on three configurations
# Why train to *rank* rather than to predict GFLOPS? The search only ever asks which of two
# configurations is faster. AutoTVM's rank loss scores a model `f` on exactly that: for every
# pair where configuration `i` measured faster than `j`,
#
# $$L = \sum_{i, j:\ y_i > y_j} \log\left(1 + e^{-(f(x_i) - f(x_j))}\right)$$
#
# A pair in the right order with a wide margin costs almost nothing, a pair in the wrong order
# costs more than its margin. (xgboost's `rank:pairwise` objective, which `XGBoostCostModel`
# uses, is this logistic loss on pairs.) Take three measured configurations, the sweep's
# fastest, the one a quarter of the way down its ranking and the one three quarters down,
# with the scores of the model trained above:

# %% tags=["nbval-ignore-output"]
import itertools

order = [int(i) for i in np.argsort(-sweep)]  # fastest first
three = [order[0], order[SIZE // 4], order[3 * SIZE // 4]]
y3 = sweep[three]
f3 = model.predict(three)
for i, c in enumerate(three):
    print(f"config #{c:3d}: {y3[i]:5.1f} GFLOPS, model score {f3[i]:+.3f}   "
          f"{task.config_space.get(c)}")

def rank_loss_terms(scores, measured):
    """(i, j, term) for every pair with measured[i] > measured[j]."""
    return [(i, j, float(np.log1p(np.exp(-(scores[i] - scores[j])))))
            for i, j in itertools.permutations(range(len(measured)), 2)
            if measured[i] > measured[j]]

print()
for i, j, term in rank_loss_terms(f3, y3):
    print(f"#{three[i]} faster than #{three[j]}: margin {f3[i] - f3[j]:+.3f} -> "
          f"log(1 + exp({-(f3[i] - f3[j]):+.3f})) = {term:.3f}")
print(f"rank loss L = {sum(t for _, _, t in rank_loss_terms(f3, y3)):.3f}")

# %% [markdown]
# Now two made-up predictors of the same three speeds. **A** is off by a lot everywhere (it
# predicts each GFLOPS minus the spread between the fastest and the slowest) but keeps the
# order. **B** predicts the exact GFLOPS but swaps the two fastest. A regression loss (mean
# squared error) prefers B; the rank loss prefers A, and so does the search: B would send it
# to the second-best configuration. The cell checks both claims on the numbers it prints.

# %% tags=["nbval-ignore-output"]
spread = y3.max() - y3.min()
A_pred = y3 - spread
B_pred = y3[[1, 0, 2]]
def mse(pred):
    return float(np.mean((pred - y3) ** 2))
def rank_loss(pred):
    return sum(t for _, _, t in rank_loss_terms(pred, y3))
for name, pred in (("A", A_pred), ("B", B_pred)):
    print(f"{name}: predicts {np.round(pred, 1)}, squared error {mse(pred):7.1f}, "
          f"rank loss {rank_loss(pred):.3f}, picks config #{three[int(np.argmax(pred))]}")
assert mse(B_pred) < mse(A_pred) and rank_loss(A_pred) < rank_loss(B_pred)
assert np.isclose(rank_loss(B_pred) - rank_loss(A_pred), y3[0] - y3[1])
print(f"B's rank loss exceeds A's by {y3[0] - y3[1]:.1f}: the GFLOPS between the two it swaps")

# %% [markdown]
# The difference is exact: shifting every score by the same amount changes no margin, so A's
# loss is that of the true speeds, and swapping two scores turns that pair's term
# `log(1 + e^-d)` into `log(1 + e^d)`, which is `d` more. A ranking model is also free of
# units: scores from different machines or operators need not share a scale.
#
# ## The simulated-annealing walk
# Even a model is too slow to score every point of a real space. AutoTVM walks it instead:
# chains start at the best measured configurations, each step proposes one knob changed to
# another choice, takes the move when the model scores it higher, and otherwise takes it with
# a probability that falls as the temperature cools. `anneal(..., record=walk)` keeps every
# step. Four chains, 25 steps, over the model trained on 32 configurations:

# %% tags=["nbval-ignore-output"]
import random
from mlc.tune.sa import anneal
from mlc.viz.tuning import annealing_walk

walk = []
starts = sorted(train, key=lambda i: -sweep[i])[:4]
picks = anneal(model.predict, DIMS, n_pick=8, exclude=set(train),
               rng=random.Random(0), n_chains=4, n_iter=25, starts=starts, record=walk)
annealing_walk(walk, DIMS, model.predict(list(range(SIZE))), axes=(0, 1),
               labels=("tile_y inner factor", "tile_x inner factor"),
               ticklabels=(INNER, INNER))

# %% [markdown]
# The heat map is the model's landscape (the best over `vec`), to compare with the measured
# one above; the lines are the chains, from circle to star (a move of `vec` does not show on
# the map, only in the scores on the right). A move may jump to any other choice of one knob,
# hence the long straight segments. The walk's output is the batch it proposes to measure
# next: how good are those 8 picks, none of which the model was trained on?

# %% tags=["nbval-ignore-output"]
moves = sum(sum(s.accepted) for s in walk[1:])
print(f"{moves} of {4 * 25} proposed moves taken")
print("picks, measured GFLOPS:", np.round(sweep[picks], 1))
unseen = np.setdiff1d(np.arange(SIZE), train)
rank_of_best_pick = int(np.sum(sweep[unseen] > sweep[picks].max())) + 1
print(f"best pick: {sweep[picks].max():.1f} GFLOPS, {sweep[picks].max() / sweep.max():.0%} of "
      f"the sweep's best; number {rank_of_best_pick} of the {len(unseen)} unmeasured ones")
print(f"8 random unmeasured picks would hold the best of them with probability "
      f"{8 / len(unseen):.0%}")

# %% [markdown]
# ## Use the best configuration
# The log of the first model-guided run (seed 0) holds every measurement it made;
# `apply_history_best` makes the template pick the best configuration in it. Build it and
# check it against numpy.

# %%
with tune.apply_history_best(LOG):
    s, args = matmul(N, "float32")
f = mlc.build(s, args)
c = np.zeros((N, N), "float32")
f(a, b, c)
np.testing.assert_allclose(c, a @ b, rtol=1e-3)
print("the best schedule computes the right answer")

# %% [markdown]
# ## Lucky measurements: measure the winners again
# A tuner keeps the fastest measurement it has seen. Each measurement is off by a few
# percent, and the largest of many noisy numbers is biased upwards: the configuration that
# won may be the luckiest rather than the best (the *winner's curse*). If the curse is at
# work, a winner timed again, apart from the run that chose it, comes out slower. The sweep
# timed every configuration apart from the tuners' runs; the cell compares each run's winner
# with its sweep timing and says what the numbers show:

# %% tags=["nbval-ignore-output"]
ratios = []
for seed, t in runs.items():
    first, again = t.best_flops / 1e9, sweep[t.best_index]
    ratios.append(again / first)
    print(f"seed {seed}: configuration {t.best_index}: {first:.1f} GFLOPS when chosen, "
          f"{again:.1f} in the sweep ({again / first:.0%})")
slower = sum(r < 0.95 for r in ratios)
print(f"{slower} of {len(ratios)} winners were more than 5% slower in the sweep: "
      + ("what the winner's curse predicts (a machine busier during the sweep would look "
         "the same; the next cell times the winners again in one run)" if slower == len(ratios)
         else "not all were, so no clear sign of the curse in this run"))

# %% [markdown]
# `tune(..., confirm=4)` guards against it: after the trials it measures the four fastest
# configurations again, in alternating rounds so a passing burst of load hits them alike, and
# chooses by the median of the new runs only: the first runs are the ones that selected
# them, biased up by the selection, while the new runs are not. Whether the first runs were
# *lucky* this time is a measurement, which the cell prints; the choice is sound either way.
# Re-measuring adds no trials. `tune_tir` does it by default with one configuration per 16
# trials, at most 4 (so from 32 trials on, and the four fastest from 64 trials on); the
# 1024 x 1024 GEMM benchmark uses it.

# %% tags=["nbval-ignore-output"]
confirmed = tune.XGBTuner(task, seed=0, batch_size=4, plan_size=8, feature="itervar")
confirmed.tune(TRIALS, measure_option=option, confirm=4)
medians = {i: float(np.median(c)) for i, c in confirmed.confirmed.items()}
for i, cost in sorted(medians.items(), key=lambda kv: kv[1]):
    first = confirmed.ys[confirmed.xs.index(i)] / 1e9
    print(f"configuration {i}: {first:.1f} GFLOPS at first, {task.flop / cost / 1e9:.1f} "
          f"re-measured (median of {len(confirmed.confirmed[i])} runs)")
assert len(medians) == 4 and confirmed.best_index == min(medians, key=medians.__getitem__)
firsts = {i: confirmed.ys[confirmed.xs.index(i)] / 1e9 for i in medians}
again = {i: task.flop / medians[i] / 1e9 for i in medians}
slower = [i for i in medians if again[i] < 0.95 * firsts[i]]
faster = [i for i in medians if again[i] > 1.05 * firsts[i]]
first_winner = max(firsts, key=firsts.__getitem__)
print(f"re-measured: {len(slower)} of 4 slower than at first, {len(faster)} faster, "
      f"{4 - len(slower) - len(faster)} within 5%"
      + (" (so the first runs were not the lucky ones this time)"
         if len(faster) > len(slower) else ""))
print(f"chosen: {confirmed.best_index}; by the first runs alone it would have been "
      f"{first_winner}" + (" (the same)" if first_winner == confirmed.best_index else ""))

# %% [markdown]
# Two further paths are in the appendix, `07_appendix`: a schedule with *sampled* numbers as
# the search space (MetaSchedule's way, and mlc's BLAS-style default space), and measuring
# on a pool of machines with Dask.

# %% [markdown]
# > **What to remember**
# > * A template (or a sampled schedule) defines a space; a tuner measures points of it and
# >   keeps the best.
# > * The cost model learns from loop-context features, trained to rank; it pays where few
# >   configurations are near the best and random draws rarely land there.
# > * Measurements are noisy: re-measure the winners, and compare two tuners over many seeds,
# >   not one run.

# %% [markdown]
# ## Exercises
# Complete each function (replace `raise NotImplementedError()`) and run the check under it:
# ✓, or ✗ with what is wrong
# (`hint("1")` gives a hint for exercise 1, the idea first, when you want one). Run the next cell
# first: it defines the checks.
# Nothing from the cells above is needed but the imports.

# %%
import math
import random
from mlc.testing.exercises import exercise, expect, hint  # noqa: F401 (hint("1") asks for a hint)

def knob_choices(index, dims):
    """The choice of each knob in config ``index`` (mixed radix, first knob fastest)."""
    out = []
    for d in dims:
        out.append(index % d)
        index //= d
    return out

@exercise("1. a move for simulated annealing", hint=[
          "a configuration index is a number in mixed radix, one digit per knob; a move "
          "changes exactly one digit to another of its values",
          "decode with % and // (the first knob is the fastest digit), change one digit "
          "chosen at random among the knobs with more than one choice, encode back"])
def check_neighbour(neighbour):
    dims = (8, 8, 2, 1)
    size = math.prod(dims)
    rng = random.Random(0)
    for index in range(size):
        for _ in range(8):
            q = neighbour(index, dims, rng)
            expect(isinstance(q, (int, np.integer)),
                   f"neighbour should return a config index (an int), not {type(q).__name__}")
            expect(0 <= q < size, f"neighbour({index}) = {q} is outside the space of {size} "
                   "points (a knob with one choice must never move)")
            before, after = knob_choices(index, dims), knob_choices(int(q), dims)
            changed = [k for k in range(len(dims)) if before[k] != after[k]]
            expect(len(changed) == 1, f"neighbour({index}) = {q} changes the knobs {changed} "
                   f"(choices {before} -> {after}); a move changes exactly one")
    rng = random.Random(1)
    seen = {neighbour(0, dims, rng) for _ in range(400)}
    expect(len(seen) == 15, f"400 moves from config 0 reached {len(seen)} of the 15 "
           "configurations one knob away: choose the knob and its new value at random")
    expect(neighbour(0, (1, 1), random.Random(0)) == 0,
           "in a space of one point the only move is to stay: return index")

@exercise("2. the rank loss's gradient", hint=[
          "differentiate one pair's term with respect to s_i and to s_j: the two "
          "derivatives are equal and opposite, which is why the gradient sums to zero",
          "the derivative of log(1 + exp(-d)) with respect to d is -1 / (1 + exp(d)); add "
          "each pair's contribution to both of its entries"])
def check_rank_loss_grad(rank_loss_grad):
    def loss(s, y):  # the rank loss of the lecture
        return sum(np.log1p(np.exp(-(s[i] - s[j]))) for i in range(len(y))
                   for j in range(len(y)) if y[i] > y[j])
    g = np.asarray(rank_loss_grad(np.array([2.0, 1.0, 0.0]), np.array([30.0, 20.0, 10.0])),
                   dtype="float64")
    expect(g.shape == (3,), f"one derivative per configuration: shape (3,), not {g.shape}")
    e = math.e
    by_hand = [-(1 / (1 + e) + 1 / (1 + e**2)), 0.0, 1 / (1 + e) + 1 / (1 + e**2)]
    expect(np.allclose(g, by_hand, atol=1e-6), f"for scores [2, 1, 0] and speeds [30, 20, 10] "
           f"the gradient is {np.round(by_hand, 4)}, not {np.round(g, 4)}")
    tie = np.asarray(rank_loss_grad(np.array([0.0, 3.0]), np.array([5.0, 5.0])), "float64")
    expect(np.allclose(tie, 0), f"two configurations measured equally fast form no pair: "
           f"the gradient is 0, not {tie}")
    rng = np.random.default_rng(3)
    s, y = rng.standard_normal(6), rng.integers(0, 4, 6).astype("float64")  # with ties
    g = np.asarray(rank_loss_grad(s, y), dtype="float64")
    numeric = np.array([(loss(s + h, y) - loss(s - h, y)) / 2e-6 for h in np.eye(6) * 1e-6])
    expect(np.allclose(g, numeric, atol=1e-5), f"on scores {np.round(s, 2)} and speeds {y} "
           f"the gradient is {np.round(numeric, 4)} (by finite differences), not {np.round(g, 4)}")

@exercise("3. a knob of your own", hint=[
          "a knob is a decision the schedule can take more than one way, and each choice "
          "must give a different loop program",
          "cfg.define_knob with a list of choices, then read cfg[name].val to decide "
          "which schedule primitive to apply"])
def check_knob(template_name):
    n = 64
    task7 = tune.create_task(template_name, args=(n, "float32"))
    knobs = list(task7.config_space.knobs)
    for name in ("tile_y", "tile_x", "vec"):
        expect(name in knobs, f"keep the chapter's knob {name!r}; the space has {knobs}")
    mine = [k for k in knobs if k not in ("tile_y", "tile_x", "vec")]
    expect(mine, "the space has only the chapter's knobs tile_y, tile_x and vec: define one "
           "of your own with cfg.define_knob")
    knob = mine[0]
    dims7 = task7.config_space.dims
    expect(dims7[knobs.index(knob)] >= 2,
           f"knob {knob!r} has one choice: a knob needs at least two to choose from")
    rng = np.random.default_rng(0)
    a7 = rng.random((n, n), dtype="float32")
    b7 = rng.random((n, n), dtype="float32")
    def choices_with(value):  # inner factors 4 and 16, vectorized, the knob at `value`
        return [{"tile_y": 2, "tile_x": 4, "vec": 1}.get(k, 0) if k != knob else value
                for k in knobs]
    programs, gflops = {}, {}
    for value in range(dims7[knobs.index(knob)]):
        config = task7.config_space.get(task7.config_space.index_of(choices_with(value)))
        s7, tensors = task7.instantiate(config)
        programs[value] = str(s7.to_prim_func(tensors))
        f7 = mlc.build(s7, tensors)
        c7 = np.zeros((n, n), "float32")
        f7(a7, b7, c7)
        expect(np.allclose(c7, a7 @ b7, rtol=1e-3, atol=1e-3),
               f"with {config} the result is not A @ B")
        gflops[value] = 2 * n**3 / viz.seconds_per_call(lambda: f7(a7, b7, c7)) / 1e9
    expect(len(set(programs.values())) == len(programs),
           f"some choices of {knob!r} give the same loop program: the knob changes nothing")
    for index in rng.choice(len(task7.config_space), 4, replace=False):
        s7, tensors = task7.instantiate(int(index))
        c7 = np.zeros((n, n), "float32")
        mlc.build(s7, tensors)(a7, b7, c7)
        expect(np.allclose(c7, a7 @ b7, rtol=1e-3, atol=1e-3),
               f"with {task7.config_space.get(int(index))} the result is not A @ B")
    entities = task7.config_space.knobs[knob].entities
    print(f"{knob}: " + ", ".join(f"{getattr(entities[v], 'val', entities[v])!r} "
                                  f"{g:.1f} GFLOPS" for v, g in gflops.items())
          + " (tile 4 x 16, vectorized, n = 64)")

# %% [markdown]
# **1. A move for simulated annealing.** `neighbour(index, dims, rng)` returns config `index`
# with exactly one knob changed to another of its choices (`dims[k]` choices for knob `k`;
# `index` is the mixed-radix number of the choices, first knob fastest, as `knob_choices`
# above decodes it). A knob with one choice never moves; use `rng` for every random choice.

# %%
def neighbour(index, dims, rng):
    ### BEGIN SOLUTION
    choices = knob_choices(index, dims)
    movable = [k for k, d in enumerate(dims) if d > 1]
    if not movable:
        return index
    k = rng.choice(movable)
    new = rng.randrange(dims[k] - 1)
    choices[k] = new if new < choices[k] else new + 1
    out, scale = 0, 1
    for c, d in zip(choices, dims):
        out += c * scale
        scale *= d
    return out
    ### END SOLUTION

check_neighbour(neighbour)

# %% [markdown]
# **2. The rank loss's gradient.** xgboost does not minimise a loss it cannot differentiate:
# each boosting round fits a tree to the gradient (and the curvature) of the loss with
# respect to every configuration's score. Write `rank_loss_grad(scores, measured)`, the gradient of
# $L = \sum_{i, j:\ y_i > y_j} \log(1 + e^{-(s_i - s_j)})$ with respect to each $s_i$
# (numpy arrays in, a numpy array of the same length out). Which sign does the fastest
# configuration get, and why do the entries sum to zero?

# %%
def rank_loss_grad(scores, measured):
    ### BEGIN SOLUTION
    grad = np.zeros(len(scores))
    for i in range(len(scores)):
        for j in range(len(scores)):
            if measured[i] > measured[j]:
                g = 1.0 / (1.0 + np.exp(scores[i] - scores[j]))
                grad[i] -= g
                grad[j] += g
    return grad
    ### END SOLUTION

check_rank_loss_grad(rank_loss_grad)

# %% [markdown]
# **3. Design a knob.** Below is the chapter's template with room for one knob of your own:
# define it with `cfg.define_knob(name, choices)` and let its value change the schedule of
# `s[C]` (unroll a loop, another loop order, `parallel` on an outer loop, ...). The check
# builds your template at n = 64: the space must hold your knob beside the three of the
# chapter, every choice of it must change the loop program and compute `A @ B`. It then
# prints the GFLOPS of each choice at one tiling (4 x 16, vectorized), for you to judge
# whether it helps: on a shared machine that is a measurement to read, not a verdict the
# check makes. To let a tuner find out, run `tune.XGBTuner(tune.create_task("nb07_my_knob",
# args=(128, "float32"))).tune(16)`.

# %% tags=["nbval-ignore-output"]
@tune.template("nb07_my_knob")
def matmul_my_knob(n, dtype):
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
    # your knob: cfg.define_knob(...), then change s[C] according to its value
    ### BEGIN SOLUTION
    cfg.define_knob("unroll", [0, 1])
    if cfg["unroll"].val:
        s[C].unroll(yi)
    ### END SOLUTION
    return s, [A, B, C]

check_knob("nb07_my_knob")

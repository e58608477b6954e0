# %% [markdown]
# # 13 · Attention: the open problem, and a kernel that keeps the scores on chip
#
# The lecture notes (seed 000) end with "a lot of open problems", the first of them
# "optimize for NLP models like RNN, attention". Attention is the core of a transformer:
#
# $$O = \mathrm{softmax}\!\left(\frac{Q K^\top}{\sqrt d}\right) V$$
#
# for a sequence of `n` tokens with `d` features per head: `Q`, `K`, `V` and `O` are
# `n × d`, and the scores `S = Q Kᵀ / √d` are `n × n`. The scores are the problem: at 4,096
# tokens they are 64 MiB per head, computed, written, read back for the softmax, written
# again and read once more by the second product. The fusion rules of chapter 05 leave
# exactly that traffic in place. This chapter shows why, then writes the fused kernel the
# rules cannot find (the idea behind FlashAttention).
#
# **You will:** take attention through the graph level and read the fusion printout; build a
# te kernel that computes one row of scores, its softmax and its product with `V` before the
# next row, checked against numpy; count the memory each version allocates, from the
# lowered programs.

# %%
import mlc  # first: a folder named "mlc" where Jupyter started would hide the package

if not hasattr(mlc, "build"):
    raise ImportError(f"'import mlc' found the folder {list(mlc.__path__)[0]}, not the mlc "
                      "package: start Jupyter from another folder (`make lab` in the "
                      "checkout does), or rename that folder")

%matplotlib inline
import re

import matplotlib.pyplot as plt
import numpy as np

from mlc import graph, te, tir
from mlc.testing.exercises import exercise, expect, hint  # noqa: F401
from mlc.viz import seconds_per_call

# %% [markdown]
# **Why:** fusion saves memory traffic only where its rules allow, and attention's three
# reductions in a row (a product, a softmax, a product) are where they do not. A kernel
# written by hand, per row, removes the `n × n` intermediate altogether.
#
# Where this chapter works, on the map of chapter 00 (its levels in blue):

# %% tags=["nbval-ignore-output"]
from mlc.viz.concepts import stack

stack(chapter=13)

# %% [markdown]
# ## Attention on the graph level
# One head, `n = 64` tokens, `d = 32` features: `batch_matmul` (chapter 05's graph op, with
# a batch of 1) for `Q Kᵀ`, a multiply by `1/√d`, the softmax over each row, and
# `batch_matmul(P, V, transpose_b=False)` for `P V`. Optimized, the printout gives each op
# its kernel (group) and pattern:

# %%
n, d = 64, 32
q = graph.var("q", shape=(1, n, d))
k = graph.var("k", shape=(1, n, d))
v = graph.var("v", shape=(1, n, d))
scores = graph.nn.batch_matmul(q, k) * graph.const(np.float32(1 / np.sqrt(d)))
attn = graph.nn.batch_matmul(graph.nn.softmax(scores, axis=-1), v, transpose_b=False)
g = graph.optimize(graph.Graph([q, k, v], [attn]))
print(g)
for grp in g.groups:
    print(f"kernel {grp.gid}: {[nd.op.name for nd in grp.nodes]}")
for name in ("nn.batch_matmul", "multiply", "nn.softmax"):
    print(f"{name:16s} {graph.get_op(name).pattern.name}")
assert [[nd.op.name for nd in grp.nodes] for grp in g.groups] == [
    ["nn.batch_matmul", "multiply"], ["nn.softmax"], ["nn.batch_matmul"]]

# %% [markdown]
# Three kernels, and chapter 05's rules say why, one by one:
#
# * the first `batch_matmul` is a complex op (OUT_ELEMWISE_FUSABLE), and a complex op takes
#   the elementwise and broadcast ops after it: the scaling joins its kernel;
# * the softmax is a complex op too (it holds two reductions over the row, a max and a sum),
#   and **two groups that each hold a complex op never merge**: the product cannot take
#   the softmax as its epilogue, because the softmax of element `(i, j)` needs the whole
#   row `i` of scores, not just element `(i, j)`;
# * for the same reason the softmax cannot feed the second product inside one kernel: each
#   element of `P V` is a sum over a full row of `P`.
#
# So the `n × n` scores go to memory twice (scaled scores, then probabilities). The memory
# plan (last line of the printout) counts them, and the module computes what numpy does:

# %%
mod = graph.build(g, target="llvm")
rng = np.random.default_rng(0)
qv, kv, vv = (rng.standard_normal((1, n, d)).astype("float32") for _ in range(3))


def attention_numpy(q, k, v):
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


np.testing.assert_allclose(mod(q=qv, k=kv, v=vv)[0], attention_numpy(qv, kv, vv),
                           rtol=1e-4, atol=1e-5)
print(g.memory)
print(f"the graph module matches numpy; its {len(mod.kernels)} kernels pass "
      f"{n} x {n} scores between them ({n * n * 4:,} bytes each time)")
assert len(mod.kernels) == 3 and g.memory.bytes_after == 2 * n * n * 4

# %% [markdown]
# ## The same attention in te, stage by stage
# In te the reductions are separate stages, each with its own buffer: the scores `S`, the
# row maximum `M`, the shifted exponentials `E`, the row sums `L`, the unnormalised output
# `U = E V`, and `O = U / L` (dividing once per output element instead of once per score).
# The scale `1/√d` goes inside the sum of `S` (te allows a reducer only as the whole body).

# %%
def attention_stages(n, d):
    Q = te.placeholder((n, d), name="Q")
    K = te.placeholder((n, d), name="K")
    V = te.placeholder((n, d), name="V")
    c = te.reduce_axis((0, d), name="c")
    S = te.compute((n, n), lambda i, j: te.sum(Q[i, c] * K[j, c] * (1 / np.sqrt(d)), axis=c),
                   name="S")
    j1 = te.reduce_axis((0, n), name="j1")
    M = te.compute((n,), lambda i: te.max(S[i, j1], axis=j1), name="M")
    E = te.compute((n, n), lambda i, j: te.exp(S[i, j] - M[i]), name="E")
    j2 = te.reduce_axis((0, n), name="j2")
    L = te.compute((n,), lambda i: te.sum(E[i, j2], axis=j2), name="L")
    j3 = te.reduce_axis((0, n), name="j3")
    U = te.compute((n, d), lambda i, f: te.sum(E[i, j3] * V[j3, f], axis=j3), name="U")
    O = te.compute((n, d), lambda i, f: U[i, f] / L[i], name="O")
    return [Q, K, V], [S, M, E, L, U], O


def scratch(func):
    """The buffers a lowered program allocates (name, elements), outer ones first."""
    found = []

    def visit(node):
        if isinstance(node, tir.Allocate):
            found.append(node.buffer)
        found.extend(getattr(node, "alloc_buffers", None) or ())

    tir.post_order_visit(func.body, visit)
    return {b.name: int(np.prod([int(e) for e in b.shape])) for b in reversed(found)}


(Q, K, V), (S, M, E, L, U), O = attention_stages(n, d)
s_plain = te.create_schedule(O.op)
plain = scratch(mlc.lower(s_plain, [Q, K, V, O]))
print("unscheduled, the program allocates:", plain)
assert plain["S"] == plain["E"] == n * n

# %% [markdown]
# ## One row at a time
# Row `i` of the output needs all of `K` and `V`, but of the intermediates only row `i` of
# `S` and `E`, `M[i]`, `L[i]` and row `i` of `U`: nothing of any other row. So every stage
# can be computed inside `O`'s row loop with `compute_at` (chapter 02): each iteration of
# `i` computes one row of scores, its max, its exponentials, its sum and its product with
# `V`, and the buffers shrink to one row.

# %%
s_rows = te.create_schedule(O.op)
for stage in (S, M, E, L, U):
    s_rows[stage].compute_at(s_rows[O], O.op.axis[0])
lowered = mlc.lower(s_rows, [Q, K, V, O])
print(lowered)
rows = scratch(lowered)
print("one row at a time, the program allocates:", rows)
assert rows == {"S": n, "M": 1, "E": n, "L": 1, "U": d}
assert sum(rows.values()) == 2 * n + d + 2

# %% [markdown]
# The two ways as a picture: on the left the probabilities `P` of this chapter's `Q`, `K`,
# the whole `n × n` matrix the graph module writes between kernels; on the right the one
# row the row kernel holds while it computes row 10 of `O`.

# %% tags=["nbval-ignore-output"]
sc_np = qv[0] @ kv[0].T / np.sqrt(d)
p_np = np.exp(sc_np - sc_np.max(axis=1, keepdims=True))
p_np /= p_np.sum(axis=1, keepdims=True)
fig, (left, right) = plt.subplots(1, 2, figsize=(8, 3.4),
                                  gridspec_kw={"width_ratios": [1, 1]})
left.imshow(p_np, cmap="viridis")
left.set_title(f"stage by stage: all of P in memory\n({n} x {n} floats)", fontsize=9)
left.add_patch(plt.Rectangle((-0.5, 9.5), n, 1, fill=False, edgecolor="red", linewidth=1.5))
right.imshow(np.where(np.arange(n)[:, None] == 10, p_np, np.nan), cmap="viridis")
right.set_title(f"one row at a time: row 10 only\n({n} floats, then the next row)",
                fontsize=9)
for ax in (left, right):
    ax.set_xlabel("key j")
    ax.set_ylabel("query i")
plt.show()

# %% [markdown]
# Read the program: inside `for i`, six short loops, one per stage, over one row. `S`
# holds `n = 64` scores, 256 bytes, small enough for the L1 cache (on a GPU: for shared
# memory or registers, "on chip"). Both kernels compute attention, checked against numpy:

# %%
f_plain = mlc.build(s_plain, [Q, K, V, O])
f_rows = mlc.build(s_rows, [Q, K, V, O])
q2, k2, v2 = qv[0], kv[0], vv[0]
expected = attention_numpy(q2, k2, v2)
for f in (f_plain, f_rows):
    out = np.zeros((n, d), "float32")
    f(q2, k2, v2, out)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
print("unscheduled and row-at-a-time both match numpy")

# %% [markdown]
# The memory saved, from the lowered programs at the chapter's size and at 4,096 tokens
# (lowering only: nothing of that size is allocated here):

# %%
print(f"{'n':>6s} {'stage by stage':>16s} {'one row at a time':>18s} {'saved':>8s}")
for tokens in (n, 4096):
    ins, (S_, M_, E_, L_, U_), O_ = attention_stages(tokens, d)
    s_a = te.create_schedule(O_.op)
    s_b = te.create_schedule(O_.op)
    for stage in (S_, M_, E_, L_, U_):
        s_b[stage].compute_at(s_b[O_], O_.op.axis[0])
    a = 4 * sum(scratch(mlc.lower(s_a, [*ins, O_])).values())
    b = 4 * sum(scratch(mlc.lower(s_b, [*ins, O_])).values())
    print(f"{tokens:6d} {a:14,d} B {b:16,d} B {a / b:7.0f}x")
    assert b == 4 * (2 * tokens + d + 2) and a > 2 * 4 * tokens * tokens
print(f"S alone at 4,096 tokens: {4 * 4096 * 4096:,} bytes ({4 * 4096 * 4096 / 2**20:.0f} MiB)")

# %% [markdown]
# The row kernel is scalar. Inside a row three loops vectorize without changing what is
# computed: `E` over the row, `O` over the `d` features, and `U` over the features once
# its reduction over `j3` is moved outside them (`U[0:32] += E[j3] * V[j3, 0:32]`, one
# vector multiply-add per `j3`):

# %%
s_vec = te.create_schedule(O.op)
for stage in (S, M, E, L, U):
    s_vec[stage].compute_at(s_vec[O], O.op.axis[0])
s_vec[U].reorder(U.op.reduce_axis[0], U.op.axis[1])
s_vec[U].vectorize(U.op.axis[1])
s_vec[E].vectorize(E.op.axis[1])
s_vec[O].vectorize(O.op.axis[1])
f_vec = mlc.build(s_vec, [Q, K, V, O])
out = np.zeros((n, d), "float32")
f_vec(q2, k2, v2, out)
np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
assert scratch(mlc.lower(s_vec, [Q, K, V, O])) == rows
print("vectorized, it still matches numpy and allocates the same row:", rows)

# %% [markdown]
# The time of each, at `n = 64` (this run's numbers). At this size the whole `S`, 16 KB,
# fits in the L1 cache of a current x86 core (32 to 48 KB), so memory is not what limits
# any of them; the graph's kernels have chapter 06's register tiles, which the row kernels
# lack (their `S` loop is still a scalar dot product per score):

# %% tags=["nbval-ignore-output"]
out = np.zeros((n, d), "float32")
t_plain = seconds_per_call(lambda: f_plain(q2, k2, v2, out), number=20, repeat=5)
t_rows = seconds_per_call(lambda: f_rows(q2, k2, v2, out), number=20, repeat=5)
t_vec = seconds_per_call(lambda: f_vec(q2, k2, v2, out), number=20, repeat=5)
t_graph = seconds_per_call(lambda: mod(q=qv, k=kv, v=vv), number=20, repeat=5)
print(f"graph module (3 scheduled kernels) {t_graph * 1e6:.0f} us; te stage by stage "
      f"{t_plain * 1e6:.0f} us, one row at a time {t_rows * 1e6:.0f} us, the same "
      f"vectorized {t_vec * 1e6:.0f} us")
first_kernel = str(mod.kernels[0].lowered)
tile = re.search(r"batch_matmul = alloc_buffer\(\((\d+),\)", first_kernel)
k_step = re.split(r"for k\w* in range\(32\):", first_kernel)[-1].split("for ")[0]
tile_rows = len(set(re.findall(r"broadcast\(q\[([^\]]*)\]", k_step)))
assert tile and tile_rows > 1 and "ramp(" in k_step
print(f"the graph's first kernel keeps a tile of {tile[1]} accumulators ({tile_rows} rows x "
      f"{int(tile[1]) // tile_rows}) in vectors")

# %% [markdown]
# ## Why this stays an open problem
# The row kernel is what a compiler cannot derive from chapter 05's rules: fusing across a
# reduction needs to know that the consumer reads only one row of the producer, a fact
# about index expressions (the region analysis behind `compute_at`), not about op
# patterns. Three things remain, each a research result of the last years:
#
# * **A row is not always small.** At 100,000 tokens one row of scores is 400 KB, larger
#   than a GPU's shared memory. FlashAttention (Dao et al., 2022) splits the row into
#   blocks and keeps a *running* maximum and sum, rescaling what it has accumulated when a
#   larger maximum appears ("online softmax"; exercise 2). Then no row is ever whole.
# * **Each row reads all of `K` and `V`.** The kernel above streams `K` and `V` once per
#   row of `Q`, `n` times; blocks of rows share one pass (a tile, as in chapter 04).
# * **Shapes change at run time.** A decoder generates one token at a time, so `n` grows
#   by one per step and `K`, `V` are cached: a kernel per length is not an option, and
#   symbolic shapes (chapter 01) or bucketing to a few lengths are needed.
#
# RNNs, the other open problem of the notes, have the opposite difficulty: a loop over time
# in which each step depends on the one before (chapter 01's `te.scan`), so the parallelism
# is inside one step only.
#
# > **What to remember**
# > * Attention is two products with a softmax between them, three reductions over rows;
# >   the `n × n` scores are its cost in memory.
# > * Pattern-based fusion does not merge two complex ops, so the graph level writes the
# >   scores to memory between kernels.
# > * Computing every stage inside the output's row loop (`compute_at`) keeps one row of
# >   scores: `2n + d + 2` floats instead of about `2n²`.
# > * Online softmax (a running max and sum) removes the need for even a whole row.

# %% [markdown]
# ## Exercises
# Complete each function (replace `raise NotImplementedError()`) and run the check under it:
# ✓, or ✗ with what is wrong
# (`hint("1")` gives a hint for exercise 1, the idea first, when you want one). Run the next
# cell first: it defines the checks. Nothing from the cells above is needed but the imports.

# %%
def attention_te(n, d):
    Q, K, V = (te.placeholder((n, d), name=nm) for nm in "QKV")
    c = te.reduce_axis((0, d), name="c")
    S = te.compute((n, n), lambda i, j: te.sum(Q[i, c] * K[j, c] * (1 / np.sqrt(d)), axis=c),
                   name="S")
    j1 = te.reduce_axis((0, n), name="j1")
    M = te.compute((n,), lambda i: te.max(S[i, j1], axis=j1), name="M")
    E = te.compute((n, n), lambda i, j: te.exp(S[i, j] - M[i]), name="E")
    j2 = te.reduce_axis((0, n), name="j2")
    L = te.compute((n,), lambda i: te.sum(E[i, j2], axis=j2), name="L")
    j3 = te.reduce_axis((0, n), name="j3")
    U = te.compute((n, d), lambda i, f: te.sum(E[i, j3] * V[j3, f], axis=j3), name="U")
    O = te.compute((n, d), lambda i, f: U[i, f] / L[i], name="O")
    return [Q, K, V], [S, M, E, L, U], O


def allocated(func):
    sizes = []

    def visit(node):
        bufs = [node.buffer] if isinstance(node, tir.Allocate) else []
        sizes.extend(int(np.prod([int(e) for e in b.shape]))
                     for b in bufs + list(getattr(node, "alloc_buffers", None) or ()))

    tir.post_order_visit(func.body, visit)
    return sizes


@exercise("1. attention, one row at a time", hint=[
          "row i of the output needs only row i of every intermediate: if each "
          "intermediate is computed where the output's row loop is, one row of it is enough",
          "te's compute_at, once per intermediate, at the output's first axis; the stages "
          "are listed producers first"])
def check_rows(schedule_rows):
    n_, d_ = 48, 16
    ins, stages, O = attention_te(n_, d_)
    s = schedule_rows(ins, stages, O)
    expect(s is not None, "schedule_rows returns the te schedule it made")
    sizes = allocated(mlc.lower(s, [*ins, O]))
    expect(max(sizes, default=0) < n_ * n_,
           f"the program still allocates a buffer of {max(sizes)} elements: a whole "
           f"{n_} x {n_} matrix of scores (or exponentials)")
    expect(sum(sizes) <= 2 * n_ + d_ + 2,
           f"one row needs {2 * n_ + d_ + 2} elements of scratch; the program allocates "
           f"{sum(sizes)}")
    r = np.random.default_rng(3)
    q, k, v = (r.standard_normal((n_, d_)).astype("float32") for _ in range(3))
    out = np.zeros((n_, d_), "float32")
    mlc.build(s, [*ins, O])(q, k, v, out)
    sc = q @ k.T / np.sqrt(d_)
    p = np.exp(sc - sc.max(axis=1, keepdims=True))
    expect(np.allclose(out, (p / p.sum(axis=1, keepdims=True)) @ v, rtol=1e-4, atol=1e-5),
           "the kernel no longer computes attention")

# %% [markdown]
# **1.** `schedule_rows(ins, stages, O)` gets the tensors of `attention_te(n, d)`: the
# inputs `[Q, K, V]`, the intermediates `[S, M, E, L, U]` and the output `O`. Return a te
# schedule of `O` that computes attention with one row of scratch, `2n + d + 2` floats.

# %%
def schedule_rows(ins, stages, O):
    ### BEGIN SOLUTION
    s = te.create_schedule(O.op)
    for stage in stages:
        s[stage].compute_at(s[O], O.op.axis[0])
    return s
    ### END SOLUTION


check_rows(schedule_rows)

# %%
@exercise("2. online softmax", hint=[
          "keep the largest value seen so far and the sum of exp(x - that value); when a "
          "block brings a larger value, the sum so far was taken against the old one and "
          "has to be rescaled",
          "exp(a - b) = exp(a - c) * exp(c - b): multiplying the old sum by exp(old max - "
          "new max) moves it to the new maximum"])
def check_online(running_max_sum):
    def blocks(x, size, seen):
        buf = np.empty(size, "float32")  # one buffer, refilled: a kept block changes
        for start in range(0, len(x), size):
            seen.append(start)
            view = buf[:len(x[start:start + size])]
            view[:] = x[start:start + size]
            yield view

    r = np.random.default_rng(4)
    for x, size in [(r.standard_normal(37).astype("float32"), 5),
                    (np.sort(r.standard_normal(40)).astype("float32"), 8),
                    (np.array([1000.0, 999.0, -1000.0, 1001.0], "float32"), 1),
                    (np.array([3.0], "float32"), 4)]:
        seen = []
        result = running_max_sum(blocks(x, size, seen))
        expect(isinstance(result, tuple) and len(result) == 2,
               f"running_max_sum returns the pair (m, l), not {result!r}")
        m, total = result
        expect(len(seen) == -(-len(x) // size),
               "read the blocks once, in order, as they come (they are a generator)")
        expect(np.isfinite(m) and np.isfinite(total),
               f"for {x[:4]}... the result is not finite: ({m}, {total}); exp of a large "
               "score overflows float32 unless the maximum is subtracted")
        expect(np.isclose(m, x.max()), f"the maximum of {x[:4]}... is {x.max()}, not {m}")
        want = np.exp(x.astype("float64") - x.max()).sum()
        expect(np.isclose(total, want, rtol=1e-4),
               f"the sum of exp(x - max) is {want:.6g}, not {total:.6g} "
               f"(blocks of {size}{', the largest comes last' if size == 8 else ''}; "
               "each block is refilled in the same buffer when the next comes, so a block "
               "kept for later no longer holds its values)")

# %% [markdown]
# **2.** FlashAttention's trick, on one row. `running_max_sum(blocks)` gets the row as an
# iterator of numpy blocks, to be read once, and returns `(m, l)`: the row's maximum and
# `l = sum(exp(x - m))`, so that `softmax(x) = exp(x - m) / l`. Keep only two numbers
# between blocks: as on a GPU, where a block of scores is overwritten by the next, a block
# you keep will not hold its values later.

# %%
def running_max_sum(blocks):
    ### BEGIN SOLUTION
    m, total = -np.inf, 0.0
    for b in blocks:
        new_m = max(m, float(b.max()))
        total = total * np.exp(m - new_m) + float(np.exp(b - new_m).sum())
        m = new_m
    return m, total
    ### END SOLUTION


check_online(running_max_sum)

# %% [markdown]
# # 08 · GPU programming: blocks, threads and shared memory
#
# A GPU runs one function, the **kernel**, on thousands of threads at once. The threads are
# organised in two levels:
#
# * a **grid** of thread **blocks**, indexed by `blockIdx.x` (and `.y`, `.z`); blocks run
#   independently, in any order, on the GPU's streaming multiprocessors;
# * each block is a group of **threads**, indexed by `threadIdx.x` (`.y`, `.z`), that run on
#   the same multiprocessor, can share a small fast **shared memory**, and can wait for each
#   other at a barrier, `__syncthreads()`.
#
# In TVM (and mlc) a GPU schedule is an ordinary schedule whose loops are **bound** to these
# indices: `s[C].bind(xo, te.thread_axis("blockIdx.x"))` says "there is no loop `xo` any more:
# each block runs one of its iterations". The code generator then prints CUDA C.
#
# There is no GPU on this machine, and maybe none on yours. `target="cuda"` prints the CUDA
# source (and compiles it to PTX with NVRTC when that library is installed); `target="cuda-sim"`
# runs the *same* kernel on the CPU, block by block and thread by thread, with real
# shared-memory and barrier semantics, so every result here is checked against numpy.
#
# **You will:** bind loops to blocks and threads, read the generated CUDA and PTX, draw which
# block and thread computes each output element, stage tiles in shared memory, and see the
# race the simulator reports without a barrier. The next notebook,
# `08_gpu_performance`, asks what such a kernel would cost on a real GPU.

# %%
import mlc  # first: a folder named "mlc" where Jupyter started would hide the package

if not hasattr(mlc, "build"):
    raise ImportError(f"'import mlc' found the folder {list(mlc.__path__)[0]}, not the mlc "
                      "package: start Jupyter from another folder (`make lab` in the "
                      "checkout does), or rename that folder")

import matplotlib
import numpy as np
from IPython import get_ipython
from matplotlib.figure import Figure

import mlc
from mlc import te, tir, viz
from mlc.errors import RaceError
from mlc.target import cuda_sim
from mlc.target.cuda import nvrtc as cuda_nvrtc
from mlc.target.gpu.split_host_device import (
    split_host_device,  # a GPU pass, for the missing-barrier demonstration
)
from mlc.viz import gpu as gpu_viz

if get_ipython() is not None:  # in Jupyter, draw figures as pictures: %matplotlib inline
    get_ipython().run_line_magic("matplotlib", "inline")
matplotlib.rcParams["figure.dpi"] = 80
np.random.seed(0)

# %% [markdown]
# **Why:** a GPU has thousands of threads, a small fast shared memory per block and a slow
# global memory. Binding loops to threads and staging tiles in shared memory is the schedule
# that uses them, and a race is its new kind of bug.
#
# Where this chapter works, on the map of chapter 00 (its levels in blue):

# %% tags=["nbval-ignore-output"]
from mlc.viz.concepts import stack

stack(chapter=8)

# %% [markdown]
# ## The fused elementwise kernel from the lecture
# The CSE 599W lecture "Automatic Code Generation" shows the output of a hand-written
# "graph-based elementwise kernel generator":
#
# ```c
# extern "C" __global__ fusion_kernel(uint32_t num_element,
#     float *x0, float *x1, float *x2, float *y) {
#     int global_idx = blockIdx.x * blockDim.x + threadIdx.x;
#     if (global_idx < num_element)
#         y[global_idx] = (x0[global_idx] * x1[global_idx]) + x2[global_idx];
# }
# ```
#
# The same kernel, from a tensor expression and four schedule lines: split the one loop by
# the block size, bind the outer part to `blockIdx.x` and the inner part to `threadIdx.x`.

# %%
n = te.var("n")
x0, x1, x2 = (te.placeholder((n,), name=f"x{i}") for i in range(3))
y = te.compute((n,), lambda i: x0[i] * x1[i] + x2[i], name="y")

s = te.create_schedule(y.op)
xo, xi = s[y].split(y.op.axis[0], factor=64)
s[y].bind(xo, te.thread_axis("blockIdx.x"))
s[y].bind(xi, te.thread_axis("threadIdx.x"))
print(mlc.lower(s, [x0, x1, x2, y]))

# %% [markdown]
# The bound loops print as `thread_binding`: they are no longer loops that one thread runs,
# but a description of *which thread* runs which iteration. The split does not divide a
# symbolic `n`, so a guard `i_0 * 64 + i_1 < n` protects the last block: that is the lecture's
# `if (global_idx < num_element)`. Now the CUDA C:

# %%
fused = mlc.build(s, [x0, x1, x2, y], target="cuda-sim", name="fusion")
src = fused.get_source("cuda")
print(src[src.index("// grid"):])

# %% [markdown]
# How did the loops become a kernel? A GPU target runs its own passes after the common ones:
# `split_host_device` turns the bound loops into a kernel launch whose body is what *one
# thread* runs, and `insert_thread_sync` puts barriers where threads share memory.
# `mlc.lower` with the target shows the program exactly as the CUDA code generator gets it:

# %%
print([name for name, _ in mlc.target.backend("cuda-sim").passes])
print(mlc.lower(s, [x0, x1, x2, y], target="cuda-sim"))

# %% [markdown]
# The kernel's launch configuration: the grid depends on `n` (one block per 64 elements),
# the block has 64 threads.

# %%
k0 = fused.kernels[0]
print("grid:", k0.grid, " threads per block:", k0.threads)

# %% [markdown]
# Run it in the simulator, on a size that 64 does not divide, and compare with numpy:

# %%
N = 1000
a, b, c = (np.random.rand(N).astype("float32") for _ in range(3))
out = np.full(N, np.nan, "float32")
fused(a, b, c, out)
np.testing.assert_allclose(out, a * b + c, rtol=1e-6)
print("blocks launched for n = 1000:", -(-N // 64), "; matches numpy")

# %% [markdown]
# ### PTX, the GPU's portable assembly
# NVRTC, NVIDIA's runtime compiler, turns the CUDA C into PTX without needing a GPU
# (`pip install nvidia-cuda-nvrtc-cu12`, or `pip install mlc[gpu]`). Look for `%ctaid.x`
# (blockIdx.x), `%tid.x` (threadIdx.x), the guard's `setp`/`bra`, and the multiply-add
# fused into one `fma.rn.f32`.

# %% tags=["nbval-ignore-output"]
if cuda_nvrtc.available():
    ptx = fused.get_source("ptx")
    body = ptx[ptx.index(".entry"):]
    print("\n".join(line for line in body.splitlines() if line.strip() and "//" not in line))
else:
    print("NVRTC is not installed here: pip install nvidia-cuda-nvrtc-cu12 to see the PTX")

# %% [markdown]
# ## A matrix product on a 2-D grid
# For a matrix, bind two loops to blocks and two to threads: each block computes a
# `T x T` tile of the output, each of its `T x T` threads one element (and loops over `k`
# alone).

# %%
M, T = 32, 8

def matmul(n):
    X = te.placeholder((n, n), name="X")
    W = te.placeholder((n, n), name="W")
    k = te.reduce_axis((0, n), name="k")
    Y = te.compute((n, n), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    return te.create_prim_func([X, W, Y])

def bind_2d(sch, tile):
    blk = sch.get_block("Y")
    i, j, k = sch.get_loops(blk)
    bi, ti = sch.split(i, factors=[None, tile])
    bj, tj = sch.split(j, factors=[None, tile])
    sch.reorder(bi, bj, ti, tj)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    return blk, k

naive = tir.Schedule(matmul(M))
bind_2d(naive, T)
print(naive.mod)

# %%
f_naive = mlc.build(naive.mod, target="cuda-sim")
kn = f_naive.kernels[0]
print("grid:", kn.grid, " threads:", kn.threads)
xm, wm = np.random.rand(M, M).astype("float32"), np.random.rand(M, M).astype("float32")
ym = np.zeros((M, M), "float32")
f_naive(xm, wm, ym)
np.testing.assert_allclose(ym, xm @ wm, rtol=1e-5)

# %% [markdown]
# ### Who computes what
# Read the bindings off the loop program: element `(i, j)` is computed by block
# `(blockIdx.y, blockIdx.x) = (i // T, j // T)`, by its thread
# `(threadIdx.y, threadIdx.x) = (i % T, j % T)`. Left: one colour per block. Right: the
# thread number inside the block, `threadIdx.y * T + threadIdx.x`; consecutive threads
# (a *warp* is 32 of them) touch consecutive columns, so their loads of `W` and stores
# of `Y` are *coalesced* into few memory transactions.

# %%
rows, cols = np.indices((M, M))
grid_x = M // T
block_id = (rows // T) * grid_x + (cols // T)
thread_id = (rows % T) * T + (cols % T)

fig = Figure(figsize=(8.4, 3.8))
ax1, ax2 = fig.subplots(1, 2)
ax1.imshow(block_id, cmap="tab20", interpolation="nearest")
for bi in range(M // T):
    for bj in range(M // T):
        ax1.text(bj * T + T / 2 - 0.5, bi * T + T / 2 - 0.5, f"({bi},{bj})", ha="center",
                 va="center", fontsize=8)
ax1.set_title("blockIdx (y, x) of each element of Y")
im = ax2.imshow(thread_id, cmap="viridis", interpolation="nearest")
fig.colorbar(im, ax=ax2, label="threadIdx.y * T + threadIdx.x")
ax2.set_title("thread inside its block")
for ax in (ax1, ax2):
    ax.set_xticks(np.arange(-0.5, M, T), minor=False)
    ax.set_yticks(np.arange(-0.5, M, T), minor=False)
    ax.set_xticklabels([])
    ax.set_yticklabels([])
    ax.grid(color="white", linewidth=1.5)
    ax.set_xlabel("j (column)")
    ax.set_ylabel("i (row)")
fig.tight_layout()
fig

# %% [markdown]
# ## Shared memory: load a tile once, use it T times
# In the kernel above every thread reads a whole row of `X` and a whole column of `W` from
# global memory: the threads of one block read the same rows and columns again and again.
# What one block (block `(0, 0)`) touches, with the shade counting the reads:

#
# Where the data lives on a GPU (typical sizes and latencies):

# %% tags=["nbval-ignore-output"]
from mlc.viz import concepts

concepts.gpu_hierarchy()

# %%
viz.tile_footprint(naive, "Y", {"i_0": 0, "j_0": 0},
                   title="one thread block of the naive kernel: reads from global memory")

# %% [markdown]
# Each element of the block's `T` rows of `X` is read `T` times, once per thread that needs
# it. The fix is **cooperative fetching**: split `k` into chunks of `T` and move the chunk
# loop `k_0` outside the thread loops; for each chunk the threads of the block first copy
# the `T x T` tiles of `X` and `W` into **shared memory** (one element per thread), wait at
# a barrier, then compute from the fast copy.
#
# * `cache_read(block, i, "shared")` makes a copy stage of the block's `i`-th input in
#   shared memory;
# * `compute_at(copy, k_0)` moves the copy inside the `k_0` loop: one tile per chunk;
# * `bind(..., "threadIdx.y")`, `bind(..., "threadIdx.x")` spread the copy's two loops over
#   the block's threads.
#
# mlc inserts the two `__syncthreads()`: after the copy (the tile is complete) and after the
# compute (every thread is done reading the old tile before the next copy overwrites it).

# %%
def shared_matmul(n, tile):
    sch = tir.Schedule(matmul(n))
    blk = sch.get_block("Y")
    i, j, k = sch.get_loops(blk)
    bi, ti = sch.split(i, factors=[None, tile])
    bj, tj = sch.split(j, factors=[None, tile])
    ko, ki = sch.split(k, factors=[None, tile])
    sch.reorder(bi, bj, ko, ti, tj, ki)
    sch.bind(bi, "blockIdx.y")
    sch.bind(bj, "blockIdx.x")
    sch.bind(ti, "threadIdx.y")
    sch.bind(tj, "threadIdx.x")
    for index in (0, 1):                      # X, then W
        copy = sch.cache_read(blk, index, "shared")
        sch.compute_at(copy, ko)
        rows, cols = sch.get_loops(copy)[-2:]
        sch.bind(rows, "threadIdx.y")
        sch.bind(cols, "threadIdx.x")
    return sch

shared = shared_matmul(M, T)
print(shared.mod)

# %% [markdown]
# In the CUDA C, each thread copies one element of each tile, then all wait, then each
# computes its element from `X_shared` and `W_shared`. Each shared array holds exactly one
# `T x T` tile (`T * T` elements): mlc shrinks a copy stage to the region one iteration of
# `k_0` needs.

# %%
f_shared = mlc.build(shared.mod, target="cuda-sim")
ks = f_shared.kernels[0]
print("shared buffers:", [(b.name, tuple(int(d.value) for d in b.shape)) for b in ks.shared])
src = f_shared.get_source("cuda")
print(src[src.index("// grid"):])

# %%
ys = np.zeros((M, M), "float32")
f_shared(xm, wm, ys)
np.testing.assert_allclose(ys, xm @ wm, rtol=1e-5)
print("shared-memory kernel matches numpy")

# %% [markdown]
# ### Counting global-memory reads
# Per block, the naive kernel reads `2 * M` elements per thread, `2 * M * T * T` in all; the
# shared kernel reads each tile once per block: `2 * M * T`. The reuse factor is `T`: bigger
# tiles, less traffic, until shared memory (48 KiB per block by default) or the number of
# threads per block (at most 1024) runs out.

# %%
per_block = {"naive (global)": 2 * M * T * T, "shared tiles (global)": 2 * M * T}
fig = Figure(figsize=(5.2, 2.4))
ax = fig.subplots()
ax.barh(list(per_block), list(per_block.values()), color=["tab:red", "tab:green"])
for y_pos, v in enumerate(per_block.values()):
    ax.text(v, y_pos, f" {v}", va="center")
ax.set_xlabel("elements read from global memory by one block")
ratio = per_block["naive (global)"] // per_block["shared tiles (global)"]
ax.set_title(f"M = {M}, tile T = {T}: {ratio}x less traffic")
ax.set_xlim(0, max(per_block.values()) * 1.25)
fig.tight_layout()
fig

# %% [markdown]
# ### What each thread touches
# `gpu_viz.record` runs the kernel in cuda-sim's *interpreter*, which executes all threads of
# a block side by side and keeps every memory access with the thread that made it. Block
# `(0, 0)` and the shared tile of `X`: every thread writes one element (right; the colour is
# the thread number `threadIdx.y * T + threadIdx.x`) and every element is read by the `T`
# threads of one row of the block (left).

# %%
rec = gpu_viz.record(f_shared, xm, wm, np.zeros((M, M), "float32"))
gpu_viz.thread_accesses(rec, "X_shared", block=(0, 0))

# %% [markdown]
# The barriers cut the kernel into *intervals*: every statement of one interval runs in
# every thread before any thread starts the next. Each `k_0` step has two intervals: copy
# the tiles, then compute from them. A cell counts one statement's element accesses in one
# interval, red when the statement writes and blue when it only reads; every statement here
# writes (the copies write the tiles, the update reads them and writes `Y`), so all are red.
# The dashed lines are the `__syncthreads()` mlc inserted.

# %%
gpu_viz.barrier_timeline(rec)

# %% [markdown]
# ### Why the barrier matters
# Without `__syncthreads()` a thread may read a shared-memory element that another thread
# has not written yet: a **data race**. A real GPU says nothing (the numbers are just wrong,
# sometimes). cuda-sim checks every access: for each element it remembers which thread last
# wrote it and which read it, and in which barrier interval. Build the program with the
# pass that inserts barriers (`insert_thread_sync`) left out and check it:

# %% tags=["nbval-ignore-output"]
no_barriers = split_host_device(mlc.lower(shared.mod))   # insert_thread_sync skipped
race = None
try:
    cuda_sim.check(no_barriers, xm, wm, np.zeros((M, M), "float32"))
except RaceError as err:
    race = err
    print(str(err).split("\n@prim_func")[0])
assert race is not None and "_shared[" in str(race) and "blockIdx" in str(race)

# %% [markdown]
# The error names the kernel, the shared buffer and its element, the two threads (block and
# thread indices) and the two lines of the loop IR (the message goes on with the program,
# those lines marked). The picture: left, every element of `X_shared` where a write and a
# read met in the same interval (here all 64; the first one circled); right, the threads of
# block `(0, 0)` that took part, blue for a first access, red for a second, purple for both:
# every thread is purple here, each one wrote an element that another read too early and
# read one that another wrote. The arrow goes from the thread that wrote the circled element
# to the thread that read it too early: the two the message names first (which pair the
# checker meets first depends on the order it replays the threads in).

# %%
gpu_viz.race_picture(race)

# %% [markdown]
# A module built with `target="cuda-sim"` runs the same checks, on copies of the arrays,
# before its first call and before any call whose verdict could differ from the calls
# checked so far (other shapes, or other values in an array that decides addresses), so a
# race, a read of shared memory no thread wrote, an index outside a buffer or a barrier
# that some threads skip is an error, not wrong numbers. Each such check runs every block
# when it fits `f.check_budget` seconds of CPU (3 by default), a sample of blocks with a
# warning otherwise; `f.last_check` reports what ran, `f.check_calls = "every"` checks every
# call, and `f.check(x, w, y)` checks one call by hand. The kernel with its barriers, first
# the check that ran before its call above, then one by hand:

# %%
print("before the call above:", f_shared.last_check)
assert f_shared.last_check is not None and f_shared.last_check.complete
print(f_shared.check(xm, wm, np.zeros((M, M), "float32")))

# %% [markdown]
# ## The te facade, as in the TVM lectures
# The same shared-memory schedule with TVM's classic calls: `s.cache_read(X, "shared", [Y])`
# for both inputs, `s[Y].tile`, `s[Y].bind(..., te.thread_axis(...))`,
# `s[XS].compute_at(s[Y], ko)`, and the copies' two loops bound to the threads. It is the
# same schedule: the CUDA C is identical.

# %%
X = te.placeholder((M, M), name="X")
W = te.placeholder((M, M), name="W")
k = te.reduce_axis((0, M), name="k")
Y = te.compute((M, M), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
s = te.create_schedule(Y.op)
XS = s.cache_read(X, "shared", [Y])
WS = s.cache_read(W, "shared", [Y])
i, j = Y.op.axis
by, bx, ty, tx = s[Y].tile(i, j, T, T)
ko, ki = s[Y].split(Y.op.reduce_axis[0], factor=T)
s[Y].reorder(by, bx, ko, ty, tx, ki)
s[Y].bind(by, te.thread_axis("blockIdx.y"))
s[Y].bind(bx, te.thread_axis("blockIdx.x"))
s[Y].bind(ty, te.thread_axis("threadIdx.y"))
s[Y].bind(tx, te.thread_axis("threadIdx.x"))
for stage in (XS, WS):
    s[stage].compute_at(s[Y], ko)
    rows, cols = s[stage].op.axis
    s[stage].bind(rows, te.thread_axis("threadIdx.y"))
    s[stage].bind(cols, te.thread_axis("threadIdx.x"))
f_te = mlc.build(s, [X, W, Y], target="cuda-sim")
y_te = np.zeros((M, M), "float32")
f_te(xm, wm, y_te)
np.testing.assert_allclose(y_te, xm @ wm, rtol=1e-5)
same_source = f_te.get_source("cuda") == f_shared.get_source("cuda")
assert same_source, "the te schedule should give the TensorIR schedule's kernel"
print("same CUDA C as the TensorIR schedule:", same_source)

# %% [markdown]
# > **What to remember**
# > * A GPU kernel is a schedule with loops bound to blockIdx/threadIdx: each block runs one
# >   iteration of the bound outer loops, each thread one of the inner ones.
# > * Shared memory holds the tiles one block reuses; the threads copy them together, and a
# >   barrier separates writing a tile from reading it.
# > * cuda-sim runs kernels on the CPU thread by thread and names a race with the threads
# >   and the element involved: a missing barrier is found, not guessed.

# %% [markdown]
# ## Exercises
# Complete each answer (replace `raise NotImplementedError()`) and run the check under it:
# ✓, or ✗ with what is wrong (`hint("1")` gives a hint for exercise 1, the idea first, when
# you want one). Run the next cell first: it defines the checks, and again `matmul`, so
# that nothing from the cells above is needed but the imports.

# %%
from mlc.testing.exercises import exercise, expect, hint  # noqa: F401 (hint("1") asks for a hint)


def matmul_again(n):
    X = te.placeholder((n, n), name="X")
    W = te.placeholder((n, n), name="W")
    k = te.reduce_axis((0, n), name="k")
    Y = te.compute((n, n), lambda i, j: te.sum(X[i, k] * W[k, j], axis=k), name="Y")
    return te.create_prim_func([X, W, Y])


@exercise("1. blocks of 128", hint=[
          "a GPU runs a grid of blocks of threads: one loop of n iterations becomes "
          "blocks times threads, and the number of blocks rounds up",
          "split by the block size, then bind the outer part to blockIdx.x and the inner "
          "part to threadIdx.x"])
def check_blocks_of_128(bind_128, blocks_needed):
    n_ex = te.var("n")
    xs = [te.placeholder((n_ex,), name=f"x{i}") for i in range(3)]
    y_ex = te.compute((n_ex,), lambda i: xs[0][i] * xs[1][i] + xs[2][i], name="y")
    s_ex = te.create_schedule(y_ex.op)
    bind_128(s_ex, y_ex)
    f_ex = mlc.build(s_ex, [*xs, y_ex], target="cuda-sim", name="fusion128")
    threads = f_ex.kernels[0].threads
    expect(threads == {"threadIdx.x": 128}, f"a block should have 128 threads, not {threads}")
    vals = [np.random.default_rng(i).random(1000, dtype="float32") for i in range(3)]
    out_ex = np.zeros(1000, "float32")
    f_ex(*vals, out_ex)
    expect(np.allclose(out_ex, vals[0] * vals[1] + vals[2]), "y should be x0 * x1 + x2")
    for n_blocks, want in ((1000, 8), (1024, 8), (1025, 9)):
        got = blocks_needed(n_blocks, 128)
        expect(got == want, f"blocks_needed({n_blocks}, 128) gives {got}: every element "
               "needs a thread, and the last block may be partly idle")


@exercise("2. shared tiles", hint=[
          "each block reads the same tiles of both inputs many times: copy each tile once "
          "into the block's shared memory, inside the reduction's outer loop, and let all "
          "the block's threads share the copying",
          "cache_read into 'shared', compute_at the outer reduction loop, then bind the "
          "copy's loops to the thread axes the block uses"])
def check_shared_tiles(stage_in_shared):
    n_ex, tile = 64, 8
    sch = tir.Schedule(matmul_again(n_ex))
    blk = sch.get_block("Y")
    i, j, k = sch.get_loops(blk)
    bi, ti = sch.split(i, factors=[None, tile])
    bj, tj = sch.split(j, factors=[None, tile])
    ko, ki = sch.split(k, factors=[None, tile])
    sch.reorder(bi, bj, ko, ti, tj, ki)
    for loop, axis in ((bi, "blockIdx.y"), (bj, "blockIdx.x"), (ti, "threadIdx.y"),
                       (tj, "threadIdx.x")):
        sch.bind(loop, axis)
    stage_in_shared(sch, blk, ko)
    f_ex = mlc.build(sch.mod, target="cuda-sim")  # cuda-sim checks for races on the first call
    rng_ex = np.random.default_rng(3)
    x_ex, w_ex = (rng_ex.random((n_ex, n_ex), dtype="float32") for _ in range(2))
    y_ex = np.zeros((n_ex, n_ex), "float32")
    f_ex(x_ex, w_ex, y_ex)
    expect(np.allclose(y_ex, x_ex @ w_ex, rtol=1e-4), "Y is not X @ W")
    rec_ex = gpu_viz.record(f_ex, x_ex, w_ex, np.zeros((n_ex, n_ex), "float32"), blocks=1)
    reads = sum(len(acc.elems) for acc in rec_ex.kernel(0).accesses
                if acc.scope == "global" and not acc.is_write and acc.buffer.name in "XW")
    expect(reads == 2 * n_ex * tile, f"one block reads {reads} elements of X and W from "
           f"global memory; its tiles hold {2 * n_ex * tile}: each should be read once")
    for name in ("X_shared", "W_shared"):
        writers = {int(lane) for acc in rec_ex.kernel(0).accesses
                   if acc.is_write and acc.buffer.name == name for lane in acc.lanes}
        expect(len(writers) == tile * tile, f"{len(writers)} of the block's {tile * tile} "
               f"threads write {name}: the copy should be spread over all of them")

# %% [markdown]
# **1. Blocks of 128.** Bind the elementwise kernel of the first section with blocks of 128
# threads instead of 64 (`bind_128(s, y)` schedules stage `y` of `s`), and write
# `blocks_needed(n, threads)`: how many blocks the launch needs for `n` elements.

# %%
def bind_128(s, y):
    ### BEGIN SOLUTION
    outer, inner = s[y].split(y.op.axis[0], factor=128)
    s[y].bind(outer, te.thread_axis("blockIdx.x"))
    s[y].bind(inner, te.thread_axis("threadIdx.x"))
    ### END SOLUTION

def blocks_needed(n, threads):
    ### BEGIN SOLUTION
    return -(-n // threads)
    ### END SOLUTION

check_blocks_of_128(bind_128, blocks_needed)

# %% [markdown]
# **2. Shared tiles.** The check builds the 2-D matmul (`n = 64`, tiles of 8: blocks and
# threads bound, `k` split into `ko, ki`, `ko` outside the thread loops) and calls
# `stage_in_shared(sch, blk, ko)`. Stage the tiles of `X` and `W` in shared memory, one
# copy per `ko` step made by all the threads together, so that the kernel passes cuda-sim's
# race check, computes `X @ W`, and one block reads each element of its tiles from global
# memory once.

# %%
def stage_in_shared(sch, blk, ko):
    ### BEGIN SOLUTION
    for index in (0, 1):
        copy = sch.cache_read(blk, index, "shared")
        sch.compute_at(copy, ko)
        rows, cols = sch.get_loops(copy)[-2:]
        sch.bind(rows, "threadIdx.y")
        sch.bind(cols, "threadIdx.x")
    ### END SOLUTION

check_shared_tiles(stage_in_shared)

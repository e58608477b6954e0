# %% [markdown]
# # 04 · CPU code generation and the GEMM journey
#
# `mlc.build` lowers a schedule and hands the loop program to LLVM (through llvmlite), which
# emits machine code for *this* CPU. A vectorized loop becomes LLVM vector types and SIMD
# instructions; a parallel loop is outlined and run on every core.
#
# Then the classic journey of TVM's "How to optimize GEMM on CPU": from a naive triple loop
# to blocking, vectorization, loop permutation, array packing, a write cache and parallel
# loops, each step timed against numpy and placed on a **roofline**.
#
# **You will:** read the LLVM IR and the assembly of a vectorized loop; measure the speedup
# of each GEMM step; see where the machine's ceiling is.

# %%
import time
import numpy as np
%matplotlib inline
import matplotlib
matplotlib.rcParams["figure.dpi"] = 80
import mlc
from mlc import te, tir, viz

np.random.seed(0)

# %% [markdown]
# ## LLVM IR and assembly of a vectorized loop

# %%
A = te.placeholder((1024,), name="A")
B = te.placeholder((1024,), name="B")
C = te.compute((1024,), lambda i: A[i] * 2.0 + B[i], name="C")
sch = tir.Schedule(te.create_prim_func([A, B, C]))
(i,) = sch.get_loops(sch.get_block("C"))
io, ii = sch.split(i, factors=[None, 16])
sch.vectorize(ii)
f = mlc.build(sch.mod, name="axpy")
print(mlc.lower(sch.mod))

# %% [markdown]
# In the optimised LLVM IR, look for `<16 x float>` vectors and an `fmul`/`fadd` (or a fused
# `fma`) on them:

# %% tags=["nbval-ignore-output"]
ll = f.get_source("ll")
print("\n".join(line for line in ll.splitlines() if "<16 x float>" in line)[:1500])

# %% [markdown]
# And in the machine code, the vector registers (`ymm`/`zmm` on x86, `v` on ARM):

# %% tags=["nbval-ignore-output"]
asm = f.get_source("asm")
print("\n".join(l for l in asm.splitlines() if "mm" in l or "fma" in l)[:1200])

# %%
a, b = np.random.rand(1024).astype("float32"), np.random.rand(1024).astype("float32")
c = np.zeros(1024, "float32")
f(a, b, c)
np.testing.assert_allclose(c, 2 * a + b, rtol=1e-6)
has_vectors = "<16 x float>" in ll
has_vectors

# %% [markdown]
# ## The GEMM journey (n = 512)
# Each step adds one idea of TVM's tutorial, with its block size 32 and reduction split 4.
# n = 512 is large enough for the tiles to matter (three 1 MiB matrices: more than a core's
# L2) and small enough to run in seconds. The tutorial itself uses n = 1024
# (`benchmarks/gemm.py` runs it there).

# %%
N, BN, KF = 512, 32, 4

def matmul(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return [A, B, C]

def packed_matmul(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    packedB = te.compute((n // BN, n, BN), lambda x, y, z: B[y, x * BN + z], name="packedB")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * packedB[j // BN, k, j % BN], axis=k),
                   name="C")
    return [A, B, C]

def blocked(n, permute=False, vectorize=False):
    sch = tir.Schedule(te.create_prim_func(matmul(n)))
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, factors=[None, BN])
    jo, ji = sch.split(j, factors=[None, BN])
    ko, ki = sch.split(k, factors=[None, KF])
    if permute:   # walk A's rows while the tile of C stays in cache
        sch.reorder(io, jo, ko, ii, ki, ji)
    else:
        sch.reorder(io, jo, ko, ki, ii, ji)
    if vectorize:
        sch.vectorize(ji)
    return sch

def packed(n, write_cache=False, parallel=False):
    sch = tir.Schedule(te.create_prim_func(packed_matmul(n)))
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    io, ii = sch.split(i, factors=[None, BN])
    jo, ji = sch.split(j, factors=[None, BN])
    ko, ki = sch.split(k, factors=[None, KF])
    sch.reorder(io, jo, ko, ii, ki, ji)
    if write_cache:   # accumulate a 32 x 32 tile locally, write it out once
        cc = sch.cache_write(c, 0, "local")
        sch.reverse_compute_at(cc, jo)
        sch.decompose_reduction(c, ko)
        sch.unroll(ki)
        sch.vectorize(sch.get_loops(cc)[-1])
    sch.vectorize(ji)
    px, py, pz = sch.get_loops(sch.get_block("packedB"))
    if parallel:
        sch.parallel(io)
        sch.parallel(px)
    sch.vectorize(pz)
    return sch

steps = {
    "naive": tir.Schedule(te.create_prim_func(matmul(N))),
    "blocking": blocked(N),
    "vectorize": blocked(N, vectorize=True),
    "permute": blocked(N, permute=True, vectorize=True),
    "pack": packed(N),
    "write cache": packed(N, write_cache=True),
    "parallel": packed(N, write_cache=True, parallel=True),
}
print(steps["parallel"].trace)

# %% [markdown]
# Build each step, check it against numpy, and time it (best of a few calls; the timings
# vary from run to run and machine to machine). numpy's matmul is OpenBLAS, using every
# core; the steps before `parallel` use one.

# %% tags=["nbval-ignore-output"]
a = np.random.rand(N, N).astype("float32")
b = np.random.rand(N, N).astype("float32")
flop = 2.0 * N ** 3
peak = viz.measure_peak(0.3)  # the best of many calls: other work can only slow one down
gflops = {}
for name, sch in steps.items():
    mod = mlc.build(sch.mod)
    c = np.zeros((N, N), "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3)
    gflops[name] = viz.measure_gflops(mod, [a, b, c], flop, number=2, repeat=3)
time.sleep(0.2)  # let mlc's threads go idle before numpy's start
numpy_gflops = flop / viz.seconds_per_call(lambda: a @ b, number=5, repeat=5) / 1e9
peak = max(peak, viz.measure_peak(0.3))
bandwidth = viz.measure_bandwidth()
names = list(gflops)
for prev, name in zip([None] + names, names):
    change = "" if prev is None else f"  {gflops[name] / gflops[prev]:5.2f}x the step before"
    print(f"{name:12s} {gflops[name]:8.1f} GFLOPS  {gflops[name] / numpy_gflops:5.2f}x numpy{change}")
print(f"{'numpy':12s} {numpy_gflops:8.1f} GFLOPS; peak {peak:.0f} GFLOPS, {bandwidth:.0f} GB/s")

# %%
viz.gflops_bars(gflops, reference={"numpy": numpy_gflops}, peak=peak,
                title=f"GEMM {N}^3, step by step")

# %% [markdown]
# Not every idea pays on its own, and the cell below says which step ran slower than the one
# before it on this machine. **Packing** is an investment: `packedB` is copied inside every
# call (here; a library packs a weight matrix once), n² copies against 2n³ flops, and it pays
# only when it replaces loads that missed the cache. The **write cache** pays when the
# accumulators stay in registers; a 32 × 32 tile is 1024 floats, far more than 16 or 32
# vector registers, so LLVM keeps it in L1 and the gain comes with **unrolling** and the
# threads of the last step. Notebook 07 tunes these sizes for the machine.

# %% tags=["nbval-ignore-output"]
slower = [name for prev, name in zip(names, names[1:]) if gflops[name] < gflops[prev]]
print("slower than the step before:", ", ".join(slower) if slower else "none")
print(f"every step beats the naive loop: {all(gflops[n] > gflops['naive'] for n in names[1:])}")

# %% [markdown]
# ## The roofline
# A kernel is bound by memory bandwidth (left, slanted roof) or by arithmetic (flat roof).
# Arithmetic intensity is flop per byte the kernel moves from memory, and it is *computed
# from each loop nest* (`viz.arithmetic_intensity`: the working set of every loop against
# the last-level cache, `mlc.tune.features.memory_traffic`). The peak is mlc's own FMA
# kernel on every core and the bandwidth a copy on every core, so points and roofs measure
# the same machine.

# %%
from mlc.target.llvm.cpu import cache_bytes

matrices = 3 * N * N * 4
print(f"the three matrices: {matrices / 2**20:.1f} MiB; last-level cache "
      f"{cache_bytes(3) / 2**20:.0f} MiB -> they {'fit' if matrices <= cache_bytes(3) else 'do not fit'}")
intensity = {name: viz.arithmetic_intensity(sch.mod) for name, sch in steps.items()}
for name, i in intensity.items():
    print(f"{name:12s} {i:6.1f} flop/byte")

# %% [markdown]
# When the matrices fit in the last-level cache, DRAM moves each byte once whatever the
# schedule (the packed copy of B adds its own bytes), so every step sits at the same
# intensity, far right of the ridge: GEMM is compute bound here, and the gap between a point
# and the flat roof is what the schedule leaves on the table. The naive loop is not slow
# because it misses cache: its inner loop is one chain of dependent adds, each waiting for
# the one before (an add takes a few cycles), on one core. What moves a point up is more
# independent work per cycle: vectors, a tile of accumulators, threads.

# %%
points = {name: (gflops[name], intensity[name]) for name in names}
viz.roofline(points, peak_gflops=peak, bandwidth_gbs=bandwidth, title=f"GEMM {N}")

# %% [markdown]
# ## Exercises
# 1. Which step made the biggest jump over the one before it? Why?
# 2. Change `BN` to 16 and rerun: does `write cache` get faster or slower?
#
# The checks below hold on any machine: every scheduled version beats the naive loop, and
# no point lies above its roof.

# %%
roof = {name: min(peak, i * bandwidth) for name, i in intensity.items()}
assert all(gflops[n] > gflops["naive"] for n in names[1:]), \
    f"every step should beat the naive loop: {gflops}"
assert all(gflops[n] <= 1.1 * roof[n] for n in names), "a point lies above its roof"
assert has_vectors, "the vectorized loop should use <16 x float> vectors"
print("exercise checks pass")

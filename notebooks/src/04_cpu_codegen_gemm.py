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
# ## The GEMM journey (n = 256, so it runs in seconds)
# Each step adds one idea. The block size is 32, the reduction split 4.

# %%
N, BN, KF = 256, 32, 4

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
# vary from run to run and machine to machine).

# %% tags=["nbval-ignore-output"]
a = np.random.rand(N, N).astype("float32")
b = np.random.rand(N, N).astype("float32")
flop = 2.0 * N ** 3
# numpy and memory first: the threads of mlc's parallel loops would compete with them
numpy_gflops = flop / viz.seconds_per_call(lambda: a @ b, number=5, repeat=5) / 1e9
bandwidth = viz.measure_bandwidth(32 << 20)
gflops = {}
for name, sch in steps.items():
    mod = mlc.build(sch.mod)
    c = np.zeros((N, N), "float32")
    mod(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3)
    gflops[name] = viz.measure_gflops(mod, [a, b, c], flop, number=2, repeat=3)
peak = viz.measure_peak(0.2)
for name, g in gflops.items():
    print(f"{name:12s} {g:8.1f} GFLOPS  {g / numpy_gflops:5.2f}x numpy")
print(f"{'numpy':12s} {numpy_gflops:8.1f} GFLOPS; peak {peak:.0f} GFLOPS, {bandwidth:.0f} GB/s")

# %%
viz.gflops_bars(gflops, reference={"numpy": numpy_gflops}, peak=peak,
                title=f"GEMM {N}^3, step by step")

# %% [markdown]
# ## The roofline
# A kernel is bound by memory bandwidth (left, slanted roof) or by arithmetic (flat roof).
# Arithmetic intensity is flop per byte moved. The naive loop streams `B` column-wise and
# misses cache on nearly every load (intensity near 2 flop per 4-byte load, ~0.5); tiling
# reuses each loaded element `BN` times, moving the kernel right, towards the compute roof.

# %%
points = {"naive": (gflops["naive"], 0.5)}
for name in ["blocking", "vectorize", "permute", "pack", "write cache", "parallel"]:
    points[name] = (gflops[name], 2.0 * BN / 4 / 2)
points["numpy"] = (numpy_gflops, viz.matmul_intensity(N))
viz.roofline(points, peak_gflops=peak, bandwidth_gbs=bandwidth, title=f"GEMM {N}")

# %% [markdown]
# ## Exercises
# 1. Which step made the biggest jump over the one before it? Why?
# 2. Change `BN` to 16 and rerun: does `write cache` get faster or slower?
#
# The check below holds on any machine: every scheduled version beats the naive loop.

# %%
best = max(gflops, key=gflops.get)
assert gflops[best] > gflops["naive"], "some schedule should beat the naive loop"
assert has_vectors, "the vectorized loop should use <16 x float> vectors"
print("exercise checks pass")

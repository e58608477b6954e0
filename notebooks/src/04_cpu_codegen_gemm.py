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
# of each GEMM step; see where the machine's ceiling is; then count the bytes a tiled
# GEMM moves, pack B once outside the kernel, and pick a register tile for this CPU.

# %%
import mlc  # first: a folder named "mlc" where Jupyter started would hide the package

if not hasattr(mlc, "build"):
    raise ImportError(f"'import mlc' found the folder {list(mlc.__path__)[0]}, not the mlc "
                      "package: start Jupyter from another folder (`make lab` in the "
                      "checkout does), or rename that folder")

import time
import numpy as np
%matplotlib inline
import matplotlib
matplotlib.rcParams["figure.dpi"] = 80
import mlc
from mlc import te, tir, viz

np.random.seed(0)

# %% [markdown]
# **Why:** a CPU is fast only when its vector units and caches are busy. Taking one matrix
# product from a naive loop towards numpy's speed shows which schedule step buys which
# hardware resource, measured on this machine.
#
# Where this chapter works, on the map of chapter 00 (its levels in blue):

# %% tags=["nbval-ignore-output"]
from mlc.viz.concepts import stack

stack(chapter=4)

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
# ### Stopping a long call
# Compiled code runs outside Python, which handles Ctrl-C (Jupyter's interrupt button,
# a SIGINT) only between its own bytecodes. So the code generator makes the outermost loop
# of every nest check a flag once per iteration; SIGINT sets it, the call returns within
# one outer iteration and raises `KeyboardInterrupt`. An interrupted call's outputs are
# invalid, so floating-point ones are filled with NaN. Below, a naive 2048³ matmul (many
# seconds of work) and a timer that sends the interrupt the button would, after 0.5 s:

# %% tags=["nbval-ignore-output"]
import os
import signal
import threading

n_long = 2048
A_l = te.placeholder((n_long, n_long), name="A")
B_l = te.placeholder((n_long, n_long), name="B")
k_l = te.reduce_axis((0, n_long), name="k")
C_l = te.compute((n_long, n_long), lambda i, j: te.sum(A_l[i, k_l] * B_l[k_l, j], axis=k_l),
                 name="C")
long_call = mlc.build(te.create_schedule(C_l.op), [A_l, B_l, C_l])
ones, out_l = np.ones((n_long, n_long), "float32"), np.zeros((n_long, n_long), "float32")
button = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
t0 = time.perf_counter()
button.start()
try:
    long_call(ones, ones, out_l)
    stopped = False
except KeyboardInterrupt:
    stopped = True
finally:
    button.cancel()
print(f"interrupted: {stopped}, after {time.perf_counter() - t0:.1f} s; "
      f"every output element NaN: {bool(np.isnan(out_l).all())}")
assert stopped and np.isnan(out_l).all()
del ones, out_l

# %% [markdown]
# ## The GEMM journey (n = 512)
# Each step adds one idea of TVM's tutorial, with its block size 32 and reduction split 4.
# Not every idea pays on its own at this size, and the timings below say which did not.
# n = 512 is large enough for the tiles to matter (three 1 MiB matrices: more than a core's
# L2 on most CPUs; a cell below prints this one's) and small enough to run in seconds. The
# tutorial itself uses n = 1024 (`benchmarks/gemm.py` runs it there).

#
# Why tiles: each level of memory is larger and slower than the one above; a tile is sized to
# stay in one level while it is reused (the numbers are typical, not this machine's).

# %% tags=["nbval-ignore-output"]
from mlc.viz import concepts

concepts.memory_hierarchy()

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
mods = {}
c = np.zeros((N, N), "float32")
for name, sch in steps.items():
    mods[name] = mlc.build(sch.mod)
    mods[name](a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-3)
def timed(name):  # one timing of one step
    return viz.measure_gflops(mods[name], [a, b, c], flop, number=2, repeat=1)
gflops = dict.fromkeys(mods, 0.0)
for _ in range(3):  # interleaved rounds: a burst of other work hits every step alike
    for name in mods:
        gflops[name] = max(gflops[name], timed(name))
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
# The cell below prints every step's speed against the step before it and the fact of this
# machine that explains it, gain or no gain (within 10% of the step before counts as no
# change: closer than that is noise on a shared machine). The facts it reads:
#
# * **vectorize** after **blocking**: whether LLVM had already turned blocking's innermost
#   loop (32 independent columns `ji`) into vector code on its own, and how wide its vectors
#   are against the schedule's (read from the LLVM IR of both). mlc lets LLVM's *loop*
#   vectorizer work only on loops a schedule marked `vectorize`; unasked, LLVM can still
#   unroll a short loop of known length and pack the neighbouring scalar operations it gets
#   into vectors (its SLP vectorizer).
# * **pack**: `packedB` stores each panel of B (n × 32 floats) in one contiguous run, so the
#   tile's inner loops read one stream instead of 32 floats out of every 2 KiB row of B.
#   It costs n² copies inside every call (here; a library packs a weight matrix once:
#   exercise 2). The panel's size against this core's L2 is printed, but fitting L2 does
#   not make packing useless: the strided rows still take a TLB entry and a prefetch stream
#   each.
# * **write cache**: the accumulators pay most when they stay in registers; whether a
#   32 × 32 tile fits this CPU's vector registers is printed. When it does not, what the
#   step gains comes from what it does besides: the initialization of C leaves the inner
#   loop (`decompose_reduction`) and `ki` is unrolled. Exercise 3 picks a tile that fits.
# * **parallel**: a second thread gains what a second set of execution units gives it.
#   The cell measures the FMA peak with one thread and with all of them; where they are
#   equal, the CPUs the operating system counts share one physical core (two hyper-threads
#   of a virtual machine, say): threads add no arithmetic, and all they can win is a
#   larger share of a machine busy with other programs.

# %% tags=["nbval-ignore-output"]
import os
from mlc.config import num_threads
from mlc.target.llvm.cpu import cache_bytes, host_simd
from mlc.viz.perf import peak_func, peak_shape

simd = host_simd()
panel, l2 = N * BN * 4, cache_bytes(2)
import re

def widest_vector(step):  # a step's widest float vector in its LLVM IR, and its loads
    ll = mlc.build(steps[step].mod).get_source("ll")
    lanes = max((int(w) for w in re.findall(r"<(\d+) x float>", ll)), default=1)
    return lanes, ll.count(f"load <{lanes} x float>")

(lanes_blocking, loads_blocking), (lanes_vectorize, _) = (widest_vector("blocking"),
                                                          widest_vector("vectorize"))
auto_vectorized = lanes_blocking > 1
# the loop's 32 columns side by side as vectors: unrolled, then packed (SLP)
unrolled = auto_vectorized and loads_blocking >= BN // lanes_blocking
how_llvm = (f"its {BN} columns unrolled into {BN // lanes_blocking} vectors of "
            f"{lanes_blocking} lanes" if unrolled else f"{lanes_blocking} lanes")
tile_registers = BN * BN // simd.lanes
shape = peak_shape()                      # the same work, built for one thread
saved = os.environ.get("MLC_NUM_THREADS")
os.environ["MLC_NUM_THREADS"] = "1"
one_thread = mlc.build(peak_func(**shape))
if saved is None:
    del os.environ["MLC_NUM_THREADS"]
else:
    os.environ["MLC_NUM_THREADS"] = saved
peak_one = viz.measure_peak(0.3, module=one_thread)
peak_all = viz.measure_peak(0.3)
print(f"LLVM vectorized blocking's inner loop on its own: {auto_vectorized} "
      f"({how_llvm}; the vectorize step's vectors: {lanes_vectorize} lanes)")
print(f"B's panel: {panel >> 10} KiB; this core's L2: {l2 >> 10} KiB")
print(f"a {BN} x {BN} tile of C: {tile_registers} vector registers of {simd.lanes} lanes; "
      f"the CPU has {simd.registers}")
print(f"FMA peak: {peak_one:.0f} GFLOPS on 1 thread, {peak_all:.0f} on {num_threads()} "
      f"({peak_all / peak_one:.2f}x); {os.cpu_count()} CPUs, load average "
      f"{os.getloadavg()[0]:.1f}\n")

def explain(name, ratio):
    gained, lost = ratio > 1.1, ratio < 0.9
    if name == "vectorize":
        if gained and auto_vectorized:
            return (f"LLVM had vectorized blocking on its own ({how_llvm}); the "
                    f"schedule's vector is {lanes_vectorize} lanes, the whole row of the "
                    "tile at once, split into the widest registers")
        if gained:
            return "vector code LLVM had not made on its own"
        return ("LLVM had vectorized blocking's inner loop on its own" if auto_vectorized
                else "no fact here explains it: noise, or the machine was busy")
    if name == "pack":
        fits = "fits" if panel <= l2 else "does not fit"
        if gained:
            return (f"one contiguous stream per panel beats 32 floats out of every row of B "
                    f"(the panel, {panel >> 10} KiB, {fits} L2 either way)")
        return f"the copy in every call cost what the contiguous reads saved (panel {fits} L2)"
    if name == "write cache":
        where = ("stays in registers" if tile_registers <= simd.registers else
                 f"needs {tile_registers} vector registers and the CPU has {simd.registers}, "
                 "so it stays in L1")
        if gained:
            return f"the tile {where}; the gain is the zeroing out of the loop and unrolled ki"
        return f"the tile {where}"
    if name == "parallel":
        more = peak_all / peak_one
        if gained and more >= 1.3:
            return f"{num_threads()} threads had {more:.2f}x the one-thread FMA peak to use"
        if gained:
            return (f"the FMA peak is the same on 1 and {num_threads()} threads ({more:.2f}x), "
                    f"so the gain is a larger share of a busy machine (load average "
                    f"{os.getloadavg()[0]:.1f}): two threads win more of the CPU time that "
                    "other programs compete for")
        if more < 1.3:
            return (f"all threads together reach only {more:.2f}x the one-thread FMA peak "
                    f"(two free cores would give about 2x): the {os.cpu_count()} CPUs share "
                    "one core's units, or other programs hold the rest, so a second thread "
                    "has little of its own to run on")
        return (f"the machine has {more:.2f}x the one-thread peak, but the threads waited "
                f"(load average {os.getloadavg()[0]:.1f}: other work held the cores)")
    return "the idea of the step (above)" if gained else "noise, or the machine was busy"

for prev, name in zip(names, names[1:]):
    ratio = gflops[name] / gflops[prev]
    if ratio < 0.9:  # a loss is timed again, the two steps side by side, before it is explained
        ratio = float(np.median([timed(name) / timed(prev) for _ in range(3)]))
        if ratio >= 0.9:
            print(f"{name:12s} lost to {prev} at first; timed again, {ratio:.2f}x: noise")
            continue
    verdict = "gained" if ratio > 1.1 else ("lost" if ratio < 0.9 else "no change")
    print(f"{name:12s} {ratio:5.2f}x {prev:12s} {verdict:9s} {explain(name, ratio)}")
print(f"\nevery step beats the naive loop: {all(gflops[n] > gflops['naive'] for n in names[1:])}")

# %% [markdown]
# ### The same packing as a schedule: `transform_layout`
# `packedB` above is written in te: a second tensor whose element `[x, y, z]` is
# `B[y, x·32 + z]`. A schedule can make the same change to a plain program: `cache_read`
# copies B into a buffer of its own, and `transform_layout` stores that buffer's element
# `[k, j]` at `[j // 32, k, j % 32]` instead. Every load and store of the copy changes;
# what the program computes does not (the tuner's default space packs its panels so).

# %%
sch = blocked(N, permute=True, vectorize=True)
copy_b = sch.cache_read(sch.get_block("C"), 1, "global")
sch.transform_layout(copy_b, "B_global", lambda k, j: (j // BN, k, j % BN))
for line in str(sch.mod).splitlines():  # the buffer and the copy into it
    if "B_global = " in line or "B_global[v" in line:
        print(line.strip())
a_t, b_t = (np.random.rand(N, N).astype("float32") for _ in range(2))
c_t = np.zeros((N, N), "float32")
mlc.build(sch.mod)(a_t, b_t, c_t)
np.testing.assert_allclose(c_t, a_t @ b_t, rtol=1e-3)
print("same result as a @ b:", np.allclose(c_t, a_t @ b_t, rtol=1e-3))

# %% [markdown]
# ## The roofline
# A kernel is bound by memory bandwidth (left, slanted roof) or by arithmetic (flat roof).
# Arithmetic intensity is flop per byte the kernel moves from memory, and it is *computed
# from each loop nest* (`viz.arithmetic_intensity`: the working set of every loop against
# the last-level cache, `mlc.tune.features.memory_traffic`). The peak is mlc's own FMA
# kernel on every core and the bandwidth a copy on every core, so points and roofs measure
# the same machine. The roofs meet at the **ridge**, peak / bandwidth flop per byte: a kernel
# left of it waits for memory, one right of it for arithmetic.

# %% tags=["nbval-ignore-output"]
matrices = 3 * N * N * 4
fit = matrices <= cache_bytes(3)
print(f"the three matrices: {matrices / 2**20:.1f} MiB; last-level cache "
      f"{cache_bytes(3) / 2**20:.0f} MiB -> they {'fit' if fit else 'do not fit'}")
intensity = {name: viz.arithmetic_intensity(sch.mod) for name, sch in steps.items()}
ridge = peak / bandwidth
print(f"the ridge: {peak:.0f} GFLOPS / {bandwidth:.0f} GB/s = {ridge:.1f} flop/byte")
for name, i in intensity.items():
    print(f"{name:12s} {i:6.1f} flop/byte: {'compute' if i >= ridge else 'memory'} bound")
if fit:  # DRAM moves each matrix once: the compulsory traffic, whatever the loop order
    unpacked = ["naive", "blocking", "vectorize", "permute"]
    assert all(abs(intensity[n] - viz.matmul_intensity(N)) < 1e-6 for n in unpacked)

# %% [markdown]
# When the matrices fit in the last-level cache (the first line above says whether they do
# here), DRAM moves each byte once whatever the loop order, so the steps that read A and B
# in place share one intensity, that of the three matrices moved once
# (`viz.matmul_intensity`); the packed steps also write and read `packedB`, so they sit to
# the left of the others. The lines above say on which side of the ridge each lands; right of
# it, the gap between a point and the flat roof is what the schedule leaves on the table.
#
# Then why is the naive loop so slow? Two costs, which the next cell separates. Its inner
# loop walks down a column of B, a new cache line at every step; and it is one chain of
# dependent adds, each waiting for the one before (an add takes a few cycles), on one core.
# Feeding it B transposed, so that both operands are read along rows, removes the first
# cost and keeps the second.

# %% tags=["nbval-ignore-output"]
def matmul_bt(n):
    A = te.placeholder((n, n), name="A")
    BT = te.placeholder((n, n), name="BT")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * BT[j, k], axis=k), name="C")
    return te.create_prim_func([A, BT, C])

naive_bt = mlc.build(matmul_bt(N))
c = np.zeros((N, N), "float32")
bt = np.ascontiguousarray(b.T)
naive_bt(a, bt, c)
np.testing.assert_allclose(c, a @ b, rtol=1e-3)
gflops_bt = viz.measure_gflops(naive_bt, [a, bt, c], flop, number=1, repeat=3)
speedup = gflops_bt / gflops["naive"]
print(f"naive, B read down its columns: {gflops['naive']:5.2f} GFLOPS, "
      f"{2 / gflops['naive']:.2f} ns per multiply-add")
print(f"naive, B read along its rows:   {gflops_bt:5.2f} GFLOPS, "
      f"{2 / gflops_bt:.2f} ns per multiply-add ({speedup:.1f}x)")
print(f"the best step:                  {max(gflops.values()):5.1f} GFLOPS "
      f"({max(gflops.values()) / gflops_bt:.0f}x the row-wise naive loop)")

# %% [markdown]
# The first ratio is what the column walk of B costs the naive loop; the last one is what
# remains once both operands are read along rows, and that is the chain of dependent adds:
# LLVM may not reorder a float sum, so every add waits for the previous one. What moves a
# point up is more independent work per cycle: vectors, a tile of accumulators, threads.

# %%
points = {name: (gflops[name], intensity[name]) for name in names}
viz.roofline(points, peak_gflops=peak, bandwidth_gbs=bandwidth, title=f"GEMM {N}")

# %% [markdown]
# The checks below hold on any machine: every scheduled version beats the naive loop, and
# no point lies above its roof.

# %%
roof = {name: min(peak, i * bandwidth) for name, i in intensity.items()}
assert all(gflops[n] > gflops["naive"] for n in names[1:]), \
    f"every step should beat the naive loop: {gflops}"
assert all(gflops[n] <= 1.1 * roof[n] for n in names), "a point lies above its roof"
assert has_vectors, "the vectorized loop should use <16 x float> vectors"
print("the checks pass")

# %% [markdown]
# > **What to remember**
# > * Each GEMM step buys one resource: blocking and permuting reuse cache lines, vectors fill
# >   the lanes, packing makes B's panel one stream, a register tile keeps the accumulators
# >   out of memory.
# > * Whether a step pays is a measurement on this machine, read against the fact that
# >   explains it; the roofline says whether a kernel waits for memory or for arithmetic.
# > * Threads only help when there are idle execution units for them.

# %% [markdown]
# ## Exercises
# Complete each function (replace `raise NotImplementedError()`) and run the check under
# it: ✓, or ✗ with what is wrong
# (`hint("1")` gives a hint for exercise 1, the idea first, when you want one). Run the next cell
# first; it defines the
# checks, and you may read it. The exercises use nothing from the cells above but the
# imports.

# %%
import math
from mlc.target.llvm.cpu import SIMD, host_simd
from mlc.testing.exercises import exercise, expect, hint  # noqa: F401 (hint("1") asks for a hint)
from mlc.tune.features import flop_count, memory_traffic

def gemm_func(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])

def tiled_gemm(n, t):
    """C in t x t tiles: loops (i_0, j_0, k, i_1, j_1)."""
    sch = tir.Schedule(gemm_func(n))
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, t])
    j0, j1 = sch.split(j, factors=[None, t])
    sch.reorder(i0, j0, k, i1, j1)
    return sch

def mlc_intensity(n, t):
    """flop / byte by mlc's cache model, for a cache that holds a t-row panel of A, a
    t-column panel of B and a tile of C (and no more)."""
    cache = 4 * (2 * t * n + t * t)
    func = tiled_gemm(n, t).mod
    return flop_count(func) / memory_traffic(func, cache)

@exercise("1. intensity of a tiled GEMM", hint=[
          "count how many times each matrix crosses between memory and the cache: which "
          "panel stays while j_0 walks, and which one is fetched again for every tile of "
          "C?",
          "the intensity is 2n³ flops over the bytes moved (4 per float); a tile is large "
          "enough when the intensity reaches peak / bandwidth"])
def check_intensity(tiled_intensity, smallest_tile):
    for n, t in [(256, 1), (256, 16), (512, 32), (1024, 64), (64, 64)]:
        want, got = mlc_intensity(n, t), tiled_intensity(n, t)
        expect(isinstance(got, (int, float)) and math.isfinite(got),
               f"tiled_intensity({n}, {t}) should be a number of flop per byte, not {got!r}")
        expect(abs(got - want) <= 0.01 * want, f"tiled_intensity({n}, {t}) = {got:.3g} flop/byte; "
               f"mlc's cache model gives {want:.3g}")
    for n, peak, bw, want in [(1024, 180.0, 14.0, 32), (1024, 100.0, 50.0, 8),
                              (512, 1000.0, 10.0, None), (512, 10.0, 100.0, 1)]:
        got = smallest_tile(n, peak, bw)
        ridge = peak / bw
        expect(got == want, f"on a machine of {peak:g} GFLOPS and {bw:g} GB/s (ridge at "
               f"{ridge:.3g} flop/byte) the smallest power-of-two tile that makes the {n}³ GEMM "
               f"compute bound is {want}, not {got!r}" + (" (no tile up to n reaches the ridge: "
               "return None)" if want is None else ""))


def run_gemm(sch, inputs, n):
    rng = np.random.default_rng(4)
    a, b = (rng.random((n, n), dtype=np.float32) for _ in range(2))
    c = np.zeros((n, n), "float32")
    mlc.build(sch.mod)(*inputs(a, b), c)
    return c, a @ b

@exercise("2. pack B once", hint=[
          "packing puts the bn columns of one panel of B side by side, row after row, so "
          "that the kernel reads them as one stream; the kernel then indexes the packed "
          "array, not B",
          "numpy's reshape and transpose, then a contiguous copy, do the packing; in te "
          "the packed input is a placeholder of the packed shape, indexed with j // bn "
          "and j % bn"])
def check_prepacked(pack_b, prepacked_matmul):
    b = np.arange(32, dtype=np.float32).reshape(4, 8)[:, :4].copy()  # 4 x 4, distinct values
    got = np.asarray(pack_b(b, 2))
    expect(got.shape == (2, 4, 2), f"pack_b of a 4 x 4 B with bn = 2 should have shape "
           f"(n // bn, n, bn) = (2, 4, 2), not {got.shape}")
    expect(np.array_equal(got[1, 3], b[3, 2:4]), "PB[x, y, :] should be row y of B, columns "
           f"x·bn to x·bn + bn - 1: PB[1, 3] = {b[3, 2:4]}, yours is {got[1, 3]}")
    expect(np.array_equal(got, b.reshape(4, 2, 2).transpose(1, 0, 2)), "pack_b(b, 2) has the "
           "right shape but some element is in the wrong place")
    for n, bn in [(64, 16), (96, 32), (48, 8)]:
        A, PB, C = prepacked_matmul(n, bn)
        shape = tuple(int(s) for s in PB.shape)
        expect(shape == (n // bn, n, bn), f"with n = {n}, bn = {bn} the packed input should "
               f"have shape {(n // bn, n, bn)}, not {shape}")
        sch = tir.Schedule(te.create_prim_func([A, PB, C]))
        i, j, k = sch.get_loops(sch.get_block(C.name))
        j0, j1 = sch.split(j, factors=[None, bn])
        sch.reorder(i, j0, k, j1)
        sch.vectorize(j1)
        code = str(mlc.lower(sch.mod))
        expect("alloc_buffer" not in code, "the kernel allocates a buffer: it should read the "
               "packed B it is given, not pack one itself")
        expect(f"{PB.name}[ramp(" in code, f"after splitting j by bn = {bn} and vectorizing, the "
               "loads of the packed B should be contiguous vectors (ramp); index it "
               "[j // bn, k, j % bn]")
        c, want = run_gemm(sch, lambda a, b: (a, pack_b(b, bn)), n)
        expect(np.allclose(c, want, rtol=1e-4), f"with n = {n}, bn = {bn}: C != A @ B")

def micro_kernel(n, mr, nr):
    """C in mr x nr tiles accumulated in a local buffer (registers): i_1 unrolled, j_1 a
    vector, k between the tile loops and the tile."""
    sch = tir.Schedule(gemm_func(n))
    c = sch.get_block("C")
    i, j, k = sch.get_loops(c)
    i0, i1 = sch.split(i, factors=[None, mr])
    j0, j1 = sch.split(j, factors=[None, nr])
    sch.reorder(i0, j0, k, i1, j1)
    cc = sch.cache_write(c, 0, "local")
    sch.reverse_compute_at(cc, j0)
    sch.decompose_reduction(c, k)
    sch.unroll(i1)
    sch.vectorize(j1)
    sch.vectorize(sch.get_loops(cc)[-1])
    return sch

MACHINES = [SIMD(8, 16, True, "avx2"), SIMD(16, 32, True, "avx512"), SIMD(4, 32, True, "neon"),
            SIMD(4, 16, False, "sse")]

@exercise("3. a register tile", hint=[
          "every accumulator of the tile holds a vector register for the whole k loop, "
          "and the loaded row of B and the broadcast element of A need registers too; "
          "among the tiles that fit, more multiply-adds per load is better",
          "count the registers of a tile of mr rows by v vectors: mr·v accumulators, v for "
          "the row of B and 1 for the broadcast element of A; compare the multiply-adds per "
          "load, mr·v / (mr + v), of the tiles that fit (simd.lanes and simd.registers)"])
def check_register_tile(register_tile):
    for simd in MACHINES:
        got = register_tile(simd)
        expect(isinstance(got, (tuple, list)) and len(got) == 2 and all(
               isinstance(x, (int, np.integer)) and not isinstance(x, bool) and x > 0
               for x in got), f"register_tile should return (mr, nr), two positive ints; "
               f"for {simd.isa} it returned {got!r}")
        mr, nr = (int(x) for x in got)
        expect(nr % simd.lanes == 0, f"{simd.isa}: nr = {nr} is not a whole number of "
               f"{simd.lanes}-lane vectors")
        v = nr // simd.lanes
        expect(v in (1, 2, 4), f"{simd.isa}: nr = {nr} is {v} vectors; keep it 1, 2 or 4 "
               f"vectors (LLVM splits an odd width like <{3 * simd.lanes} x float> awkwardly)")
        used = mr * v + v + 1
        expect(used <= simd.registers, f"{simd.isa}: a {mr} x {nr} tile takes {mr * v} "
               f"accumulators + {v} for a row of B + 1 for A[i, k] = {used} vector registers; "
               f"the machine has {simd.registers}")
        expect(2 * mr * v >= simd.registers, f"{simd.isa}: a {mr} x {nr} tile keeps only "
               f"{mr * v} of {simd.registers} registers accumulating: at least half should, to "
               "keep the FMA units busy while each FMA waits for the one before it")
    mr, nr = (int(x) for x in register_tile(host_simd()))
    n = math.lcm(mr, nr)
    n *= -(-64 // n)  # a multiple of the tile, at least 64
    sch = micro_kernel(n, mr, nr)
    code = str(mlc.lower(sch.mod))
    expect(f"alloc_buffer(({mr * nr},)" in code, f"the local accumulator should hold mr·nr = "
           f"{mr * nr} floats")
    c, want = run_gemm(sch, lambda a, b: (a, b), n)
    expect(np.allclose(c, want, rtol=1e-4), f"the {mr} x {nr} micro-kernel computes a wrong C")

# %% [markdown]
# **1. Arithmetic intensity of a tiled GEMM.** With C computed in t × t tiles (loops
# `i_0, j_0, k, i_1, j_1`, as `tiled_gemm(n, t)` schedules it) and a cache that holds a
# t-row panel of A, a t-column panel of B and a tile of C, count the bytes (float32: 4
# each) that move between the cache and memory for an n × n GEMM, and return
# `tiled_intensity(n, t)`, the flops (2n³) per byte. Which panel stays in the cache while
# `j_0` walks, and which is read again for every tile? Then write `smallest_tile(n,
# peak_gflops, bandwidth_gbs)`: the smallest power of two t (up to n) whose intensity
# reaches the ridge of that machine, or None. The check compares your count with mlc's
# cache model (`mlc.tune.features.memory_traffic`).

# %%
def tiled_intensity(n, t):
    ### BEGIN SOLUTION
    bytes_moved = 4 * n * n + 4 * n ** 3 / t + 4 * n * n
    return 2 * n ** 3 / bytes_moved
    ### END SOLUTION

def smallest_tile(n, peak_gflops, bandwidth_gbs):
    ### BEGIN SOLUTION
    t = 1
    while t <= n:
        if tiled_intensity(n, t) >= peak_gflops / bandwidth_gbs:
            return t
        t *= 2
    return None
    ### END SOLUTION

check_intensity(tiled_intensity, smallest_tile)

# %% [markdown]
# **2. Pack B once.** The `pack` step above copies B into panels inside every call. A
# library packs a weight matrix once and hands the kernel the packed copy. Write
# `pack_b(b, bn)` in numpy, returning `PB` of shape (n/bn, n, bn) with
# `PB[x, y, z] = b[y, x·bn + z]` (a C-contiguous array), and `prepacked_matmul(n, bn)`, the
# GEMM that takes `PB` as its input instead of B. The check schedules it (j split by bn,
# vectorized), looks for contiguous vector loads of `PB` in the lowered code and compares
# `C` with `A @ B`.

# %%
def pack_b(b, bn):
    ### BEGIN SOLUTION
    n = b.shape[0]
    return np.ascontiguousarray(b.reshape(n, n // bn, bn).transpose(1, 0, 2))
    ### END SOLUTION

def prepacked_matmul(n, bn):
    A = te.placeholder((n, n), name="A")
    ### BEGIN SOLUTION
    PB = te.placeholder((n // bn, n, bn), name="PB")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * PB[j // bn, k, j % bn], axis=k),
                   name="C")
    ### END SOLUTION
    return [A, PB, C]

check_prepacked(pack_b, prepacked_matmul)

# %% [markdown]
# **3. A register tile for this CPU.** The micro-kernel of a fast GEMM keeps an mr × nr
# tile of C in vector registers while k runs: per k it broadcasts A[i, k] for each of the
# mr rows, loads nr/lanes vectors of a row of B, and does mr·nr/lanes FMAs. Given the
# machine's `SIMD` (`host_simd()` here: lanes and registers), return `(mr, nr)` such that
# nr is 1, 2 or 4 vectors, the accumulators plus a row of B plus one broadcast fit in the
# registers, at least half of the registers accumulate (an FMA waits a few cycles for the
# one before it into the same accumulator, so many must be in flight), and the FMAs per
# load are as many as you can get (the check does not insist on the best). The check tries
# four machines, then builds `micro_kernel(n, mr, nr)` with your tile for this one and
# compares it with numpy.

# %%
def register_tile(simd):
    ### BEGIN SOLUTION
    best = None
    for v in (1, 2, 4):
        mr = (simd.registers - v - 1) // v
        if mr < 1:
            continue
        loads = mr + v  # a broadcast of A per row, a vector of B per column of vectors
        fmas = mr * v
        if best is None or fmas / loads > best[0]:
            best = (fmas / loads, (mr, v * simd.lanes))
    return best[1]
    ### END SOLUTION

# %% [markdown]
# Before the check, your tile against one row taller, which needs more vector registers than the CPU has, so
# LLVM must keep some accumulators in memory (how much that costs varies by CPU):

# %% tags=["nbval-ignore-output"]
try:
    simd = host_simd()
    mr, nr = register_tile(simd)
    v = nr // simd.lanes
    too_tall = (simd.registers - v - 1) // v + 1  # one row more than the registers hold
    n = math.lcm(mr, too_tall, nr)
    n *= -(-256 // n)
    rng = np.random.default_rng(5)
    a, b = (rng.random((n, n), dtype=np.float32) for _ in range(2))
    c = np.zeros((n, n), "float32")
    for rows in (mr, too_tall):
        f = mlc.build(micro_kernel(n, rows, nr).mod)
        used = rows * v + v + 1
        print(f"{rows:2d} x {nr} tile, {used:2d} of {simd.registers} registers: "
              f"{viz.measure_gflops(f, [a, b, c], 2.0 * n ** 3, number=3, repeat=3):5.1f} GFLOPS")
except NotImplementedError:
    print("write register_tile first")

# %% [markdown]
# The check of exercise 3:

# %%
check_register_tile(register_tile)

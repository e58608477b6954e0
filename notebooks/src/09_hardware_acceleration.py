# %% [markdown]
# # 09 · Hardware acceleration: blockize, tensor intrinsics, tensorize
#
# Processors keep growing more specialised units. A **scalar** unit adds one pair of
# numbers per instruction; a **vector** unit adds 4 pairs of float32 (NEON, SSE), 8 (AVX2) or
# 16 (AVX-512); the newest machine-learning accelerators (TPUs, GPU tensor cores, the TVM
# paper's "VDLA") have **tensor**
# instructions that multiply whole `16 x 16` tiles and copy 2-D blocks of data at once.
#
# A compiler for such hardware must find, in the loop program, the pieces that compute
# exactly what an instruction computes, and call the instruction there. TensorIR does it in
# two steps:
#
# 1. **`blockize`** groups the loops of a tile into one *tensorized block*, a block that reads
#    and writes whole sub-regions of tensors (the lecture's `tmm-16x16` block);
# 2. **`tensorize`** checks that the block's body computes what a registered
#    **`TensorIntrin`** *describes*, and replaces it by the intrinsic's *implementation*.
#
# mlc's CPU target uses no tensor unit, so the implementations here are CPU micro-kernels (loops
# unrolled and vectorized); on an accelerator the implementation would be the instruction
# call. The matching, the rewriting and the schedule around them are the same.
#
# **You will:** blockize a matmul into `16 x 16` tiles, look at one tile's regions, register
# and inspect an intrinsic, tensorize, see a mismatch refused, time the result, and run int8
# on the CPU's dot-product instructions. Two side paths, the lecture's te-style port
# (`s[CL].tensorize(yi, vdla.gemm8x8)`) and what a float out of int8's range becomes, are in
# `09_appendix`.

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
from matplotlib.patches import Rectangle

import mlc
from mlc import te, tir, viz
from mlc.errors import ScheduleError
from mlc.tir.arith import evaluate_int
from mlc.tir.tensor_intrin import register_cpu_gemm

if get_ipython() is not None:  # in Jupyter, draw figures as pictures: %matplotlib inline
    get_ipython().run_line_magic("matplotlib", "inline")
matplotlib.rcParams["figure.dpi"] = 80
np.random.seed(0)

# %% [markdown]
# **Why:** new hardware adds instructions that compute a whole tile at once (dot products,
# matrix units). Tensorize replaces a loop nest by such an instruction when the two compute
# the same thing, and low precision makes them faster still.
#
# Where this chapter works, on the map of chapter 00 (its levels in blue):

# %% tags=["nbval-ignore-output"]
from mlc.viz.concepts import stack

stack(chapter=9)

# %% [markdown]
# ## The matmul of the lecture, tiled by 16
# The MLC course's lecture writes `C[vi, vj] += A[vi, vk] * B[vj, vk]` (B indexed by column
# first). Split each of `i, j, k` by 16 and move the three outer loops out: the three inner
# loops now walk one `16 x 16 x 16` tile.

# %%
N, T = 64, 16

def matmul_tb(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
    return te.create_prim_func([A, B, C])

def tiled(func, t=T):
    sch = tir.Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, t])
    j0, j1 = sch.split(j, factors=[None, t])
    k0, k1 = sch.split(k, factors=[None, t])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    return sch, i1

sch, i1 = tiled(matmul_tb(N))
print(sch.mod)

# %% [markdown]
# ## blockize: a block that computes a tile
# `sch.blockize(i1)` wraps everything from `i_1` inwards into a new outer block `C_o`, the
# tensorized block. Its iteration variables `vi0, vj0, vk0` count *tiles*, and its
# `reads`/`writes` are whole `16 x 16` regions: exactly the lecture's
#
# ```python
# with T.block("tmm-16x16"):
#     T.reads(A[vi0 * 16 : vi0 * 16 + 16, vk0 * 16 : vk0 * 16 + 16],
#             B[vj0 * 16 : vj0 * 16 + 16, vk0 * 16 : vk0 * 16 + 16])
#     T.writes(C[vi0 * 16 : vi0 * 16 + 16, vj0 * 16 : vj0 * 16 + 16])
# ```
#
# The reduction's init moves to the outer block and zeroes the whole tile of `C`.

# %%
blocked = sch.blockize(i1)
print(sch.mod)

# %% [markdown]
# One instance of `C_o` (`vi0, vj0, vk0 = 1, 2, 3`): evaluate the block's `reads` and
# `writes` regions there and draw them on the full matrices. A tensor instruction would
# receive exactly these three tiles.

# %%
def tile_regions(block, values):
    """{buffer: (row, col, rows, cols)} of the block's read and written regions."""
    env = {iv.var: v for iv, v in zip(block.iter_vars, values)}
    regions = {}
    for region in (*block.reads, *block.writes):
        (r, c) = (evaluate_int(rng.min, env) for rng in region.region)
        (h, w) = (evaluate_int(rng.extent, env) for rng in region.region)
        regions[region.buffer.name] = (int(r), int(c), int(h), int(w))
    return regions

regions = tile_regions(sch.get(blocked), (1, 2, 3))
regions

# %%
fig = Figure(figsize=(9, 3.2))
axes = fig.subplots(1, 3)
for ax, (name, (r, c, h, w)) in zip(axes, regions.items()):
    ax.add_patch(Rectangle((0, 0), N, N, facecolor="whitesmoke", edgecolor="black"))
    ax.add_patch(Rectangle((c, r), w, h, facecolor="tab:orange" if name != "C" else "tab:blue"))
    for g in range(0, N + 1, T):
        ax.axhline(g, color="lightgray", linewidth=0.6)
        ax.axvline(g, color="lightgray", linewidth=0.6)
    ax.set_xlim(0, N)
    ax.set_ylim(N, 0)
    ax.set_aspect("equal")
    role = "written" if name == "C" else "read"
    ax.set_title(f"{name}[{r}:{r + h}, {c}:{c + w}] ({role})")
    ax.set_xticks(range(0, N + 1, T))
    ax.set_yticks(range(0, N + 1, T))
fig.suptitle("one tensorized block C_o: vi0=1, vj0=2, vk0=3")
fig.tight_layout()
fig

# %% [markdown]
# ## TensorIntrin: what an instruction computes, and how
# A tensor intrinsic has two programs with the same parameters:
#
# * the **description**: what it computes, on small buffers (here `C[i, j] += A[i, k] *
#   B[j, k]` on `16 x 16` tiles, without init: the update part of a reduction);
# * the **implementation**: how the hardware does it. On an accelerator, one instruction; here
#   a CPU micro-kernel: `k` unrolled, `j` vectorized, each step a 16-lane multiply-add (LLVM
#   splits it into as many of this CPU's vectors as it takes).
#
# `register_cpu_gemm` registers a ready-made one (`transpose_b=True` for the lecture's `B[j, k]`
# layout); `tir.TensorIntrin.register(name, desc, impl)` registers your own.

# %%
name_tb = register_cpu_gemm(16, 16, 16, transpose_b=True)
print(tir.TensorIntrin.get(name_tb))

# %% [markdown]
# ## tensorize
# `sch.tensorize(block, name)` compares the block's body with the description, up to the
# names of variables and the position of the tile inside the big buffers, and swaps in the
# implementation. The init stays: the accelerator's `fill_zero`.

# %%
sch.tensorize(blocked, name_tb)
print(sch.mod)

# %%
f_tb = mlc.build(sch.mod, name="matmul_tensorized")
a, b = np.random.rand(N, N).astype("float32"), np.random.rand(N, N).astype("float32")
c = np.zeros((N, N), "float32")
f_tb(a, b, c)
np.testing.assert_allclose(c, a @ b.T, rtol=1e-4)
print("tensorized matmul matches numpy; the trace:")
print(sch.trace)

# %% [markdown]
# ### A mismatch is refused
# An intrinsic for the other layout, `C[i, j] += A[i, k] * B[k, j]`, computes something else
# on these tiles. `tensorize` says so, prints both programs, and leaves the schedule as it was.

# %%
name_nn = register_cpu_gemm(16, 16, 16)
wrong, wrong_i1 = tiled(matmul_tb(N))
before = wrong.mod
try:
    wrong.tensorize(wrong_i1, name_nn)
    message = ""
except ScheduleError as err:
    message = str(err)
print("\n".join(message.splitlines()[:3]))
tir.assert_structural_equal(wrong.mod, before)
print("(the schedule is unchanged)")

# %% [markdown]
# (The lecture's own spelling of this, for a TPU-like accelerator in the te style,
# `s[CL].tensorize(yi, vdla.gemm8x8)`, is worked in the appendix, `09_appendix`.)

# %% [markdown]
# ## Does the micro-kernel pay?
# Time, on `256 x 256` matrices in the plain `B[k, j]` layout: the untouched loop nest, the
# tiled loop nest, and the same tiling tensorized with the 16x16x16 micro-kernel (timings
# vary by machine and run).

# %%
def matmul_nn(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])

NT = 256
plain = tir.Schedule(matmul_nn(NT))
tiled_only, _ = tiled(matmul_nn(NT))
tensorized, t_i1 = tiled(matmul_nn(NT))
tensorized.tensorize(t_i1, name_nn)
versions = {"naive": plain, "tiled": tiled_only, "tensorized": tensorized}
a2, b2 = np.random.rand(NT, NT).astype("float32"), np.random.rand(NT, NT).astype("float32")
modules = {}
for label, version in versions.items():
    modules[label] = mlc.build(version.mod)
    out = np.zeros((NT, NT), "float32")
    modules[label](a2, b2, out)
    np.testing.assert_allclose(out, a2 @ b2, rtol=1e-3)
print("all three match numpy")

# %% tags=["nbval-ignore-output"]
flop = 2.0 * NT ** 3
gflops = {label: viz.measure_gflops(m, [a2, b2, np.zeros((NT, NT), "float32")], flop,
                                    number=2, repeat=3)
          for label, m in modules.items()}
numpy_gflops = flop / viz.seconds_per_call(lambda: a2 @ b2, number=5, repeat=3) / 1e9
for label, g in gflops.items():
    print(f"{label:11s} {g:7.1f} GFLOPS")
print(f"{'numpy':11s} {numpy_gflops:7.1f} GFLOPS")

# %% tags=["nbval-ignore-output"]
viz.gflops_bars(gflops, reference={"numpy": numpy_gflops},
                title=f"matmul {NT}^3: tensorizing the 16x16x16 tile")

# %% tags=["nbval-ignore-output"]
gain = gflops["tensorized"] / gflops["tiled"]
print(f"tiled: {gflops['tiled'] / gflops['naive']:.1f}x the naive loop; tensorized: "
      f"{gflops['tensorized'] / gflops['naive']:.1f}x the naive loop, {gain:.1f}x the tiled one")
print("here the hand-written micro-kernel", "gains little over the tiled loop nest"
      if gain < 1.2 else f"is {gain:.1f}x faster than the tiled loop nest")

# %% [markdown]
# The tiling alone changes the order of the loops; the micro-kernel also fixes how the tile
# is computed: `k` unrolled and `j` vectorized, each step a 16-lane multiply-add on a row of
# `C`. How much that adds over the tiled loop nest depends on what LLVM makes of the tiled
# loops by itself on this CPU (the cell above says it for this run). The lasting win of
# tensorize is that the tile's computation becomes *one unit* the backend can replace, by a
# better kernel or by an accelerator's instruction (where there is no other way to use the
# hardware at all).

# %% [markdown]
# ## Low precision: int8 on the CPU's dot-product instruction
# The lectures name fp16, int8 and "ultra low-precision operators" as what accelerators are
# built for. A CPU has them too. A 512-bit register holds 16 float32 numbers or **64 int8**
# numbers, so one instruction that multiplies and adds bytes does 4x the work of a float32
# FMA, and the weights take 4x less memory and bandwidth. That is why, on a CPU with such an
# instruction, int8's peak is 4x float32's.
#
# **VNNI** (AVX-512 Vector Neural Network Instructions; AVX-VNNI is its 256-bit form) adds that
# instruction: `vpdpbusd acc, a, b` takes, for each of 16 int32 lanes, 4 **unsigned** bytes
# of `a` and 4 **signed** bytes of `b`, and adds the 4 products to the lane: 64
# multiply-adds in one instruction, accumulated exactly in int32. Without it (plain AVX2), the
# classic sequence `vpmaddubsw` + `vpmaddwd` saturates its int16 pairs when the activations
# use all 8 bits (`255 * -128 * 2` does not fit), so mlc's exact fallback widens the bytes to
# int16 first (`vpmaddwd`): exact, but half the multiply-adds per instruction of a float32
# FMA. With **7-bit activations**
# the classic sequence is exact again (below). What does *this* CPU have? LLVM tells us:

# %% tags=["nbval-ignore-output"]
import time
import warnings

from mlc.target.llvm.dot import cpu_features, pmadd_lanes, vnni_lanes
from mlc.topi.x86 import dense_int8, pack_weight, schedule_dense_int8

features = cpu_features()
has_vnni = vnni_lanes(features) > 0
has_pmadd = pmadd_lanes(features) > 0
print("vector features:", ", ".join(sorted(f for f in features if f.startswith("avx"))) or "none")
print("vpdpbusd (VNNI):", "yes" if has_vnni else "no: 8-bit int8 takes the exact portable fallback")
print("vpmaddubsw:", f"{32 * pmadd_lanes(features)}-bit" if has_pmadd else "no")

# %% [markdown]
# ### The intrinsic, declared like the ones above
# `dot_16x4_u8i8` describes one step of an int8 GEMM: 16 int32 outputs, each adding 4
# products of the same 4 activation bytes with its own 4 weight bytes. The weights are packed
# so those 64 bytes are contiguous. The implementation is one call, `dp4a` (CUDA's name for
# the same 4-way byte dot product), a row of mlc's intrinsic table that the LLVM backend
# emits as `llvm.x86.avx512.vpdpbusd.512` where the target has VNNI, and as portable
# multiply-adds elsewhere (with a one-line notice).

# %%
from mlc.topi.x86 import register_dp4a

print(tir.TensorIntrin.get(register_dp4a()))

# %% [markdown]
# VNNI wants unsigned activations and signed weights. Quantized activations are signed
# (`-127..127`), so they are stored shifted by 128 as uint8 (a *zero point* of 128), and the
# kernel subtracts what the shift added: `sum((x + 128) * w) = sum(x * w) + 128 * sum(w)`;
# `pack_weight` computes `128 * sum(w)` per output once. Here is a `64 x 64 x 64` int8
# dense, scheduled and tensorized by `topi.x86.schedule_dense_int8`: look for the `dp4a` call.

# %%
M8 = N8 = K8 = 64
A8 = te.placeholder((M8, K8), "int8", "A")
W8 = te.placeholder((N8 // 16, K8 // 4, 64), "int8", "W")
comp8 = te.placeholder((N8,), "int32", "comp")
D8 = dense_int8(A8, W8, comp8, units=N8)
sch8 = schedule_dense_int8([A8, W8, comp8, D8])
lowered8 = str(mlc.lower(sch8.mod))
print("\n".join(line for line in lowered8.splitlines() if "dp4a" in line)[:400])

# %%
rng8 = np.random.default_rng(0)
x8 = rng8.integers(-128, 128, (M8, K8)).astype("int8")
w8 = rng8.integers(-128, 128, (N8, K8)).astype("int8")
w8_packed, w8_comp = pack_weight(w8)
y8 = np.zeros((M8, N8), "int32")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # the fallback's notice, on CPUs without VNNI
    f8 = mlc.build(sch8.mod)
f8(x8, w8_packed, w8_comp, y8)
assert np.array_equal(y8, x8.astype("int32") @ w8.astype("int32").T)
print("int8 dense matches numpy exactly")

# %% [markdown]
# The same program built for a VNNI CPU, to LLVM IR only (any machine can print it; only a
# VNNI machine can run it):

# %%
from mlc.target.llvm.codegen import codegen_llvm
from mlc.target.target import parse_target

vnni_target = parse_target("llvm -mcpu=sapphirerapids -mattr=+avx512f,+avx512bw,+avx512vnni")
ir_vnni = codegen_llvm(mlc.lower(sch8.mod), cpu_features=cpu_features(vnni_target)).ir
print(next(line.strip() for line in ir_vnni.splitlines()
           if "call" in line and "vpdpbusd" in line)[:120])

# %% [markdown]
# `mlc.build` for that target compiles the machine code too, and a module built for a CPU
# this one is not refuses to run when the code may use an instruction this CPU lacks
# (the process would die of an illegal instruction, the notebook with it). It says what is
# missing; its assembly is still there to read:

# %% tags=["nbval-ignore-output"]
from mlc.errors import TargetError

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    f_vnni = mlc.build(sch8.mod, target=vnni_target)
print("vpdpbusd" in f_vnni.get_source("asm"), "(vpdpbusd in its assembly)")
try:
    f_vnni(x8, w8_packed, w8_comp, y8)
    print("this CPU has every instruction the VNNI build may use: it ran")
except TargetError as err:
    print(str(err).split(" Its code")[0])

# %% [markdown]
# ### The 7-bit trick
# `vpmaddubsw a, b` multiplies 32 **unsigned** bytes of `a` by 32 **signed** bytes of `b` and
# adds each *pair* of neighbouring products into one int16, **saturating**: a sum above 32767
# becomes 32767. `vpmaddwd` with a vector of ones then adds pairs of those int16 into int32
# (exactly), and `vpaddd` adds them to the accumulators. Three instructions do 32
# multiply-adds on a 256-bit register, where one float32 FMA does 8: about 1.33x the float32
# rate, if the int16 step is exact.
#
# It is exact when no pair can leave the int16 range `-32768..32767`. The largest pair is
# `2 * max(a) * 128` (a weight byte is at least -128):
#
# | activations | largest pair | fits int16? |
# |---|---|---|
# | 8-bit, 0..255 | 2 * 255 * 128 = 65280 | no: saturates |
# | 7-bit, 0..127 | 2 * 127 * 128 = 32512 | yes: exact |
#
# So if every activation byte is below 128, the fast sequence computes exactly what
# `vpdpbusd` does. Activations after a relu are never negative, and neither are pixels:
# quantized with zero point 0 and clipped to `0..127` (`graph.qnn.quantize(h, s,
# zero_point=0, bits=7)`) they keep the same 127 steps that a signed 8-bit quantizer gives a
# non-negative value, so accuracy does not change. Here is `vpmaddubsw`'s arithmetic on one
# pair, in plain Python:

# %%
def pmaddubsw_pair(a: list[int], b: list[int]) -> int:
    """One int16 lane of vpmaddubsw: a0*b0 + a1*b1, saturated to int16."""
    return max(-32768, min(32767, a[0] * b[0] + a[1] * b[1]))


for a_pair in ([255, 255], [127, 127]):
    exact = a_pair[0] * -128 + a_pair[1] * -128
    got = pmaddubsw_pair(a_pair, [-128, -128])
    print(f"{a_pair} x [-128, -128]: vpmaddubsw gives {got:6d}, exact {exact:6d}",
          "(saturated)" if got != exact else "(exact)")

# %% [markdown]
# The intrinsic `dot_16x4_u7i8` has the same description as `dot_16x4_u8i8`; its
# implementation calls `dp4a_u7`, a row of the intrinsic table that the LLVM backend emits as
# `vpdpbusd` on VNNI (exact for any bytes, so also for 7-bit ones) and as
# `vpmaddubsw` + `vpmaddwd` elsewhere. Tensorize matches the computation, not the values: the
# promise "below 128" comes from the quantizer. `dense_int8(..., data_bits=7)` makes it, and
# `graph.qnn.dense` reads it off the `qnn.quantize` that made its input. For an AVX2 target
# (LLVM IR only, so the output is the same on any machine), the instructions called:

# %%
import re

A7 = te.placeholder((M8, K8), "uint8", "A")
D7 = dense_int8(A7, W8, None, units=N8, data_bits=7)
sch7 = schedule_dense_int8([A7, W8, D7])
avx2_target = parse_target("llvm -mcpu=haswell -mattr=+avx2")
ir_avx2 = codegen_llvm(mlc.lower(sch7.mod), cpu_features=cpu_features(avx2_target)).ir
print(sorted(set(re.findall(r'call [^@]*@"(llvm\.x86\.[\w.]+)"', ir_avx2))))

x7 = rng8.integers(0, 128, (M8, K8)).astype("uint8")
x7[0] = 127  # the largest 7-bit activation...
w8[0] = -128  # ...against the most negative weight
w8_packed, _ = pack_weight(w8)
y7 = np.zeros((M8, N8), "int32")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    mlc.build(sch7.mod)(x7, w8_packed, y7)
assert np.array_equal(y7, x7.astype("int32") @ w8.astype("int32").T)
print("7-bit int8 dense matches numpy exactly, 127 x -128 included")

# %% [markdown]
# (What a conversion of 300.0 or NaN to int8 gives, in C, numpy and mlc, is in the appendix,
# `09_appendix`: the quantizer below never converts a value out of range.)

# %% [markdown]
# ### How fast, here?
# int8 `512 x 512 x 512` with 8-bit and with 7-bit activations against numpy's float32 GEMM
# (OpenBLAS), in alternating rounds with a short pause and one untimed call before each,
# medians of the rounds.
# Counting multiply-adds per instruction: on a VNNI CPU both int8 kinds are `vpdpbusd`, up
# to 4x float32; without VNNI the exact 8-bit fallback does about half as many as float32
# FMAs and the 7-bit `vpmaddubsw` path about 1.33x (`benchmarks/int8.py` measures 1024^3).

# %% tags=["nbval-ignore-output"]
def interleaved(contenders: dict, rounds: int = 5, number: int = 3) -> dict:
    """Median seconds per call of each contender, timed in alternating rounds."""
    times: dict = {k: [] for k in contenders}
    for fn in contenders.values():
        fn()
    for _ in range(rounds):
        for k, fn in contenders.items():
            time.sleep(0.2)  # let other programs' (and BLAS's) threads settle
            fn()  # then wake this contender's own threads: a cold first call is not its speed
            t0 = time.perf_counter()
            for _ in range(number):
                fn()
            times[k].append((time.perf_counter() - t0) / number)
    return {k: float(np.median(v)) for k, v in times.items()}


NB = 512
Ab = te.placeholder((NB, NB), "uint8", "A")
Wb = te.placeholder((NB // 16, NB // 4, 64), "int8", "W")
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    fb8, fb7 = (mlc.build(schedule_dense_int8(
        [Ab, Wb, dense_int8(Ab, Wb, None, units=NB, data_bits=bits)]).mod) for bits in (8, 7))
ab8 = rng8.integers(0, 256, (NB, NB)).astype("uint8")
ab7 = ab8 >> 1
wb8, _ = pack_weight(rng8.integers(-128, 128, (NB, NB)).astype("int8"))
yb8 = np.zeros((NB, NB), "int32")
xf, wf = np.random.rand(NB, NB).astype("float32"), np.random.rand(NB, NB).astype("float32")
t_gemm = interleaved({"fp32 (numpy)": lambda: xf @ wf,
                      "int8, 8-bit (mlc)": lambda: fb8(ab8, wb8, yb8),
                      "int8, 7-bit (mlc)": lambda: fb7(ab7, wb8, yb8)})
path8 = "vpdpbusd" if has_vnni else "exact portable fallback"
path7 = "vpdpbusd" if has_vnni else "vpmaddubsw" if has_pmadd else "portable fallback"
for k, t in t_gemm.items():
    path = {"int8, 8-bit (mlc)": path8, "int8, 7-bit (mlc)": path7}.get(k, "OpenBLAS")
    print(f"{k:18} {2 * NB**3 / t / 1e9:7.1f} G(FL)OPS  {t_gemm['fp32 (numpy)'] / t:5.2f}x numpy"
          f"  [{path}]")

# %% [markdown]
# ### A quantized MLP
# The digits MLP of notebook 06, quantized after training: int8 weights with one scale per
# output channel, 8-bit activations with one scale per layer measured on the training set.
# Every layer's input is non-negative here (pixels, then relu outputs), so `quantize_mlp`
# marks them all for 7 bits with zero point 0. `graph.qnn` adds three ops: `qnn.quantize`
# and `qnn.dequantize` are elementwise, `qnn.dense` anchors a group like `nn.dense`, so
# fusion makes each hidden layer ONE kernel: int8 dense, rescale, bias, relu, requantize. In
# that kernel each `4 x 16` tile of int32 accumulators is rescaled, biased, relu'd and
# requantized right after its reduction. (Unlike notebook 06's float kernel, whose
# accumulators shrink to one tile, here they are a whole `(360, 64)` int32 buffer inside
# the kernel: mlc's `compact_buffers` does not shrink the buffer that the tensorized `dp4a`
# block writes.)

# %% tags=["nbval-ignore-output"]
from mlc import graph
from mlc.examples.mlp import load_data, mlp_graph, train_mlp
from mlc.examples.qmlp import quantize_mlp, quantized_mlp_graph

xtr, ytr, xte, yte = load_data()
params = train_mlp(xtr, ytr)
qparams = quantize_mlp(params, xtr)
gq = graph.optimize(quantized_mlp_graph(qparams, len(xte)))
print(gq)

# %% tags=["nbval-ignore-output"]
def build_mlps(batch: int) -> dict:
    """fp32, int8 with every activation in 8 bits (zero point 128), int8 with 7-bit ones."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the portable fallback's notice
        return {
            "fp32": graph.build(graph.optimize(mlp_graph(params, batch)), target="llvm"),
            "int8, 8-bit act.": graph.build(graph.optimize(
                quantized_mlp_graph(qparams, batch, seven_bits=False)), target="llvm"),
            "int8, 7-bit act.": graph.build(graph.optimize(
                quantized_mlp_graph(qparams, batch)), target="llvm"),
        }


mods = {batch: build_mlps(batch) for batch in (64, len(xte))}
accuracy = {k: float((m(x=xte)[0].argmax(1) == yte).mean()) for k, m in mods[len(xte)].items()}
assert all(abs(a - accuracy["fp32"]) <= 0.01 for a in accuracy.values())
for k, a in accuracy.items():
    d = 100 * (a - accuracy["fp32"])
    print(f"accuracy {k:17} {a:.3f}", "" if k == "fp32" else
          "(the same as fp32)" if d == 0 else f"({d:+.1f} points)")

# %% tags=["nbval-ignore-output"]
mlp_times = {batch: interleaved({k: (lambda m=m, x=xte[:batch]: m(x=x))
                                 for k, m in ms.items()}, rounds=5, number=20)
             for batch, ms in mods.items()}
print(f"{'':17} {'accuracy':>9}" + "".join(f"{'us, batch ' + str(b):>15}" for b in mlp_times)
      + "".join(f"{'vs fp32, ' + str(b):>13}" for b in mlp_times))
for k in accuracy:
    print(f"{k:17} {accuracy[k]:9.3f}"
          + "".join(f"{t[k] * 1e6:15.1f}" for t in mlp_times.values())
          + "".join(f"{t['fp32'] / t[k]:12.2f}x" for t in mlp_times.values()))
speedups = [t["fp32"] / t["int8, 7-bit act."] for t in mlp_times.values()]
why = ("vpdpbusd does 4x the multiply-adds of an fp32 FMA" if has_vnni else
       "vpmaddubsw does about 1.33x the multiply-adds of an fp32 FMA, exactly for 7-bit "
       "activations, while the 8-bit build runs on the exact fallback" if has_pmadd else
       "this CPU has neither instruction, so int8 runs on the portable fallback")
verdict = (f"faster at both batch sizes: {why}" if min(speedups) > 1 else
           f"slower at both batch sizes, although {why}" if max(speedups) < 1 else
           f"faster at one batch size only: {why}")
print(f"7-bit int8 is {min(speedups):.2f}x to {max(speedups):.2f}x the speed of fp32 here "
      f"({verdict}); the softmax costs the same in every build, and the int8 builds add the "
      "input's quantize")

# %% [markdown]
# Accuracy stays within a point of float32 (the cell that builds the three MLPs asserts it,
# and the table above repeats it): 8 bits keep about 2 decimal digits per value, per-channel
# weight scales follow each output's own range, and the 7-bit activations lose nothing
# because the values were never negative. The speed
# depends on the instruction the CPU has: that is the point of declaring the intrinsic. The
# schedule is the same on every CPU, and the code generator picks `vpdpbusd`, `vpmaddubsw`
# or the portable fallback. On a machine shared with other programs single timings vary;
# the rounds above alternate the builds so that they see the same load.

# %% [markdown]
# ### fp16 beside int8
# Half precision needs no scale and no zero point: a float16 has 5 exponent bits and 10
# mantissa bits, about 3 decimal digits up to 65,504, and a value is cast, not quantized.
# It halves memory as int8 quarters it. Its weakness is the sum: a dot product of 256
# terms accumulated in float16 keeps 3 digits of a number that grows, so mixed precision
# reads float16 and accumulates in float32. Both, in te (the `.astype` picks the
# accumulator), against a float64 reference; the last column lists the instructions
# LLVM chose on this CPU (`vfmadd231ph` is AVX512-FP16's half-precision FMA; without it
# the halves are converted to float32 first):

# %% tags=["nbval-ignore-output"]
import re

from mlc.topi.schedule import default_schedule


def dense_half(acc, m=64, n=64, k=256):
    X = te.placeholder((m, k), name="X", dtype="float16")
    W = te.placeholder((n, k), name="W", dtype="float16")
    r = te.reduce_axis((0, k), name="k")
    Y = te.compute((m, n), lambda i, j: te.sum(X[i, r].astype(acc) * W[j, r].astype(acc),
                                               axis=r), name="dense", tag="dense")
    return mlc.build(default_schedule([X, W, Y]).mod)


rng16 = np.random.default_rng(0)
x16 = rng16.random((64, 256)).astype("float16")
w16 = rng16.random((64, 256)).astype("float16")
ref16 = x16.astype("float64") @ w16.astype("float64").T
err16 = {}
for acc in ("float16", "float32"):
    f16 = dense_half(acc)
    y16 = np.zeros((64, 64), acc)
    f16(x16, w16, y16)
    err16[acc] = float(np.abs(y16 - ref16).max() / np.abs(ref16).max())
    ops = sorted(set(re.findall(r"\b(vfmadd\w+|vcvt\w*ph\w*|vcvtsh2ss)\b",
                                f16.get_source("asm"))))
    print(f"fp16 inputs, {acc} accumulator: relative error {err16[acc]:.1e}; {', '.join(ops)}")
with np.errstate(over="ignore"):
    print("np.float16(70000) =", np.float16(70000), "(past 65,504 a float16 is inf)")
assert err16["float32"] < 1e-5 < err16["float16"]

# %% [markdown]
# What `te.sum` does when you do not choose: like TVM, mlc keeps the inputs' dtype as the
# accumulator, so a float16 sum adds in float16 (a float32 one would be a buffer and a block
# that no schedule asked for). A float16 stops counting at 2,048 (the next float16 after it
# is 2,050), so mlc warns at build time when a float16 sum is longer than that, and names the
# fix, `.astype("float32")` on the term:

# %%
import warnings

from mlc.errors import PrecisionWarning

ones = te.placeholder((5000,), name="ones", dtype="float16")
kk = te.reduce_axis((0, 5000), name="kk")
total16 = te.compute((1,), lambda _: te.sum(ones[kk], axis=kk), name="total16")
total32 = te.compute((1,), lambda _: te.sum(ones[kk].astype("float32"), axis=kk),
                     name="total32")
a_ones = np.ones(5000, "float16")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    sum16 = mlc.build(te.create_schedule(total16.op), [ones, total16])
print("warned:", [str(w.message).split(";")[0] for w in caught
                  if issubclass(w.category, PrecisionWarning)])
out16, out32 = np.zeros(1, "float16"), np.zeros(1, "float32")
sum16(a_ones, out16)
mlc.build(te.create_schedule(total32.op), [ones, total32])(a_ones, out32)
print(f"5000 float16 ones summed in float16: {out16[0]}; in float32: {out32[0]}")
assert out16[0] == 2048 and out32[0] == 5000 and caught

# %% [markdown]
# > **What to remember**
# > * blockize makes a block compute a whole tile; tensorize replaces it by an instruction (a
# >   TensorIntrin: a description and an implementation that must agree).
# > * int8 dot-product instructions need a zero point and a shift, which the compiler
# >   compensates for exactly; fp16 needs neither, but accumulate it in float32.
# > * Whether a micro-kernel pays is measured against numpy on this machine.

# %% [markdown]
# ## Exercises
# Complete each answer (replace `raise NotImplementedError()`) and run the check under it:
# ✓, or ✗ with what is wrong
# (`hint("1")` gives a hint for exercise 1, the idea first, when you want one). Run the next cell
# first: it defines the checks.
# Nothing from the cells above is needed but the imports.

# %%
import warnings

from mlc import graph
from mlc.testing.exercises import exercise, expect, hint  # noqa: F401 (hint("1") asks for a hint)


def matmul_kj(n):
    """C[i, j] = sum_k A[i, k] * B[k, j], the plain layout."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def tiled_by(func, t):
    sch = tir.Schedule(func)
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, t])
    j0, j1 = sch.split(j, factors=[None, t])
    k0, k1 = sch.split(k, factors=[None, t])
    sch.reorder(i0, j0, k0, i1, j1, k1)
    return sch, i1


@exercise("1. your own intrinsic", hint=[
          "an intrinsic has two halves: a description of what it computes (here an 8 x 8 "
          "x 8 matmul) and an implementation the hardware runs, which must compute the "
          "same",
          "te.create_prim_func makes the description; a tir.Schedule of the same makes "
          "the implementation (reorder, unroll, vectorize); tir.TensorIntrin.register "
          "joins the two under a name"])
def check_own_intrinsic(declare):
    name = declare()
    intrin = tir.TensorIntrin.get(name)
    expect("vectorized" in str(intrin.impl), "the implementation should vectorize its "
           "innermost loop (the 8 columns of a row of C)")
    sch_ex, i1_ex = tiled_by(matmul_kj(32), 8)
    sch_ex.tensorize(i1_ex, name)
    rng_ex = np.random.default_rng(5)
    a_ex, b_ex = (rng_ex.random((32, 32), dtype="float32") for _ in range(2))
    c_ex = np.zeros((32, 32), "float32")
    mlc.build(sch_ex.mod)(a_ex, b_ex, c_ex)
    expect(np.allclose(c_ex, a_ex @ b_ex, rtol=1e-4), "the tensorized matmul is not A @ B")
    too_big, too_big_i1 = tiled_by(matmul_kj(32), 16)
    try:
        too_big.tensorize(too_big_i1, name)
        refused = False
    except ScheduleError:
        refused = True
    expect(refused, "a 16 x 16 x 16 tile was tensorized onto your intrinsic: it should "
           "describe an 8 x 8 x 8 tile only")


@exercise("2. the zero point", hint=[
          "the instruction multiplies unsigned bytes: the stored value is x shifted by "
          "128, so the sum it computes has an extra term that depends only on w",
          "expand sum((x + 128) * w) into two sums"])
def check_zero_point(zero_point_terms):
    rng_ex = np.random.default_rng(6)
    for _ in range(3):
        x_s8 = rng_ex.integers(-127, 128, 4)
        w_s8 = rng_ex.integers(-128, 128, 4)
        summed, subtracted = zero_point_terms(x_s8.tolist(), w_s8.tolist())
        xe = graph.var("xe", (1, 4), "uint8")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the portable fallback's notice
            m_ex = graph.build(graph.optimize(
                graph.Graph([xe], [graph.qnn.dense(xe, w_s8.astype("int8")[None, :])])))
        got = int(m_ex(xe=(x_s8 + 128).astype("uint8")[None, :])[0][0, 0])
        expect(summed == int(((x_s8 + 128) * w_s8).sum()),
               f"for x = {x_s8.tolist()}, w = {w_s8.tolist()}: vpdpbusd does not add {summed}")
        expect(summed - subtracted == got == int(x_s8 @ w_s8),
               f"{summed} - {subtracted} is not qnn.dense's result {got}")

# %% [markdown]
# **1. Your own intrinsic.** Declare an `8 x 8 x 8` CPU gemm for the plain layout, `C[i, j] +=
# A[i, k] * B[k, j]`, as `register_cpu_gemm` does, but by hand: a description (a te compute
# made into a PrimFunc), an implementation (a schedule of the same computation: loops in the
# order `i, k, j`, `k` unrolled, `j` vectorized) and `tir.TensorIntrin.register`. Return its
# name. The check tensorizes a `32 x 32` matmul tiled by 8 onto it.

# %%
def declare_gemm_8x8x8():
    ### BEGIN SOLUTION
    a = te.placeholder((8, 8), name="a")
    b = te.placeholder((8, 8), name="b")
    k = te.reduce_axis((0, 8), name="k")
    c = te.compute((8, 8), lambda i, j: te.sum(a[i, k] * b[k, j], axis=k), name="c")
    desc = te.create_prim_func([a, b, c])
    sch = tir.Schedule(te.create_prim_func([a, b, c]))
    i, j, r = sch.get_loops(sch.get_block("c"))
    sch.reorder(i, r, j)
    sch.unroll(r)
    sch.vectorize(j)
    tir.TensorIntrin.register("my_gemm_8x8x8", desc, sch.mod, override=True)
    return "my_gemm_8x8x8"
    ### END SOLUTION

check_own_intrinsic(declare_gemm_8x8x8)

# %% [markdown]
# **2. The zero point.** A layer's signed activations `x` travel as uint8 `x + 128`, and
# `vpdpbusd` multiplies those bytes by the signed weights `w`. For one output (4 activations,
# 4 weights, as Python lists), return what `vpdpbusd` adds up and what `qnn.dense` must
# subtract to get `sum(x * w)`. Work one out by hand first: `x = [0, 1, -1, 127]`,
# `w = [1, -2, 3, 4]`.

# %%
def zero_point_terms(x, w):
    ### BEGIN SOLUTION
    summed_by_vpdpbusd = sum((xi + 128) * wi for xi, wi in zip(x, w))
    subtracted = 128 * sum(w)
    return summed_by_vpdpbusd, subtracted
    ### END SOLUTION

check_zero_point(zero_point_terms)

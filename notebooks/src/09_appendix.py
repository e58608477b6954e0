# %% [markdown]
# # 09 · Appendix: two side paths of hardware acceleration
#
# Two sections that `09_hardware_acceleration` points to: the lecture's own schedule for a
# TPU-like accelerator, written in the te style (`s[CL].tensorize(yi, vdla.gemm8x8)`), and
# what a quantizer's float-to-int8 conversion must do with a value that has no int8
# (300.0, -1e10, NaN). Each runs on its own; neither is needed for the chapter's exercises.

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
from mlc import te

if get_ipython() is not None:  # in Jupyter, draw figures as pictures: %matplotlib inline
    get_ipython().run_line_magic("matplotlib", "inline")
matplotlib.rcParams["figure.dpi"] = 80
np.random.seed(0)

# %% [markdown]
# **Why:** the te style is how the TVM papers and lectures write schedules, so reading it
# matters beside TensorIR's; and an undefined conversion is the kind of bug a quantized
# model only shows on some machines.
#
# Where this appendix works, on the map of chapter 00 (its levels in blue):

# %% tags=["nbval-ignore-output"]
from mlc.viz.concepts import stack

stack(chapter=9)

# %%
N, T = 64, 16
a, b = np.random.rand(N, N).astype("float32"), np.random.rand(N, N).astype("float32")

# %% [markdown]
# ## The lecture's accelerator, in the te style
# The AI-Systems lecture on deep learning compilers (after the TVM paper) schedules a matmul
# for "VDLA", a TPU-like accelerator with an accumulator buffer and an `8 x 8` matrix
# instruction:
#
# ```python
# CL = s.cache_write(C, vdla.acc_buffer)
# s[CL].tensorize(yi, vdla.gemm8x8)
# ```
#
# ```
# for yo in range(128):
#     for xo in range(128):
#         vdla.fill_zero(CL)
#         for ko in range(128):
#             vdla.fused_gemm8x8_add(CL, AL, BL)
#         vdla.dma_copy2d(C[yo*8:yo*8+8, xo*8:xo*8+8], CL)
# ```
#
# `te.decl_tensor_intrin(c.op, impl, name=...)` declares the instruction from a te compute on
# `8 x 8` placeholders (the lecture's `y = t.compute((8, 8), ...)`); the implementation is a
# schedule of that small computation. The accumulator buffer is a `"local"` write cache.

# %%
def decl_gemm8x8():
    a = te.placeholder((8, 8), name="a")
    b = te.placeholder((8, 8), name="b")
    k = te.reduce_axis((0, 8), name="k")
    c = te.compute((8, 8), lambda y, x: te.sum(a[k, y] * b[k, x], axis=k), name="c")

    def impl(sch):                      # how the "hardware" computes an 8x8x8 tile
        y, x, r = sch.get_loops(sch.get_block("c"))
        sch.reorder(y, r, x)
        sch.unroll(r)
        sch.vectorize(x)

    return te.decl_tensor_intrin(c.op, impl, name="vdla.gemm8x8")

gemm8x8 = decl_gemm8x8()

A = te.placeholder((N, N), name="A")
B = te.placeholder((N, N), name="B")
k = te.reduce_axis((0, N), name="k")
C = te.compute((N, N), lambda y, x: te.sum(A[k, y] * B[k, x], axis=k), name="C")
s = te.create_schedule(C.op)
CL = s.cache_write(C, "local")            # the accumulator buffer
y, x = C.op.axis
yo, yi = s[C].split(y, factor=8)
xo, xi = s[C].split(x, factor=8)
s[C].reorder(yo, xo, yi, xi)
s[CL].compute_at(s[C], xo)                # one 8x8 accumulator tile per (yo, xo)
yc, xc = CL.op.axis
ko, ki = s[CL].split(CL.op.reduce_axis[0], factor=8)
s[CL].reorder(ko, yc, xc, ki)
s[CL].tensorize(yc, gemm8x8)              # the lecture's line
print(mlc.lower(s, [A, B, C]))

# %% [markdown]
# Read it against the lecture's pseudo-code: per `(yo, xo)` tile (the loops `ax0_0`, `ax1_0`
# of the printout), zero the 64-float accumulator `C_local` (`fill_zero`: the `if k_0 == 0`
# part), then for each `k_0` the unrolled, vectorized 8x8x8 update
# (`fused_gemm8x8_add`), then copy the tile out (`dma_copy2d`).

# %%
f_vdla = mlc.build(s, [A, B, C])
c2 = np.zeros((N, N), "float32")
f_vdla(a, b, c2)
np.testing.assert_allclose(c2, a.T @ b, rtol=1e-4)
print("vdla-style schedule matches numpy")

# %% [markdown]
# ### What 300.0 becomes in int8
# A quantizer ends with a conversion from float to a small integer type, and some floats have
# no int8 value: 300.0, -1e10, NaN. C leaves that conversion *undefined* (LLVM's `fptosi`
# gives "poison": the optimiser may assume it never happens), and numpy's answer depends on
# the machine it runs on, with only a `RuntimeWarning: invalid value encountered in cast`.
# mlc gives it one meaning, the one GPUs' conversion instructions have: truncate toward zero,
# past either end of the range take that end, NaN becomes 0. The compiled code, the C and
# CUDA sources, the GPU simulator and the constant folder all agree on it.

# %% tags=["nbval-ignore-output"]
xs = np.array([2.7, -2.7, 127.9, 300.0, -300.0, np.nan, np.inf], np.float32)
Xf = te.placeholder((len(xs),), name="Xf")
Q8 = te.compute(Xf.shape, lambda i: Xf[i].astype("int8"), name="Q8")
to_int8 = mlc.build(te.create_schedule(Q8.op), [Xf, Q8])
q8 = np.zeros(len(xs), np.int8)
to_int8(xs, q8)
with np.errstate(invalid="ignore"):
    numpy_q8 = xs.astype(np.int8)
print("float:", xs)
print("mlc:  ", q8.tolist())
print("numpy:", numpy_q8.tolist(), "(this machine's; another may differ)")
assert q8.tolist() == [2, -2, 127, 127, -128, 0, 127]

# %% [markdown]
# Saturation is what a quantizer wants at the ends, but truncation is not the rounding it
# wants in the middle (2.7 should become 3): `qnn.quantize` computes
# `clip(round(x / scale) + zero_point, lo, hi)` and only then converts, so every value it
# converts is already an integer in range.

# %% [markdown]
# > **What to remember**
# > * `s[CL].tensorize(yi, intrin)` in the te style and `sch.tensorize(block, name)` in
# >   TensorIR make the same match against the same description.
# > * A float with no int8 value must be given one meaning by the compiler (mlc: truncate
# >   toward zero, saturate at the ends, NaN to 0); a quantizer rounds and clips before it
# >   converts, so it never meets the case.

# %% [markdown]
# # 01 · Tensor expressions
#
# A machine-learning compiler starts from *what* to compute, written without saying *how*.
# TVM (after Halide) calls this a **tensor expression**: each output element is a formula of
# input elements. `mlc.te` keeps TVM's names: `te.placeholder`, `te.compute`,
# `te.reduce_axis`, `te.sum`, `te.scan`. Every expression becomes a **PrimFunc**, a loop
# program of named *blocks*, that we can print, draw, run and later transform.
#
# **You will:** declare element-wise ops, reductions, symbolic shapes, a convolution and a
# scan (cumsum); read the loop program each one becomes; check it against numpy.

# %%
import mlc  # first: a folder named "mlc" where Jupyter started would hide the package

if not hasattr(mlc, "build"):
    raise ImportError(f"'import mlc' found the folder {list(mlc.__path__)[0]}, not the mlc "
                      "package: start Jupyter from another folder (`make lab` in the "
                      "checkout does), or rename that folder")

import matplotlib
import numpy as np

import mlc
from mlc import te, tir, viz
from mlc.testing.exercises import exercise, expect, hint  # noqa: F401 (hint("1") asks for a hint)

matplotlib.rcParams["figure.dpi"] = 80

np.random.seed(0)

# %% [markdown]
# **Why:** a compiler can only optimize what it can see. A tensor expression states what each
# output element is and nothing about loops, so every later level is free to choose the loops;
# this chapter writes the programs the rest of the course transforms.
#
# Where this chapter works, on the map of chapter 00 (its levels in blue):

# %% tags=["nbval-ignore-output"]
from mlc.viz.concepts import stack

stack(chapter=1)

# %% [markdown]
# ## Element-wise: vector add
# `te.compute(shape, fn)` says: element `i` of `C` is `fn(i)`. Nothing runs yet; `C` is a
# description. `te.create_prim_func` turns the description into a loop program.

# %%
n = 1024
A = te.placeholder((n,), name="A")
B = te.placeholder((n,), name="B")
C = te.compute((n,), lambda i: A[i] + B[i], name="C")
func = te.create_prim_func([A, B, C])
func

# %% [markdown]
# The block `C` has one **spatial** iteration variable `vi` bound to the loop `i`, and
# declares what it reads and writes. Building it gives a native function that takes numpy
# arrays; outputs are written in place.

# %%
f = mlc.build(func)
a, b = np.random.rand(n).astype("float32"), np.random.rand(n).astype("float32")
c = np.zeros(n, "float32")
f(a, b, c)
np.testing.assert_allclose(c, a + b)
print("max error:", np.abs(c - (a + b)).max())

# %% [markdown]
# ## Reductions and symbolic shapes: `C = dot(A, B.T)`
# The first tensor expression of Tianqi Chen's TVM lecture (UW CSE 599W, "Automatic Code
# Generation"). A reduction needs a **reduce axis**: `k` ranges over `h`, and
# `te.sum(..., axis=k)` adds over it. Sizes may be symbolic (`te.var`): one kernel for every
# `m, n, h`, bound from the arrays' shapes at call time.

# %%
m, n, h = te.var("m"), te.var("n"), te.var("h")
A = te.placeholder((m, h), name="A")
B = te.placeholder((n, h), name="B")
k = te.reduce_axis((0, h), name="k")
C = te.compute((m, n), lambda i, j: te.sum(A[i, k] * B[j, k], axis=k), name="C")
matmul_t = te.create_prim_func([A, B, C])
print(matmul_t)

# %% [markdown]
# The block now has a **reduce** variable `vk` and an `init()` that zeroes `C[vi, vj]`
# before the first step of the sum. The loop nest as a tree: loops (blue boxes), the block
# (grey), and the buffers (yellow): a blue arrow from each buffer the block reads, a red
# arrow to each buffer it writes.

# %% tags=["nbval-ignore-output"]
viz.loop_tree(matmul_t)

# %%
f = mlc.build(matmul_t)
for shape in [(3, 5, 7), (16, 8, 32)]:
    mm, nn, hh = shape
    a = np.random.rand(mm, hh).astype("float32")
    b = np.random.rand(nn, hh).astype("float32")
    c = np.zeros((mm, nn), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b.T, rtol=1e-5)
    print(shape, "ok")

# %% [markdown]
# ## Tensor expressions are expressive
# The same lecture shows that an affine layer, a convolution and ReLU are each a line or two
# of tensor expression. Here they are, small.

# %%
batch, d_in, d_out = 4, 16, 8
data = te.placeholder((batch, d_in), name="data")
w = te.placeholder((d_out, d_in), name="w")
bias = te.placeholder((d_out,), name="bias")
kk = te.reduce_axis((0, d_in), name="kk")
dense = te.compute((batch, d_out), lambda i, j: te.sum(data[i, kk] * w[j, kk], axis=kk),
                   name="dense")
affine = te.compute((batch, d_out), lambda i, j: dense[i, j] + bias[j], name="affine")
relu = te.compute((batch, d_out), lambda i, j: te.max(affine[i, j], 0.0), name="relu")
print(te.create_prim_func([data, w, bias, relu]))

# %%
c_out, c_in, size, ksz = 2, 3, 6, 3
img = te.placeholder((c_in, size + ksz - 1, size + ksz - 1), name="img")
wt = te.placeholder((c_out, c_in, ksz, ksz), name="wt")
kc = te.reduce_axis((0, c_in), name="kc")
kx = te.reduce_axis((0, ksz), name="kx")
ky = te.reduce_axis((0, ksz), name="ky")
conv = te.compute(
    (c_out, size, size),
    lambda o, x, y: te.sum(img[kc, x + kx, y + ky] * wt[o, kc, kx, ky], axis=[kc, kx, ky]),
    name="conv",
)
f_conv = mlc.build(te.create_prim_func([img, wt, conv]))
x_np = np.random.rand(c_in, size + ksz - 1, size + ksz - 1).astype("float32")
w_np = np.random.rand(c_out, c_in, ksz, ksz).astype("float32")
out = np.zeros((c_out, size, size), "float32")
f_conv(x_np, w_np, out)
ref = np.zeros_like(out)
for dx in range(ksz):
    for dy in range(ksz):
        ref += np.einsum("cxy,oc->oxy", x_np[:, dx:dx + size, dy:dy + size], w_np[:, :, dx, dy])
np.testing.assert_allclose(out, ref, rtol=1e-5)
print("conv matches numpy")

# %% [markdown]
# `te.if_then_else(cond, a, b)` picks one of two values per element: here zero padding as a
# formula, with no zero-filled buffer to fill first and no copy of `X` into it. (Inlined into
# its consumer, as notebook 02's `compute_inline` does, the padded array is never stored at
# all.)

# %%
nn_ = 8
X = te.placeholder((nn_,), name="X")
padded = te.compute((nn_ + 2,), lambda i: te.if_then_else(
    te.all(i >= 1, i < nn_ + 1), X[i - 1], 0.0), name="padded")
f_pad = mlc.build(te.create_prim_func([X, padded]))
xs = np.arange(nn_, dtype="float32")
ys = np.zeros(nn_ + 2, "float32")
f_pad(xs, ys)
ys

# %% [markdown]
# ## A symbolic loop: cumsum with `te.scan`
# The CSE 599W lecture's last example: a scan carries a *state* along the first axis.
# `s_init` is row 0 and `s_update` row `t` from row `t - 1`.

# %%
m, n = te.var("m"), te.var("n")
X = te.placeholder((m, n), name="X")
s_state = te.placeholder((m, n))
s_init = te.compute((1, n), lambda _, i: X[0, i])
s_update = te.compute((m, n), lambda t, i: s_state[t - 1, i] + X[t, i])
Y = te.scan(s_init, s_update, s_state, inputs=[X])
cumsum = te.create_prim_func([X, Y])
print(cumsum)

# %%
f_cumsum = mlc.build(cumsum)
x = np.random.rand(5, 3).astype("float32")
y = np.zeros_like(x)
f_cumsum(x, y)
np.testing.assert_allclose(y, np.cumsum(x, axis=0), rtol=1e-5)
y.round(3)

# %% [markdown]
# ## Calling out: `te.extern`
# Some stages are better left to a library. `te.extern(shape, inputs, fcompute)` makes a
# stage whose body is a *call*: `fcompute(ins, outs)` gets the buffers of the inputs and of
# the output and returns the call. `tir.call_packed(name, ...)` calls a **packed
# function**, a Python function registered by name; mlc ships
# `"tvm.contrib.cblas.matmul"` (numpy's BLAS), so TVM's "External Tensor Functions"
# tutorial runs with only the module names changed. The bias add after it is an ordinary
# `te.compute`, and the bias itself a **scalar parameter**: `te.var("bias", dtype="float32")`
# in the build's argument list, called with a plain Python number.

# %%
n, l, m = 256, 128, 64
A = te.placeholder((n, l), name="A")
B = te.placeholder((l, m), name="B")
bias = te.var("bias", dtype="float32")
C = te.extern(
    (n, m),
    [A, B],
    lambda ins, outs: tir.call_packed(
        "tvm.contrib.cblas.matmul", ins[0], ins[1], outs[0], False, False
    ),
    name="C",
)
D = te.compute(C.shape, lambda i, j: C[i, j] + bias, name="D")
te.create_prim_func([A, B, D, bias])

# %% [markdown]
# The extern stage is one block with no loops: it reads `A` and `B` whole and writes `C`
# whole. It cannot be moved into another stage's loop (`compute_at` on it raises a
# `ScheduleError` saying it is opaque), but the stages around it schedule as usual: here
# `D`'s columns are split by 8 and vectorized.

# %%
s = te.create_schedule(D.op)
try:
    s[C].compute_at(s[D], D.op.axis[0])
except mlc.errors.ScheduleError as err:
    print("ScheduleError:", str(err).split(" and ")[0])
s[D].vectorize(s[D].split(D.op.axis[1], factor=8)[1])
f_mm = mlc.build(s, [A, B, D, bias])
a, b = (np.random.rand(*shape).astype("float32") for shape in ((n, l), (l, m)))
d = np.zeros((n, m), "float32")
f_mm(a, b, d, 10.0)
np.testing.assert_allclose(d, a @ b + 10.0, rtol=1e-4)
print("D matches a @ b + 10:", np.allclose(d, a @ b + 10.0, rtol=1e-4))
try:
    f_mm(a, b, d, "ten")
except mlc.errors.MLCError as err:
    print(type(err).__name__ + ":", err)

# %% [markdown]
# Your own packed function: `mlc.register_func(name)` registers a Python function. The
# compiled code calls it with numpy arrays that *are* the buffers (no copy), so it writes
# its output in place with `y[:] = ...`. An exception inside it comes back as a
# `PackedFuncError` naming the function.

# %%
@mlc.register_func("tvm.contrib.my_tvm_addone")
def my_tvm_addone(x, y):
    print("my_tvm_addone got", type(x).__name__, x.shape, x.dtype)
    y[:] = x + 1


A1 = te.placeholder((8,), name="A")
B1 = te.extern(
    A1.shape,
    [A1],
    lambda ins, outs: tir.call_packed("tvm.contrib.my_tvm_addone", ins[0], outs[0]),
    name="B",
)
f_add = mlc.build(te.create_schedule(B1.op), [A1, B1])
x = np.arange(8, dtype="float32")
y = np.zeros(8, "float32")
f_add(x, y)
np.testing.assert_allclose(y, x + 1)
y

# %%
@mlc.register_func("tvm.contrib.my_broken")
def my_broken(x, y):
    raise ValueError("this function always fails")


B2 = te.extern(A1.shape, [A1], lambda ins, outs: tir.call_packed("tvm.contrib.my_broken",
                                                                 ins[0], outs[0]), name="B")
try:
    mlc.build(te.create_schedule(B2.op), [A1, B2])(x, y)
except mlc.errors.PackedFuncError as err:
    print("PackedFuncError:", err)

# %% [markdown]
# A C function is called by its symbol: `tir.call_pure_extern(dtype, "expf", x)` calls
# libm's `expf` (the `f` is the float32 version) element by element, inside the compiled
# loop.

# %%
A2 = te.placeholder((5,), name="A")
E2 = te.compute(A2.shape, lambda i: tir.call_pure_extern("float32", "expf", A2[i]), name="E")
f_exp = mlc.build(te.create_schedule(E2.op), [A2, E2])
x = np.linspace(-2, 2, 5).astype("float32")
y = np.zeros(5, "float32")
f_exp(x, y)
np.testing.assert_allclose(y, np.exp(x), rtol=1e-6)
print("expf:", y.round(4))
print("np.exp:", np.exp(x).round(4))

# %% [markdown]
# > **What to remember**
# > * `te.compute(shape, fn)` says what each output element is; `te.reduce_axis` plus
# >   `te.sum`/`te.max` reduce; sizes may be symbolic (`te.var`).
# > * `te.create_prim_func` turns the description into a loop program of blocks; `mlc.build`
# >   compiles it, and numpy is the answer key.
# > * Nothing in a tensor expression says how to loop: that is the schedule's job (chapter
# >   02).

# %% [markdown]
# ## Exercises
# Each exercise is a function to complete: replace `raise NotImplementedError()` with your
# code and run the check under it. A check prints ✓, or ✗ with what is wrong
# (`hint("1")` gives a hint for exercise 1, the idea first, when you want one).
# Run the next cell first: it defines the checks (read it when you are stuck; it says
# exactly what is tested). The exercises need nothing from the cells above but the imports.

# %%
rng = np.random.default_rng(1)

def run_te(out, inputs, arrays):
    """Build `out` (a te tensor computed from `inputs`), run it on `arrays`, return it."""
    expect(isinstance(out, te.Tensor),
           f"return the output tensor that te.compute made, not {type(out).__name__}")
    result = np.zeros(tuple(int(tir.simplify(d)) for d in out.shape), out.dtype)
    mlc.build(te.create_prim_func([*inputs, out]))(*arrays, result)
    return result

@exercise("1. multiply-add", hint=[
          "every output element depends only on the three input elements at the same "
          "position: one formula per pair of indices",
          "one te.compute over A's shape; its lambda receives the indices"])
def check_multiply_add(multiply_add):
    A, B, C = (te.placeholder((3, 5), name=nm) for nm in "ABC")
    a, b, c = (rng.standard_normal((3, 5)).astype("float32") for _ in range(3))
    D = multiply_add(A, B, C)
    d = run_te(D, [A, B, C], [a, b, c])
    expect(d.shape == (3, 5), f"D should have A's shape (3, 5), not {d.shape}")
    expect(np.allclose(d, a * b + c, atol=1e-5), "D[i, j] should be A[i, j] * B[i, j] + C[i, j]")

@exercise("2. row max", hint=[
          "R[i] looks at a whole row of A: one index runs along the row, and its elements "
          "are combined by keeping the largest",
          "a reduce axis over A's columns, and te.max: the reduction that keeps the "
          "largest, as te.sum keeps the total"])
def check_row_max(row_max):
    A = te.placeholder((3, 7), name="A")
    a = -rng.random((3, 7)).astype("float32") - 0.5  # all negative: a max that starts at 0 is wrong
    r = run_te(row_max(A), [A], [a])
    expect(r.shape == (3,), f"R has one element per row of A: shape (3,), not {r.shape}")
    expect(not np.allclose(r, 0), "every row here is negative, so no maximum is 0: reduce with "
           "te.max over a reduce axis rather than comparing with 0.0")
    expect(np.allclose(r, a.max(axis=1)), "R[i] should be the largest element of row i")

@exercise("3. zero padding", hint=[
          "the output is larger than X by p on every side; an output element inside the "
          "border copies the X element p rows up and p columns left, every other one is "
          "zero",
          "te.if_then_else chooses between two values; te.all joins the four comparisons "
          "that say 'inside'"])
def check_pad2d(pad2d):
    X = te.placeholder((4, 6), name="X")
    x = rng.random((4, 6)).astype("float32") + 1.0
    y = run_te(pad2d(X, 2), [X], [x])
    expect(y.shape == (8, 10), f"padding (4, 6) by 2 on every side gives (8, 10), not {y.shape}")
    expect(np.allclose(y, np.pad(x, 2)), "the middle should be X and the border 2 zeros wide")

# %% [markdown]
# **1.** `multiply_add(A, B, C)` returns `D` with `D[i, j] = A[i, j] * B[i, j] + C[i, j]`
# (the three inputs have one shape).

# %%
def multiply_add(A, B, C):
    ### BEGIN SOLUTION
    return te.compute(A.shape, lambda i, j: A[i, j] * B[i, j] + C[i, j], name="D")
    ### END SOLUTION

check_multiply_add(multiply_add)

# %% [markdown]
# **2.** `row_max(A)` returns `R` with `R[i] = max_k A[i, k]`: a reduction like the sum in
# `dot`, with `te.max` as the reducer.

# %%
def row_max(A):
    ### BEGIN SOLUTION
    k = te.reduce_axis((0, A.shape[1]), name="k")
    return te.compute((A.shape[0],), lambda i: te.max(A[i, k], axis=k), name="R")
    ### END SOLUTION

check_row_max(row_max)

# %% [markdown]
# **3.** `pad2d(X, p)` returns `X` (of shape `(H, W)`) surrounded by a border of `p` zeros
# on every side, with one `te.if_then_else` (no zero-filled buffer), as in the padding
# example above.

# %%
def pad2d(X, p):
    H, W = X.shape
    ### BEGIN SOLUTION
    inside = lambda i, j: te.all(i >= p, i < H + p, j >= p, j < W + p)  # noqa: E731
    return te.compute((H + 2 * p, W + 2 * p),
                      lambda i, j: te.if_then_else(inside(i, j), X[i - p, j - p], 0.0),
                      name="padded")
    ### END SOLUTION

check_pad2d(pad2d)

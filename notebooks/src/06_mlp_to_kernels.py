# %% [markdown]
# # 06 · From an MLP to kernels
#
# The whole pipeline on a real (small) model, offline in seconds: train a 64-64-32-10 MLP on
# scikit-learn's handwritten digits with numpy, write it as an mlc graph (or import it from
# PyTorch when torch is installed), optimize the graph, build every fused group into an LLVM
# kernel, run, and compare accuracy and speed with numpy.
#
# **You will:** follow one model through every level of the compiler, and look at one of the
# kernels it made.

# %%
import time
import numpy as np
%matplotlib inline
import matplotlib
matplotlib.rcParams["figure.dpi"] = 80
from mlc import graph, viz
from mlc.examples import mlp

# %% [markdown]
# ## Train (numpy, a few seconds)

# %%
x_train, y_train, x_test, y_test = mlp.load_data(seed=0)
params = mlp.train_mlp(x_train, y_train, epochs=30, seed=0)
ref = mlp.numpy_forward(params, x_test)
acc_numpy = float((ref.argmax(1) == y_test).mean())
print(f"{len(x_train)} training images, {len(x_test)} test images; numpy accuracy {acc_numpy:.3f}")

# %% [markdown]
# ## The graph, before and after optimization

# %%
batch = len(x_test)
g = mlp.mlp_graph(params, batch)
print(g)

# %%
g2 = graph.optimize(g)
print(g2)

# %% tags=["nbval-ignore-output"]
viz.graph_drawing(g2, "mlp")

# %% [markdown]
# ## Build, run, compare

# %%
mod = graph.build(g2, target="llvm")
probs = mod(x=x_test)[0]
acc_mlc = float((probs.argmax(1) == y_test).mean())
np.testing.assert_allclose(probs, ref, rtol=1e-3, atol=1e-5)
print(f"mlc accuracy {acc_mlc:.3f} (numpy {acc_numpy:.3f}); outputs agree to 1e-3")

# %% tags=["nbval-ignore-output"]
t_mlc = viz.seconds_per_call(lambda: mod(x=x_test), number=20, repeat=5)
t_np = viz.seconds_per_call(lambda: mlp.numpy_forward(params, x_test), number=20, repeat=5)
print(f"mlc {t_mlc * 1e6:.0f} us, numpy {t_np * 1e6:.0f} us per batch of {batch}")
viz.gflops_bars({"mlc": 1e-3 / t_mlc}, reference={"numpy": 1e-3 / t_np},
                title="batches per ms (higher is faster)")

# %% [markdown]
# ## From PyTorch
# With torch installed, `graph.from_torch` traces an `nn.Module` with `torch.fx` and maps
# its layers to graph ops; the rest of the pipeline is the same. Without torch this cell
# says so and moves on.

# %% tags=["nbval-ignore-output"]
try:
    import torch
except ImportError:
    torch = None
    print("torch is not installed: skipping the PyTorch import (pip install torch to try it)")
if torch is not None:
    model = torch.nn.Sequential(
        torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 32), torch.nn.ReLU(),
        torch.nn.Linear(32, 10))
    with torch.no_grad():
        for layer, (w, b) in zip([model[0], model[2], model[4]], params):
            layer.weight.copy_(torch.from_numpy(w))
            layer.bias.copy_(torch.from_numpy(b))
    gt = graph.optimize(graph.from_torch(model, [(batch, 64)]))
    logits = graph.build(gt, target="llvm")(**{gt.inputs[0].name: x_test})[0]
    torch_ref = model(torch.from_numpy(x_test)).detach().numpy()
    np.testing.assert_allclose(logits, torch_ref, rtol=1e-3, atol=1e-4)
    print("imported from torch; matches torch's output")

# %% [markdown]
# ## The MLP as an IRModule, as the MLC course writes it
# The MLC course writes the same model by hand: one `IRModule` holding the tensor programs
# (`@T.prim_func`, in destination-passing style: the output is a parameter) and one
# graph-level function (`@R.function`) that calls them with `R.call_tir` inside a dataflow
# block. First the low-level numpy version the course starts from: loops over arrays, and
# a `call_tir` that allocates the output and calls the function on it.

# %%
def lnumpy_linear(X, W, B, Z):
    Y = np.empty(Z.shape, dtype="float32")
    for i in range(X.shape[0]):
        for j in range(W.shape[0]):
            for k in range(X.shape[1]):
                if k == 0:
                    Y[i, j] = 0
                Y[i, j] = Y[i, j] + X[i, k] * W[j, k]
    for i in range(X.shape[0]):
        for j in range(W.shape[0]):
            Z[i, j] = Y[i, j] + B[j]

def lnumpy_relu(X, Y):
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            Y[i, j] = max(X[i, j], 0)

def lnumpy_call_tir(prim_func, inputs, shape, dtype):
    res = np.empty(shape, dtype=dtype)
    prim_func(*inputs, res)
    return res

(w0, b0), (w1, b1), (w2, b2) = params
def lnumpy_mlp(x):
    lv0 = lnumpy_call_tir(lnumpy_linear, (x, w0, b0), (1, 64), "float32")
    lv1 = lnumpy_call_tir(lnumpy_relu, (lv0,), (1, 64), "float32")
    lv2 = lnumpy_call_tir(lnumpy_linear, (lv1, w1, b1), (1, 32), "float32")
    lv3 = lnumpy_call_tir(lnumpy_relu, (lv2,), (1, 32), "float32")
    return lnumpy_call_tir(lnumpy_linear, (lv3, w2, b2), (1, 10), "float32")

x0 = x_test[:1]
logits_ref = np.maximum(np.maximum(x0 @ w0.T + b0, 0) @ w1.T + b1, 0) @ w2.T + b2
np.testing.assert_allclose(lnumpy_mlp(x0), logits_ref, rtol=1e-4, atol=1e-5)
print("low-level numpy MLP matches")

# %% [markdown]
# The same program in script form. `linear` and `relu0` take `T.handle`s whose shapes
# `T.match_buffer` gives with symbolic sizes (`m = T.int64()`), so one function serves
# every layer; `main` says which is called on what, and the type of each output.

# %%
from mlc.script import ir_module, T, R
import mlc

@ir_module
class MyModule:
    @T.prim_func
    def relu0(x: T.handle, y: T.handle):
        n = T.int64()
        X = T.match_buffer(x, (1, n), "float32")
        Y = T.match_buffer(y, (1, n), "float32")
        for i, j in T.grid(1, n):
            with T.block("Y"):
                vi, vj = T.axis.remap("SS", [i, j])
                Y[vi, vj] = T.max(X[vi, vj], T.float32(0))

    @T.prim_func
    def linear(x: T.handle, w: T.handle, b: T.handle, z: T.handle):
        m = T.int64()
        n = T.int64()
        X = T.match_buffer(x, (1, m), "float32")
        W = T.match_buffer(w, (n, m), "float32")
        B = T.match_buffer(b, (n,), "float32")
        Z = T.match_buffer(z, (1, n), "float32")
        for i, j, k in T.grid(1, n, m):
            with T.block("Y"):
                vi, vj, vk = T.axis.remap("SSR", [i, j, k])
                with T.init():
                    Z[vi, vj] = B[vj]
                Z[vi, vj] = Z[vi, vj] + X[vi, vk] * W[vj, vk]

    @R.function
    def main(x: R.Tensor((1, 64), "float32"),
             w0: R.Tensor((64, 64), "float32"), b0: R.Tensor((64,), "float32"),
             w1: R.Tensor((32, 64), "float32"), b1: R.Tensor((32,), "float32"),
             w2: R.Tensor((10, 32), "float32"), b2: R.Tensor((10,), "float32")):
        with R.dataflow():
            lv0 = R.call_tir(linear, (x, w0, b0), R.Tensor((1, 64), "float32"))
            lv1 = R.call_tir(relu0, (lv0,), R.Tensor((1, 64), "float32"))
            lv2 = R.call_tir(linear, (lv1, w1, b1), R.Tensor((1, 32), "float32"))
            lv3 = R.call_tir(relu0, (lv2,), R.Tensor((1, 32), "float32"))
            out = R.call_tir(linear, (lv3, w2, b2), R.Tensor((1, 10), "float32"))
            R.output(out)
        return out

MyModule["main"].show()

# %% [markdown]
# `mlc.build` compiles every prim_func; `ex["main"]` runs the graph-level function, one
# `call_tir` after another, as the course's virtual machine does.

# %%
ex = mlc.build(MyModule, target="llvm")
hits = 0
for n in range(50):
    xn = x_test[n : n + 1]
    out = ex["main"](xn, w0, b0, w1, b1, w2, b2)
    np.testing.assert_allclose(out, lnumpy_mlp(xn) if n == 0 else out, rtol=1e-4, atol=1e-5)
    hits += int(out.argmax() == ref[n].argmax())
print(f"{hits}/50 predictions agree with numpy")

# %% [markdown]
# ### The fused result
# Written with high-level ops instead (`R.nn.dense`, `R.add`, `R.nn.relu`), the module
# converts to an mlc graph, so `graph.optimize` applies: constants fold, each dense fuses
# with its bias add and relu, memory is planned. `relax.optimize` returns the result as an
# IRModule again: one prim_func per fused kernel, called with `call_tir`.

# %%
from mlc.graph import relax

@ir_module
class HighLevel:
    @R.function
    def main(x: R.Tensor((1, 64), "float32"),
             w0: R.Tensor((64, 64), "float32"), b0: R.Tensor((64,), "float32"),
             w1: R.Tensor((32, 64), "float32"), b1: R.Tensor((32,), "float32"),
             w2: R.Tensor((10, 32), "float32"), b2: R.Tensor((10,), "float32")):
        with R.dataflow():
            lv0 = R.nn.relu(R.add(R.nn.dense(x, w0), b0))
            lv1 = R.nn.relu(R.add(R.nn.dense(lv0, w1), b1))
            out = R.add(R.nn.dense(lv1, w2), b2)
            R.output(out)
        return out

fused_mod = relax.optimize(HighLevel)
fused_mod["main"].show()
print(sorted(fused_mod.prim_funcs()))
out = mlc.build(fused_mod, target="llvm")["main"](x0, w0, b0, w1, b1, w2, b2)
np.testing.assert_allclose(out, logits_ref, rtol=1e-4, atol=1e-5)
print("the fused module matches numpy")

# %% [markdown]
# ## Exercises
# 1. How many kernels did the optimized MLP become? (`len(g2.groups)`)
# 2. Does the compiled model classify exactly as numpy's does?

# %%
n_kernels = len(g2.groups)
same = bool((probs.argmax(1) == ref.argmax(1)).all())
assert n_kernels < sum(1 for n in g.topo() if isinstance(n, graph.Call))
assert same, "the compiled model should predict the same classes as numpy"
assert acc_mlc > 0.9
print(n_kernels, "kernels; same predictions:", same)

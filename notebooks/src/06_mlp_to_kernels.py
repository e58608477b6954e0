# %% [markdown]
# # 06 · From an MLP to kernels
#
# The whole pipeline on a real (small) model, offline in seconds: train a 64-64-32-10 MLP on
# scikit-learn's handwritten digits with numpy, write it as an mlc graph (or import it from
# PyTorch when torch is installed), optimize the graph, build every fused group into an LLVM
# kernel, run, and compare accuracy and speed with numpy.
#
# **You will:** follow one model through every level of the compiler, read one of the
# kernels it made line by line, and write the graph of the model yourself.

# %%
import mlc  # first: a folder named "mlc" where Jupyter started would hide the package

if not hasattr(mlc, "build"):
    raise ImportError(f"'import mlc' found the folder {list(mlc.__path__)[0]}, not the mlc "
                      "package: start Jupyter from another folder (`make lab` in the "
                      "checkout does), or rename that folder")

import matplotlib
import numpy as np
from IPython import get_ipython

from mlc import graph, viz
from mlc.examples import mlp
from mlc.testing.exercises import exercise, expect, hint  # noqa: F401 (hint("1") asks for a hint)

if get_ipython() is not None:  # in Jupyter, draw figures as pictures: %matplotlib inline
    get_ipython().run_line_magic("matplotlib", "inline")
matplotlib.rcParams["figure.dpi"] = 80

# %% [markdown]
# **Why:** each level so far was shown alone. Here one real model goes through all of them, so
# you can see where its time and its bytes go, and check the result against numpy and PyTorch.
#
# Where this chapter works, on the map of chapter 00 (its levels in blue):

# %% tags=["nbval-ignore-output"]
from mlc.viz.concepts import stack

stack(chapter=6)

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

# %% [markdown]
# What changed (notebook 05 shows each pass on a smaller graph): every `nn.dense` became
# `nn.dense_pack` with its weight stored as `w[j // bn, k, j % bn]`, packed once at compile
# time, so that `bn` output columns read `bn` neighbouring floats (the printout shows each
# packed shape; the last layer, with only 10 outputs, is packed by 10: `(1, 32, 10)`); each
# dense took its bias add (and relu) into its group (3 dense groups), and the softmax is a
# group of its own (the cell below checks both). The memory plan, the last line, lets
# intermediates whose lifetimes do not overlap share a buffer:

# %%
print(g2.memory)
assert [len(grp.nodes) for grp in g2.groups] == [3, 3, 2, 1]  # the four groups above
print(f"{len(g2.groups)} kernels; the plan saves "
      f"{g2.memory.bytes_before - g2.memory.bytes_after} of {g2.memory.bytes_before} bytes")

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

# %% [markdown]
# How fast? The dense layers do `2 * batch * in * out` floating-point operations each; the
# bias, relu and softmax add a few more per output (counted below). The chart shows
# GFLOPS, operations per second, for both (higher is faster), each bar labelled with its
# ratio to numpy.

# %%
dense_flops = sum(2 * batch * w.shape[0] * w.shape[1] for w, _ in params)
# a bias add per output, a relu per hidden output, about 4 per softmax output (max, sub, exp, div)
other_flops = sum(batch * w.shape[0] * (2 if k < len(params) - 1 else 1)
                  for k, (w, _) in enumerate(params)) + 4 * batch * params[-1][0].shape[0]
flops = dense_flops + other_flops
print(f"{flops / 1e6:.2f} MFLOP per batch of {batch}, "
      f"{100 * dense_flops / flops:.0f}% of them in the dense layers")

# %% tags=["nbval-ignore-output"]
t_mlc = viz.seconds_per_call(lambda: mod(x=x_test), number=20, repeat=5)
t_np = viz.seconds_per_call(lambda: mlp.numpy_forward(params, x_test), number=20, repeat=5)
print(f"mlc {t_mlc * 1e6:.0f} us, numpy {t_np * 1e6:.0f} us per batch of {batch}: "
      f"mlc is {t_np / t_mlc:.2f}x numpy's speed")
viz.gflops_bars({"mlc": flops / t_mlc / 1e9}, reference={"numpy": flops / t_np / 1e9},
                title=f"the MLP on a batch of {batch}: GFLOPS (higher is faster)")

# %% [markdown]
# ## One of the kernels it made
# `graph.build` compiled each group into a kernel (and linked the four into one native
# function: `mod.summary()` says so). Each kernel keeps its schedule (the trace of the
# default schedule of `mlc.topi` for its pattern) and its lowered program. The first:

# %%
print(mod.summary())
first = mod.kernels[0]
print(first.schedule.trace)

# %%
print(first.lowered)

# %% [markdown]
# Read it from the outside in (the cell after it checks each point on the text):
# * `i0_0 in range(90)`: the 360 rows in 90 blocks of 4, one after another. The default
#   schedule makes a loop `parallel` only for kernels of 8M multiply-adds or more (waking
#   the threads costs more than a small kernel); this one has 360 × 64 × 64 = 1.5M;
# * `dense_pack = alloc_buffer((256,))`: the accumulators of one 4 × 64 tile, 4 rows by
#   all 64 output columns, 256 floats that LLVM may keep in vector registers (the second
#   cell below counts how many registers of this CPU they take); `decompose_reduction`
#   split off the zeroing loop before them;
# * in the `k` loop, 16 lines: 4 rows × 4 vectors of 16 columns. `broadcast(x[...], 16)`
#   copies one input value into 16 lanes, `w0[ramp(..., 1, 16)]` loads 16 neighbouring
#   weights (neighbours thanks to the packed layout), and each line is one 16-lane
#   multiply-add into its own accumulators: 16 independent chains, so no multiply-add waits
#   for the one before it, and each loaded weight vector serves 4 rows;
# * the last loops are the fused epilogue: bias add and relu (`max(..., broadcast(0.0,
#   16))`) on the accumulators, stored to `relu` 16 floats at a time. The dense output is
#   never stored as a `(360, 64)` tensor: only this 256-float tile of it exists.

# %%
from mlc.topi.schedule import PARALLEL_MIN_WORK

text = str(first.lowered)
k_loop = text.split("for k in range(64):")[1].split("for ")[0]
fmas = [ln for ln in k_loop.splitlines() if "dense_pack[ramp(" in ln]
print(f"{360 * 64 * 64:,} multiply-adds, parallel from {PARALLEL_MIN_WORK:,}; "
      f"{len(fmas)} vector multiply-adds per step of k")
assert "for i0_0 in range(90)" in text and "parallel" not in text
assert 360 * 64 * 64 < PARALLEL_MIN_WORK and "alloc_buffer((256,)" in text
assert len(fmas) == 16 and "broadcast(0.0, 16)" in text
assert len(mod.kernels) == len(g2.groups) and mod.num_native_calls == 1

# %% tags=["nbval-ignore-output"]
from mlc.target.llvm.cpu import host_simd

simd = host_simd()
print(f"this CPU ({simd.isa}): {simd.lanes} fp32 lanes per vector, {simd.registers} vector "
      f"registers; a 16-lane multiply-add is {max(1, 16 // simd.lanes)} instruction(s), and the "
      f"256 accumulators take {256 // simd.lanes} vector registers; it has {simd.registers}"
      + ("" if 256 // simd.lanes < simd.registers else
         " (too few: LLVM keeps some accumulators in L1, a cycle or so away)"))

# %% [markdown]
# ## From PyTorch
# With torch installed, `graph.from_torch` traces an `nn.Module` with `torch.fx` and maps
# its layers to graph ops; the rest of the pipeline is the same. torch.fx records the model
# as a graph of its own: one `call_module` node per layer. The cell prints it beside mlc's
# graph: each `Linear` becomes `nn.dense` + `nn.bias_add`, its weight and bias constants
# named after the layer (`0_weight`, `0_bias`), and each `ReLU` becomes `nn.relu`. Without
# torch this cell says so and moves on.

# %% tags=["nbval-ignore-output"]
try:
    import torch
    import torch.fx
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
    print("torch.fx graph:")
    for node in torch.fx.symbolic_trace(model).graph.nodes:
        layer = type(model.get_submodule(node.target)).__name__ if node.op == "call_module" else ""
        print(f"  {node.op:12s} {node.name:8s} {layer}")
    imported = graph.from_torch(model, [(batch, 64)])
    print("mlc graph:", imported, sep="\n")
    gt = graph.optimize(imported)
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
import mlc
from mlc.script import R, T, ir_module


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
    logits_n = np.maximum(np.maximum(xn @ w0.T + b0, 0) @ w1.T + b1, 0) @ w2.T + b2
    np.testing.assert_allclose(out, logits_n, rtol=1e-4, atol=1e-4)
    hits += int(out.argmax() == ref[n].argmax())
print(f"{hits}/50 predictions agree with numpy")

# %% [markdown]
# ### The fused result
# Written with high-level ops instead (`R.nn.dense`, `R.add`, `R.nn.relu`), the module
# converts to an mlc graph, so `graph.optimize` applies: each dense fuses with its bias add
# and relu, memory is planned. (The weights are parameters here, not constants, so nothing
# is folded or packed: the kernels read `nn.dense`'s layout.) `relax.optimize` returns the result as an
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
# > **What to remember**
# > * A whole model goes graph → fused groups → te → schedule → loops → one native function,
# >   checked against numpy at each step.
# > * Packed weights, fused epilogues and a memory plan come from the graph level; speed comes
# >   from each kernel's schedule.
# > * PyTorch models enter through torch.fx: one converter per layer type.

# %% [markdown]
# ## Exercises
# Complete each function (replace `raise NotImplementedError()`) and run the check under
# it: ✓, or ✗ with what is wrong
# (`hint("1")` gives a hint for exercise 1, the idea first, when you want one). Run the next cell
# first: it defines the
# checks. Nothing from the cells above is needed but the imports.

# %%
rng = np.random.default_rng(10)
sizes = [(64, 64), (32, 64), (10, 32)]
ex_params = [(rng.standard_normal(s).astype("float32") * 0.3,
              rng.standard_normal(s[0]).astype("float32")) for s in sizes]
ex_x = rng.random((8, 64), dtype=np.float32)

def numpy_logits(params, x):
    h = x
    for k, (w, b) in enumerate(params):
        h = h @ w.T + b
        h = np.maximum(h, 0) if k < len(params) - 1 else h
    return h

@exercise("1. the MLP as a graph", hint=[
          "each layer is a dense with its weight, then a bias add, then a relu between "
          "layers (not after the last)",
          "graph.nn.dense, + on graph values, graph.nn.relu, graph.const around each "
          "numpy array, graph.Graph for the whole"])
def check_mlp_graph(my_mlp_graph):
    g_ex = my_mlp_graph(ex_params, 8)
    expect(isinstance(g_ex, graph.Graph), f"return a graph.Graph, not {type(g_ex).__name__}")
    expect(len(g_ex.inputs) == 1 and g_ex.inputs[0].shape == (8, 64),
           "the graph has one input, x, of shape (batch, 64)")
    opt = graph.optimize(g_ex)
    out = graph.build(opt, target="llvm")(**{g_ex.inputs[0].name: ex_x})[0]
    expect(out.shape == (8, 10), f"the output should be the (8, 10) logits, not {out.shape}")
    expect(np.allclose(out, numpy_logits(ex_params, ex_x), rtol=1e-4, atol=1e-4),
           "the logits differ from numpy's (a relu after the last layer? a bias missing?)")
    expect(len(opt.groups) == 3, f"optimized, it should be 3 kernels (one per layer), "
           f"not {len(opt.groups)}")

@exercise("2. bytes between kernels", hint=[
          "a value crosses memory between kernels when one fused group writes it and "
          "another reads it: every group's output, except the graph's own outputs",
          "each group's root node has a type with nbytes; compare the roots with "
          "g.outputs"])
def check_intermediate_bytes(intermediate_bytes):
    g_ex = mlp.mlp_graph(ex_params, 8)
    for level in (0, 2):
        opt = graph.optimize(g_ex, level=level)
        got = intermediate_bytes(opt)
        want = opt.memory.bytes_before
        expect(got == want, f"at level {level} ({len(opt.groups)} kernels) the kernels pass "
               f"{want} bytes to each other, you counted {got}")


@exercise("3. torch.fx to the graph", hint=[
          "torch.fx gives one node per layer call; its first argument is the node of the "
          "layer's input, already converted. A Linear multiplies by its weight (stored "
          "out x in, as the graph's dense wants it) and adds its bias, if it has one; a "
          "ReLU is one op",
          "node_map turns an fx node into the graph value made for it; graph.const wraps "
          "the layer's parameters (detached to numpy); graph.nn.dense, + and graph.nn.relu "
          "build the value; bb.emit returns it"])
def check_fx_map(map_nn_linear, map_nn_relu):
    try:
        import torch
    except ImportError:
        expect(False, "this exercise needs PyTorch (pip install torch); the others do not")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(),
                                torch.nn.Linear(7, 3, bias=False), torch.nn.ReLU(),
                                torch.nn.Linear(3, 2))
    calls = []
    def spy(fn, kind):
        def run(bb, node_map, node, module):
            calls.append(kind)
            return fn(bb, node_map, node, module)
        return run
    g_fx = graph.from_torch(model, [(4, 5)], call_module_map={
        torch.nn.Linear: spy(map_nn_linear, "Linear"), torch.nn.ReLU: spy(map_nn_relu, "ReLU")})
    expect(calls == ["Linear", "ReLU", "Linear", "ReLU", "Linear"],
           f"from_torch called your maps for {calls}, not for the five layers")
    xs = np.random.default_rng(8).standard_normal((4, 5)).astype("float32")
    want = model(torch.from_numpy(xs)).detach().numpy()
    got = graph.evaluate(g_fx, {g_fx.inputs[0].name: xs})[0]
    expect(got.shape == want.shape, f"the graph's output has shape {got.shape}, torch's "
           f"{want.shape}")
    expect(np.allclose(got, want, rtol=1e-4, atol=1e-5), "the graph computes something "
           "else than the torch model (the second Linear has no bias)")

# %% [markdown]
# **1. The MLP as a graph.** Write the graph of a 3-layer MLP yourself: `graph.var` for the
# input, `graph.const` for each weight and bias, `graph.nn.dense`, `+`, `graph.nn.relu`
# after the hidden layers; the output is the logits (no softmax). `params` is a list of
# `(w, b)` with `w` of shape `(out, in)`.

# %%
def my_mlp_graph(params, batch):
    x = graph.var("x", shape=(batch, params[0][0].shape[1]))
    ### BEGIN SOLUTION
    h = x
    for k, (w, b) in enumerate(params):
        h = graph.nn.dense(h, graph.const(w)) + graph.const(b)
        if k < len(params) - 1:
            h = graph.nn.relu(h)
    return graph.Graph([x], [h])
    ### END SOLUTION

check_mlp_graph(my_mlp_graph)

# %% [markdown]
# **2. Bytes between kernels.** Every kernel writes its output to memory, and the next
# reads it back; the graph's own output excepted, those are the intermediates. Count their
# bytes (`node.type.nbytes`) for an optimized graph: fused (level 2) the MLP passes fewer
# than unfused (level 0, one kernel per op). The check compares with what the memory plan
# counted.

# %%
def intermediate_bytes(g):
    ### BEGIN SOLUTION
    return sum(grp.root.type.nbytes for grp in g.groups if grp.root not in g.outputs)
    ### END SOLUTION

check_intermediate_bytes(intermediate_bytes)

# %% [markdown]
# **3. From torch.fx to the graph.** `graph.from_torch` takes, as the MLC course's
# `from_fx` does, a map from layer classes to your converters: `call_module_map={
# torch.nn.Linear: map_nn_linear, torch.nn.ReLU: map_nn_relu}`. Each converter gets the
# builder `bb`, `node_map` (each fx node already converted, to its graph value), the fx
# `node` of the layer call, and the layer itself, and returns the layer's graph value.
# Write the two (a Linear may have no bias).

# %%
def map_nn_linear(bb, node_map, node, linear):
    ### BEGIN SOLUTION
    x = node_map[node.args[0]]
    y = graph.nn.dense(x, graph.const(linear.weight.detach().numpy()))
    if linear.bias is not None:
        y = y + graph.const(linear.bias.detach().numpy())
    return bb.emit(y)
    ### END SOLUTION

def map_nn_relu(bb, node_map, node, relu):
    ### BEGIN SOLUTION
    return bb.emit(graph.nn.relu(node_map[node.args[0]]))
    ### END SOLUTION

check_fx_map(map_nn_linear, map_nn_relu)

# %% [markdown]
# # 05 · Computational graphs and operator fusion
#
# One level up from loops: a network is a **graph** of operators over tensors. Running it one
# operator at a time writes every intermediate to memory and reads it back. A graph compiler
# rewrites the graph first: fold constants, remove dead code, and **fuse** operators, so
# `dense -> add bias -> relu` becomes one kernel that never writes its intermediates to
# memory as whole tensors.
#
# TVM's fusion rule uses each op's **pattern**: ELEMWISE, BROADCAST and INJECTIVE ops fuse
# into chains; an OUT_ELEMWISE_FUSABLE op (dense, conv2d) absorbs the element-wise ops after
# it; a reduction ends a group; OPAQUE ops stand alone.
#
# **You will:** build a graph with the NNVM/Relay call shape of the CSE 599W TVM lecture, draw
# it before and after `graph.optimize`, read what each pass did (packed weights, fused
# groups, the memory plan), measure what fusion saves, weigh the graph approach against
# XLA's and TensorRT's, and write graph rewrites of your own.

# %%
import mlc  # first: a folder named "mlc" where Jupyter started would hide the package

if not hasattr(mlc, "build"):
    raise ImportError(f"'import mlc' found the folder {list(mlc.__path__)[0]}, not the mlc "
                      "package: start Jupyter from another folder (`make lab` in the "
                      "checkout does), or rename that folder")

import matplotlib
import numpy as np

import mlc
from mlc import graph, viz
from mlc.graph import relax
from mlc.graph.op import list_ops
from mlc.script import R, ir_module
from mlc.testing.exercises import exercise, expect, hint  # noqa: F401 (hint("1") asks for a hint)

matplotlib.rcParams["figure.dpi"] = 80

rng = np.random.default_rng(0)

# %% [markdown]
# **Why:** a model is hundreds of small operators, and launching each as its own kernel moves
# every intermediate through memory. The graph level fuses, folds and plans memory before any
# kernel exists.
#
# Where this chapter works, on the map of chapter 00 (its levels in blue):

# %% tags=["nbval-ignore-output"]
from mlc.viz.concepts import stack

stack(chapter=5)

# %%
W1 = rng.standard_normal((32, 64)).astype("float32")
b1 = rng.standard_normal(32).astype("float32")
W2 = rng.standard_normal((10, 32)).astype("float32")
b2 = rng.standard_normal(10).astype("float32")
x = graph.var("x", shape=(16, 64))
h = graph.nn.relu(graph.nn.dense(x, graph.const(W1)) + graph.const(b1))
y = graph.nn.dense(h, graph.const(W2)) + graph.const(b2)
g = graph.Graph([x], [graph.nn.softmax(y)])
print(g)

# %% [markdown]
# Each op has a pattern that decides what it may fuse with:

# %%
for name in ["nn.dense", "add", "nn.relu", "nn.softmax"]:
    try:
        print(f"{name:12s} {graph.get_op(name).pattern.name}")
    except Exception as err:
        print(f"{name:12s} ({type(err).__name__})")

# %% [markdown]
# The graph as written: one box per op.

# %% tags=["nbval-ignore-output"]
viz.graph_drawing(g, "before")

# %% [markdown]
# `graph.optimize` runs the pass list (constant folding, common subexpressions, dead code,
# layout, fusion, memory planning). Fused groups are drawn as dashed clusters: each becomes
# **one kernel**.

# %%
g2 = graph.optimize(g)
print(g2)

# %% tags=["nbval-ignore-output"]
viz.graph_drawing(g2, "after")

# %% [markdown]
# ## What the optimizer did
# **Packed weights.** The dense ops became `nn.dense_pack`, and `W1`, a `(32, 64)`
# constant, became a 3-D one (the printout above; the cell below reads its shape).
# `nn.dense` reads `W[j, k]`; vectorizing over the output column `j` would load floats that
# lie 64 apart. `alter_op_layout` stores the weight as `wp[j // bn, k, j % bn]` (TVM's
# `dense_pack`), so the `bn` outputs of one block read `bn` neighbouring floats, and
# `fold_constant` does that copy once, at compile time. The block `bn` is chosen from the
# number of outputs (the largest of the sizes the pass tries that divides it: `W2`, with
# only 10 outputs, is packed by 10).

#
# The fusion rules on the MLP of chapter 06 (the cells below show them on this chapter's
# graph):

# %% tags=["nbval-ignore-output"]
from mlc.viz import concepts

concepts.fusion_patterns()

# %%
packed = [n for n in g2.topo() if isinstance(n, graph.Call) and n.op.name == "nn.dense_pack"]
wp = packed[0].args[1].value
bn = wp.shape[2]
print("W1", W1.shape, "-> wp", wp.shape, f"(blocks of bn = {bn} outputs)")
assert np.array_equal(wp, W1.reshape(32 // bn, bn, 64).transpose(0, 2, 1))
assert packed[1].args[1].value.shape == (1, 32, 10)  # W2: 10 outputs, one block of 10
print(f"wp[j // {bn}, k, j % {bn}] == W1[j, k] for every j, k")

# %% [markdown]
# **The memory plan.** Kernels run in the order of their groups. The output of a group is
# live from the step that writes it until the last group that reads it; two intermediates
# whose lifetimes do not overlap can share one buffer (the graph's output gets its own: the
# caller keeps it). The last line of the printout says what the plan achieved here:

# %%
def show_plan(gr):
    last_read = {}
    for step, grp in enumerate(gr.groups):
        for a in grp.inputs():
            last_read[a] = step
    written = {grp.root: step for step, grp in enumerate(gr.groups)}
    for node, sid in gr.memory.storage.items():
        print(f"  {node.op.name:14s} {node.shape}: live in steps "
              f"{written[node]}..{last_read[node]}, buffer {sid} ({gr.memory.sizes[sid]} bytes)")
    print(" ", gr.memory)

show_plan(g2)

# %% [markdown]
# Each intermediate is still needed when the next is written, so nothing can share here.
# A deeper network, five dense layers, lets the plan reuse buffers:

# %%
rng_deep = np.random.default_rng(5)
z = graph.var("z", shape=(16, 64))
hz = z
for _ in range(5):
    W = rng_deep.standard_normal((64, 64)).astype("float32")
    hz = graph.nn.relu(graph.nn.dense(hz, graph.const(W)))
deep = graph.optimize(graph.Graph([z], [graph.nn.softmax(hz)]))
show_plan(deep)
assert deep.memory.bytes_after < deep.memory.bytes_before

# %%
n_ops = sum(1 for n in g.topo() if isinstance(n, graph.Call))
n_kernels = len(g2.groups)
print(f"{n_ops} ops -> {n_kernels} kernels")

# %% [markdown]
# ## Same answer, fewer kernels
# Build both (unfused: one kernel per op) and compare with numpy and with each other.

# %%
def reference(xv):
    hv = np.maximum(xv @ W1.T + b1, 0)
    z = hv @ W2.T + b2
    e = np.exp(z - z.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)

xv = rng.standard_normal((16, 64)).astype("float32")
fused = graph.build(g2, target="llvm")
unfused = graph.build(graph.optimize(g, level=0), target="llvm")
out_fused = fused(x=xv)[0]
out_unfused = unfused(x=xv)[0]
np.testing.assert_allclose(out_fused, reference(xv), rtol=1e-4, atol=1e-6)
np.testing.assert_allclose(out_unfused, reference(xv), rtol=1e-4, atol=1e-6)
print("fused and unfused both match numpy")

# %% tags=["nbval-ignore-output"]
t_fused = viz.seconds_per_call(lambda: fused(x=xv), number=50, repeat=5)
t_unfused = viz.seconds_per_call(lambda: unfused(x=xv), number=50, repeat=5)
print(f"unfused {t_unfused * 1e6:.1f} us, fused {t_fused * 1e6:.1f} us "
      f"({t_unfused / t_fused:.2f}x)")

# %% [markdown]
# ## The computational-graph approach, and XLA's and TensorRT's
# A graph as the IR, the approach of TensorFlow XLA, Intel nGraph and NVIDIA TensorRT (as
# the CSE 599W lecture puts it), has clear strengths: the whole model is visible, so
# rewrites across operators (fusion, folding constants, changing layouts, planning memory)
# are simple, rule-based and cheap; and an operator's kernel can be a tuned library call.
# Its weakness is the other side of that coin: every operator still needs a kernel *for
# every hardware target*, written by hand or generated; a new operator or a fusion the
# rules did not foresee has none; and nothing *inside* an operator (its loops, tiles,
# vectors) is visible at this level. That gap is what tensor expressions and schedules (01,
# 02) and the tuners (07) close.
#
# **XLA's HLO** keeps the set of operators small: a few primitives such as *map*
# (element-wise), *broadcast*, *reduce*, *convolution* and *reduce-window* (pooling), with
# constant shapes and a fixed layout. Fewer operators means fewer kernels to write and
# fusion rules that cover everything. mlc's graph ops fall into the same few kinds; the
# fusion pattern is the kind (this table is read from mlc's op registry):

# %%
by_pattern = {}
for op in list_ops():
    by_pattern.setdefault(op.pattern, []).append(op.name)
for pattern in sorted(by_pattern):
    print(f"{pattern.name:21s} {', '.join(sorted(by_pattern[pattern]))}")

# %% [markdown]
# HLO's map is ELEMWISE, broadcast is BROADCAST, reduce is COMM_REDUCE, convolution (and
# dense, a 1 × 1 convolution) is OUT_ELEMWISE_FUSABLE, and reduce-window is pooling.
#
# **TensorRT fuses by rules** in two directions. *Vertical* fusion merges a chain, a
# convolution or dense with the bias and activation after it: that is mlc's `fuse_ops`,
# above. *Horizontal* fusion merges sibling layers that read the same input (the 1 × 1
# convolutions at the start of an Inception block) into one wider layer, so the input is
# read once and one kernel runs instead of several. Here are two dense + relu branches of
# one input, concatenated; which groups form?

# %%
rng_br = np.random.default_rng(6)
Wa = rng_br.standard_normal((8, 16)).astype("float32")
Wb = rng_br.standard_normal((8, 16)).astype("float32")
xb = graph.var("x", shape=(4, 16))
branches = graph.Graph([xb], [graph.concatenate(
    [graph.nn.relu(graph.nn.dense(xb, graph.const(Wa))),
     graph.nn.relu(graph.nn.dense(xb, graph.const(Wb)))], axis=1)])
branches_opt = graph.optimize(branches)
print(branches_opt)
for grp in branches_opt.groups:
    print(f"kernel {grp.gid}: {[n.op.name for n in grp.nodes]}")
assert len(branches_opt.groups) == 3

# %% [markdown]
# Three kernels: each branch fused *vertically* (dense + relu), but mlc's `fuse_ops` never
# fuses *horizontally*: the two denses that read `x` stay two kernels, and the concatenate
# copies their outputs into a third. Horizontal fusion is a graph rewrite; you will write
# it in exercise 2 (one dense with the two weights stacked, then one relu: one kernel).

# %% [markdown]
# ## Reading: MetaFlow's relaxed graph substitutions
# *A reading section: mlc has no MetaFlow search; the example below applies its two
# substitutions by hand, on mlc's graph.* (Jia et al., "Optimizing DNN Computation with Relaxed
# Graph Substitutions", SysML 2019, in the AI-Systems lecture's reading list.)
#
# The rewrites above are *greedy*: each one is applied because it makes the graph better on
# its own. MetaFlow keeps a list of substitutions (pairs of equivalent subgraphs) and
# searches over sequences of them with a cost model of each operator, **accepting a
# substitution that makes the graph worse**, up to a factor `alpha` of the best cost so far
# (a *relaxed*, backtracking search), because it may enable a better one later.
#
# The paper's example, an Inception-like block: a `1x1` and a `3x3` convolution read the same
# `x`, and their relu'd outputs are concatenated. Two substitutions:
#
# 1. **enlarge** the `1x1` kernel to `3x3` by padding its weights with zeros: the same result
#    with 9x that branch's multiply-adds. On its own, a worse graph;
# 2. **merge** two convolutions of the same input with the same kernel size into one, the
#    weights stacked along the output channels: now possible, and the concatenate goes away.
#
# Greedy rewriting never takes step 1. On mlc's graph, with the kernels `fuse_ops` makes and
# the multiply-adds of the convolutions:

# %%
rng_mf = np.random.default_rng(4)
xm = graph.var("x", shape=(1, 8, 16, 16))
w1 = rng_mf.standard_normal((16, 8, 1, 1)).astype("float32")
w3 = rng_mf.standard_normal((16, 8, 3, 3)).astype("float32")
w1_as_3x3 = np.zeros((16, 8, 3, 3), "float32")
w1_as_3x3[:, :, 1, 1] = w1[:, :, 0, 0]            # substitution 1: 1x1 -> 3x3, zeros around

def inception(first, first_padding):
    return graph.Graph([xm], [graph.concatenate(
        [graph.nn.relu(graph.nn.conv2d(xm, graph.const(first), padding=first_padding)),
         graph.nn.relu(graph.nn.conv2d(xm, graph.const(w3), padding=1))], axis=1)])

stacked = np.concatenate([w1_as_3x3, w3], axis=0)  # substitution 2: one conv, 32 outputs
graphs_mf = {
    "original": inception(w1, 0),
    "1: enlarged 1x1 -> 3x3": inception(w1_as_3x3, 1),
    "1 + 2: merged": graph.Graph([xm], [graph.nn.relu(
        graph.nn.conv2d(xm, graph.const(stacked), padding=1))]),
}
macs = {"original": 16 * 16 * 16 * 8 * (1 + 9), "1: enlarged 1x1 -> 3x3": 16 * 16 * 16 * 8 * 18,
        "1 + 2: merged": 16 * 16 * 32 * 8 * 9}  # outputs x input channels x kernel taps
x_mf = rng_mf.standard_normal((1, 8, 16, 16)).astype("float32")
results_mf, kernels_mf = {}, {}
for label, g_mf in graphs_mf.items():
    kernels = kernels_mf[label] = len(graph.optimize(g_mf).groups)
    results_mf[label] = graph.build(graph.optimize(g_mf))(x=x_mf)[0]
    print(f"{label:24} {kernels} kernel{'s' if kernels > 1 else ' '}, "
          f"{macs[label]:7,} multiply-adds")
for out_mf in results_mf.values():
    np.testing.assert_allclose(out_mf, results_mf["original"], rtol=1e-4, atol=1e-4)
print("all three compute the same block")
assert list(kernels_mf.values()) == [3, 3, 1]
assert macs["1: enlarged 1x1 -> 3x3"] / macs["original"] == 1.8  # step 1: 80% more

# %% [markdown]
# Step 1 alone costs 80% more multiply-adds (589,824 against 327,680) and saves no kernel;
# step 2, possible only after
# it, leaves one kernel that reads `x` once and writes the concatenated result directly. On a
# GPU, where the three kernels' launches and the re-reading of `x` cost more than this
# small block's extra arithmetic, the merged graph can be the faster one. Whether it pays
# is the cost model's call, which is why MetaFlow searches with one instead of applying
# rules. Exercise 2 below is substitution 2 for dense layers.

# %% [markdown]
# ## Your own rewrite
# Fusion is one rewrite the compiler knows. You can write others, as the MLC course does,
# with a mutator over the graph-level function. `mlc.graph.relax` keeps TVM Relax's API (the
# MLC course's graph-level IR): a `@R.function` in an `@ir_module`, its ops bound to
# variables inside a `R.dataflow()` block; `relax.to_graph`/`relax.from_graph` convert it to
# and from the mlc graph above. The mutator: override `visit_call_`, visit the
# arguments first (`visit_expr_post_order`), look at what made an argument
# (`lookup_binding`), and return a new call. Here: `add(multiply(x, y), z)` becomes one
# `ewise_fma(x, y, z)` op.

# %%

@ir_module
class FMAModule:
    @R.function
    def main(x: R.Tensor((3, 4), "float32"), y: R.Tensor((3, 4), "float32")):
        with R.dataflow():
            lv0 = R.multiply(x, y)
            gv0 = R.add(lv0, y)
            R.output(gv0)
        return gv0

@relax.expr_functor.mutator
class EwiseFMARewriter(relax.PyExprMutator):
    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)
        add_op = relax.Op.get("relax.add")
        multiply_op = relax.Op.get("relax.multiply")
        ewise_fma_op = relax.Op.get("relax.ewise_fma")
        if call.op != add_op:
            return call
        value = self.lookup_binding(call.args[0])
        if not isinstance(value, relax.Call) or value.op != multiply_op:
            return call
        return relax.Call(ewise_fma_op, [value.args[0], value.args[1], call.args[1]], None, None)

updated_fn = EwiseFMARewriter().visit_expr(FMAModule["main"])
updated_fn.show()

# %% [markdown]
# The multiply is still there, unused: dead-code elimination removes it.

# %%
cleaned = relax.analysis.remove_all_unused(updated_fn)
cleaned.show()
xs = rng.standard_normal((3, 4)).astype("float32")
ys = rng.standard_normal((3, 4)).astype("float32")
out = mlc.build(relax.from_graph(relax.to_graph(cleaned)), target="llvm")["main"](xs, ys)
np.testing.assert_allclose(out, xs * ys + ys, rtol=1e-6)
print("ewise_fma(x, y, y) == x * y + y")

# %% [markdown]
# > **What to remember**
# > * Ops carry patterns (ELEMWISE, BROADCAST, INJECTIVE, COMM_REDUCE, OUT_ELEMWISE_FUSABLE,
# >   OPAQUE) and fusion rules combine them: a dense takes its bias and activation into its
# >   kernel.
# > * Fusion removes the intermediate's trip through memory; the memory plan lets
# >   intermediates share buffers.
# > * Graph rewrites are visitor-based, like the loop IR's passes.

# %% [markdown]
# ## Exercises
# Complete each rewrite (replace `raise NotImplementedError()`) and run the check under it:
# ✓, or ✗ with what is wrong
# (`hint("1")` gives a hint for exercise 1, the idea first, when you want one). Run the next cell
# first: it defines the checks.
# Nothing from the cells above is needed but the imports.

# %%
@ir_module
class Twice:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            lv0 = R.nn.relu(x)
            gv0 = R.nn.relu(lv0)
            R.output(gv0)
        return gv0

@ir_module
class Once:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            gv0 = R.nn.relu(x)
            R.output(gv0)
        return gv0

def run_relax(fn, xv):
    return mlc.build(relax.from_graph(relax.to_graph(fn)), target="llvm")["main"](xv)

@exercise("1. relu of relu", hint=[
          "relu(relu(x)) is relu(x): when the argument of a relu is itself a relu, the "
          "outer one can go",
          "in visit_call_, after the children are rewritten, look up what the argument is "
          "bound to (lookup_binding) and compare the two ops"])
def check_relu_of_relu(Rewriter):
    xv = np.random.default_rng(7).standard_normal((2, 3)).astype("float32")
    once = relax.analysis.remove_all_unused(Rewriter().visit_expr(Once["main"]))
    expect(len(once.bindings()) == 1, "a single relu must stay: only relu(relu(x)) simplifies")
    twice = relax.analysis.remove_all_unused(Rewriter().visit_expr(Twice["main"]))
    n = len(twice.bindings())
    expect(n == 1, f"relu(relu(x)) should leave one relu, it leaves {n} bindings")
    expect(np.allclose(run_relax(twice, xv), np.maximum(xv, 0)), "the result is not relu(x)")

def branch_graph(n_branches, shared=True, seed=8):
    rng_ex = np.random.default_rng(seed)
    xs = [graph.var(f"x{i}", shape=(4, 16)) for i in range(1 if shared else n_branches)]
    ws = [rng_ex.standard_normal((8, 16)).astype("float32") for _ in range(n_branches)]
    outs = [graph.nn.relu(graph.nn.dense(xs[i % len(xs)], graph.const(w)))
            for i, w in enumerate(ws)]
    return graph.Graph(xs, [graph.concatenate(outs, axis=1)])

def run_graph(gr, seed=9):
    rng_in = np.random.default_rng(seed)
    feeds = {v.name: rng_in.standard_normal(v.shape).astype("float32") for v in gr.inputs}
    return graph.build(graph.optimize(gr))(**feeds)[0]

@exercise("2. horizontal fusion", hint=[
          "two dense layers that read the same input are one dense whose weight stacks "
          "the rows of both: one larger kernel instead of two small ones",
          "the branches' weights are constants among their calls' arguments; stack them "
          "along the output axis (np.concatenate) and build one dense and one relu"])
def check_horizontal(merge_branches):
    for k in (2, 3):
        g_in = branch_graph(k)
        merged = graph.rewrite(g_in, merge_branches)
        kernels = len(graph.optimize(merged).groups)
        expect(kernels == 1, f"{k} branches of one input should become 1 kernel, not {kernels}")
        expect(np.allclose(run_graph(merged), run_graph(g_in), rtol=1e-5, atol=1e-5),
               f"with {k} branches the merged graph computes something else")
    two_inputs = branch_graph(2, shared=False)
    expect(np.allclose(run_graph(graph.rewrite(two_inputs, merge_branches)),
                       run_graph(two_inputs), rtol=1e-5, atol=1e-5),
           "branches that read different inputs must not be merged")

# %% [markdown]
# **1. relu of relu.** Write `ReluOfReluRewriter`, a mutator like `EwiseFMARewriter`:
# `relu(relu(x))` is `relu(x)`, so when the argument of a relu was made by a relu, return
# that argument (the inner call) instead.

# %%
@relax.expr_functor.mutator
class ReluOfReluRewriter(relax.PyExprMutator):
    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)
        relu = relax.Op.get("relax.nn.relu")
        ### BEGIN SOLUTION
        if call.op != relu:
            return call
        value = self.lookup_binding(call.args[0])
        if isinstance(value, relax.Call) and value.op == relu:
            return call.args[0]
        return call
        ### END SOLUTION

check_relu_of_relu(ReluOfReluRewriter)

# %% [markdown]
# **2. Horizontal fusion.** Write the function that `graph.rewrite(g, fn)` calls on every op
# (`fn(node, args)`, with the op's already rewritten arguments; return a replacement, or
# None to keep it): replace `concatenate([relu(dense(x, W1)), relu(dense(x, W2)), ...],
# axis=1)`, where every dense reads the same `x` and has a constant weight, by
# `relu(dense(x, W))` with `W` the weights stacked on axis 0. One kernel instead of three
# (or more).

# %%
def merge_branches(node, args):
    if node.op.name != "concatenate" or node.attrs.get("axis") != 1:
        return None
    denses = []
    for arg in args:
        if not (isinstance(arg, graph.Call) and arg.op.name == "nn.relu"):
            return None
        dense = arg.args[0]
        if not (isinstance(dense, graph.Call) and dense.op.name == "nn.dense"
                and isinstance(dense.args[1], graph.Constant)):
            return None
        denses.append(dense)
    ### BEGIN SOLUTION
    x = denses[0].args[0]
    if any(d.args[0] is not x for d in denses):
        return None
    stacked = np.concatenate([d.args[1].value for d in denses], axis=0)
    return graph.nn.relu(graph.nn.dense(x, graph.const(stacked)))
    ### END SOLUTION

check_horizontal(merge_branches)

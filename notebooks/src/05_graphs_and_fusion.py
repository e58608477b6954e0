# %% [markdown]
# # 05 · Computational graphs and operator fusion
#
# One level up from loops: a network is a **graph** of operators over tensors. Running it one
# operator at a time writes every intermediate to memory and reads it back. A graph compiler
# rewrites the graph first: fold constants, remove dead code, and **fuse** operators, so
# `dense -> add bias -> relu` becomes one kernel whose intermediates never leave registers.
#
# TVM's fusion rule uses each op's **pattern**: ELEMWISE, BROADCAST and INJECTIVE ops fuse
# into chains; an OUT_ELEMWISE_FUSABLE op (dense, conv2d) absorbs the element-wise ops after
# it; a reduction ends a group; OPAQUE ops stand alone.
#
# **You will:** build a graph with the seeds' NNVM/Relay call shape, draw it before and after
# `graph.optimize`, count kernels, and measure what fusion saves.

# %%
import numpy as np
%matplotlib inline
import matplotlib
matplotlib.rcParams["figure.dpi"] = 80
from mlc import graph, viz

rng = np.random.default_rng(0)

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
# ## Your own rewrite
# Fusion is one rewrite the compiler knows. You can write others, as the MLC course does,
# with a mutator over the graph-level function: override `visit_call_`, visit the
# arguments first (`visit_expr_post_order`), look at what made an argument
# (`lookup_binding`), and return a new call. Here: `add(multiply(x, y), z)` becomes one
# `ewise_fma(x, y, z)` op.

# %%
from mlc.graph import relax
from mlc.script import ir_module, R
import mlc

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
out = mlc.build(relax.from_graph(relax.to_graph(cleaned)))["main"](xs, ys)
np.testing.assert_allclose(out, xs * ys + ys, rtol=1e-6)
print("ewise_fma(x, y, y) == x * y + y")

# %% [markdown]
# **Exercise.** Write `ReluOfReluRewriter`: `relu(relu(x))` is `relu(x)`; return
# `value` (the inner call) when the argument of a relu was made by a relu.

# %%
@relax.expr_functor.mutator
class ReluOfReluRewriter(relax.PyExprMutator):
    def visit_call_(self, call):
        call = self.visit_expr_post_order(call)
        relu = relax.Op.get("relax.nn.relu")
        if call.op != relu:
            return call
        value = self.lookup_binding(call.args[0])
        if isinstance(value, relax.Call) and value.op == relu:
            return call.args[0]
        return call

@ir_module
class Twice:
    @R.function
    def main(x: R.Tensor((2, 3), "float32")):
        with R.dataflow():
            lv0 = R.nn.relu(x)
            gv0 = R.nn.relu(lv0)
            R.output(gv0)
        return gv0

simplified = relax.analysis.remove_all_unused(ReluOfReluRewriter().visit_expr(Twice["main"]))
simplified.show()
assert len(simplified.bindings()) == 1

# %% [markdown]
# ## Exercises
# 1. How many kernels does the optimized graph have, and which ops share one?
# 2. Add a `graph.nn.relu` after the second dense: does the kernel count change? (It should
#    not: relu is element-wise and fuses into the dense before it.)

# %%
y3 = graph.nn.relu(graph.nn.dense(h, graph.const(W2)) + graph.const(b2))
g3 = graph.optimize(graph.Graph([x], [graph.nn.softmax(y3)]))
assert n_kernels < n_ops, "fusion should make fewer kernels than ops"
assert len(g3.groups) == n_kernels, "an element-wise relu fuses into its producer"
print(n_kernels, "kernels either way")

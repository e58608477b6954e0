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

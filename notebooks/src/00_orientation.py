# %% [markdown]
# # 00 · Orientation: what an ML compiler does, and why
#
# A model is trained in a framework (PyTorch, TensorFlow) on a workstation. It is *used*
# somewhere else: a phone, a browser, a server's GPU, a camera with a small accelerator.
# Between the two sits a gap: every framework would need a hand-tuned kernel library for
# every operator, layout, precision and chip, and there are too many of each. An **ML
# compiler** closes the gap by *generating* those kernels from one description of the model.
#
# **The goals of ML compilation** (the lecture notes, seed 004):
#
# * **integration and fewer dependencies**: the deployed model is a small native library,
#   not a Python interpreter plus a framework;
# * **use the hardware's own acceleration**: vector units (AVX-512 here), GPU threads and
#   shared memory, an accelerator's tensor instructions;
# * **optimize**: fuse operators so intermediates never reach memory, tile loops so data
#   stays in cache, and let a search find the tile sizes a person would guess.
#
# **You will:** see the compiler's levels on one map, take a one-layer model through every
# level in about ten lines (each level printed), and find where each later chapter goes
# deeper. There is nothing to write in this chapter.

# %%
import mlc  # first: a folder named "mlc" where Jupyter started would hide the package

if not hasattr(mlc, "build"):
    raise ImportError(f"'import mlc' found the folder {list(mlc.__path__)[0]}, not the mlc "
                      "package: start Jupyter from another folder (`make lab` in the "
                      "checkout does), or rename that folder")

import numpy as np

from mlc import graph
from mlc.graph.to_te import lower_group
from mlc.viz import concepts

# %% [markdown]
# ## The map
#
# The compiler works in levels, each a program that says a little more about *how* than the
# one above. The model becomes a **graph** of operators on whole tensors; each fused group of
# operators becomes a **tensor expression** (what each output element is); a **schedule**
# says how to run it (in which order, in which tiles, on which lanes and threads); lowering
# the schedule gives a **loop program**; a back end turns the loops into machine **code**.
# Every later chapter opens with this map, its own levels in blue.

# %% tags=["nbval-ignore-output"]
concepts.stack(chapter=0)

# %% [markdown]
# ## One model through every level
#
# One layer, `y = relu(x @ W.T + b)`, with 16 inputs, 8 outputs and a batch of 4. Each cell
# below prints one level; the rest of the course explains each line you see.

# %%
rng = np.random.default_rng(0)
W = rng.standard_normal((8, 16)).astype("float32")   # the trained weights: the "model"
b = rng.standard_normal(8).astype("float32")

x = graph.var("x", shape=(4, 16))                               # level 1: the graph
y = graph.nn.relu(graph.nn.dense(x, graph.const(W)) + graph.const(b))
g = graph.optimize(graph.Graph([x], [y]))
print(g)
assert len(g.groups) == 1  # dense, add and relu fused into one group: one kernel

# %% [markdown]
# `graph.optimize` fused the three operators into **group 0** (one kernel, so the sum
# `x @ W.T` never goes to memory before the bias and relu), and stored `W` packed as
# `(1, 16, 8)` so that 8 neighbouring outputs read 8 neighbouring weights (chapter 05).
# The group, as **tensor expressions**: one formula per tensor, no loops yet.

# %%
te_form = lower_group(g.groups[0])                                # level 2: tensor expressions
for tensor in te_form.tensors.values():
    if getattr(tensor.op, "body", None) is not None:   # placeholders have no formula
        index = ", ".join(iv.var.name for iv in tensor.op.axis)
        print(f"{tensor.name}[{index}] = {tensor.op.body[0]}")

# %% [markdown]
# `graph.build` picks a **schedule** for each group (chapter 06 tells how) and lowers it.
# The schedule is a list of steps, each a transformation of the loops:

# %%
mod = graph.build(g, target="llvm")
kernel = mod.kernels[0]
print(kernel.schedule.trace)                                      # level 3: the schedule

# %% [markdown]
# The **loop program** after lowering: the bias add was inlined into relu, the 8 output
# columns became one 8-lane vector (`ramp(0, 1, 8)`), and the 4 rows were unrolled.

# %%
print(kernel.lowered)                                             # level 4: the loop IR
loops = str(kernel.lowered)
assert "add" not in loops.replace("_add_", "") and "ramp(0, 1, 8)" in loops  # as said above
assert "for ax0 " not in loops  # the 4 rows unrolled: no loop over them is left

# %% [markdown]
# And the **machine code** LLVM made from it: here, the fused multiply-adds on 8 lanes
# (`vfmadd...ps` on `ymm` registers). The exact lines depend on this machine's CPU.

# %% tags=["nbval-ignore-output"]
asm = mod.module.get_source("asm")                                 # level 5: the code
print("\n".join(line for line in asm.splitlines() if "vfmadd" in line or "vmax" in line))

# %% [markdown]
# It runs, and it computes what numpy computes:

# %%
xv = rng.standard_normal((4, 16)).astype("float32")
out = mod(x=xv)[0]
np.testing.assert_allclose(out, np.maximum(xv @ W.T + b, 0), rtol=1e-5, atol=1e-5)
print("the compiled layer agrees with numpy; largest difference",
      float(np.abs(out - np.maximum(xv @ W.T + b, 0)).max()))

# %% [markdown]
# ## Where each chapter goes deeper
#
# | chapter | level | what you will do |
# |---|---|---|
# | 01 tensor expressions | tensor expression | element-wise ops, reductions, convolution, scans |
# | 02 schedule primitives | schedule | split, reorder, tile, fuse, cache, parallelize, vectorize |
# | 03 loop IR and lowering | loop IR | read the passes from blocks to loops, write one |
# | 04 CPU code generation | schedule → code | make a matmul run near the machine's peak |
# | 05 graphs and fusion | graph | fold, fuse, change layouts, plan memory |
# | 06 from an MLP to kernels | all | a real model, trained, compiled and timed |
# | 07 automatic optimization | schedule | let a search and a cost model pick the schedule |
# | 08 GPUs | schedule → code | threads, shared memory, races, a GPU matmul |
# | 08 GPU performance | schedule → code | a cost model of a GPU, register tiles, shuffles, Triton |
# | 09 hardware acceleration | loop IR | tensorize a matmul into an intrinsic; int8 |
# | 10 an accelerator | code | a small deep-learning accelerator, its queues and tokens |
# | 11 deployment | code | the model as a shared library called from C, cross-compiled, run remotely |
# | 12 kernel selection | all | time several implementations per shape and pick the fastest, as TensorRT does |
# | 13 attention | graph → schedule | why softmax(QKᵀ)V does not fuse, and a schedule that keeps one row of scores |
#
# The map again, drawn for one chapter (this is what chapter 04 opens with):

# %% tags=["nbval-ignore-output"]
concepts.stack(chapter=4)

# %% [markdown]
# > **What to remember**
# > * An ML compiler turns one description of a model into fast code for many machines, so
# >   nobody writes a kernel library per chip.
# > * It works in levels: graph → tensor expression → schedule → loop IR → code. Each level
# >   keeps *what* is computed and adds a decision about *how*.
# > * The schedule is where speed comes from, and it never changes the answer: every level
# >   above can be checked against numpy, as the last cell did.

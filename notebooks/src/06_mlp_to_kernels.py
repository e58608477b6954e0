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

"""The MLP-to-kernel pipeline, end to end, in seconds and without a download.

1. train a small MLP (64-64-32-10) on scikit-learn's ``load_digits`` with plain numpy;
2. write it as an mlc graph, print it before and after ``graph.optimize`` (constant folding,
   dense weight packing, fusion into dense+bias+relu kernels, memory planning);
3. build it with LLVM into ONE native function (every fused kernel spliced in order, the
   intermediates allocated inside), run it, and report accuracy (equal to numpy's) and speed
   beside numpy's.

``python -m mlc.examples.mlp`` runs it; :func:`train_mlp`, :func:`mlp_graph` and
:func:`numpy_forward` are reused by ``benchmarks/mlp.py`` and the notebooks. A small conv
net on the same digits (:func:`convnet_graph`) exercises conv2d/pool fusion.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from mlc import graph

Params = list[tuple[np.ndarray, np.ndarray]]


def load_data(seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Digits 8x8 scaled to [0, 1], split 80/20: (x_train, y_train, x_test, y_test)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = (d.data / 16.0).astype("float32")
    y = d.target.astype("int64")
    idx = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    return x[idx[:cut]], y[idx[:cut]], x[idx[cut:]], y[idx[cut:]]


def train_mlp(x: np.ndarray, y: np.ndarray, sizes: tuple[int, ...] = (64, 64, 32, 10),
              epochs: int = 30, lr: float = 0.1, batch: int = 32, seed: int = 0) -> Params:
    """Minibatch SGD on softmax cross-entropy with ReLU hidden layers. Weights are stored as
    (units, in) so that ``dense(x, w) = x @ w.T`` (TVM's convention)."""
    rng = np.random.default_rng(seed)
    params = [((rng.standard_normal((o, i)) * np.sqrt(2.0 / i)).astype("float32"),
               np.zeros(o, "float32")) for i, o in zip(sizes[:-1], sizes[1:])]
    onehot = np.eye(sizes[-1], dtype="float32")[y]
    for _ in range(epochs):
        order = rng.permutation(len(x))
        for s in range(0, len(x), batch):
            xb, tb = x[order[s:s + batch]], onehot[order[s:s + batch]]
            acts = [xb]
            for k, (w, b) in enumerate(params):
                z = acts[-1] @ w.T + b
                acts.append(np.maximum(z, 0) if k < len(params) - 1 else z)
            p = np.exp(acts[-1] - acts[-1].max(1, keepdims=True))
            p /= p.sum(1, keepdims=True)
            grad = (p - tb) / len(xb)
            for k in range(len(params) - 1, -1, -1):
                w, b = params[k]
                gw, gb = grad.T @ acts[k], grad.sum(0)
                if k:
                    grad = (grad @ w) * (acts[k] > 0)
                params[k] = (w - lr * gw, b - lr * gb)
    return params


def numpy_forward(params: Params, x: np.ndarray) -> np.ndarray:
    """The same inference in numpy: what mlc must match."""
    h = x
    for k, (w, b) in enumerate(params):
        h = h @ w.T + b
        if k < len(params) - 1:
            h = np.maximum(h, 0)
    e = np.exp(h - h.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True)


def mlp_graph(params: Params, batch: int) -> graph.Graph:
    """The MLP as a graph: dense + bias_add + relu per hidden layer, softmax at the end."""
    x = graph.var("x", (batch, params[0][0].shape[1]))
    h: graph.Node = x
    for k, (w, b) in enumerate(params):
        h = graph.nn.bias_add(graph.nn.dense(h, graph.const(w, name=f"w{k}")),
                              graph.const(b, name=f"b{k}"), axis=1)
        if k < len(params) - 1:
            h = graph.nn.relu(h)
    return graph.Graph([x], [graph.nn.softmax(h)])


def convnet_graph(batch: int, seed: int = 0) -> tuple[graph.Graph, dict[str, Any]]:
    """A small conv net for 8x8 digits (random weights): conv-bn-relu, pool, conv-relu,
    global pool, dense. Returns the graph and its weights."""
    rng = np.random.default_rng(seed)

    def w(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * np.sqrt(2.0 / np.prod(shape[1:]))).astype("float32")

    p = {"c1": w(8, 1, 3, 3), "g": np.ones(8, "float32"), "be": np.zeros(8, "float32"),
         "mu": (rng.standard_normal(8) * 0.1).astype("float32"),
         "var": (rng.uniform(0.5, 1.5, 8)).astype("float32"), "c2": w(16, 8, 3, 3),
         "fc": w(10, 16), "fb": np.zeros(10, "float32")}
    x = graph.var("x", (batch, 1, 8, 8))
    h = graph.nn.conv2d(x, graph.const(p["c1"], name="c1"), padding=1)
    g, be, mu, var = (graph.const(p[k], name=k) for k in ("g", "be", "mu", "var"))
    h = graph.nn.batch_norm(h, g, be, mu, var)
    h = graph.nn.max_pool2d(graph.nn.relu(h), 2)
    h = graph.nn.relu(graph.nn.conv2d(h, graph.const(p["c2"], name="c2"), padding=1))
    h = graph.nn.batch_flatten(graph.nn.global_avg_pool2d(h))
    y = graph.nn.bias_add(graph.nn.dense(h, graph.const(p["fc"], name="fc")),
                          graph.const(p["fb"], name="fb"))
    return graph.Graph([x], [graph.nn.softmax(y)]), p


def _time(fn: Any, number: int = 50) -> float:
    fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        best = min(best, (time.perf_counter() - t0) / number)
    return best


def main() -> None:
    t0 = time.perf_counter()
    xtr, ytr, xte, yte = load_data()
    params = train_mlp(xtr, ytr)
    print(f"trained a 64-64-32-10 MLP on digits in {time.perf_counter() - t0:.1f} s")
    batch = len(xte)
    g = mlp_graph(params, batch)
    print("\n== the graph as written ==")
    print(g)
    g2 = graph.optimize(g)
    print("\n== after graph.optimize (fold, pack weights, fuse, plan memory) ==")
    print(g2)
    t0 = time.perf_counter()
    mod = graph.build(g2, target="llvm")
    print(f"\n== built in {time.perf_counter() - t0:.1f} s ==\n{mod}")
    print(f"one native function for the whole graph: {mod.module}")
    probs = mod(x=xte)[0]
    ref = numpy_forward(params, xte)
    acc_mlc = float((probs.argmax(1) == yte).mean())
    acc_np = float((ref.argmax(1) == yte).mean())
    print(f"\naccuracy: mlc {acc_mlc:.4f}, numpy {acc_np:.4f}; "
          f"max |difference| {np.abs(probs - ref).max():.2e}")
    t_mlc = _time(mod.run)
    t_np = _time(lambda: numpy_forward(params, xte))
    print(f"batch {batch}: mlc {t_mlc * 1e6:.1f} us, numpy {t_np * 1e6:.1f} us "
          f"(mlc is {t_np / t_mlc:.2f}x numpy's speed)")
    one = graph.build(graph.optimize(mlp_graph(params, 1)))
    one.set_input(x=xte[:1])
    t1 = _time(one.run, 500)
    tn1 = _time(lambda: numpy_forward(params, xte[:1]), 500)
    print(f"batch 1: mlc {t1 * 1e6:.1f} us, numpy {tn1 * 1e6:.1f} us ({tn1 / t1:.2f}x)")


if __name__ == "__main__":
    main()

import sys; sys.path.insert(0, __import__("os").path.dirname(__file__))
from nbtools import *
H = "### BEGIN HIDDEN TESTS\nfrom autograder import harness as grading  # noqa: E402, I001\n"; E = "\n### END HIDDEN TESTS"
cells = [
md("""
# Assignment 1: tensor expressions

A tensor expression says **what** each output element is, as a function of its indices;
the compiler decides **how** to loop. In this assignment you write five operators of a
neural network with `mlc.te`: a padded 2-d convolution, softmax, layer normalisation, max
pooling and the transpose+reshape that splits attention heads.

Rules:
* write your code between the lines that say `raise NotImplementedError()` (replace them);
* every function receives `te.placeholder` tensors (and plain Python numbers) and
  **returns the output tensor**; intermediate tensors are fine;
* the test cell after each function checks one small shape; the grader checks other
  shapes too, so do not hard-code sizes: read them from `x.shape`;
* run `python -m autograder check a1_tensor_expressions.ipynb` to run the public tests.
"""),
code("""
import numpy as np

from autograder.harness import run_te
from mlc import te  # noqa: F401 - you will need it


def run(fn, *arrays, **params):
    \"\"\"Build fn's computation for these arrays' shapes with mlc.build and run it.\"\"\"
    names = [f"in{i}" for i in range(len(arrays))]
    return run_te(fn, list(arrays), names, params)


rng = np.random.default_rng(0)
"""),
md("""
## 1. Conv2d with padding (3 points)

`data` is `(N, C, H, W)`, `weight` is `(K, C, R, S)`; stride 1; `padding` zeros on each side
of `H` and `W`. Build the padded input with `te.if_then_else` (and `te.all` for the four
conditions), then reduce over `c`, `r`, `s` with three `te.reduce_axis`. The output is
`(N, K, H + 2*padding - R + 1, W + 2*padding - S + 1)`.
"""),
code("""
def conv2d_nchw(data, weight, padding):
    N, C, H, W = data.shape
    K, _, R, S = weight.shape
    ### BEGIN SOLUTION
    padded = te.compute(
        (N, C, H + 2 * padding, W + 2 * padding),
        lambda n, c, y, x: te.if_then_else(
            te.all(y >= padding, y < H + padding, x >= padding, x < W + padding),
            data[n, c, y - padding, x - padding], 0.0),
        name="padded")
    rc = te.reduce_axis((0, C), name="rc")
    ry = te.reduce_axis((0, R), name="ry")
    rx = te.reduce_axis((0, S), name="rx")
    return te.compute(
        (N, K, H + 2 * padding - R + 1, W + 2 * padding - S + 1),
        lambda n, k, y, x: te.sum(padded[n, rc, y + ry, x + rx] * weight[k, rc, ry, rx],
                                  axis=[rc, ry, rx]),
        name="conv")
    ### END SOLUTION
"""),
test("""
d = rng.uniform(-1, 1, (1, 2, 5, 5)).astype("float32")
w = rng.uniform(-1, 1, (3, 2, 3, 3)).astype("float32")
out = run(conv2d_nchw, d, w, padding=1)
p = np.pad(d, ((0, 0), (0, 0), (1, 1), (1, 1)))
expected = np.stack([np.stack([[(p[0, :, y:y + 3, x:x + 3] * w[k]).sum() for x in range(5)]
                               for y in range(5)]) for k in range(3)])[None]
np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)
""" + H + 'grading.check_te("conv2d_a", conv2d_nchw)\ngrading.check_te("conv2d_b", conv2d_nchw)' + E,
"t_conv2d", 3),
md("""
## 2. Softmax over rows (2 points)

`x` is `(M, N)`; `softmax[i, j] = exp(x[i, j] - m[i]) / sum_j exp(x[i, j] - m[i])` with
`m[i] = max_j x[i, j]` (subtracting the maximum keeps `exp` from overflowing). Use `te.max`
and `te.sum` over a `te.reduce_axis`, and `te.exp`.
"""),
code("""
def softmax(x):
    M, N = x.shape
    ### BEGIN SOLUTION
    j = te.reduce_axis((0, N), name="j")
    row_max = te.compute((M,), lambda i: te.max(x[i, j], axis=j), name="row_max")
    e = te.compute((M, N), lambda i, jj: te.exp(x[i, jj] - row_max[i]), name="e")
    j2 = te.reduce_axis((0, N), name="j2")
    total = te.compute((M,), lambda i: te.sum(e[i, j2], axis=j2), name="total")
    return te.compute((M, N), lambda i, jj: e[i, jj] / total[i], name="softmax")
    ### END SOLUTION
"""),
test("""
x = rng.uniform(-3, 3, (4, 10)).astype("float32")
e = np.exp(x - x.max(axis=1, keepdims=True))
np.testing.assert_allclose(run(softmax, x), e / e.sum(axis=1, keepdims=True), rtol=1e-5)
""" + H + 'grading.check_te("softmax_a", softmax)\ngrading.check_te("softmax_b", softmax)' + E,
"t_softmax", 2),
md("""
## 3. Layer normalisation (2 points)

`x` is `(M, N)`, `gamma` and `beta` are `(N,)`. Normalise each row to mean 0 and variance 1
(the *biased* variance, divided by `N`), then scale and shift (a reduction must be the whole
body of its `te.compute`: sum first, divide in the next stage):
`y[i, j] = (x[i, j] - mean[i]) / sqrt(var[i] + eps) * gamma[j] + beta[j]`.
"""),
code("""
def layer_norm(x, gamma, beta, eps=1e-5):
    M, N = x.shape
    ### BEGIN SOLUTION
    k = te.reduce_axis((0, N), name="k")
    total = te.compute((M,), lambda i: te.sum(x[i, k], axis=k), name="total")
    centered = te.compute((M, N), lambda i, j: x[i, j] - total[i] / N, name="centered")
    k2 = te.reduce_axis((0, N), name="k2")
    sq = te.compute((M,), lambda i: te.sum(centered[i, k2] * centered[i, k2], axis=k2),
                    name="sq")
    return te.compute((M, N), lambda i, j: centered[i, j] / te.sqrt(sq[i] / N + eps)
                      * gamma[j] + beta[j], name="layer_norm")
    ### END SOLUTION
"""),
test("""
x = rng.uniform(-2, 2, (3, 16)).astype("float32")
g = rng.uniform(0.5, 1.5, 16).astype("float32")
b = rng.uniform(-1, 1, 16).astype("float32")
expected = (x - x.mean(1, keepdims=True)) / np.sqrt(x.var(1, keepdims=True) + 1e-5) * g + b
np.testing.assert_allclose(run(layer_norm, x, g, b), expected, rtol=1e-3, atol=1e-4)
""" + H + 'grading.check_te("layer_norm_a", layer_norm)\ngrading.check_te("layer_norm_b", layer_norm)' + E,
"t_layer_norm", 2),
md("""
## 4. Max pooling (2 points)

`data` is `(N, C, H, W)`; a `size x size` window moved by `stride`, no padding:
`out[n, c, y, x] = max over (i, j) of data[n, c, y*stride + i, x*stride + j]`, with
`(H - size) // stride + 1` rows and as many columns by the same rule.
"""),
code("""
def max_pool2d(data, size, stride):
    N, C, H, W = data.shape
    ### BEGIN SOLUTION
    i = te.reduce_axis((0, size), name="i")
    j = te.reduce_axis((0, size), name="j")
    return te.compute(
        (N, C, (H - size) // stride + 1, (W - size) // stride + 1),
        lambda n, c, y, x: te.max(data[n, c, y * stride + i, x * stride + j], axis=[i, j]),
        name="pool")
    ### END SOLUTION
"""),
test("""
d = rng.uniform(-1, 1, (1, 1, 4, 4)).astype("float32")
expected = d.reshape(1, 1, 2, 2, 2, 2).max(axis=(3, 5))
np.testing.assert_allclose(run(max_pool2d, d, size=2, stride=2), expected)
""" + H + 'grading.check_te("max_pool_a", max_pool2d)\ngrading.check_te("max_pool_b", max_pool2d)' + E,
"t_max_pool", 2),
md("""
## 5. Splitting attention heads: reshape + transpose (1 point)

`x` is `(B, S, heads * D)`. Return `(B, heads, S, D)`, what numpy writes
`x.reshape(B, S, heads, D).transpose(0, 2, 1, 3)`: no data is computed, only moved, so the
whole operator is one index formula.
"""),
code("""
def split_heads(x, heads):
    B, S, HD = x.shape
    ### BEGIN SOLUTION
    D = HD // heads
    return te.compute((B, heads, S, D), lambda b, h, s, d: x[b, s, h * D + d], name="heads")
    ### END SOLUTION
"""),
test("""
x = rng.uniform(-1, 1, (1, 3, 8)).astype("float32")
np.testing.assert_allclose(run(split_heads, x, heads=2),
                           x.reshape(1, 3, 2, 4).transpose(0, 2, 1, 3))
""" + H + 'grading.check_te("split_heads_a", split_heads)\ngrading.check_te("split_heads_b", split_heads)' + E,
"t_split_heads", 1),
]
save(cells, __import__("os").path.dirname(__file__) + "/../a1_tensor_expressions/a1_tensor_expressions.ipynb")

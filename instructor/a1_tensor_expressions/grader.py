"""Trusted checks of a1_tensor_expressions: hidden shapes and numpy references.

Never copied into a student's kernel. Keep the real one outside the repository and grade with
``--tests DIR`` (see docs/instructors.md).
"""

import numpy as np

from autograder.cases import TECase


def ref_conv2d(data, weight, padding):
    n, c, h, w = data.shape
    k, _, r, s = weight.shape
    p = np.pad(data.astype(np.float64), ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh, ow = h + 2 * padding - r + 1, w + 2 * padding - s + 1
    out = np.zeros((n, k, oh, ow))
    for y in range(oh):
        for x in range(ow):
            out[:, :, y, x] = np.einsum("ncij,kcij->nk", p[:, :, y:y + r, x:x + s], weight)
    return out.astype(data.dtype)


def ref_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def ref_layer_norm(x, gamma, beta, eps=1e-5):
    mean = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def ref_max_pool2d(data, size, stride):
    n, c, h, w = data.shape
    oh, ow = (h - size) // stride + 1, (w - size) // stride + 1
    out = np.empty((n, c, oh, ow), dtype=data.dtype)
    for y in range(oh):
        for x in range(ow):
            win = data[:, :, y * stride:y * stride + size, x * stride:x * stride + size]
            out[:, :, y, x] = win.max(axis=(2, 3))
    return out


def ref_split_heads(x, heads):
    b, s, hd = x.shape
    return x.reshape(b, s, heads, hd // heads).transpose(0, 2, 1, 3)


F32 = "float32"
CASES = [
    TECase("conv2d_a", inputs={"data": ((1, 3, 9, 11), F32), "weight": ((4, 3, 3, 3), F32)},
         params={"padding": 1}, reference=ref_conv2d),
    TECase("conv2d_b", inputs={"data": ((2, 2, 6, 5), F32), "weight": ((3, 2, 5, 3), F32)},
         params={"padding": 2}, reference=ref_conv2d),
    TECase("softmax_a", inputs={"x": ((7, 33), F32)}, reference=ref_softmax),
    TECase("softmax_b", inputs={"x": ((1, 130), F32)}, reference=ref_softmax),
    TECase("layer_norm_a",
           inputs={"x": ((6, 48), F32), "gamma": ((48,), F32), "beta": ((48,), F32)},
         reference=ref_layer_norm, rtol=1e-3, atol=1e-4),
    TECase("layer_norm_b",
           inputs={"x": ((3, 5), F32), "gamma": ((5,), F32), "beta": ((5,), F32)},
         reference=ref_layer_norm, rtol=1e-3, atol=1e-4),
    TECase("max_pool_a", inputs={"data": ((1, 3, 8, 8), F32)}, params={"size": 2, "stride": 2},
         reference=ref_max_pool2d),
    TECase("max_pool_b", inputs={"data": ((2, 2, 9, 7), F32)}, params={"size": 3, "stride": 2},
         reference=ref_max_pool2d),
    TECase("split_heads_a", inputs={"x": ((2, 5, 12), F32)}, params={"heads": 3},
         reference=ref_split_heads),
    TECase("split_heads_b", inputs={"x": ((1, 7, 16), F32)}, params={"heads": 2},
         reference=ref_split_heads),
]

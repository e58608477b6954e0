"""2-d convolution and pooling, NCHW.

    conv2d(x, w)[n, o, p, q] = sum_{c, r, s} pad(x)[n, g*C' + c, p*sh + r*dh, q*sw + s*dw]
                                              * w[o, c, r, s]
    (g = o // (O / groups), C' = C / groups; groups == C is a depthwise convolution)
"""

from __future__ import annotations

from collections.abc import Sequence

from mlc import te
from mlc.errors import TEError
from mlc.tir.expr import PrimExpr
from mlc.topi.elemwise import const_shape
from mlc.topi.transform import pad as pad_op


def _pair(v: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(v, int):
        return (v, v)
    return (int(v[0]), int(v[1]))


def _pad4(v: int | Sequence[int]) -> tuple[int, int, int, int]:
    if isinstance(v, int):
        return (v, v, v, v)
    t = tuple(int(x) for x in v)
    return (t[0], t[1], t[0], t[1]) if len(t) == 2 else (t[0], t[1], t[2], t[3])


def _padded(x: te.Tensor, padding: tuple[int, int, int, int], value: float) -> te.Tensor:
    pt, pl, pb, pr = padding
    if not any(padding):
        return x
    return pad_op(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)), value, name="pad_data")


def conv2d(data: te.Tensor, kernel: te.Tensor, strides: int | Sequence[int] = 1,
           padding: int | Sequence[int] = 0, dilation: int | Sequence[int] = 1,
           groups: int = 1) -> te.Tensor:
    """NCHW data, OIHW kernel; padding is an int, (h, w) or (top, left, bottom, right)."""
    n, c, h, w = const_shape(data)
    o, ci, kh, kw = const_shape(kernel)
    sh, sw = _pair(strides)
    dh, dw = _pair(dilation)
    pt, pl, pb, pr = _pad4(padding)
    if ci * groups != c or o % groups:
        raise TEError(f"conv2d: {c} input channels, groups={groups} and a kernel of "
                      f"{ci} channels per group do not agree")
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    xp = _padded(data, (pt, pl, pb, pr), 0.0)
    rc = te.reduce_axis((0, ci), name="rc")
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    og = o // groups

    def f(nn: PrimExpr, oo: PrimExpr, p: PrimExpr, q: PrimExpr) -> PrimExpr:
        cin = rc.var if groups == 1 else (oo // og) * ci + rc.var
        return te.sum(xp[nn, cin, p * sh + ry.var * dh, q * sw + rx.var * dw]
                      * kernel[oo, rc, ry, rx], axis=[rc, ry, rx])

    return te.compute((n, o, oh, ow), f, name="conv2d", tag="conv2d")


def _pool_out(size: int, k: int, s: int, lo: int, hi: int) -> int:
    return (size + lo + hi - k) // s + 1


def max_pool2d(data: te.Tensor, pool_size: int | Sequence[int] = 2,
               strides: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0) -> te.Tensor:
    """Max over each window (padding counts as -inf)."""
    n, c, h, w = const_shape(data)
    kh, kw = _pair(pool_size)
    sh, sw = _pair(strides if strides is not None else pool_size)
    pt, pl, pb, pr = _pad4(padding)
    xp = _padded(data, (pt, pl, pb, pr), float("-inf"))
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    shape = (n, c, _pool_out(h, kh, sh, pt, pb), _pool_out(w, kw, sw, pl, pr))
    return te.compute(shape, lambda a, b, p, q: te.max(
        xp[a, b, p * sh + ry.var, q * sw + rx.var], axis=[ry, rx]), name="max_pool2d",
        tag="pool")


def avg_pool2d(data: te.Tensor, pool_size: int | Sequence[int] = 2,
               strides: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, count_include_pad: bool = False) -> te.Tensor:
    """Mean over each window; padded positions are left out of the count unless
    ``count_include_pad``."""
    n, c, h, w = const_shape(data)
    kh, kw = _pair(pool_size)
    sh, sw = _pair(strides if strides is not None else pool_size)
    pt, pl, pb, pr = _pad4(padding)
    xp = _padded(data, (pt, pl, pb, pr), 0.0)
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    oh, ow = _pool_out(h, kh, sh, pt, pb), _pool_out(w, kw, sw, pl, pr)
    s = te.compute((n, c, oh, ow), lambda a, b, p, q: te.sum(
        xp[a, b, p * sh + ry.var, q * sw + rx.var], axis=[ry, rx]), name="pool_sum", tag="pool")
    if count_include_pad or not any((pt, pl, pb, pr)):
        return te.compute(s.shape, lambda *i: s[i] / float(kh * kw), name="avg_pool2d",
                          tag="elemwise")

    def count(p: PrimExpr, q: PrimExpr) -> PrimExpr:
        y0, x0 = p * sh - pt, q * sw - pl
        hh = te.min(y0 + kh, h) - te.max(y0, 0)
        ww = te.min(x0 + kw, w) - te.max(x0, 0)
        return (hh * ww).astype(data.dtype)

    return te.compute(s.shape, lambda a, b, p, q: s[a, b, p, q] / count(p, q),
                      name="avg_pool2d", tag="elemwise")


def global_avg_pool2d(data: te.Tensor) -> te.Tensor:
    """Mean over H and W, keeping them as size-1 axes: (N, C, 1, 1)."""
    n, c, h, w = const_shape(data)
    ry = te.reduce_axis((0, h), name="ry")
    rx = te.reduce_axis((0, w), name="rx")
    s = te.compute((n, c, 1, 1), lambda a, b, p, q: te.sum(data[a, b, ry, rx], axis=[ry, rx]),
                   name="global_pool_sum", tag="pool")
    return te.compute(s.shape, lambda *i: s[i] / float(h * w), name="global_avg_pool2d",
                      tag="elemwise")

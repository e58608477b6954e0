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


def _pair(v: int | Sequence[int], what: str = "strides") -> tuple[int, int]:
    """An int or a pair, each at least 1 (a stride of 0 has no next window)."""
    t = (v, v) if isinstance(v, int) else tuple(int(x) for x in v)
    if len(t) != 2 or min(t) < 1:
        raise TEError(f"{what} must be an int or a pair of ints >= 1, got {v!r}")
    return (t[0], t[1])


def _pad4(v: int | Sequence[int]) -> tuple[int, int, int, int]:
    t = (v,) * 4 if isinstance(v, int) else tuple(int(x) for x in v)
    if len(t) == 2:
        t = (t[0], t[1], t[0], t[1])
    if len(t) != 4 or min(t) < 0:
        raise TEError(f"padding must be an int, (h, w) or (top, left, bottom, right) of "
                      f"ints >= 0, got {v!r}")
    return (t[0], t[1], t[2], t[3])


def _out_size(what: str, oh: int, ow: int) -> None:
    if oh <= 0 or ow <= 0:
        raise TEError(f"{what}: the output would be empty ({oh}x{ow}): the window is larger "
                      "than the padded input")


def _lowest(dtype: str) -> float:
    """Max pooling's padding: -inf for floats, the smallest value of an integer type."""
    import numpy as np

    d = np.dtype(dtype)
    return float("-inf") if d.kind == "f" else float(np.iinfo(d).min)


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
    dh, dw = _pair(dilation, "dilation")
    pt, pl, pb, pr = _pad4(padding)
    if groups < 1 or ci * groups != c or o % groups:
        raise TEError(f"conv2d: {c} input channels, groups={groups} and a kernel of "
                      f"{ci} channels per group do not agree")
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (w + pl + pr - dw * (kw - 1) - 1) // sw + 1
    _out_size("conv2d", oh, ow)
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
    kh, kw = _pair(pool_size, "pool_size")
    sh, sw = _pair(strides if strides is not None else pool_size)
    pt, pl, pb, pr = _pad4(padding)
    xp = _padded(data, (pt, pl, pb, pr), _lowest(data.dtype))
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    shape = (n, c, _pool_out(h, kh, sh, pt, pb), _pool_out(w, kw, sw, pl, pr))
    _out_size("max_pool2d", shape[2], shape[3])
    return te.compute(shape, lambda a, b, p, q: te.max(
        xp[a, b, p * sh + ry.var, q * sw + rx.var], axis=[ry, rx]), name="max_pool2d",
        tag="pool")


def avg_pool2d(data: te.Tensor, pool_size: int | Sequence[int] = 2,
               strides: int | Sequence[int] | None = None,
               padding: int | Sequence[int] = 0, count_include_pad: bool = False) -> te.Tensor:
    """Mean over each window; padded positions are left out of the count unless
    ``count_include_pad``."""
    n, c, h, w = const_shape(data)
    kh, kw = _pair(pool_size, "pool_size")
    sh, sw = _pair(strides if strides is not None else pool_size)
    pt, pl, pb, pr = _pad4(padding)
    xp = _padded(data, (pt, pl, pb, pr), 0.0)
    ry = te.reduce_axis((0, kh), name="ry")
    rx = te.reduce_axis((0, kw), name="rx")
    oh, ow = _pool_out(h, kh, sh, pt, pb), _pool_out(w, kw, sw, pl, pr)
    _out_size("avg_pool2d", oh, ow)
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

"""Softmax and normalization layers (inference).

    softmax(x)[i, j] = exp(x[i, j] - max_j x[i, :]) / sum_j exp(x[i, j] - max_j x[i, :])

Each is several te stages (a max, an exp-sum, a division); the default schedule places the
reductions inside the loop over the rows.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from mlc import te
from mlc.tir.expr import PrimExpr
from mlc.topi.elemwise import const_shape
from mlc.topi.fastmath import exp as _exp


def _with_axis(idx: Sequence[PrimExpr], axis: int, v: PrimExpr) -> tuple[PrimExpr, ...]:
    out = list(idx)
    out[axis] = v
    return tuple(out)


def _drop(idx: Sequence[PrimExpr], axis: int) -> tuple[PrimExpr, ...]:
    return tuple(v for a, v in enumerate(idx) if a != axis)


def _row_stats(x: te.Tensor, axis: int) -> tuple[te.Tensor, te.Tensor, int]:
    shape = const_shape(x)
    axis %= len(shape)
    if _in_lanes(shape, axis):
        return _row_stats_in_lanes(x, axis)
    red = tuple(s for a, s in enumerate(shape) if a != axis)
    k1 = te.reduce_axis((0, shape[axis]), name="k")
    mx = te.compute(red, lambda *i: te.max(x[_with_axis(_ins(i, axis), axis, k1.var)], axis=k1),
                    name="softmax_max", tag="comm_reduce")
    k2 = te.reduce_axis((0, shape[axis]), name="k")
    es = te.compute(red, lambda *i: te.sum(
        _exp(x[_with_axis(_ins(i, axis), axis, k2.var)] - mx[i]), axis=k2),
        name="softmax_expsum", tag="comm_reduce")
    return mx, es, axis


#: a row reduction over the last axis is first done in this many lanes (one float32 vector)
LANES = 16


def _row_stats_in_lanes(x: te.Tensor, axis: int) -> tuple[te.Tensor, te.Tensor, int]:
    """The row's max and exp-sum in two steps, so the long step is vector arithmetic::

        part[r, l] = max over ko of x[r, ko * 16 + l]     (16 running maxima: a vector)
        mx[r]      = max over l of part[r, l]             (16 scalars)

    (and the same for the sum of exp). One scalar reduction per row ran one dependent add
    and one exp per element; the default schedule vectorizes ``l`` (tag ``lanes_reduce``)."""
    red = const_shape(x)[:-1]
    n = const_shape(x)[-1]

    def lanes(name: str, body: Callable[..., PrimExpr], reducer: Callable[..., PrimExpr]
              ) -> te.Tensor:
        return lanes_reduce(red, n, name, body, reducer)

    mx = lanes("softmax_max", lambda i, k: x[tuple(i) + (k,)], te.max)
    es = lanes("softmax_expsum", lambda i, k: _exp(x[tuple(i) + (k,)] - mx[i]), te.sum)
    return mx, es, axis


def lanes_reduce(red: tuple[int, ...], n: int, name: str, body: Callable[..., PrimExpr],
                 reducer: Callable[..., PrimExpr]) -> te.Tensor:
    """``out[r] = reducer over k < n of body(r, k)`` in two steps, 16 lanes first (see
    :func:`_row_stats_in_lanes`); ``n`` must be a multiple of :data:`LANES`."""
    ko = te.reduce_axis((0, n // LANES), name="ko")
    part = te.compute(red + (LANES,), lambda *i: reducer(body(i[:-1], ko.var * LANES + i[-1]),
                                                         axis=ko),
                      name=name + "_part", tag="lanes_reduce")
    kl = te.reduce_axis((0, LANES), name="kl")
    return te.compute(red, lambda *i: reducer(part[tuple(i) + (kl.var,)], axis=kl), name=name,
                      tag="comm_reduce")


def _in_lanes(shape: Sequence[int], axis: int) -> bool:
    """Is the reduction over ``axis`` done in :data:`LANES` lanes first (:func:`lanes_reduce`)?
    The last axis, a multiple of LANES, at least two vectors long."""
    n = shape[axis % len(shape)]
    return axis % len(shape) == len(shape) - 1 and n % LANES == 0 and n >= 2 * LANES


def _ins(i: Sequence[PrimExpr], axis: int) -> list[PrimExpr]:
    out = list(i)
    out.insert(axis, 0)  # type: ignore[arg-type]
    return out


def softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    """Softmax along ``axis``, stabilised by subtracting the maximum."""
    shape = const_shape(x)
    if _in_lanes(shape, axis) and x.dtype == "float32":
        # exp once: e is kept (tag softmax_exp: the schedule does not inline it), summed in
        # lanes and divided; recomputing it in the sum and in the output cost half the time
        red, n = shape[:-1], shape[-1]
        mx = lanes_reduce(red, n, "softmax_max", lambda i, k: x[tuple(i) + (k,)], te.max)
        e = te.compute(shape, lambda *i: _exp(x[i] - mx[i[:-1]]), name="softmax_exp",
                       tag="softmax_exp")
        es = lanes_reduce(red, n, "softmax_expsum", lambda i, k: e[tuple(i) + (k,)], te.sum)
        return te.compute(shape, lambda *i: e[i] / es[i[:-1]], name="softmax", tag="softmax")
    mx, es, axis = _row_stats(x, axis)
    return te.compute(x.shape, lambda *i: _exp(x[i] - mx[_drop(i, axis)]) / es[_drop(i, axis)],
                      name="softmax", tag="softmax")


def log_softmax(x: te.Tensor, axis: int = -1) -> te.Tensor:
    """``x - max - log(sum(exp(x - max)))`` along ``axis``."""
    mx, es, axis = _row_stats(x, axis)
    return te.compute(x.shape, lambda *i: x[i] - mx[_drop(i, axis)] - te.log(es[_drop(i, axis)]),
                      name="log_softmax", tag="softmax")


def bias_add(x: te.Tensor, bias: te.Tensor, axis: int = 1) -> te.Tensor:
    """``x + bias`` with the 1-d bias along ``axis``."""
    axis %= len(x.shape)
    return te.compute(x.shape, lambda *i: x[i] + bias[i[axis]], name="bias_add",
                      tag="broadcast")


def batch_norm(x: te.Tensor, gamma: te.Tensor, beta: te.Tensor, mean: te.Tensor,
               var: te.Tensor, axis: int = 1, epsilon: float = 1e-5) -> te.Tensor:
    """Inference batch norm: ``(x - mean) / sqrt(var + eps) * gamma + beta`` per channel."""
    axis %= len(x.shape)

    def f(*i: PrimExpr) -> PrimExpr:
        c = i[axis]
        return (x[i] - mean[c]) / te.sqrt(var[c] + epsilon) * gamma[c] + beta[c]

    return te.compute(x.shape, f, name="batch_norm", tag="broadcast")


def layer_norm(x: te.Tensor, gamma: te.Tensor, beta: te.Tensor, axis: int = -1,
               epsilon: float = 1e-5) -> te.Tensor:
    """Normalise along ``axis`` to zero mean and unit variance, then scale and shift."""
    shape = const_shape(x)
    axis %= len(shape)
    n = shape[axis]
    red = tuple(s for a, s in enumerate(shape) if a != axis)
    if _in_lanes(shape, axis):  # vector lanes first
        mu = lanes_reduce(red, n, "ln_sum", lambda i, k: x[tuple(i) + (k,)], te.sum)

        def dev2(i: tuple[PrimExpr, ...], k: PrimExpr) -> PrimExpr:
            d = x[tuple(i) + (k,)] - mu[i] / float(n)
            return d * d

        sq = lanes_reduce(red, n, "ln_sqsum", dev2, te.sum)
    else:
        k1 = te.reduce_axis((0, n), name="k")
        mu = te.compute(red, lambda *i: te.sum(
            x[_with_axis(_ins(i, axis), axis, k1.var)], axis=k1), name="ln_sum",
            tag="comm_reduce")
        k2 = te.reduce_axis((0, n), name="k")

        def sqdev(*i: PrimExpr) -> PrimExpr:
            d = x[_with_axis(_ins(i, axis), axis, k2.var)] - mu[i] / float(n)
            return te.sum(d * d, axis=k2)

        sq = te.compute(red, sqdev, name="ln_sqsum", tag="comm_reduce")

    def f(*i: PrimExpr) -> PrimExpr:
        r = _drop(i, axis)
        return ((x[i] - mu[r] / float(n)) * te.rsqrt(sq[r] / float(n) + epsilon)
                * gamma[i[axis]] + beta[i[axis]])

    return te.compute(x.shape, f, name="layer_norm", tag="softmax")

"""Dense layers and matrix products.

    dense(x, w)[i, j]        = sum_k x[i, k] * w[j, k]         (TVM's convention: w is (units, in))
    matmul(a, b)[i, j]       = sum_k a[i, k] * b[k, j]
    batch_matmul(a, b)[b, i, j] = sum_k a[b, i, k] * b[b, j, k]   (transpose_b=True, TVM's default)
    dense_pack(x, wp)[i, j]  = sum_k x[i, k] * wp[j // bn, k, j % bn]
                               (the weight stored in blocks of bn outputs: a vector load each)
"""

from __future__ import annotations

from mlc import te
from mlc.errors import TEError
from mlc.topi.elemwise import const_shape


def dense(x: te.Tensor, w: te.Tensor) -> te.Tensor:
    """``x @ w.T`` for x of shape (batch, in) and w of shape (units, in)."""
    (m, k), (n, k2) = const_shape(x), const_shape(w)
    if k != k2:
        raise TEError(f"dense: x has {k} features but w expects {k2}")
    r = te.reduce_axis((0, k), name="k")
    return te.compute((m, n), lambda i, j: te.sum(x[i, r] * w[j, r], axis=r), name="dense",
                      tag="dense")


def matmul(a: te.Tensor, b: te.Tensor) -> te.Tensor:
    """``a @ b`` for 2-d tensors."""
    (m, k), (k2, n) = const_shape(a), const_shape(b)
    if k != k2:
        raise TEError(f"matmul: a has {k} columns but b has {k2} rows")
    r = te.reduce_axis((0, k), name="k")
    return te.compute((m, n), lambda i, j: te.sum(a[i, r] * b[r, j], axis=r), name="matmul",
                      tag="dense")


def batch_matmul(a: te.Tensor, b: te.Tensor, transpose_b: bool = True) -> te.Tensor:
    """Per batch ``a[i] @ b[i].T`` (or ``a[i] @ b[i]``); a batch of 1 in b broadcasts."""
    ba, m, k = const_shape(a)
    bb = const_shape(b)
    n = bb[1] if transpose_b else bb[2]
    r = te.reduce_axis((0, k), name="k")

    def f(bi, i, j):  # type: ignore[no-untyped-def]
        bidx = 0 if bb[0] == 1 else bi
        rhs = b[bidx, j, r] if transpose_b else b[bidx, r, j]
        return te.sum(a[bi, i, r] * rhs, axis=r)

    return te.compute((ba, m, n), f, name="batch_matmul", tag="dense")


def pack_weight(w: te.Tensor, bn: int) -> te.Tensor:
    """``wp[jo, k, ji] = w[jo * bn + ji, k]``: blocks of ``bn`` output rows, interleaved."""
    n, k = const_shape(w)
    return te.compute((n // bn, k, bn), lambda jo, kk, ji: w[jo * bn + ji, kk],
                      name="pack_weight", tag="injective")


def dense_pack(x: te.Tensor, wp: te.Tensor) -> te.Tensor:
    """Dense on a packed weight (see :func:`pack_weight`)."""
    m, k = const_shape(x)
    nb, k2, bn = const_shape(wp)
    if k != k2:
        raise TEError(f"dense_pack: x has {k} features but the packed weight expects {k2}")
    r = te.reduce_axis((0, k), name="k")
    return te.compute(
        (m, nb * bn), lambda i, j: te.sum(x[i, r] * wp[j // bn, r, j % bn], axis=r),
        name="dense_pack", tag="dense_pack")

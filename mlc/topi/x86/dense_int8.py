"""int8 dense / GEMM (``x @ w.T`` with int32 accumulation) tensorized onto ``vpdpbusd``.

The multiply-add of AVX-512 VNNI, ``vpdpbusd``, takes **unsigned** bytes on one side and
**signed** bytes on the other: for each of 16 int32 lanes it adds 4 products u8 x s8. Our
tensor intrinsic ``dot_16x4_u8i8`` (:mod:`mlc.topi.x86.tensor_intrin`) describes exactly that
step, so the kernel is written to contain it:

1. the weight ``w`` (``units x in``, int8) is packed once, in numpy (:func:`pack_weight`), to
   ``W[n // 16, k // 4, (n % 16) * 4 + k % 4]``: the 64 bytes one instruction reads are
   contiguous; ``units`` is padded to a multiple of 16 and ``in`` to a multiple of 4 with zeros;
2. the activations are ``uint8``: either already (quantized with zero point 128, as
   :mod:`mlc.graph` does) or shifted here, ``u = x + 128``; because
   ``sum(x * w) = sum((x + 128) * w) - 128 * sum(w)``, the kernel subtracts the weight's
   *compensation* ``128 * colsum(w)`` (also made by :func:`pack_weight`);
3. ``acc[i, n // 16, n % 16]`` is the reduction over ``(ko, ki)``, scheduled as
   ``n_o, i_o, ko, i_i (unrolled rows), [n_i(16), ki(4)]`` and the bracketed tile tensorized;
4. ``out[i, n] = acc[i, n // 16, n % 16] - comp[n]`` (plus whatever epilogue a fused graph
   group adds: dequantize, bias, relu, requantize), vectorized.

Without VNNI the same schedule builds: the code generator writes ``dp4a`` as widening
multiply-adds (``vpmaddwd`` on AVX2) and says so once (:mod:`mlc.target.llvm.dot`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import numpy as np

from mlc import te, tir
from mlc.errors import TEError
from mlc.te.prim_func import _topo_order
from mlc.tir.expr import as_int
from mlc.topi.x86.tensor_intrin import LANES, register_dp4a, register_dp4a_u7

GROUP = 4  # bytes per int32 lane of vpdpbusd
WEIGHT_IN_L2 = 256 * 1024  # bytes of packed weight that every row tile may read again


def _ceil(a: int, b: int) -> int:
    return -(-a // b)


def pack_weight(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``w`` (units x in, int8) -> (packed ``[ceil(units/16), ceil(in/4), 64]`` int8, zero
    padded; compensation ``128 * w.sum(1)`` as int32 of length ``units``)."""
    w = np.asarray(w)
    if w.ndim != 2 or w.dtype != np.int8:
        raise TEError(f"pack_weight: w must be a 2-d int8 array (units, in), got {w.dtype} "
                      f"{w.shape}")
    n, k = w.shape
    nb, kb = _ceil(n, LANES), _ceil(k, GROUP)
    padded = np.zeros((nb * LANES, kb * GROUP), np.int8)
    padded[:n, :k] = w
    packed = padded.reshape(nb, LANES, kb, GROUP).transpose(0, 2, 1, 3).reshape(nb, kb, -1)
    comp = 128 * w.astype(np.int32).sum(axis=1, dtype=np.int32)
    return np.ascontiguousarray(packed), comp.astype(np.int32)


def _shape(t: te.Tensor) -> tuple[int, ...]:
    out = tuple(as_int(s) for s in t.shape)
    if any(s is None for s in out):
        raise TEError(f"dense_int8 needs constant shapes, got {t.shape}")
    return cast(tuple[int, ...], out)


def dense_int8(data: te.Tensor, packed: te.Tensor, comp: te.Tensor | None = None,
               units: int | None = None, data_bits: int = 8) -> te.Tensor:
    """``data @ w.T`` in int32 for ``data`` (batch x in, ``int8`` or ``uint8``) and the
    packed weight of :func:`pack_weight`.

    ``comp`` (int32, ``units``) is subtracted from every row: pass the compensation of
    :func:`pack_weight` when ``data`` holds ``x + 128`` as uint8 (zero point 128); for int8
    ``data`` it is required and the shift by 128 is done here. ``units`` (default: all the
    packed rows) drops the padding of the packed weight. ``data_bits=7`` promises uint8
    ``data`` below 128 (a 7-bit quantizer made it): the schedule then uses ``dp4a_u7``, exact
    on AVX2 without VNNI (``vpmaddubsw``)."""
    m, k = _shape(data)
    nb, kb, lanes = _shape(packed)
    if lanes != LANES * GROUP or packed.dtype != "int8" or kb != _ceil(k, GROUP):
        raise TEError(f"dense_int8: the weight must be packed by pack_weight to "
                      f"(units/16, {_ceil(k, GROUP)}, 64) int8 for in={k}; got "
                      f"{packed.dtype} {(nb, kb, lanes)}")
    n = units if units is not None else nb * LANES
    if data.dtype not in ("int8", "uint8"):
        raise TEError(f"dense_int8: data must be int8 or uint8, got {data.dtype}")
    if data.dtype == "int8" and comp is None:
        raise TEError("dense_int8: int8 data is shifted to uint8 (+128) for vpdpbusd; pass "
                      "the weight's compensation (pack_weight's second result) as comp")
    if data_bits not in (7, 8) or (data_bits == 7 and data.dtype != "uint8"):
        raise TEError(f"dense_int8: data_bits=7 means uint8 data below 128; got data_bits="
                      f"{data_bits} for {data.dtype} data")
    u = data
    if data.dtype == "int8" or k % GROUP:
        shift = 128 if data.dtype == "int8" else 0

        def shifted(i: Any, kk: Any) -> Any:
            value = (data[i, kk].astype("int32") + shift).astype("uint8")
            if k % GROUP == 0:
                return value
            return te.if_then_else(kk < k, value, te.const(0, "uint8"))

        u = te.compute((m, kb * GROUP), shifted, name="data_u8", tag="injective")
    ko = te.reduce_axis((0, kb), name="ko")
    ki = te.reduce_axis((0, GROUP), name="ki")
    acc = te.compute(
        (m, nb, LANES),
        lambda i, no, j: te.sum(u[i, ko * GROUP + ki].astype("int32")
                                * packed[no, ko, j * GROUP + ki].astype("int32"), axis=[ko, ki]),
        name="dense_int8", tag="dense_int8", attrs={"data_bits": data_bits})

    def unpack(i: Any, j: Any) -> Any:
        value = acc[i, j // LANES, j % LANES]
        return value - comp[j] if comp is not None else value

    return te.compute((m, n), unpack, name="dense_int8_out", tag="injective")


def _rows(m: int, cap: int) -> int:
    for r in range(min(cap, m), 0, -1):
        if m % r == 0:
            return r
    return 1


def schedule_dense_int8(tensors: Sequence[te.Tensor], rows: int = 4,
                        parallel: bool | None = None) -> tir.Schedule:
    """The schedule of ``te.create_prim_func(tensors)`` (placeholders, then the output) whose
    computation contains one :func:`dense_int8`: its elementwise epilogue (unpack, dequantize,
    bias, relu, requantize...) inlined into the output, the int8 shift kept as its own loop.

    The output is tiled ``rows x 16`` and the accumulators of each tile are computed right
    there (``compute_at``), their ``[16 lanes, 4 bytes]`` step tensorized onto
    ``dot_16x4_u8i8`` (``dot_16x4_u7i8`` for 7-bit data): each tile of int32 accumulators is
    rescaled and stored while it is still in registers. ``rows``: the rows of accumulators
    per tile (a divisor of the batch, so no row tile is partial; a column tile past
    ``units`` is computed on the zero padding of the packed weight and not stored)::

        for i_o in range(batch // rows):             # parallel when the work is large
            for n_o in range(ceil(units / 16)):      # (n_o outside for a weight > L2 / 2)
                acc[i_o, n_o, 0:rows, 0:16] = 0
                for ko in range(in // 4):
                    for i_i in unroll(rows):
                        acc[i, n_o, :] = dp4a(acc[i, n_o, :], x[i, 4ko:4ko+4], W[n_o, ko, :])
                for i_i in unroll(rows):
                    for n_i in vectorized(16):       # n = 16 n_o + n_i < units
                        out[i, n] = epilogue(acc[i, n_o, n_i])
    """
    from mlc.topi.schedule import PARALLEL_MIN_WORK, block_names

    tensors = list(tensors)
    names = block_names(tensors)
    sch = tir.Schedule(te.create_prim_func(tensors))
    order = [t for t in _topo_order(tensors) if not isinstance(t.op, te.PlaceholderOp)]
    anchors = [t for t in order if t.op.tag == "dense_int8"]
    if len(anchors) != 1:
        raise TEError("schedule_dense_int8: the computation must contain one dense_int8")
    acc, out = anchors[0], tensors[-1]
    if out is acc or len(out.shape) != 2:
        raise TEError("schedule_dense_int8: the output must be a (batch, units) tensor "
                      "computed from dense_int8's accumulators (dense_int8's own result)")
    for t in order:
        if t is acc or t is out or t.op.name == "data_u8":
            continue
        sch.compute_inline(sch.get_block(names[id(t.op)]))
    m, nb, _ = _shape(acc)
    op = cast(te.ComputeOp, acc.op)
    kb = as_int(op.reduce_axis[0].dom.extent) or 1
    seven = op.attrs.get("data_bits") == 7
    r = _rows(m, rows)
    # the output's tiles: rows x 16 columns; row tiles outside while the packed weight fits
    # in L2 (each row tile reads all of it), else column tiles outside (one 16-column panel
    # of the weight stays in L1 while the rows stream past it)
    out_blk = sch.get_block(names[id(out.op)])
    i, j = sch.get_loops(out_blk)
    io, ii = sch.split(i, factors=[None, r])
    jo, ji = sch.split(j, factors=[None, LANES])
    rows_outside = nb * kb * LANES * GROUP <= WEIGHT_IN_L2
    outer, inner = (io, jo) if rows_outside else (jo, io)
    sch.reorder(outer, inner, ii, ji)
    # the accumulators of one tile, computed under it: [rows,] 16 lanes, ko, ki
    blk = sch.get_block(names[id(acc.op)])
    sch.compute_at(blk, inner)
    *tile_rows, lanes, ko, ki = sch.get_loops(blk)[2:]  # unit loops are dropped
    sch.reorder(ko, *tile_rows, lanes, ki)
    tile = sch.tensorize(lanes, register_dp4a_u7() if seven else register_dp4a())
    sch.decompose_reduction(tile, ko)  # zero the accumulators before the ko loop
    if tile_rows:
        sch.unroll(tile_rows[0])
    sch.vectorize(ji)
    if r > 1:
        sch.unroll(ii)
    if parallel is None:
        parallel = m * nb * LANES * kb * GROUP >= PARALLEL_MIN_WORK
    if parallel and (m // r if rows_outside else nb) > 1:
        sch.parallel(outer)
    return sch

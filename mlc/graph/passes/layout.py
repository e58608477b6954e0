"""Layout transformation where it pays: pack dense weights at compile time.

``nn.dense(x, w)`` reads ``w[j, k]``: vectorizing over the output axis ``j`` would load with a
stride of ``in_features``. With a constant weight we pay once, at compile time, to store it as
``wp[j // bn, k, j % bn]`` (TVM's ``dense_pack``): the innermost ``bn`` outputs then read
``bn`` contiguous floats, one vector load::

    %y = nn.dense(%x, %w)                       %wp = layout.pack_weight(%w, bn=64)   (folded)
                                   ->           %y = nn.dense_pack(%x, %wp)

``nn.matmul(%x, %w)`` with a constant ``w`` of shape (in, units) -- ONNX ``MatMul`` + ``Add``,
as many exporters write a linear layer -- is the same product with the weight transposed.
Its kernel read ``w[k, j]``: for one output tile the reduction walked ``w`` with a stride of a
whole row (``units`` floats), a new cache line and often a new page for each ``k``. The weight
is transposed at compile time (a constant ``w.T``, then packed as above), so both spellings
build the same kernel::

    %y = nn.matmul(%x, %w)      ->      %y = nn.dense_pack(%x, pack_weight(const(w.T)))
"""

from __future__ import annotations

import numpy as np

from mlc.graph.ir import Call, Constant, Graph, Node, call, const, rewrite


def pick_block(units: int) -> int:
    """The packing block: 64 or 32 outputs when they divide ``units`` (the register tile's
    4 vectors of 16 then read ONE contiguous 256-byte row of the packed weight per step of
    the reduction, not 4 rows a whole (in x 16) block apart: 580 -> 390 us for the
    transformer's 128x1024 @ 1024x256 on one thread), else the largest divisor up to 16 (a
    512-bit float32 vector); 0 when no useful block exists (then the dense is left alone)."""
    for bn in (64, 32):
        if units % bn == 0:
            return bn
    for bn in range(16, 1, -1):
        if units % bn == 0:
            return bn if bn >= 4 or units <= 4 else 0
    return 0


def alter_op_layout(g: Graph) -> Graph:
    """Replace each dense (and matmul) with a constant 2-d weight by ``dense_pack`` on the
    packed weight.
    Run :func:`fold_constant` afterwards to pack the weight at compile time."""
    def fn(n: Call, args: tuple[Node, ...]) -> Node | None:
        if n.op.name not in ("nn.dense", "nn.matmul") or not isinstance(args[1], Constant):
            return None
        w = args[1]
        if n.op.name == "nn.matmul":  # (in, units) -> (units, in), once, at compile time
            w = const(np.ascontiguousarray(w.value.T), name=(w.name or "w") + "_t")
        bn = pick_block(w.shape[0])
        if bn == 0:
            return None if n.op.name == "nn.dense" else call("nn.dense", args[0], w)
        packed = call("layout.pack_weight", w, bn=bn)
        return call("nn.dense_pack", args[0], packed)

    return rewrite(g, fn)

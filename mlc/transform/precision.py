"""``warn_lossy_reductions``: a reduction that accumulates in float16 loses what it adds
once the running value outgrows the format's 11 significant bits (``2048 + 1`` is ``2048``
in float16), so ``te.sum`` over 5000 float16 ones gives 2048.0 where numpy's pairwise sum
gives 5000.0.

mlc keeps TVM's rule, the accumulator has the output's dtype (``C[vi] = C[vi] + A[vi,
vk]`` with ``C`` float16: the printed init ``C[vi] = float16(0.0)`` shows it), because a
float32 accumulator would change what the schedule sees (another buffer, another block)
and what students read in TVM. Instead the build warns, with a :class:`PrecisionWarning`
naming the block, when a float16 reduction adds more than 2048 terms (or a number of terms
only known at run time), and says what works: accumulate in float32 and cast once::

    S = te.compute((1,), lambda i: te.sum(A[k].astype("float32"), axis=k))  # 5000.0

The program is not changed.
"""

from __future__ import annotations

import warnings

from mlc.errors import PrecisionWarning
from mlc.tir import dtype as dt
from mlc.tir.expr import Add, BufferLoad, IntImm, IterKind, PrimExpr
from mlc.tir.functor import collect
from mlc.tir.stmt import BlockRealize, BufferStore, PrimFunc

# terms a float accumulator can add one by one before it stops counting: 2 ** (significand
# bits); past this many ones, x + 1 == x
_EXACT_COUNT = {"float16": 2048, "bfloat16": 256}


def warn_lossy_reductions(func: PrimFunc) -> PrimFunc:
    """Warn for each reduction block accumulating in float16 over more than 2048 terms."""
    for br in collect(func.body, lambda n: isinstance(n, BlockRealize)):
        block = br.block
        if block.init is None:
            continue
        stores = collect(block.body, lambda n: isinstance(n, BufferStore))
        low = [s for s in stores if dt.element(s.buffer.dtype) in _EXACT_COUNT
               and _adds_to_itself(s)]
        if not low:
            continue
        limit = _EXACT_COUNT[dt.element(low[0].buffer.dtype)]
        length: int | None = 1
        extents: list[PrimExpr] = []
        for iv in block.iter_vars:
            if iv.kind is not IterKind.REDUCE:
                continue
            extents.append(iv.dom.extent)
            if isinstance(iv.dom.extent, IntImm) and length is not None:
                length *= iv.dom.extent.value
            else:
                length = None
        if not extents or (length is not None and length <= limit):
            continue
        name, dtype = low[0].buffer.name, dt.element(low[0].buffer.dtype)
        terms = f"{length} terms" if length is not None else (
            f"{' * '.join(str(e) for e in extents)} terms (known at run time)")
        warnings.warn(
            f"block {block.name!r} adds {terms} into {name}, a {dtype} accumulator; past "
            f"{limit} terms {dtype} stops counting (x + 1 == x at {limit}), so the sum "
            f"comes out too small. Accumulate in float32: te.sum(A[k].astype(\"float32\"), "
            f"axis=k) (a float32 output, cast it back with .astype(\"{dtype}\") in a "
            "second compute if needed)",
            PrecisionWarning, stacklevel=2)
    return func


def _adds_to_itself(store: BufferStore) -> bool:
    """``C[...] = C[...] + value`` (a sum; a max or min loses nothing)."""
    v = store.value
    return isinstance(v, Add) and any(
        isinstance(x, BufferLoad) and x.buffer.data is store.buffer.data for x in (v.a, v.b))

"""Lowering: a PrimFunc of blocks -> the flat loop program codegen consumes.

``lower(func)`` runs the passes in :data:`PASSES` (see ``pipeline.py``). The result is the
contract with codegen:

* ``params`` are unchanged: the original multi-dimensional Buffers (symbolic shapes allowed).
* The body contains only ``For`` (SERIAL, PARALLEL, THREAD_BINDING; a VECTORIZED or UNROLLED
  loop that could not be transformed becomes SERIAL), ``IfThenElse``, ``LetStmt``,
  ``SeqStmt``, ``BufferStore``, ``Evaluate`` and ``Allocate``. No Block, no BlockRealize.
* Every BufferLoad/BufferStore has one index into a 1-D buffer
  ``Buffer(name, (numel,), dtype, scope, data=<the original buffer's data Var>)``; there is
  one flat Buffer per original buffer. Codegen identifies memory by ``buffer.data``: the
  params' data vars are the function's pointer arguments, and ``Allocate(flat_buffer, body)``
  defines a new one (scope "local"/"global": stack or heap, codegen's choice; "shared" on GPU).
  A 1-D param buffer is used as it is.
* Vectorized loops are vector expressions: ``Ramp(base, stride, lanes)`` indices make vector
  loads/stores (stride 1: contiguous; another stride: a gather/scatter), ``Broadcast(x,
  lanes)`` widens scalars, dtypes carry lanes (``"float32x8"``). A vector ``Select``'s
  branches never contain loads (its condition may be a vector); an ``IfThenElse`` condition
  is always a scalar.
* The free integer variables of the body are only ``func.size_vars``.

Import the passes from here (``from mlc.transform import lower, PASSES``); ``mlc.lower`` is the
driver function (:mod:`mlc.driver`): a schedule in, this pipeline run on it.
"""

from mlc.transform.check_bounds import check_bounds
from mlc.transform.compact_buffers import compact_buffers
from mlc.transform.flatten_buffers import flatten_buffers
from mlc.transform.lower_blocks import lower_blocks
from mlc.transform.pipeline import PASSES, is_lowered, lower, run_passes
from mlc.transform.simplify import simplify
from mlc.transform.unroll import unroll_loops
from mlc.transform.unswitch import unswitch_loops
from mlc.transform.vectorize import vectorize_loops

convert_blocks_to_loops = lower_blocks

__all__ = [
    "PASSES",
    "check_bounds",
    "compact_buffers",
    "convert_blocks_to_loops",
    "flatten_buffers",
    "is_lowered",
    "lower",
    "run_passes",
    "lower_blocks",
    "simplify",
    "unroll_loops",
    "unswitch_loops",
    "vectorize_loops",
]

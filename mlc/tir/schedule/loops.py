"""Schedule primitives on loops: split, fuse, reorder, the loop kinds, annotations.

These primitives change *how* the iterations of a block are enumerated, never *which*
iterations run: a block's iteration variables keep their domains and only their bindings
(``iter_values``, expressions of the loop variables) are rewritten. That is why they are
always safe up to two checks: the new loop nest must still visit every point exactly once
(split, fuse, reorder), and a loop kind must not break a dependence (``parallel`` on a
reduction, for example).

The primitives live in ``loop_split_fuse.py``, ``loop_reorder.py`` and
``loop_annotations.py`` (shared helpers in ``loop_helpers.py``); ``LoopPrimitives`` combines
them for ``tir.Schedule``.
"""

from __future__ import annotations

from mlc.tir.schedule.loop_annotations import THREAD_AXES, LoopAnnotationPrimitives
from mlc.tir.schedule.loop_helpers import (
    _add_predicate,
    _block_realizes,
    _describe,
    _is_zero,
    _loop_list,
    _mentions_var,
    _product,
    _Rebind,
)
from mlc.tir.schedule.loop_reorder import ReorderPrimitives
from mlc.tir.schedule.loop_split_fuse import SplitFusePrimitives


class LoopPrimitives(SplitFusePrimitives, ReorderPrimitives, LoopAnnotationPrimitives):
    """``split``, ``fuse``, ``reorder``, ``parallel``, ``vectorize``, ``unroll``, ``bind``,
    ``annotate``, ``unannotate``."""


__all__ = [
    "THREAD_AXES",
    "LoopAnnotationPrimitives",
    "LoopPrimitives",
    "ReorderPrimitives",
    "SplitFusePrimitives",
    "_Rebind",
    "_add_predicate",
    "_block_realizes",
    "_describe",
    "_is_zero",
    "_loop_list",
    "_mentions_var",
    "_product",
]

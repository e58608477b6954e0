"""A schedule primitive declares its trace argument kinds where it is defined, by its type
annotations; replay reads them from there (there is no second table to forget)."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import TraceError
from mlc.tir.schedule import LoopRV
from mlc.tir.schedule.trace import arg_kinds


def _primitives() -> list[str]:
    return sorted(n for n, m in inspect.getmembers(tir.Schedule, callable)
                  if not n.startswith("_") and n not in ("copy", "get", "show"))


@pytest.mark.parametrize("name", _primitives())
def test_every_primitive_declares_recordable_arguments(name: str) -> None:
    kinds = arg_kinds(getattr(tir.Schedule, name))
    assert all(k in {"block", "loop", "block_or_loop", "blocks", "loops", "int", "bool", "str",
                     "str_or_null", "factors", "ints", "floats", "decision", "json"}
               for k in kinds.values())


def test_handles_are_read_from_the_annotations() -> None:
    assert arg_kinds(tir.Schedule.split)["loop"] == "loop"
    assert arg_kinds(tir.Schedule.fuse) == {"loops": "loops", "preserve_unit_iters": "bool"}
    assert arg_kinds(tir.Schedule.compute_at)["block"] == "block"


def _gemm_schedule() -> tir.Schedule:
    A = te.placeholder((16, 16), name="A")
    B = te.placeholder((16, 16), name="B")
    k = te.reduce_axis((0, 16), name="k")
    C = te.compute((16, 16), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return tir.Schedule(te.create_prim_func([A, B, C]))


class _WithNewPrimitive(tir.Schedule):
    """What the next contributor writes: a new primitive taking a loop handle (no table to
    register it in), and one whose argument a trace cannot record."""

    def split_in_two(self, loop: LoopRV) -> list[LoopRV]:
        assert isinstance(loop, LoopRV), f"replay passed {loop!r}, not a loop handle"
        return self.split(loop, [2, None])

    def oddly_typed(self, loop: dict) -> None:  # type: ignore[type-arg]
        raise AssertionError("never reached: the annotation is refused first")


_NEW_PRIMITIVE_TRACE = [
    ["get_block", {"name": "C", "func_name": None}, ["b0"]],
    ["get_loops", {"block": "$b0"}, ["l1", "l2", "l3"]],
    ["split_in_two", {"loop": "$l1"}, ["l4", "l5"]],
]


def test_a_new_primitive_replays_with_real_handles() -> None:
    assert arg_kinds(_WithNewPrimitive.split_in_two) == {"loop": "loop"}
    sch = _WithNewPrimitive(_gemm_schedule().mod)
    tir.Trace.apply_json_to_schedule(_NEW_PRIMITIVE_TRACE, sch)
    assert [int(sch.get(lp).extent.value) for lp in sch.get_loops(sch.get_block("C"))] == [
        2, 8, 16, 16]


def test_a_string_where_a_new_primitive_takes_a_loop_is_refused() -> None:
    bad = [*_NEW_PRIMITIVE_TRACE[:2], ["split_in_two", {"loop": "i"}, ["l4", "l5"]]]
    with pytest.raises(TraceError, match="split_in_two"):
        tir.Trace.apply_json_to_schedule(bad, _WithNewPrimitive(_gemm_schedule().mod))


def test_an_annotation_a_trace_cannot_record_is_refused() -> None:
    with pytest.raises(TypeError, match="oddly_typed: parameter 'loop' is annotated"):
        arg_kinds(_WithNewPrimitive.oddly_typed)
    bad = [*_NEW_PRIMITIVE_TRACE[:2], ["oddly_typed", {"loop": "$l1"}, []]]
    with pytest.raises(TraceError, match="cannot record"):
        tir.Trace.apply_json_to_schedule(bad, _WithNewPrimitive(_gemm_schedule().mod))


def test_replay_of_every_recorded_kind_still_computes_the_same() -> None:
    sch = _gemm_schedule()
    blk = sch.get_block("C")
    i, j, k = sch.get_loops(blk)
    io, ii = sch.split(i, [4, None])
    sch.reorder(io, j, ii)
    sch.parallel(io)
    f = mlc.build(sch.mod)
    a, b = np.random.rand(16, 16).astype("float32"), np.random.rand(16, 16).astype("float32")
    c = np.zeros((16, 16), "float32")
    f(a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5)
    with pytest.raises(TraceError):
        from mlc.tir.schedule.trace import _arg_kinds
        _arg_kinds(sch, 0, "copy")

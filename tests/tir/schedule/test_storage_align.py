"""storage_align: padded strides, same results."""

from __future__ import annotations

import pytest
from block_programs import chain, chain_ref, check

from mlc import tir
from mlc.errors import ScheduleError
from mlc.tir import IntImm
from mlc.tir.schedule import state


def _strides(sch: tir.Schedule, name: str) -> list[int]:
    loc = state.find_block(sch.mod, "B")
    assert loc is not None
    (region,) = [w for w in loc.stmt.block.writes if w.buffer.name == name]  # type: ignore[attr-defined]
    return [s.value for s in region.buffer.strides if isinstance(s, IntImm)]


def test_storage_align_pads_row_stride() -> None:
    sch = tir.Schedule(chain(8, 6))
    sch.storage_align(sch.get_block("B"), 0, axis=0, factor=8, offset=1)
    assert _strides(sch, "B") == [9, 1]  # 6 padded to 9: 9 % 8 == 1
    assert "strides=(9, 1)" in str(sch.mod) or "(9, 1)" in str(sch.mod)
    check(sch.mod, chain_ref, (8, 6))


def test_storage_align_already_aligned_keeps_stride() -> None:
    sch = tir.Schedule(chain(8, 8))
    sch.storage_align(sch.get_block("B"), 0, axis=0, factor=4, offset=0)
    assert _strides(sch, "B") == [8, 1]


def test_storage_align_every_use_sees_new_buffer() -> None:
    sch = tir.Schedule(chain(8, 6))
    sch.storage_align(sch.get_block("B"), 0, axis=-2, factor=4, offset=2)
    assert _strides(sch, "B") == [6, 1]
    sch.storage_align(sch.get_block("B"), 0, axis=0, factor=4, offset=3)
    assert _strides(sch, "B") == [7, 1]
    loc = state.find_block(sch.mod, "C")
    assert loc is not None
    assert [s.value for s in loc.stmt.block.reads[0].buffer.strides] == [7, 1]  # type: ignore[attr-defined]
    check(sch.mod, chain_ref, (8, 6))


def test_storage_align_refusals() -> None:
    sch = tir.Schedule(chain())
    with pytest.raises(ScheduleError, match="'C' is a parameter of the function"):
        sch.storage_align(sch.get_block("C"), 0, 0, 8, 1)
    with pytest.raises(ScheduleError, match="axis 2 is out of range for 'B'"):
        sch.storage_align(sch.get_block("B"), 0, 2, 8, 1)
    with pytest.raises(ScheduleError, match="need factor > 0 and 0 <= offset < factor"):
        sch.storage_align(sch.get_block("B"), 0, 0, 8, 8)

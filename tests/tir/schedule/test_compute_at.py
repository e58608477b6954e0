"""compute_at and reverse_compute_at: the IR they produce, what it computes, their refusals."""

from __future__ import annotations

import textwrap

import pytest
from block_programs import (
    chain,
    chain_ref,
    check,
    conv_padded,
    conv_padded_ref,
    matmul_relu,
    matmul_relu_ref,
    softmax,
    softmax_ref,
)

from mlc import tir
from mlc.errors import ScheduleError


def _body(sch: tir.Schedule) -> str:
    return str(sch.mod).split("\n", 2)[2]


def test_compute_at_elementwise_ir_and_result() -> None:
    sch = tir.Schedule(chain())
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), i)
    expected = textwrap.dedent(
        """\
            B = alloc_buffer((8, 6), "float32")
            for i in range(8):
                for ax0 in range(6):
                    with block("B"):
                        vi = axis.spatial(8, i)
                        vj = axis.spatial(6, ax0)
                        reads(A[vi, vj])
                        writes(B[vi, vj])
                        B[vi, vj] = A[vi, vj] * 2.0
                for j in range(6):
                    with block("C"):
                        vi_1 = axis.spatial(8, i)
                        vj_1 = axis.spatial(6, j)
                        reads(B[vi_1, vj_1])
                        writes(C[vi_1, vj_1])
                        C[vi_1, vj_1] = B[vi_1, vj_1] + 1.0
        """
    )
    assert textwrap.dedent(_body(sch)).strip() == expected.strip()
    check(sch.mod, chain_ref, (8, 6))


def test_compute_at_inner_loop_drops_unit_loops_unless_preserved() -> None:
    sch = tir.Schedule(chain())
    _, j = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), j)
    assert "ax0" not in str(sch.mod)
    check(sch.mod, chain_ref, (8, 6))
    sch = tir.Schedule(chain())
    _, j = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), j, preserve_unit_loops=True)
    assert "for ax0 in range(1):" in str(sch.mod)
    check(sch.mod, chain_ref, (8, 6))


def test_compute_at_tile_of_split_consumer() -> None:
    sch = tir.Schedule(chain())
    i, j = sch.get_loops(sch.get_block("C"))
    io, ii = sch.split(i, factors=[None, 4])
    jo, ji = sch.split(j, factors=[None, 3])
    sch.reorder(io, jo, ii, ji)
    sch.compute_at(sch.get_block("B"), jo)
    text = str(sch.mod)
    assert "for ax0 in range(4):" in text and "for ax1 in range(3):" in text
    check(sch.mod, chain_ref, (8, 6))


def test_compute_at_non_dividing_split_is_guarded() -> None:
    sch = tir.Schedule(chain(n=7))
    i, _ = sch.get_loops(sch.get_block("C"))
    io, _ = sch.split(i, factors=[None, 3])
    sch.compute_at(sch.get_block("B"), io)
    check(sch.mod, chain_ref, (7, 6))


def test_compute_at_matmul_keeps_reduction_loop() -> None:
    sch = tir.Schedule(matmul_relu())
    i, j = sch.get_loops(sch.get_block("D"))
    sch.compute_at(sch.get_block("C"), j)
    loops = [sch.mod]  # the C block keeps its own k loop
    assert "for k in range(8):" in str(loops[0])
    check(sch.mod, matmul_relu_ref, (8, 8), (8, 6))


def test_compute_at_padded_conv_covers_the_halo() -> None:
    sch = tir.Schedule(conv_padded())
    i, _ = sch.get_loops(sch.get_block("C"))[:2]
    sch.compute_at(sch.get_block("Apad"), i)
    text = str(sch.mod)
    assert "for ax0 in range(3):" in text  # rows i .. i + 2 of the padded input
    check(sch.mod, conv_padded_ref, (6, 6), (3, 3))


def test_compute_at_softmax_row_by_row() -> None:
    sch = tir.Schedule(softmax())
    sch.compute_inline(sch.get_block("T_exp"))
    i = sch.get_loops(sch.get_block("T_softmax"))[0]
    sch.compute_at(sch.get_block("T_sum"), i)
    sch.compute_at(sch.get_block("T_max"), i)
    check(sch.mod, softmax_ref, (4, 8))


def test_reverse_compute_at_relu_into_matmul_row() -> None:
    sch = tir.Schedule(matmul_relu())
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.reverse_compute_at(sch.get_block("D"), i)
    text = str(sch.mod)
    assert "for ax0 in range(6):" in text
    check(sch.mod, matmul_relu_ref, (8, 8), (8, 6))


def test_reverse_compute_at_softmax_normalize_under_sum() -> None:
    sch = tir.Schedule(softmax())
    i = sch.get_loops(sch.get_block("T_sum"))[0]
    sch.reverse_compute_at(sch.get_block("T_softmax"), i)
    check(sch.mod, softmax_ref, (4, 8))


def test_replay_trace_of_compute_at() -> None:
    sch = tir.Schedule(chain())
    i, _ = sch.get_loops(sch.get_block("C"))
    sch.compute_at(sch.get_block("B"), i)
    sch2 = tir.Schedule(chain())
    tir.Trace.apply_json_to_schedule(sch.trace.as_json(), sch2)
    assert str(sch2.mod) == str(sch.mod)


# -- refusals ------------------------------------------------------------------------------


def test_compute_at_refuses_output_block() -> None:
    sch = tir.Schedule(chain())
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="block 'C' writes 'C', an output of the function"):
        sch.compute_at(sch.get_block("C"), i)


def test_compute_at_refuses_loop_of_non_consumer() -> None:
    sch = tir.Schedule(softmax())
    i = sch.get_loops(sch.get_block("T_sum"))[0]
    with pytest.raises(ScheduleError, match="'T_max' produces nothing that a block under loop"):
        sch.compute_at(sch.get_block("T_max"), i)


def test_compute_at_refuses_consumer_outside_loop() -> None:
    sch = tir.Schedule(softmax())
    sch.compute_inline(sch.get_block("T_exp"))  # now T_sum and T_softmax read T_max
    i = sch.get_loops(sch.get_block("T_sum"))[0]
    with pytest.raises(ScheduleError, match="block 'T_softmax', outside loop 'i'"):
        sch.compute_at(sch.get_block("T_max"), i)


def test_compute_at_refuses_a_loop_of_its_own_nest() -> None:
    sch = tir.Schedule(chain())
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError, match="block 'B' is already inside loop 'i'"):
        sch.compute_at(sch.get_block("B"), i)


def test_reverse_compute_at_refuses_inside_reduction() -> None:
    sch = tir.Schedule(matmul_relu())
    _, _, k = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="inside the reduction of block 'C'.*not yet produced"):
        sch.reverse_compute_at(sch.get_block("D"), k)


def test_reverse_compute_at_refuses_before_loop() -> None:
    sch = tir.Schedule(chain())
    i, _ = sch.get_loops(sch.get_block("C"))
    with pytest.raises(ScheduleError, match="reads nothing that a block under loop"):
        sch.reverse_compute_at(sch.get_block("B"), i)


def test_refusal_message_shows_the_program() -> None:
    sch = tir.Schedule(chain())
    i, _ = sch.get_loops(sch.get_block("B"))
    with pytest.raises(ScheduleError) as info:
        sch.compute_at(sch.get_block("C"), i)
    assert "@prim_func" in str(info.value) and 'with block("C")' in str(info.value)

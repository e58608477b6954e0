"""compute_inline and reverse_compute_inline."""

from __future__ import annotations

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

from mlc import te, tir
from mlc.errors import ScheduleError


def test_compute_inline_chain() -> None:
    sch = tir.Schedule(chain())
    sch.compute_inline(sch.get_block("B"))
    text = str(sch.mod)
    assert "C[vi, vj] = A[vi, vj] * 2.0 + 1.0" in text
    assert "alloc_buffer" not in text and 'block("B")' not in text
    assert "reads(A[vi, vj])" in text
    check(sch.mod, chain_ref, (8, 6))


def test_compute_inline_padding_into_conv() -> None:
    sch = tir.Schedule(conv_padded())
    sch.compute_inline(sch.get_block("Apad"))
    text = str(sch.mod)
    assert "Apad" not in text and "A[" in text
    check(sch.mod, conv_padded_ref, (6, 6), (3, 3))


def test_compute_inline_into_two_consumers() -> None:
    sch = tir.Schedule(softmax())
    sch.compute_inline(sch.get_block("T_exp"))
    assert "T_exp" not in str(sch.mod)
    check(sch.mod, softmax_ref, (4, 8))


def test_reverse_compute_inline_chain() -> None:
    sch = tir.Schedule(chain())
    sch.reverse_compute_inline(sch.get_block("C"))
    text = str(sch.mod)
    assert "C[vi, vj] = A[vi, vj] * 2.0 + 1.0" in text
    assert 'block("C")' not in text and "alloc_buffer" not in text
    check(sch.mod, chain_ref, (8, 6))


def test_inline_trace_replays() -> None:
    sch = tir.Schedule(chain())
    sch.compute_inline(sch.get_block("B"))
    sch2 = tir.Schedule(chain())
    sch.trace.apply_to_schedule(sch2)
    assert str(sch2.mod) == str(sch.mod)


def test_compute_inline_refuses_reduction() -> None:
    sch = tir.Schedule(matmul_relu())
    with pytest.raises(ScheduleError, match="block 'C' is not elementwise"):
        sch.compute_inline(sch.get_block("C"))


def test_compute_inline_refuses_output() -> None:
    sch = tir.Schedule(chain())
    with pytest.raises(ScheduleError, match="'C', a parameter of the function"):
        sch.compute_inline(sch.get_block("C"))


def test_reverse_compute_inline_refuses_reduction_producer() -> None:
    sch = tir.Schedule(matmul_relu())
    with pytest.raises(ScheduleError, match="the producer 'C' is a reduction"):
        sch.reverse_compute_inline(sch.get_block("D"))
    check(sch.mod, matmul_relu_ref, (8, 8), (8, 6))  # unchanged


def test_reverse_compute_inline_refuses_two_intermediates() -> None:
    sch = tir.Schedule(softmax())
    with pytest.raises(ScheduleError, match="must read exactly one buffer that another block"):
        sch.reverse_compute_inline(sch.get_block("T_softmax"))


def test_reverse_compute_inline_refuses_shared_intermediate() -> None:
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    C = te.compute((4,), lambda i: B[i] * 2.0, name="C")
    D = te.compute((4,), lambda i: B[i] - 1.0, name="D")
    sch = tir.Schedule(te.create_prim_func([A, C, D]))
    with pytest.raises(ScheduleError, match="'B' is also used by block 'D'"):
        sch.reverse_compute_inline(sch.get_block("C"))


def test_inlined_block_handle_is_gone() -> None:
    sch = tir.Schedule(chain())
    b = sch.get_block("B")
    sch.compute_inline(b)
    with pytest.raises(ScheduleError, match="block 'B' is no longer in the program"):
        sch.get_loops(b)

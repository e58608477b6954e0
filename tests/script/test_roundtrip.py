"""Property: printing a program and reading the text back gives a structurally equal program.

Over every program the tir tests build (the random-schedule cases, the block programs, the
hand-built matmul), over random schedules drawn by the schedule fuzzer of
``tests/tir/schedule/test_random_schedules.py``, and over their lowered forms (flat buffers,
vectors, allocations). Both spellings round-trip: ``print(func)`` and ``func.script()``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mlc
from mlc import te, tir
from mlc.errors import ScheduleError
from mlc.script import from_source
from mlc.tir import IRMutator

_TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(_TESTS / "tir" / "schedule"))
sys.path.insert(0, str(_TESTS / "tir"))

import block_programs  # noqa: E402
from test_random_schedules import CASES, STEPS, _step  # noqa: E402
from tir_programs import make_matmul  # noqa: E402


class _FlattenSeq(IRMutator):
    """Nested SeqStmts print as one sequence (rfactor leaves some); compare them flat."""

    def visit_SeqStmt(self, op: tir.SeqStmt) -> tir.Stmt:
        return tir.seq(*(self.visit(s) for s in op.seq))


def check_roundtrip(func: tir.PrimFunc, lowered: bool = False) -> None:
    func = func.with_body(_FlattenSeq().visit(func.body))
    for text in (str(func), func.script()):
        back = from_source(text)
        # lowered code reads flat views of its parameters: buffers the function never
        # defines, which correspond (rather than being the same objects) when read back
        tir.assert_structural_equal(func, back, map_free_vars=lowered)
        # and the text is a fixed point of print -> parse -> print
        assert (str(back) if text == str(func) else back.script()) == text


def _block_programs() -> dict[str, tir.PrimFunc]:
    return {
        "chain": block_programs.chain(),
        "matmul_relu": block_programs.matmul_relu(),
        "matmul": block_programs.matmul(),
        "conv_padded": block_programs.conv_padded(),
        "softmax": block_programs.softmax(),
    }


def _te_programs() -> dict[str, tir.PrimFunc]:
    n = te.var("n")
    A = te.placeholder((n, 4), name="A")
    B = te.compute((n, 4), lambda i, j: te.exp(A[i, j]).astype("float64") * 2.0, name="B")
    X = te.placeholder((8,), "int32", name="X")
    Y = te.compute((8,), lambda i: te.if_then_else(X[i] % 3 == 0, X[i] // 2, -X[i]), name="Y")
    H = te.placeholder((8,), "float16", name="H")
    G = te.compute((8,), lambda i: te.max(H[i], te.const(0.5, "float16")), name="G")
    return {
        "symbolic_cast": te.create_prim_func([A, B]),
        "int_ops": te.create_prim_func([X, Y]),
        "half": te.create_prim_func([H, G]),
        "hand_built_matmul": make_matmul(16),
    }


PROGRAMS = {**{k: f().func for k, f in CASES.items()}, **_block_programs(), **_te_programs()}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_every_test_program_round_trips(name: str) -> None:
    check_roundtrip(PROGRAMS[name])


@pytest.mark.parametrize("name", ["matmul", "softmax", "conv2d_pad", "vadd_symbolic"])
def test_lowered_programs_round_trip(name: str) -> None:
    sch = tir.Schedule(CASES[name]().func)
    loops = sch.get_loops(sch.get_block("C" if name in ("matmul", "vadd_symbolic") else "Y"))
    _, inner = sch.split(loops[-1], factors=[None, 4])
    if name in ("vadd_symbolic", "softmax"):  # a spatial innermost loop
        sch.vectorize(inner)
    check_roundtrip(mlc.lower(sch.mod), lowered=True)


@pytest.mark.parametrize("name", list(CASES))
@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_random_schedules_round_trip(name: str, data: st.DataObject) -> None:
    sch = tir.Schedule(CASES[name]().func, seed=0)
    for _ in range(data.draw(st.integers(1, 6), label="steps")):
        try:
            _step(sch, data, data.draw(st.sampled_from(STEPS), label="primitive"))
        except ScheduleError:
            pass
    check_roundtrip(sch.mod)

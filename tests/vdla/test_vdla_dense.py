"""A quantized dense layer fully on VDLA through te: the GEMM tensorized, then bias, relu and
requantization (round, shift, clip) on the ALU in acc_buffer, then an int8 STORE."""

from __future__ import annotations

import numpy as np
import pytest

import mlc
from mlc import vdla
from mlc.vdla import Alu, AluOp, Store
from mlc.vdla.schedules import dense_schedule


def reference(a: np.ndarray, w: np.ndarray, b: np.ndarray, shift: int | None,
              relu: bool) -> np.ndarray:
    v = a.astype(np.int64) @ w.astype(np.int64).T + b
    if relu:
        v = np.maximum(v, 0)
    if shift is None:
        return v.astype(np.int32)
    if shift:
        v = (v + (1 << (shift - 1))) >> shift
    return np.clip(v, 0 if relu else -128, 127).astype(np.int8)


def run(m: int, n: int, k: int, shift: int | None, relu: bool, block: int = 8,
        threads: int = 1, seed: int = 0) -> tuple[np.ndarray, np.ndarray, vdla.Stats, object]:
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    b = rng.integers(-5000, 5000, n).astype(np.int32)
    s, args = dense_schedule(m, n, k, shift=shift, relu=relu, block=block, threads=threads)
    f = mlc.build(s, args, target="vdla")
    out = np.zeros((m, n), np.int32 if shift is None else np.int8)
    stats = f(a, w, np.tile(b, (8, 1)), out)
    return out, reference(a, w, b, shift, relu), stats, f


@pytest.mark.parametrize("shift,relu", [(None, False), (None, True), (7, True), (0, True),
                                        (5, False)])
def test_dense_bias_relu_requantize_matches_numpy(shift: int | None, relu: bool) -> None:
    out, ref, stats, _ = run(32, 24, 40, shift, relu)
    np.testing.assert_array_equal(out, ref)
    assert stats.macs == 32 * 24 * 40


@pytest.mark.parametrize("block,threads", [(16, 1), (8, 2), (16, 2)])
def test_dense_with_blocks_and_virtual_threads(block: int, threads: int) -> None:
    out, ref, _, f = run(64, 16, 24, 6, True, block=block, threads=threads, seed=1)
    np.testing.assert_array_equal(out, ref)
    if threads > 1:
        assert "@TID1" in f.get_source()


def test_the_int8_store_wraps_what_the_alu_did_not_clip() -> None:
    # the ALU clips to 0..127 before the narrowing STORE; without the clip the STORE would
    # keep the low 8 bits, so saturated outputs show the clip ran on the accelerator
    out, ref, _, _ = run(16, 16, 64, 2, True, seed=3)
    np.testing.assert_array_equal(out, ref)
    assert (out == 127).any() and (out == 0).any()


def test_the_epilogue_is_alu_instructions_and_an_int8_store() -> None:
    _, _, _, f = run(16, 16, 16, 6, True)
    program = f.program  # type: ignore[attr-defined]
    alus = [i for i in program.instructions if isinstance(i, Alu)]
    ops = [i.op for i in alus[:7]]
    # D = C (MUL 0, ADD C), + bias (repeated row of tiles), relu, round, shift, clip
    assert ops == [AluOp.MUL, AluOp.ADD, AluOp.ADD, AluOp.MAX, AluOp.ADD, AluOp.SHR,
                   AluOp.MIN]
    bias_add = alus[2]
    assert bias_add.imm is None and bias_add.src_factor == (0, 1)   # every row: one bias row
    assert (alus[4].imm, alus[5].imm, alus[6].imm) == (32, 6, 127)
    stores = [i for i in program.instructions if isinstance(i, Store)]
    assert stores and all(s.dtype == "int8" for s in stores)


def test_lowered_epilogue_reads_like_alu_calls() -> None:
    s, args = dense_schedule(16, 16, 16, shift=6, relu=True)
    text = str(mlc.lower(s, args, target="vdla"))
    assert ('vdla.alu("ADD", access_ptr(D[0, 0], "w"), access_ptr(Bias_local_acc_buffer[0, '
            'x_0 * 16], "r"), "acc", 8, 16, "repeat_src")') in text
    assert 'vdla.alu("SHR", access_ptr(D[0, 0], "w"), access_ptr(D[0, 0], "w"), 6, 8, 16)' \
        in text
    # weights and bias are loaded once, before the loop over blocks of rows
    assert text.index('access_ptr(W[0, 0], "r"), 16, 16)') < text.index("for y_0 in")


def test_a_repeated_bias_row_may_come_first() -> None:
    from mlc import te

    m, n, k = 16, 8, 8
    A = te.placeholder((m, k), name="A", dtype="int8")
    W = te.placeholder((n, k), name="W", dtype="int8")
    bias = te.placeholder((8, n), name="Bias", dtype="int32")
    r = te.reduce_axis((0, k), name="k")
    C = te.compute((m, n), lambda y, x: te.sum(
        A[y, r].astype("int32") * W[x, r].astype("int32"), axis=r), name="C")
    D = te.compute((m, n), lambda y, x: bias[y % 8, x] + C[y, x], name="D")
    O = te.compute((m, n), lambda y, x: D[y, x], name="O")
    s = te.create_schedule(O.op)
    s[C].set_scope(vdla.acc_buffer)
    s[D].set_scope(vdla.acc_buffer)
    s.cache_read(A, vdla.inp_buffer, [C])
    s.cache_read(W, vdla.wgt_buffer, [C])
    s.cache_read(bias, vdla.acc_buffer, [D])
    yo, xo, _, _ = s[O].tile(*s[O].op.axis, 8, 8)
    s[C].compute_at(s[O], xo)
    s[D].compute_at(s[O], xo)
    yc, xc = s[C].op.axis
    s[C].tensorize(yc, vdla.gemm8x8)
    f = mlc.build(s, [A, W, bias, O], target="vdla")
    rng = np.random.default_rng(4)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    b = rng.integers(-5000, 5000, n).astype(np.int32)
    out = np.zeros((m, n), np.int32)
    f(a, w, np.tile(b, (8, 1)), out)
    np.testing.assert_array_equal(out, reference(a, w, b, None, False))
    assert any(isinstance(i, Alu) and i.src_factor == (0, 1) for i in f.program.instructions)

"""Each instruction's arithmetic against a plain-loop reference of its definition."""

from __future__ import annotations

import numpy as np
import pytest

from mlc import vdla
from mlc.vdla import DRAM, Alu, AluOp, Gemm, Module, ProgramBuilder, UOp, inp_buffer, simulate
from mlc.vdla.execute import Machine
from mlc.vdla.verify import Info

CFG = vdla.DEFAULT


def _machine(seed: int = 0) -> Machine:
    rng = np.random.default_rng(seed)
    m = Machine(CFG, DRAM())
    m.inp[:64] = rng.integers(-128, 128, m.inp[:64].shape)
    m.wgt[:64] = rng.integers(-128, 128, m.wgt[:64].shape)
    m.acc[:64] = rng.integers(-1000, 1000, m.acc[:64].shape)
    return m


def _info(kernel: list[UOp], lp0: int, lp1: int) -> Info:
    return Info(0, Module.COMPUTE, (), 1, 0, lp0 * lp1 * len(kernel), tuple(kernel))


def _reference_gemm(m: Machine, ins: Gemm, kernel: list[UOp]) -> np.ndarray:
    acc = m.acc.astype(np.int64)
    for y in range(ins.lp0):
        for x in range(ins.lp1):
            for u in kernel:
                d = ins.acc_factor[0] * y + ins.acc_factor[1] * x + u.dst
                if ins.reset:
                    acc[d] = 0
                    continue
                i = ins.inp_factor[0] * y + ins.inp_factor[1] * x + u.src
                w = ins.wgt_factor[0] * y + ins.wgt_factor[1] * x + u.wgt
                acc[d] += m.inp[i].astype(np.int64) @ m.wgt[w].astype(np.int64).T
    return ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)


GEMM_CASES = [
    # the dense GEMM kernel (one matrix product)
    (Gemm(uop_begin=0, uop_end=3, lp0=2, lp1=4, acc_factor=(4, 1), inp_factor=(3, 0),
          wgt_factor=(0, 3)), [UOp(0, k, k) for k in range(3)]),
    # a convolution kernel: shared weights, shifted inputs, two output groups
    (Gemm(uop_begin=0, uop_end=4, lp0=2, lp1=3, acc_factor=(3, 1), inp_factor=(5, 1)),
     [UOp(0, 0, 0), UOp(0, 1, 1), UOp(6, 5, 2), UOp(6, 6, 3)]),
    # weights that move with y and x: one batched product per uop
    (Gemm(uop_begin=0, uop_end=2, lp0=3, lp1=2, acc_factor=(2, 1), inp_factor=(1, 1),
          wgt_factor=(2, 1)), [UOp(0, 0, 0), UOp(10, 3, 7)]),
    # every x adds into the same tile (a reduction inside the loop)
    (Gemm(uop_begin=0, uop_end=2, lp0=2, lp1=5, acc_factor=(1, 0), inp_factor=(5, 1),
          wgt_factor=(0, 1)), [UOp(0, 0, 0), UOp(1, 20, 9)]),
    # negative factors
    (Gemm(uop_begin=0, uop_end=1, lp0=3, lp1=3, acc_factor=(-3, -1), inp_factor=(3, 1),
          wgt_factor=(0, -2)), [UOp(40, 0, 30)]),
    # reset (fill_zero)
    (Gemm(uop_begin=0, uop_end=1, lp0=2, lp1=3, acc_factor=(3, 1), reset=True), [UOp(5, 0, 0)]),
]


@pytest.mark.parametrize("ins,kernel", GEMM_CASES)
def test_gemm_matches_the_loop_definition(ins: Gemm, kernel: list[UOp]) -> None:
    m = _machine()
    expected = _reference_gemm(m, ins, kernel)
    m.run(ins, _info(kernel, ins.lp0, ins.lp1))
    np.testing.assert_array_equal(m.acc, expected)


def _reference_alu(m: Machine, ins: Alu, kernel: list[UOp]) -> np.ndarray:
    acc = m.acc.astype(np.int64)
    for y in range(ins.lp0):
        for x in range(ins.lp1):
            for u in kernel:
                d = ins.dst_factor[0] * y + ins.dst_factor[1] * x + u.dst
                s = ins.src_factor[0] * y + ins.src_factor[1] * x + u.src
                b = np.int64(ins.imm) if ins.imm is not None else acc[s]
                a = acc[d]
                if ins.op is AluOp.MIN:
                    out = np.minimum(a, b)
                elif ins.op is AluOp.MAX:
                    out = np.maximum(a, b)
                elif ins.op is AluOp.ADD:
                    out = a + b
                elif ins.op is AluOp.MUL:
                    out = a * b
                else:
                    out = a >> np.clip(b, 0, 31)
                acc[d] = (out + 2**31) % 2**32 - 2**31
    return acc.astype(np.int32)


ALU_KERNELS = [
    # element-wise over distinct tiles, src elsewhere
    (dict(lp0=2, lp1=3, dst_factor=(3, 1), src_factor=(3, 1)), [UOp(0, 20), UOp(6, 30)]),
    # max-pool style: four sources into one destination per (y, x)
    (dict(lp0=2, lp1=2, dst_factor=(2, 1), src_factor=(8, 2)),
     [UOp(40, 0), UOp(40, 1), UOp(40, 4), UOp(40, 5)]),
    # in place with itself
    (dict(lp0=1, lp1=4, dst_factor=(0, 1), src_factor=(0, 1)), [UOp(3, 3)]),
    # a chain: each iteration reads the tile the previous one wrote
    (dict(lp0=1, lp1=5, dst_factor=(0, 1), src_factor=(0, 1)), [UOp(11, 10)]),
    # every iteration into one tile
    (dict(lp0=3, lp1=2, dst_factor=(0, 0), src_factor=(2, 1)), [UOp(50, 0)]),
]


@pytest.mark.parametrize("op", list(AluOp))
@pytest.mark.parametrize("fields,kernel", ALU_KERNELS)
@pytest.mark.parametrize("imm", [None, 3, -7])
def test_alu_matches_the_loop_definition(op: AluOp, fields: dict, kernel: list[UOp],
                                         imm: int | None) -> None:
    if op is AluOp.SHR and imm is not None and imm < 0:
        imm = -imm
    ins = Alu(op=op, uop_begin=0, uop_end=len(kernel), imm=imm, **fields)
    m = _machine(1)
    if op is AluOp.SHR:
        m.acc[:64] = np.where(np.arange(64)[:, None, None] % 2 == 0, m.acc[:64],
                              np.abs(m.acc[:64]) % 40 - 5)
    expected = _reference_alu(m, ins, kernel)
    m.run(ins, _info(kernel, ins.lp0, ins.lp1))
    np.testing.assert_array_equal(m.acc, expected)


def test_alu_add_and_mul_wrap_like_int32() -> None:
    m = Machine(CFG, DRAM())
    m.acc[0] = 2**31 - 1
    m.run(Alu(op=AluOp.ADD, uop_begin=0, uop_end=1, lp0=1, lp1=1, imm=1),
          _info([UOp(0, 0)], 1, 1))
    assert (m.acc[0] == -(2**31)).all()
    m.acc[1] = 65536
    m.run(Alu(op=AluOp.MUL, uop_begin=0, uop_end=1, lp0=1, lp1=1, imm=65536),
          _info([UOp(1, 0)], 1, 1))
    assert (m.acc[1] == 0).all()


def _roundtrip(a_tiles: np.ndarray, y: int, x: int, stride: int, y_pad: tuple[int, int],
               x_pad: tuple[int, int], dtype: str = "int32"
               ) -> tuple[np.ndarray, int]:
    """LOAD a padded block of input tiles, multiply by the identity, STORE it back."""
    dram = DRAM()
    src = dram.put("A", a_tiles)
    ident = dram.put("I", np.eye(8, dtype=np.int8)[None])
    rows, cols = y + sum(y_pad), x + sum(x_pad)
    out_tile = 64 * (4 if dtype == "int32" else 1)
    dst = dram.alloc("C", rows * cols * out_tile)
    b = ProgramBuilder()
    b.load_uops(0, b.uop_kernel([UOp(0, 0, 0)]), 1)
    b.load(inp_buffer, 0, src.tile(inp_buffer, CFG), y, x, stride, y_pad=y_pad, x_pad=x_pad)
    b.load(vdla.wgt_buffer, 0, ident.tile(vdla.wgt_buffer, CFG), 1, 1, push_next=True)
    b.gemm(0, 1, lp0=rows, lp1=cols, acc_factor=(cols, 1), inp_factor=(cols, 1),
           pop_prev=True, push_next=True)
    b.store(0, dst.out_tile(out_tile), rows, cols, dtype=dtype, pop_prev=True, push_prev=True)
    program = b.finish(pop_next=True)
    stats = simulate(program, dram)
    out = dram.get("C", np.int32 if dtype == "int32" else np.int8, (rows, cols, 8, 8))
    return out, stats.cycles


def test_load_reads_a_strided_block_and_pads_with_zeros() -> None:
    rng = np.random.default_rng(2)
    tiles = rng.integers(-128, 128, (3, 5, 8, 8), dtype=np.int8)   # 3 rows of 5 tiles
    out, _ = _roundtrip(tiles, y=2, x=3, stride=5, y_pad=(1, 0), x_pad=(1, 2))
    expected = np.zeros((3, 6, 8, 8), dtype=np.int32)
    expected[1:3, 1:4] = tiles[:2, :3]
    np.testing.assert_array_equal(out, expected)


def test_store_int8_keeps_the_low_byte() -> None:
    dram = DRAM()
    c = dram.alloc("C", 64)
    b = ProgramBuilder()
    b.load_uops(0, b.uop_kernel([UOp(0, 0)]), 1)
    b.alu(AluOp.ADD, 0, 1, imm=300)        # acc starts at zero: 300 = 0x12c
    b.alu(AluOp.MUL, 0, 1, imm=-1, push_next=True)
    b.store(0, c.out_tile(64), 1, 1, dtype="int8", pop_prev=True, push_prev=True)
    simulate(b.finish(pop_next=True), dram)
    assert (dram.get("C", np.int8, (8, 8)) == -44).all()  # -300 = 0x...fed4: low byte 0xd4

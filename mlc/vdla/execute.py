"""What each instruction does to the numbers: the machine's on-chip buffers and its DMA.

:class:`Machine` holds the three data buffers as numpy arrays of tiles and runs one checked
instruction at a time (the simulator decides *when*; this module decides *what*). GEMM and
ALU vectorize their micro-op loop with numpy where that gives the same answer as running
``for y: for x: for uop:`` one step at a time, and fall back to the plain loop where it
would not (an ALU kernel whose iterations read tiles that other iterations write).

GEMM products are summed exactly in float64 (an int8 x int8 product is at most 2**14, so
any realistic sum is far below 2**53), which lets the big matrix products run on BLAS; the
result is added to the int32 accumulators with wraparound modulo 2**32.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from mlc.vdla.config import MemScope, VDLAConfig
from mlc.vdla.dram import DRAM
from mlc.vdla.isa import Alu, AluOp, Gemm, Instruction, Load, Store, UOp
from mlc.vdla.verify import Info


def _grid(factor: tuple[int, int], consts: list[int], lp0: int, lp1: int) -> np.ndarray:
    """``idx[u, y, x] = a*y + b*x + consts[u]`` as an int64 array of shape (U, lp0, lp1)."""
    a, b = factor
    y = np.arange(lp0, dtype=np.int64)[:, None] * a
    x = np.arange(lp1, dtype=np.int64)[None, :] * b
    c = np.asarray(consts, dtype=np.int64)[:, None, None]
    return (y + x)[None] + c


def _wrap_add(acc: np.ndarray, idx: np.ndarray, exact: np.ndarray) -> None:
    """``acc[idx] += exact`` with int32 wraparound (``idx`` has no repeats)."""
    total = acc[idx].astype(np.int64) + exact.astype(np.int64)
    acc[idx] = total.astype(np.int32)


def _shr(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    return np.right_shift(a, np.clip(b, 0, 31).astype(np.int32))


ALU_FUNCS: dict[AluOp, Callable[[np.ndarray, np.ndarray | int], np.ndarray]] = {
    AluOp.MIN: np.minimum,
    AluOp.MAX: np.maximum,
    AluOp.ADD: np.add,
    AluOp.MUL: np.multiply,
    AluOp.SHR: _shr,
}


class Machine:
    """The on-chip buffers (``inp``, ``wgt``, ``acc`` as arrays of tiles) and DRAM."""

    def __init__(self, config: VDLAConfig, dram: DRAM) -> None:
        self.config = config
        self.dram = dram
        c = config
        self.inp = np.zeros((c.depth(MemScope.INP), c.batch, c.block_in), dtype=np.int8)
        self.wgt = np.zeros((c.depth(MemScope.WGT), c.block_out, c.block_in), dtype=np.int8)
        self.acc = np.zeros((c.depth(MemScope.ACC), c.batch, c.block_out), dtype=np.int32)

    def buffer(self, scope: MemScope) -> np.ndarray:
        buffers: dict[MemScope, np.ndarray] = {MemScope.INP: self.inp, MemScope.WGT: self.wgt,
                                               MemScope.ACC: self.acc}
        return buffers[scope]

    def run(self, ins: Instruction, info: Info) -> None:
        """Carry out one instruction that :func:`~mlc.vdla.verify.analyze` accepted."""
        if isinstance(ins, Load) and ins.scope is not MemScope.UOP:
            self._load(ins)
        elif isinstance(ins, Store):
            self._store(ins)
        elif isinstance(ins, Gemm) and info.trips:
            self._gemm(ins, list(info.kernel))
        elif isinstance(ins, Alu) and info.trips:
            self._alu(ins, list(info.kernel))

    # -- DMA -------------------------------------------------------------------------------

    def _dram_index(self, base: int, y: int, x: int, stride: int, tile_bytes: int
                    ) -> np.ndarray:
        tiles = base + np.arange(y, dtype=np.int64)[:, None] * stride + np.arange(x)[None, :]
        return tiles[..., None] * tile_bytes + np.arange(tile_bytes)

    def _load(self, ins: Load) -> None:
        n = ins.y_size * ins.x_size
        if n == 0:
            return
        buf = self.buffer(ins.scope)
        tile_bytes = self.config.tile_bytes(ins.scope)
        raw = self.dram.data[self._dram_index(ins.dram_base, ins.y_size, ins.x_size,
                                              ins.x_stride, tile_bytes)]
        tiles = raw.view(buf.dtype).reshape(ins.y_size, ins.x_size, *buf.shape[1:])
        block = buf[ins.sram_base : ins.sram_base + ins.sram_rows * ins.sram_cols]
        block = block.reshape(ins.sram_rows, ins.sram_cols, *buf.shape[1:])
        block[...] = 0
        block[ins.y_pad[0] : ins.y_pad[0] + ins.y_size,
              ins.x_pad[0] : ins.x_pad[0] + ins.x_size] = tiles

    def _store(self, ins: Store) -> None:
        n = ins.y_size * ins.x_size
        if n == 0:
            return
        tiles = self.acc[ins.sram_base : ins.sram_base + n]
        out = tiles.astype(np.int8) if ins.dtype == "int8" else tiles
        tile_bytes = out[0].nbytes
        index = self._dram_index(ins.dram_base, ins.y_size, ins.x_size, ins.x_stride,
                                 tile_bytes)
        self.dram.data[index] = out.view(np.uint8).reshape(ins.y_size, ins.x_size, tile_bytes)

    # -- GEMM ------------------------------------------------------------------------------

    def _gemm(self, ins: Gemm, kernel: list[UOp]) -> None:
        lp0, lp1 = ins.lp0, ins.lp1
        dst = _grid(ins.acc_factor, [u.dst for u in kernel], lp0, lp1)
        if ins.reset:
            self.acc[dst.ravel()] = 0
            return
        src = _grid(ins.inp_factor, [u.src for u in kernel], lp0, lp1)
        wgt = _grid(ins.wgt_factor, [u.wgt for u in kernel], lp0, lp1)
        groups: dict[int, list[int]] = {}
        for k, u in enumerate(kernel):
            groups.setdefault(u.dst, []).append(k)
        for members in groups.values():
            d = dst[members[0]]
            if np.unique(d).size != d.size:  # several (y, x) add into one tile
                self._gemm_each(dst[members], src[members], wgt[members], unique=False)
            elif ins.inp_factor[1] == 0 and ins.wgt_factor[0] == 0:
                self._gemm_matrix(d, src[members][:, :, 0], wgt[members][:, 0, :])
            elif ins.wgt_factor == (0, 0):
                self._gemm_shared_weight(d, src[members], wgt[members][:, 0, 0])
            else:
                self._gemm_each(dst[members], src[members], wgt[members], unique=True)

    def _gemm_matrix(self, d: np.ndarray, src: np.ndarray, wgt: np.ndarray) -> None:
        """inp depends on (uop, y), wgt on (uop, x): one matrix product.
        ``src`` is (U, Y), ``wgt`` is (U, X), ``d`` is (Y, X)."""
        u, y = src.shape
        x = wgt.shape[1]
        c = self.config
        a = self.inp[src].astype(np.float64)                      # (U, Y, B, I)
        a = a.transpose(1, 2, 0, 3).reshape(y * c.batch, u * c.block_in)
        w = self.wgt[wgt].astype(np.float64)                      # (U, X, O, I)
        w = w.transpose(0, 3, 1, 2).reshape(u * c.block_in, x * c.block_out)
        r = (a @ w).reshape(y, c.batch, x, c.block_out).transpose(0, 2, 1, 3)
        _wrap_add(self.acc, d, r)

    def _gemm_shared_weight(self, d: np.ndarray, src: np.ndarray, wgt: np.ndarray) -> None:
        """Each uop uses one weight tile for every (y, x) (a convolution's taps):
        ``src`` is (U, Y, X), ``wgt`` is (U,)."""
        u, y, x = src.shape
        c = self.config
        a = self.inp[src].astype(np.float64)                      # (U, Y, X, B, I)
        a = a.transpose(1, 2, 3, 0, 4).reshape(y * x * c.batch, u * c.block_in)
        w = self.wgt[wgt].astype(np.float64)                      # (U, O, I)
        w = w.transpose(0, 2, 1).reshape(u * c.block_in, c.block_out)
        r = (a @ w).reshape(y, x, c.batch, c.block_out)
        _wrap_add(self.acc, d, r)

    def _gemm_each(self, dst: np.ndarray, src: np.ndarray, wgt: np.ndarray,
                   unique: bool) -> None:
        """The general case: one batched tile product per uop."""
        for k in range(dst.shape[0]):
            d = dst[k].ravel()
            a = self.inp[src[k].ravel()].astype(np.int64)
            w = self.wgt[wgt[k].ravel()].astype(np.int64)
            r = np.einsum("pbi,poi->pbo", a, w)
            if unique:
                _wrap_add(self.acc, d, r)
            else:
                tiles, where = np.unique(d, return_inverse=True)
                total = self.acc[tiles].astype(np.int64)
                np.add.at(total, where, r)
                self.acc[tiles] = total.astype(np.int32)

    # -- ALU -------------------------------------------------------------------------------

    def _alu(self, ins: Alu, kernel: list[UOp]) -> None:
        lp0, lp1 = ins.lp0, ins.lp1
        func = ALU_FUNCS[ins.op]
        # sequential order is y, then x, then uop: put the uop axis last before flattening
        dst = _grid(ins.dst_factor, [u.dst for u in kernel], lp0, lp1).transpose(1, 2, 0)
        d = dst.ravel()
        distinct = np.unique(d).size == d.size
        if ins.imm is not None:
            if distinct:
                self.acc[d] = func(self.acc[d], np.int32(ins.imm))
            else:
                for k in d:
                    self.acc[k] = func(self.acc[k], np.int32(ins.imm))
            return
        s = _grid(ins.src_factor, [u.src for u in kernel], lp0, lp1).transpose(1, 2, 0).ravel()
        shared = np.isin(s, d)
        if distinct and not np.any(shared & (s != d)):
            self.acc[d] = func(self.acc[d], self.acc[s])
        elif isinstance(func, np.ufunc) and not np.any(shared):
            func.at(self.acc, d, self.acc[s])  # repeated dst: applied one after another
        else:
            for k, j in zip(d, s):
                self.acc[k] = func(self.acc[k], self.acc[j])

"""A hand-written conv2d layer for VDLA: 3x3, stride 1, padding 1, then bias, requantize,
ReLU and an optional 2x2 max-pool on the ALU, with one or two virtual threads.

The layer of a small ResNet, ``out = maxpool(clip(relu((conv(x, w) + bias) >> shift)))``,
as the accelerator runs it::

    for each output block (batch tile nb, th output rows, tob output-channel tiles),
            thread t of V taking every V-th:
        ZERO  acc[t]
        for cb in range(C / 8):                          # input-channel tiles
            LOAD inp[t] <- x[nb, cb, rows h0-1 .. h0+th]  # padding 1 on every side by DMA
            LOAD wgt[t] <- w[ob0:ob0+tob, cb, 3, 3]
            EXE  acc[t][oc, y, x] += inp[t][y+kh, x+kw] @ wgt[t][oc, kh, kw].T
                 # lp0 = th (y), lp1 = W (x), one micro-op per (oc, kh, kw)
        ALU  ADD acc[t][oc, :, :], bias[ob0 + oc]         # bias, loaded once per program
        ALU  SHR acc[t], shift ; MAX acc[t], 0 ; MIN acc[t], 127
        ZERO pool[t] ; ALU MAX pool[t][oc, py, px], acc[t][oc, 2py+i, 2px+j]  (4 micro-ops)
        STORE out[nb, ob0 + oc, ...] <- pool[t]  (int8, one 2-D DMA per channel tile)

A tile of the input is 8 images x 8 channels at one pixel (the layer runs a batch of 8),
so the tensor core's BATCH axis is the batch. DRAM layouts: x as ``[N/8][C/8][H][W][8][8]``,
w as ``[O/8][C/8][3][3][8][8]``, the output as ``[N/8][O/8][H'][W'][8][8]`` int8.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from mlc.errors import VDLAProgramError
from mlc.vdla.config import DEFAULT, MemScope, VDLAConfig, check_config
from mlc.vdla.deps import insert_dependencies
from mlc.vdla.dram import DRAM
from mlc.vdla.isa import Alu, AluOp, Finish, Gemm, Instruction, Load, Program, Store, UOp
from mlc.vdla.simulator import Stats, simulate


@dataclass(frozen=True)
class ConvTiling:
    """An output block is ``rows`` output rows (all columns) of ``out_tiles`` tiles of 8
    output channels; both must divide the layer's height and channel tiles."""

    rows: int = 2
    out_tiles: int = 2


@dataclass(frozen=True)
class ConvShape:
    """The layer in tiles: batch tiles, input/output channel tiles, height and width."""

    nb: int
    cb: int
    ob: int
    h: int
    w: int


def _tiling(tiling: object) -> ConvTiling:
    """A ConvTiling, or a tuple (rows, out_tiles) made into one."""
    if isinstance(tiling, ConvTiling):
        return tiling
    if isinstance(tiling, (tuple, list)) and len(tiling) == 2:
        return ConvTiling(*tiling)
    raise VDLAProgramError(f"tiling must be a vdla.ConvTiling(rows, out_tiles) or a tuple of "
                           f"two ints, got {tiling!r}")


def conv2d_reference(x: np.ndarray, w: np.ndarray, bias: np.ndarray, shift: int,
                     pool: bool) -> np.ndarray:
    """The layer in plain numpy (int64 arithmetic), for checking."""
    n, c, h, wd = x.shape
    xp = np.zeros((n, c, h + 2, wd + 2), dtype=np.int64)
    xp[:, :, 1:-1, 1:-1] = x
    out = np.zeros((n, w.shape[0], h, wd), dtype=np.int64)
    for kh in range(3):
        for kw in range(3):
            out += np.einsum("nchw,oc->nohw", xp[:, :, kh : kh + h, kw : kw + wd],
                             w[:, :, kh, kw].astype(np.int64))
    out = np.clip((out + bias.astype(np.int64)[None, :, None, None]) >> shift, 0, 127)
    if pool:
        out = out.reshape(n, -1, h // 2, 2, wd // 2, 2).max(axis=(3, 5))
    return out.astype(np.int8)


@dataclass(frozen=True)
class _Areas:
    """Where one thread's tiles and micro-op kernels live."""

    inp: int
    wgt: int
    acc: int
    pool: int
    uop: int          # first micro-op slot of this thread's kernels


def conv2d_program(shape: ConvShape, x_base: int, w_base: int, b_base: int, out_base: int,
                   shift: int, pool: bool, tiling: ConvTiling = ConvTiling(),
                   virtual_threads: int = 1, config: VDLAConfig = DEFAULT) -> Program:
    """The instruction stream (see the module docstring); DRAM addresses are tile
    addresses of the packed input, weights, bias and output."""
    config = check_config(config, "conv2d_program")
    tiling = _tiling(tiling)
    v, th, tob = virtual_threads, tiling.rows, tiling.out_tiles
    if not all(isinstance(t, int) and not isinstance(t, bool) for t in (th, tob)):
        raise VDLAProgramError(f"conv2d_program: {tiling} needs ints")
    s = shape
    if v not in (1, 2):
        raise VDLAProgramError(f"virtual_threads must be 1 or 2, got {v!r}")
    if th < 1 or tob < 1 or s.h % th or s.ob % tob or (pool and (th % 2 or s.w % 2)):
        raise VDLAProgramError(
            f"conv2d_program: {tiling} must divide {s.h} rows and {s.ob} channel tiles "
            "(and rows and width must be even to pool)")
    block = tob * th * s.w
    pooled = block // 4 if pool else 0
    in_rows, in_cols = th + 2, s.w + 2
    acc_half = (config.depth(MemScope.ACC) - s.ob) // v
    need = {MemScope.INP: (in_rows * in_cols, config.depth(MemScope.INP) // v),
            MemScope.WGT: (tob * 9, config.depth(MemScope.WGT) // v),
            MemScope.ACC: (block + pooled, acc_half)}
    for scope, (tiles, room) in need.items():
        if tiles > room:
            raise VDLAProgramError(
                f"conv2d_program: {tiling} needs {tiles} {scope.label} entries per thread "
                f"but {v} thread(s) leave {room}: use a smaller tiling")
    bias_area = config.depth(MemScope.ACC) - s.ob
    n_kernel = tob * 9 + 2 + s.ob // tob + 1 + 4
    areas = [_Areas(inp=t * config.depth(MemScope.INP) // v,
                    wgt=t * config.depth(MemScope.WGT) // v, acc=t * acc_half,
                    pool=t * acc_half + block, uop=t * n_kernel) for t in range(v)]
    uops: list[UOp] = []
    for a in areas:
        uops += [UOp(dst=a.acc + oc * th * s.w, src=a.inp + kh * in_cols + kw,
                     wgt=a.wgt + oc * 9 + kh * 3 + kw)
                 for oc in range(tob) for kh in range(3) for kw in range(3)]
        uops += [UOp(dst=a.acc, src=0), UOp(dst=a.pool, src=0)]             # zero kernels
        uops += [UOp(dst=a.acc, src=bias_area + ob0) for ob0 in range(0, s.ob, tob)]
        uops.append(UOp(dst=a.acc, src=a.acc))                              # element-wise
        uops += [UOp(dst=a.pool, src=a.acc + d) for d in (0, 1, s.w, s.w + 1)]  # pool
    body: list[Instruction] = [
        Load(scope=MemScope.UOP, sram_base=0, dram_base=0, y_size=1, x_size=len(uops),
             x_stride=len(uops)),
        Load(scope=MemScope.ACC, sram_base=bias_area, dram_base=b_base, y_size=1,
             x_size=s.ob, x_stride=s.ob),
    ]
    blocks = [(nb, h0, ob0) for nb in range(s.nb) for h0 in range(0, s.h, th)
              for ob0 in range(0, s.ob, tob)]
    for group in itertools.zip_longest(*[blocks[t::v] for t in range(v)]):
        work = [(t, areas[t], blk) for t, blk in enumerate(group) if blk is not None]
        for t, a, _ in work:
            body.append(Gemm(uop_begin=a.uop + tob * 9, uop_end=a.uop + tob * 9 + 1, lp0=1,
                             lp1=block, acc_factor=(0, 1), reset=True, tid=t))
        for cb in range(s.cb):
            for t, a, (nb, h0, ob0) in work:
                top, bottom = max(h0 - 1, 0), min(h0 + th + 1, s.h)
                body += [
                    Load(scope=MemScope.INP, sram_base=a.inp,
                         dram_base=x_base + ((nb * s.cb + cb) * s.h + top) * s.w,
                         y_size=bottom - top, x_size=s.w, x_stride=s.w,
                         y_pad=(int(h0 == 0), int(h0 + th == s.h)), x_pad=(1, 1), tid=t),
                    Load(scope=MemScope.WGT, sram_base=a.wgt,
                         dram_base=w_base + (ob0 * s.cb + cb) * 9, y_size=tob, x_size=9,
                         x_stride=s.cb * 9, tid=t),
                    Gemm(uop_begin=a.uop, uop_end=a.uop + tob * 9, lp0=th, lp1=s.w,
                         acc_factor=(s.w, 1), inp_factor=(in_cols, 1), tid=t),
                ]
        for t, a, (_, _, ob0) in work:
            body += _epilogue(t, a, tob, th, s, shift, pool, ob0)
        for t, a, (nb, h0, ob0) in work:
            rows, cols = (th // 2, s.w // 2) if pool else (th, s.w)
            out_h = s.h // 2 if pool else s.h
            for oc in range(tob):
                body.append(Store(
                    sram_base=(a.pool if pool else a.acc) + oc * rows * cols,
                    dram_base=out_base + ((nb * s.ob + ob0 + oc) * out_h + h0 * rows // th)
                    * cols, y_size=rows, x_size=cols, x_stride=cols, dtype="int8", tid=t))
    body.append(Finish())
    return insert_dependencies(Program(tuple(body), tuple(uops)), config)


def _epilogue(t: int, a: _Areas, tob: int, th: int, s: ConvShape, shift: int, pool: bool,
              ob0: int) -> list[Instruction]:
    """Bias, requantize, ReLU, clip, and the 2x2 max-pool, all on the ALU."""
    k_bias = a.uop + tob * 9 + 2 + ob0 // tob
    k_each = a.uop + tob * 9 + 2 + s.ob // tob
    block = tob * th * s.w
    out: list[Instruction] = [
        # acc[oc, pixel] += bias[ob0 + oc]: y walks channel tiles, x walks pixels
        Alu(op=AluOp.ADD, uop_begin=k_bias, uop_end=k_bias + 1, lp0=tob, lp1=th * s.w,
            dst_factor=(th * s.w, 1), src_factor=(1, 0), tid=t),
        Alu(op=AluOp.SHR, uop_begin=k_each, uop_end=k_each + 1, lp0=1, lp1=block,
            dst_factor=(0, 1), imm=shift, tid=t),
        Alu(op=AluOp.MAX, uop_begin=k_each, uop_end=k_each + 1, lp0=1, lp1=block,
            dst_factor=(0, 1), imm=0, tid=t),
        Alu(op=AluOp.MIN, uop_begin=k_each, uop_end=k_each + 1, lp0=1, lp1=block,
            dst_factor=(0, 1), imm=127, tid=t),
    ]
    if pool:
        zero = a.uop + tob * 9 + 1
        out += [
            Gemm(uop_begin=zero, uop_end=zero + 1, lp0=1, lp1=block // 4,
                 acc_factor=(0, 1), reset=True, tid=t),
            # pool[r, px] = max over acc[2r*W + 2px + {0, 1, W, W+1}], r = oc * th/2 + py
            Alu(op=AluOp.MAX, uop_begin=k_each + 1, uop_end=k_each + 5, lp0=block // s.w // 2,
                lp1=s.w // 2, dst_factor=(s.w // 2, 1), src_factor=(2 * s.w, 2), tid=t),
        ]
    return out


def conv2d(x: np.ndarray, w: np.ndarray, bias: np.ndarray, shift: int = 8, pool: bool = True,
           tiling: ConvTiling = ConvTiling(), virtual_threads: int = 1,
           config: VDLAConfig = DEFAULT) -> tuple[np.ndarray, Stats, Program]:
    """Run the layer on the simulated accelerator. ``x`` is int8 ``(N, C, H, W)`` with
    ``N``, ``C`` multiples of 8, ``w`` int8 ``(O, C, 3, 3)`` with ``O`` a multiple of 8,
    ``bias`` int32 ``(O,)``. Returns the int8 output, the stats and the program."""
    c = check_config(config, "conv2d")
    tiling = _tiling(tiling)
    x, w, bias = np.asarray(x), np.asarray(w), np.asarray(bias)
    ok = (x.dtype == np.int8 and w.dtype == np.int8 and x.ndim == 4 and w.ndim == 4
          and w.shape[1:] == (x.shape[1], 3, 3) and bias.shape == (w.shape[0],)
          and x.shape[0] % c.batch == 0 and x.shape[1] % c.block_in == 0
          and w.shape[0] % c.block_out == 0 and 0 not in x.shape and 0 not in w.shape)
    if not ok:
        raise VDLAProgramError(
            f"conv2d expects int8 x (N, C, H, W) and w (O, C, 3, 3), bias (O,), with N, C, O "
            f"multiples of 8; got x {x.dtype}{x.shape}, w {w.dtype}{w.shape}, bias "
            f"{bias.shape}")
    if isinstance(shift, np.integer):
        shift = int(shift)
    if not isinstance(shift, int) or isinstance(shift, bool) or not 0 <= shift < 32:
        raise VDLAProgramError(f"conv2d: shift must be an int 0..31, got {shift!r}")
    if bias.dtype.kind not in "iu" or (bias.size and not (
            -(2**31) <= int(bias.min()) and int(bias.max()) < 2**31)):
        raise VDLAProgramError(
            f"conv2d: bias must hold int32 values (it is added in the int32 accumulators), "
            f"got {bias.dtype} {bias.min() if bias.size else ''}..{bias.max() if bias.size else ''}"
            "; round and clip it first: np.clip(np.round(b), -2**31, 2**31 - 1).astype(np.int32)")
    n, ch, h, wd = x.shape
    o = w.shape[0]
    s = ConvShape(n // c.batch, ch // c.block_in, o // c.block_out, h, wd)
    dram = DRAM(c.dram_align)
    xr = dram.put("x", x.reshape(s.nb, c.batch, s.cb, c.block_in, h, wd)
                  .transpose(0, 2, 4, 5, 1, 3).copy())
    wr = dram.put("w", w.reshape(s.ob, c.block_out, s.cb, c.block_in, 3, 3)
                  .transpose(0, 2, 4, 5, 1, 3).copy())
    br = dram.put("bias", np.broadcast_to(bias.astype(np.int32).reshape(s.ob, 1, c.block_out),
                                          (s.ob, c.batch, c.block_out)).copy())
    oh, ow = (h // 2, wd // 2) if pool else (h, wd)
    out_tile = c.batch * c.block_out
    outr = dram.alloc("out", s.nb * s.ob * oh * ow * out_tile)
    program = conv2d_program(s, xr.tile(MemScope.INP, c), wr.tile(MemScope.WGT, c),
                             br.tile(MemScope.ACC, c), outr.out_tile(out_tile), shift, pool,
                             tiling, virtual_threads, c)
    stats = simulate(program, dram, c)
    tiles = dram.get("out", np.int8, (s.nb, s.ob, oh, ow, c.batch, c.block_out))
    result = tiles.transpose(0, 4, 1, 5, 2, 3).reshape(n, o, oh, ow)
    return np.ascontiguousarray(result), stats, program

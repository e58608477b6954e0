"""A hand-written kernel library for VDLA: the int8 GEMM, with one or two virtual threads.

This is the code a compiler for VDLA must produce from the notes' schedule
(``tile(y, x, k, 8, 8, 8)``, ``cache_read`` into ``inp_buffer``, ``tensorize`` with
``gemm8x8``, ``bind(..., cthread)``), written out by hand so that its structure is plain::

    for each output block (tile_m x tile_n tiles of C), thread t of V taking every V-th:
        ZERO  acc[t]                                   # fill_zero(CL)
        for ko in range(K / (8 * tile_k)):
            LOAD  inp[t] <- A[block rows, ko]          # dma_copy2d(AL, ...)
            LOAD  wgt[t] <- W[block cols, ko]          # dma_copy2d(BL, ...)
            EXE   acc[t] += inp[t] @ wgt[t].T          # fused_gemm8x8_add, one micro-op per k
        STORE C[block] <- acc[t]                       # dma_copy2d(C[...], CL)

**Virtual threads.** With ``V = 2`` each buffer is cut in two halves, one per thread, and
the two threads' bodies are *interleaved* at the innermost loop: ``ko`` step of thread 0,
then the same step of thread 1. One instruction stream, two independent data streams.
:func:`~mlc.vdla.deps.insert_dependencies` then adds the tokens, and because the threads use
different halves, thread 0's next LOAD waits only for thread 0's GEMM: it runs while the
compute module works on thread 1. That is the latency hiding of the TVM paper.

Matrices live in DRAM *packed*: A (M x K) as tiles ``[M/8][K/8][8][8]``, W (N x K) the same,
C (M x N, int32) as tiles ``[M/8][N/8][8][8]``. :func:`gemm` packs, runs and unpacks.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from mlc.errors import VDLAProgramError
from mlc.vdla.config import DEFAULT, MemScope, VDLAConfig, check_config
from mlc.vdla.deps import insert_dependencies
from mlc.vdla.dram import DRAM
from mlc.vdla.isa import Finish, Gemm, Instruction, Load, Program, Store, UOp
from mlc.vdla.simulator import Stats, simulate


@dataclass(frozen=True)
class GemmTiling:
    """A block of the output is ``tile_m x tile_n`` tiles; each step of the reduction
    brings ``tile_k`` tiles of K. Per thread the buffers hold ``tile_m * tile_k`` input,
    ``tile_n * tile_k`` weight and ``tile_m * tile_n`` accumulator tiles."""

    tile_m: int = 16
    tile_n: int = 16
    tile_k: int = 16


def _tiling(tiling: object) -> GemmTiling:
    """A GemmTiling, or a tuple (tile_m, tile_n, tile_k) made into one."""
    if isinstance(tiling, GemmTiling):
        return tiling
    if isinstance(tiling, (tuple, list)) and len(tiling) == 3:
        return GemmTiling(*tiling)
    raise VDLAProgramError(f"tiling must be a vdla.GemmTiling(tile_m, tile_n, tile_k) or a "
                           f"tuple of three ints, got {tiling!r}")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def pack(matrix: np.ndarray, rows: int, cols: int) -> np.ndarray:
    """``(R, C)`` -> ``(R/rows, C/cols, rows, cols)``: every tile contiguous. The matrix is
    zero-padded up to whole tiles."""
    r, c = matrix.shape
    padded = np.zeros((_cdiv(r, rows) * rows, _cdiv(c, cols) * cols), dtype=matrix.dtype)
    padded[:r, :c] = matrix
    return np.ascontiguousarray(
        padded.reshape(padded.shape[0] // rows, rows, padded.shape[1] // cols, cols)
        .transpose(0, 2, 1, 3))


def unpack(tiles: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """The inverse of :func:`pack`, cropped to ``shape``."""
    tr, tc, rows, cols = tiles.shape
    full = tiles.transpose(0, 2, 1, 3).reshape(tr * rows, tc * cols)
    return np.ascontiguousarray(full[: shape[0], : shape[1]])


@dataclass(frozen=True)
class _Halves:
    """Where thread ``t``'s part of each buffer and its micro-op kernels start."""

    inp: int
    wgt: int
    acc: int
    uop_reset: int
    uop_gemm: int


def gemm_program(m_tiles: int, n_tiles: int, k_tiles: int, a_base: int, w_base: int,
                 c_base: int, tiling: GemmTiling = GemmTiling(), virtual_threads: int = 1,
                 config: VDLAConfig = DEFAULT) -> Program:
    """The instruction stream for ``C = A @ W.T`` on packed matrices of ``m_tiles x k_tiles``
    (A), ``n_tiles x k_tiles`` (W) and ``m_tiles x n_tiles`` (C) tiles, at DRAM tile
    addresses ``a_base``, ``w_base``, ``c_base`` (see the module docstring)."""
    config = check_config(config, "gemm_program")
    tiling = _tiling(tiling)
    v = virtual_threads
    if v not in (1, 2):
        raise VDLAProgramError(f"virtual_threads must be 1 or 2, got {v!r}")
    tm, tn, tk = tiling.tile_m, tiling.tile_n, tiling.tile_k
    for name, value in (("m_tiles", m_tiles), ("n_tiles", n_tiles), ("k_tiles", k_tiles),
                        ("tile_m", tm), ("tile_n", tn), ("tile_k", tk)):
        if not isinstance(value, int) or value < 1:
            raise VDLAProgramError(f"gemm_program: {name} must be a positive int, "
                                   f"got {value!r}")
    need = {MemScope.INP: tm * tk, MemScope.WGT: tn * tk, MemScope.ACC: tm * tn,
            MemScope.UOP: 1 + tk}
    for scope, tiles in need.items():
        if tiles * v > config.depth(scope):
            raise VDLAProgramError(
                f"gemm_program: {tiling} needs {tiles} {scope.label} entries per thread, "
                f"{tiles * v} for {v} thread(s), but the buffer holds "
                f"{config.depth(scope)}: use smaller tiles")
    halves = [_Halves(inp=t * config.depth(MemScope.INP) // v,
                      wgt=t * config.depth(MemScope.WGT) // v,
                      acc=t * config.depth(MemScope.ACC) // v,
                      uop_reset=t * (1 + tk), uop_gemm=t * (1 + tk) + 1) for t in range(v)]
    uops: list[UOp] = []
    for h in halves:
        uops.append(UOp(dst=h.acc, src=0, wgt=0))                        # reset kernel
        uops += [UOp(dst=h.acc, src=h.inp + k, wgt=h.wgt + k) for k in range(tk)]
    body: list[Instruction] = [Load(scope=MemScope.UOP, sram_base=0, dram_base=0, y_size=1,
                                    x_size=len(uops), x_stride=len(uops))]
    blocks = [(mo, no) for mo in range(0, m_tiles, tm) for no in range(0, n_tiles, tn)]
    for group in itertools.zip_longest(*[blocks[t::v] for t in range(v)]):
        work = [(t, blk) for t, blk in enumerate(group) if blk is not None]
        for t, (mo, no) in work:
            bm, bn = min(tm, m_tiles - mo), min(tn, n_tiles - no)
            body.append(Gemm(uop_begin=halves[t].uop_reset, uop_end=halves[t].uop_reset + 1,
                             lp0=bm, lp1=bn, acc_factor=(bn, 1), reset=True, tid=t))
        for ko in range(0, k_tiles, tk):
            bk = min(tk, k_tiles - ko)
            for t, (mo, no) in work:
                body += _step(halves[t], t, mo, no, ko, bk, min(tm, m_tiles - mo),
                              min(tn, n_tiles - no), k_tiles, a_base, w_base)
        for t, (mo, no) in work:
            bm, bn = min(tm, m_tiles - mo), min(tn, n_tiles - no)
            body.append(Store(sram_base=halves[t].acc, dram_base=c_base + mo * n_tiles + no,
                              y_size=bm, x_size=bn, x_stride=n_tiles, tid=t))
    body.append(Finish())
    return insert_dependencies(Program(tuple(body), tuple(uops)), config)


def _step(h: _Halves, t: int, mo: int, no: int, ko: int, bk: int, bm: int, bn: int,
          k_tiles: int, a_base: int, w_base: int) -> list[Instruction]:
    """One reduction step of one thread: two loads and the GEMM that uses them."""
    return [
        Load(scope=MemScope.INP, sram_base=h.inp, dram_base=a_base + mo * k_tiles + ko,
             y_size=bm, x_size=bk, x_stride=k_tiles, tid=t),
        Load(scope=MemScope.WGT, sram_base=h.wgt, dram_base=w_base + no * k_tiles + ko,
             y_size=bn, x_size=bk, x_stride=k_tiles, tid=t),
        # acc[y*bn + x] += sum_k inp[y*bk + k] @ wgt[x*bk + k].T, one micro-op per k
        Gemm(uop_begin=h.uop_gemm, uop_end=h.uop_gemm + bk, lp0=bm, lp1=bn,
             acc_factor=(bn, 1), inp_factor=(bk, 0), wgt_factor=(0, bk), tid=t),
    ]


def gemm(a: np.ndarray, w: np.ndarray, tiling: GemmTiling = GemmTiling(),
         virtual_threads: int = 1, config: VDLAConfig = DEFAULT
         ) -> tuple[np.ndarray, Stats, Program]:
    """``a @ w.T`` (int8 x int8 -> int32) on the simulated accelerator.

    ``a`` is ``(M, K)``, ``w`` is ``(N, K)`` (the notes' ``gemm8x8`` computes
    ``y[i, j] = sum_k w[i, k] * x[j, k]``). Returns the result, the run's
    :class:`~mlc.vdla.simulator.Stats` and the program."""
    a = np.asarray(a)
    w = np.asarray(w)
    if a.dtype != np.int8 or w.dtype != np.int8 or a.ndim != 2 or w.ndim != 2 \
            or a.shape[1] != w.shape[1] or 0 in a.shape or 0 in w.shape:
        raise VDLAProgramError(
            f"gemm expects two non-empty int8 matrices (M, K) and (N, K), got "
            f"{a.dtype}{a.shape} and {w.dtype}{w.shape}")
    c = check_config(config, "gemm")
    tiling = _tiling(tiling)
    dram = DRAM(c.dram_align)
    a_region = dram.put("A", pack(a, c.batch, c.block_in))
    w_region = dram.put("W", pack(w, c.block_out, c.block_in))
    m_tiles, k_tiles = _cdiv(a.shape[0], c.batch), _cdiv(a.shape[1], c.block_in)
    n_tiles = _cdiv(w.shape[0], c.block_out)
    out_tile = c.tile_bytes(MemScope.ACC)
    c_region = dram.alloc("C", m_tiles * n_tiles * out_tile)
    program = gemm_program(m_tiles, n_tiles, k_tiles, a_region.tile(MemScope.INP, c),
                           w_region.tile(MemScope.WGT, c), c_region.out_tile(out_tile),
                           tiling, virtual_threads, c)
    stats = simulate(program, dram, c)
    tiles = dram.get("C", np.int32, (m_tiles, n_tiles, c.batch, c.block_out))
    return unpack(tiles, (a.shape[0], w.shape[0])), stats, program

"""The VDLA machine: its tensor core, its on-chip buffers and its DRAM port, in one place.

VDLA ("vanilla deep learning accelerator", the TVM paper's name for VTA) is a TPU-like
machine with three modules that run at the same time::

        DRAM ─► LOAD ─► inp_buffer, wgt_buffer ─► COMPUTE ─► acc_buffer ─► STORE ─► DRAM
                                                   (GEMM core, ALU)

Everything on chip is counted in *tiles*, the unit the tensor core works on:

=============  ======================  ===========================================
buffer         one entry (a tile)      what it holds
=============  ======================  ===========================================
inp_buffer     BATCH x BLOCK_IN int8   activations ("ACTIV" in the notes)
wgt_buffer     BLOCK_OUT x BLOCK_IN    weights ("PARAM")
acc_buffer     BATCH x BLOCK_OUT int32 accumulators (the register file ``rf``)
uop_buffer     one micro-op            the micro-coded kernels GEMM and ALU run
=============  ======================  ===========================================

With the default 8 x 8 x 8 core, one GEMM micro-op is the notes' ``gemm8x8``: an 8 x 8 int8
tile times the transpose of an 8 x 8 int8 tile, added into an 8 x 8 int32 tile,
``acc[b, o] += sum_i inp[b, i] * wgt[o, i]``, in ``gemm_cycles_per_uop`` cycles.

The scope objects ``inp_buffer``, ``wgt_buffer``, ``acc_buffer`` and ``uop_buffer`` are the
names a schedule uses (``s.cache_read(A, vdla.inp_buffer, [CL])``); they are strings too
(``"local.inp_buffer"``), so they work wherever a storage scope string does.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

import numpy as np

from mlc.errors import VDLAProgramError


class MemScope(str, enum.Enum):
    """An on-chip buffer of the machine. The value is the storage-scope string."""

    INP = "local.inp_buffer"
    WGT = "local.wgt_buffer"
    ACC = "local.acc_buffer"
    UOP = "local.uop_buffer"

    def __str__(self) -> str:
        return self.value

    @property
    def label(self) -> str:
        """The name the instruction printer uses (the notes' ACTIV / PARAM)."""
        return {"INP": "ACTIV", "WGT": "PARAM", "ACC": "ACCUM", "UOP": "UOP"}[self.name]


inp_buffer = MemScope.INP
wgt_buffer = MemScope.WGT
acc_buffer = MemScope.ACC
uop_buffer = MemScope.UOP

#: Bytes one micro-op takes in DRAM and in the micro-op buffer (VTA packs it in 32 bits).
UOP_BYTES = 4

#: DRAM regions start on a multiple of this many bytes (and of every tile size: see
#: :attr:`VDLAConfig.dram_align`).
REGION_ALIGN = 256

#: The largest on-chip buffer the simulator accepts (it holds each one as a numpy array).
MAX_BUFFER_BYTES = 256 * 1024 * 1024

#: The largest tile side (batch, block_in, block_out).
MAX_BLOCK = 1024


@dataclass(frozen=True)
class VDLAConfig:
    """The machine's parameters. The defaults are an 8 x 8 x 8 int8 core (512 multiply-adds
    a cycle) with VTA's buffer sizes and a DRAM port of 16 bytes a cycle.

    Buffer sizes are in bytes; :meth:`depth` gives them in tiles. DRAM costs
    ``dram_latency + ceil(bytes / dram_bytes_per_cycle)`` cycles per LOAD or STORE; the load
    and the store module each have their own port, so their transfers can overlap. A GEMM
    costs ``gemm_cycles_per_uop`` per micro-op it runs, an ALU instruction
    ``alu_cycles_per_uop``; a FINISH or an instruction that moves nothing costs one cycle.
    """

    batch: int = 8
    block_in: int = 8
    block_out: int = 8
    inp_buffer_bytes: int = 32 * 1024
    wgt_buffer_bytes: int = 32 * 1024
    acc_buffer_bytes: int = 128 * 1024
    uop_buffer_bytes: int = 32 * 1024
    dram_bytes_per_cycle: int = 16
    dram_latency: int = 64
    gemm_cycles_per_uop: int = 1
    alu_cycles_per_uop: int = 1

    def __post_init__(self) -> None:
        for name in ("batch", "block_in", "block_out", "inp_buffer_bytes", "wgt_buffer_bytes",
                     "acc_buffer_bytes", "uop_buffer_bytes", "dram_bytes_per_cycle",
                     "gemm_cycles_per_uop", "alu_cycles_per_uop", "dram_latency"):
            value = getattr(self, name)
            least = 0 if name == "dram_latency" else 1
            if isinstance(value, np.integer):  # np.int64(8) from a numpy computation
                value = int(value)
                object.__setattr__(self, name, value)
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise VDLAProgramError(
                    f"VDLAConfig.{name} must be an int >= {least}, got {value!r}")
        for name in ("inp_buffer_bytes", "wgt_buffer_bytes", "acc_buffer_bytes",
                     "uop_buffer_bytes"):
            if getattr(self, name) > MAX_BUFFER_BYTES:
                raise VDLAProgramError(
                    f"VDLAConfig.{name}={getattr(self, name):,} bytes: the simulator keeps "
                    f"every on-chip buffer in memory and allows at most {MAX_BUFFER_BYTES:,} "
                    "(256 MiB); real accelerators have kilobytes to a few megabytes")
        for name in ("batch", "block_in", "block_out"):
            if getattr(self, name) > MAX_BLOCK:
                raise VDLAProgramError(
                    f"VDLAConfig.{name}={getattr(self, name)}: a tile side of at most "
                    f"{MAX_BLOCK} is allowed (VTA's cores are 1..64 wide)")

    # -- tiles -----------------------------------------------------------------------------

    def tile_shape(self, scope: MemScope) -> tuple[int, int]:
        """The shape of one entry of a buffer (``(batch, block_in)`` for inp...)."""
        return {
            MemScope.INP: (self.batch, self.block_in),
            MemScope.WGT: (self.block_out, self.block_in),
            MemScope.ACC: (self.batch, self.block_out),
            MemScope.UOP: (1, 1),
        }[scope]

    def tile_bytes(self, scope: MemScope) -> int:
        """Bytes of one entry: int8 for inp and wgt, int32 for acc, 4 for a micro-op."""
        if scope is MemScope.UOP:
            return UOP_BYTES
        rows, cols = self.tile_shape(scope)
        return rows * cols * (4 if scope is MemScope.ACC else 1)

    def depth(self, scope: MemScope) -> int:
        """How many tiles (or micro-ops) a buffer holds."""
        nbytes = {
            MemScope.INP: self.inp_buffer_bytes,
            MemScope.WGT: self.wgt_buffer_bytes,
            MemScope.ACC: self.acc_buffer_bytes,
            MemScope.UOP: self.uop_buffer_bytes,
        }[scope]
        return nbytes // self.tile_bytes(scope)

    @property
    def dram_align(self) -> int:
        """The byte alignment of a DRAM region: a multiple of 256 and of every tile's size
        (inp, wgt, acc, an int8 output tile, a micro-op), so that a region's start is a
        whole tile address for every LOAD and STORE. 256 for the default core; a 16 x 16 x 16
        core's accumulator tiles (1024 bytes) or a 3 x 5 x 7 core's need more."""
        sizes = [self.tile_bytes(s) for s in MemScope] + [self.batch * self.block_out]
        return math.lcm(REGION_ALIGN, *sizes)

    # -- peak numbers (for the roofline) ---------------------------------------------------

    @property
    def macs_per_uop(self) -> int:
        """Multiply-adds in one GEMM micro-op (512 for the 8 x 8 x 8 core)."""
        return self.batch * self.block_in * self.block_out

    @property
    def peak_ops_per_cycle(self) -> float:
        """Peak integer operations a cycle (a multiply-add counts as two)."""
        return 2.0 * self.macs_per_uop / self.gemm_cycles_per_uop

    def dram_cycles(self, nbytes: int) -> int:
        """Cycles one DMA transfer of ``nbytes`` costs: latency plus bytes over bandwidth."""
        if nbytes <= 0:
            return 1
        return self.dram_latency + -(-nbytes // self.dram_bytes_per_cycle)


DEFAULT = VDLAConfig()


def check_config(config: object, where: str) -> VDLAConfig:
    """``config`` if it is a :class:`VDLAConfig`, else a VDLAProgramError naming ``where``."""
    if not isinstance(config, VDLAConfig):
        raise VDLAProgramError(f"{where}: config must be a vdla.VDLAConfig(...), got "
                               f"{type(config).__name__}")
    return config

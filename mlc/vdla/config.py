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
from dataclasses import dataclass

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
                     "gemm_cycles_per_uop", "alu_cycles_per_uop"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise VDLAProgramError(f"VDLAConfig.{name} must be a positive int, got {value!r}")
        if not isinstance(self.dram_latency, int) or self.dram_latency < 0:
            raise VDLAProgramError(
                f"VDLAConfig.dram_latency must be an int >= 0, got {self.dram_latency!r}")

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

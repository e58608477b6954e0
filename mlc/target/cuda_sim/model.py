"""A performance model of GPU kernels: count what a kernel does, turn it into time on a GPU.

::

    f = mlc.build(sch.mod, target="cuda-sim")
    p = mlc.target.cuda_sim.predict(f, x, w, y, gpu="h100")
    p.time                         # seconds, the estimate
    p.kernels[0].counts            # sectors, bank conflicts, FLOPs, occupancy...
    print(p)                       # a table, one row per kernel

**Counting** runs a few blocks of each kernel in the GPU interpreter
(:mod:`mlc.target.cuda_sim.interp`) and scales the counts up to the whole grid:

* *global memory*: each warp's access of a buffer is served in 32-byte **sectors**; a warp
  whose 32 threads read 32 consecutive floats needs 4 sectors (coalesced), one whose threads
  are 32 floats apart needs 32. Sectors a block already touched are L1 hits.
* *shared memory*: 32 banks of 4 bytes; a warp's access takes as many passes (*wavefronts*)
  as the largest number of different 4-byte words it touches in one bank. A column of a
  32x32 float array: 32 words in bank 0, 32 passes (a 32-way conflict); padded to 33
  columns, 1.
* *FLOPs* (float operations, a fused multiply-add counts 2) and *occupancy*: how many blocks
  fit on a multiprocessor at once, limited by threads, shared memory and registers (estimated).

**Time** is the largest of the times each resource needs at its peak rate (DRAM bytes, L2
bytes, L1 and shared-memory passes, FP32 operations, issued warp instructions), stretched
when too few warps are resident to hide latency or the last wave of blocks leaves
multiprocessors idle, plus the launch. The roofline places the kernel by its arithmetic
intensity (FLOPs per DRAM byte). It is a teaching model: it ranks schedules and names the
bottleneck; on a real GPU, expect its times within a factor of about two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlc.errors import ArgumentError
from mlc.target.cuda_sim.interp import Access, Interpreter, Observer, gpu_program, np_dtype
from mlc.tir import stmt as S
from mlc.tir.functor import post_order_visit

SECTOR = 32
BANKS = 32
BANK_BYTES = 4


@dataclass(frozen=True)
class GPUProfile:
    """The numbers of one GPU the model needs (peak rates and per-SM limits)."""

    name: str
    sms: int
    clock_ghz: float
    fp32_tflops: float
    dram_gbs: float
    l2_bytes: int
    l2_gbs: float
    l1_bytes_per_clock: int = 128      # per SM; shared memory has the same width
    shared_per_sm: int = 100 * 1024
    shared_per_block: int = 48 * 1024
    regs_per_sm: int = 65536
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    warps_to_hide_latency: int = 8     # resident warps per SM below which time stretches
    launch_us: float = 4.0

    @property
    def l1_gbs(self) -> float:
        return self.sms * self.l1_bytes_per_clock * self.clock_ghz


PROFILES: dict[str, GPUProfile] = {
    "h100": GPUProfile(
        "NVIDIA H100 (PCIe-class)", sms=132, clock_ghz=1.755, fp32_tflops=60.0,
        dram_gbs=3000.0, l2_bytes=50 * 2**20, l2_gbs=7000.0, shared_per_sm=228 * 1024,
        launch_us=4.0,
    ),
    "rtx3050-laptop": GPUProfile(
        "NVIDIA RTX 3050 Laptop", sms=16, clock_ghz=1.5, fp32_tflops=6.1, dram_gbs=192.0,
        l2_bytes=2 * 2**20, l2_gbs=1000.0, shared_per_sm=100 * 1024,
        max_threads_per_sm=1536, max_blocks_per_sm=16, launch_us=6.0,
    ),
}


def profile(gpu: str | GPUProfile) -> GPUProfile:
    """A profile by name (``"h100"``, ``"rtx3050-laptop"``) or the profile itself."""
    if isinstance(gpu, GPUProfile):
        return gpu
    key = str(gpu).lower().replace("_", "-")
    if key not in PROFILES:
        raise ArgumentError(f"no GPU profile {gpu!r}; use one of {sorted(PROFILES)} or a "
                            "mlc.target.cuda_sim.model.GPUProfile(...)")
    return PROFILES[key]


# -- counting ----------------------------------------------------------------------------------

def sectors(byte_addresses: np.ndarray, warps: np.ndarray | None = None) -> int:
    """32-byte sectors a warp access needs: distinct (warp, address // 32) pairs."""
    sec = np.asarray(byte_addresses, np.int64) // SECTOR
    if warps is None:
        return int(len(np.unique(sec)))
    return int(len(np.unique(np.asarray(warps, np.int64) * (1 << 40) + sec)))


def wavefronts(byte_addresses: np.ndarray, warps: np.ndarray | None = None) -> tuple[int, int]:
    """Shared-memory passes of a warp access: per warp, the most distinct 4-byte words in one
    bank (threads reading the same word share it, a broadcast); and the passes it would take
    without conflicts (the distinct words, 32 per pass)."""
    words = np.asarray(byte_addresses, np.int64) // BANK_BYTES
    w = np.zeros_like(words) if warps is None else np.asarray(warps, np.int64)
    pairs = np.unique(w * (1 << 40) + words)          # distinct words per warp
    warp_of, word = pairs >> 40, pairs & ((1 << 40) - 1)
    banks, per_bank = np.unique(warp_of * BANKS + word % BANKS, return_counts=True)
    if len(banks) == 0:
        return 0, 0
    _, warp_index = np.unique(banks // BANKS, return_inverse=True)
    worst = np.zeros(int(warp_index.max()) + 1, np.int64)
    np.maximum.at(worst, warp_index, per_bank)
    _, distinct = np.unique(warp_of, return_counts=True)
    return int(worst.sum()), int(np.ceil(distinct / BANKS).sum())


def useful_bytes(byte_addresses: np.ndarray, warps: np.ndarray, size: int) -> int:
    """The distinct bytes each warp asked for (a value read by many threads counts once)."""
    return int(len(np.unique(np.asarray(warps, np.int64) * (1 << 40) + byte_addresses))) * size


@dataclass
class KernelCounts:
    """What one kernel does, over its whole grid (extrapolated from the sampled blocks)."""

    name: str
    blocks: int = 0
    threads_per_block: int = 0
    sampled_blocks: int = 0
    flops: float = 0.0
    global_requests: float = 0.0       # warp-level load/store instructions to global memory
    global_sectors: float = 0.0        # 32-byte sectors those requests need
    global_bytes: float = 0.0          # distinct bytes each warp asked for
    l1_miss_sectors: float = 0.0       # sectors not touched before by the same block
    shared_requests: float = 0.0
    shared_wavefronts: float = 0.0     # passes, with bank conflicts
    shared_ideal: float = 0.0          # passes without bank conflicts
    dram_bytes: float = 0.0            # compulsory traffic: every global buffer once
    shared_bytes_per_block: int = 0
    registers_per_thread: int = 0
    blocks_per_sm: int = 0
    occupancy: float = 0.0             # resident warps / the SM's maximum
    limited_by: str = ""

    @property
    def coalescing(self) -> float:
        """Bytes each warp needs / bytes moved in sectors (1.0 = perfectly coalesced)."""
        return self.global_bytes / (self.global_sectors * SECTOR) if self.global_sectors else 1.0

    @property
    def bank_conflict_factor(self) -> float:
        """Shared-memory passes / passes without conflicts (1.0 = none)."""
        return self.shared_wavefronts / self.shared_ideal if self.shared_ideal else 1.0


class Counter(Observer):
    """The observer that counts (see :class:`KernelCounts`)."""

    def __init__(self) -> None:
        self.kernels: list[KernelCounts] = []

    def begin_kernel(self, interp: Interpreter, kernel: S.KernelLaunch) -> None:
        self.cur = KernelCounts(kernel.name, interp.n_blocks_total, kernel.threads_per_block,
                                interp.lanes.n_blocks)
        self.seen: dict[int, np.ndarray] = {}
        self.warp = interp.lanes.warp_ids

    def flops(self, count: int) -> None:
        self.cur.flops += count

    def access(self, interp: Interpreter, a: Access) -> None:
        if a.scope == "local" or len(a.lanes) == 0:
            return
        c = self.cur
        size = np_dtype(a.buffer.dtype).itemsize
        addr = a.elems * size
        warps = self.warp[a.lanes]
        requests = len(np.unique(warps))
        if a.scope == "shared":
            c.shared_requests += requests
            passes, ideal = wavefronts(addr, warps)
            c.shared_wavefronts += passes
            c.shared_ideal += ideal
            return
        c.global_requests += requests
        c.global_sectors += sectors(addr, warps)
        c.global_bytes += useful_bytes(addr, warps, size)
        # L1: a sector the same block touched before is a hit
        key = id(a.buffer.data)
        n_sec = interp.mem[key].nbytes // SECTOR + 1
        seen = self.seen.get(key)
        if seen is None:
            seen = self.seen[key] = np.zeros((interp.lanes.n_blocks, n_sec), bool)
        slot = interp.lanes.block_slot[a.lanes]
        sec = addr // SECTOR
        new = ~seen[slot, sec]
        if new.any():
            pairs = np.unique(slot[new] * n_sec + sec[new])
            c.l1_miss_sectors += len(pairs)
            seen[pairs // n_sec, pairs % n_sec] = True

    def end_kernel(self, interp: Interpreter, kernel: S.KernelLaunch) -> None:
        c = self.cur
        scale = c.blocks / max(c.sampled_blocks, 1)
        for name in ("flops", "global_requests", "global_sectors", "global_bytes",
                     "l1_miss_sectors", "shared_requests", "shared_wavefronts", "shared_ideal"):
            setattr(c, name, getattr(c, name) * scale)
        c.dram_bytes = float(sum(interp.mem[id(p)].nbytes for p in kernel.pointers
                                 if id(p) in interp.mem))
        c.shared_bytes_per_block = sum(
            int(np.prod([int(getattr(d, "value", 1)) for d in b.shape]))
            * np_dtype(b.dtype).itemsize for b in kernel.shared)
        c.registers_per_thread = _registers(kernel)
        self.kernels.append(c)


def _registers(kernel: S.KernelLaunch) -> int:
    """A rough register count: 24 for indices and addresses, plus each per-thread array."""
    regs = 24

    def visit(n: object) -> None:
        nonlocal regs
        if isinstance(n, S.Allocate) and n.buffer.scope.startswith("local"):
            elems = int(np.prod([int(getattr(d, "value", 1)) for d in n.buffer.shape]))
            regs += elems * max(1, np_dtype(n.buffer.dtype).itemsize // 4)

    post_order_visit(kernel.body, visit)
    return min(regs, 255)


# -- time --------------------------------------------------------------------------------------

@dataclass
class KernelPrediction:
    """One kernel's counts and estimated time on one GPU."""

    counts: KernelCounts
    gpu: GPUProfile
    times: dict[str, float] = field(default_factory=dict)   # seconds per resource
    time: float = 0.0
    bound: str = ""
    intensity: float = 0.0             # FLOPs per DRAM byte
    attainable_gflops: float = 0.0     # the roofline at that intensity
    latency_factor: float = 1.0        # < 1 when too few warps are resident to hide latency
    balance: float = 1.0               # < 1 when blocks do not spread evenly over the SMs

    @property
    def gflops(self) -> float:
        return self.counts.flops / self.time / 1e9 if self.time else 0.0


def occupancy(counts: KernelCounts, gpu: GPUProfile) -> None:
    """Fill in blocks per SM, occupancy and what limits them."""
    tpb = max(counts.threads_per_block, 1)
    warps = math.ceil(tpb / 32)
    limits = {
        "threads": gpu.max_threads_per_sm // (warps * 32),
        "blocks": gpu.max_blocks_per_sm,
        "registers": gpu.regs_per_sm // (counts.registers_per_thread * warps * 32),
    }
    if counts.shared_bytes_per_block:
        limits["shared memory"] = gpu.shared_per_sm // counts.shared_bytes_per_block
    by = min(limits, key=lambda k: limits[k])
    counts.blocks_per_sm = max(0, limits[by])
    counts.limited_by = by
    counts.occupancy = counts.blocks_per_sm * warps * 32 / gpu.max_threads_per_sm


def estimate(counts: KernelCounts, gpu: GPUProfile) -> KernelPrediction:
    """The time of one kernel on ``gpu`` from its counts."""
    occupancy(counts, gpu)
    p = KernelPrediction(counts, gpu)
    footprint = counts.dram_bytes
    l2_traffic = counts.l1_miss_sectors * SECTOR
    miss = max(0.0, 1.0 - gpu.l2_bytes / footprint) if footprint else 0.0
    dram = min(footprint, l2_traffic) + max(0.0, l2_traffic - footprint) * miss
    warps_per_block = math.ceil(counts.threads_per_block / 32)
    fp_instr = counts.flops / 2 / 32                      # warp FMAs
    instr = fp_instr + counts.global_requests + counts.shared_requests
    p.times = {
        "DRAM": dram / (gpu.dram_gbs * 1e9),
        "L2": l2_traffic / (gpu.l2_gbs * 1e9),
        "L1": counts.global_sectors * SECTOR / (gpu.l1_gbs * 1e9),
        "shared": counts.shared_wavefronts * BANKS * BANK_BYTES / (gpu.l1_gbs * 1e9),
        "FP32": counts.flops / (gpu.fp32_tflops * 1e12),
        "issue": instr / (gpu.sms * 4 * gpu.clock_ghz * 1e9),
    }
    p.bound = max(p.times, key=lambda k: p.times[k])
    busy = p.times[p.bound]
    if counts.blocks_per_sm == 0:
        p.time = math.inf
        p.bound = f"does not fit on an SM ({counts.limited_by})"
        return p
    # blocks spread over the SMs: the busiest SM runs ceil(blocks / sms) of them
    per_sm = math.ceil(counts.blocks / gpu.sms)
    balance = counts.blocks / gpu.sms / per_sm
    resident = min(counts.blocks_per_sm, per_sm) * warps_per_block
    hide = min(1.0, resident / gpu.warps_to_hide_latency)
    p.latency_factor = hide
    p.balance = balance
    p.time = busy / (hide * balance) + gpu.launch_us * 1e-6
    p.intensity = counts.flops / dram if dram else math.inf
    p.attainable_gflops = min(gpu.fp32_tflops * 1e3, p.intensity * gpu.dram_gbs)
    return p


@dataclass
class Prediction:
    """The model's estimate for a whole GPU program: one :class:`KernelPrediction` each."""

    kernels: list[KernelPrediction]
    gpu: GPUProfile

    @property
    def time(self) -> float:
        return sum(k.time for k in self.kernels)

    @property
    def flops(self) -> float:
        return sum(k.counts.flops for k in self.kernels)

    def __repr__(self) -> str:
        rows = [f"predicted on {self.gpu.name}: {self.time * 1e6:.1f} us"]
        for k in self.kernels:
            c = k.counts
            rows.append(
                f"  {c.name}: {k.time * 1e6:.1f} us, {k.gflops:.0f} GFLOP/s, bound by {k.bound}; "
                f"{c.blocks} blocks x {c.threads_per_block} threads, occupancy "
                f"{c.occupancy:.2f} ({c.limited_by}); global {c.global_sectors:.3g} sectors "
                f"(coalescing {c.coalescing:.2f}), shared {c.shared_wavefronts:.3g} passes "
                f"(conflicts x{c.bank_conflict_factor:.2f}), {c.flops:.3g} FLOPs"
            )
        return "\n".join(rows)


def count(f: Any, *arrays: np.ndarray, blocks: int | None = 4) -> list[KernelCounts]:
    """Run ``blocks`` blocks of each kernel of ``f`` (a cuda/cuda-sim module or a GPU
    program) on ``arrays`` (copies: they are not changed) and count; ``blocks=None`` runs
    every block."""
    func = gpu_program(f)
    counter = Counter()
    Interpreter(func, [counter], blocks=blocks).run(*(np.array(a) for a in arrays))
    return counter.kernels


def predict(f: Any, *arrays: np.ndarray, gpu: str | GPUProfile = "h100",
            blocks: int | None = 4) -> Prediction:
    """The model's estimated time of ``f(*arrays)`` on ``gpu`` (see the module docstring)."""
    g = profile(gpu)
    return Prediction([estimate(c, g) for c in count(f, *arrays, blocks=blocks)], g)

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
  columns, 1. Reads are counted as the compiled code makes them (:func:`shared_reads`): a
  word a thread already read since the last barrier is in a register, a thread's reads of
  one 16-byte chunk are one ``float4`` load, served a quarter-warp per pass.
* *warp shuffles* (``__shfl_down_sync``, a cross-thread reduction's steps within a warp):
  one issued instruction per warp each, no memory transaction, no barrier.
* *FLOPs* (float operations, a fused multiply-add counts 2) and *occupancy*: how many blocks
  fit on a multiprocessor at once, limited by threads, shared memory and registers (estimated).

**Time** is the largest of the times each resource needs at its peak rate (DRAM bytes, L2
bytes, L1 and shared-memory passes, FP32 operations, issued warp instructions), stretched
when too few warps are resident to hide latency or the last wave of blocks leaves
multiprocessors idle. It is the kernel's time on the GPU: launching it adds a few
microseconds (``p.launch``), and timing one call from the host (launch, then wait) adds
10-20 (``benchmarks/gpu_model.py`` measures that floor and adds it before comparing). The
roofline places the kernel by its arithmetic intensity (FLOPs per DRAM byte). It is a
teaching model: it ranks schedules and names the bottleneck. Against an H100
(``benchmarks/results/gpu_model_h100.md``: the course's matmuls, from naive to the tuned
register-tiled GEMM, at 1024-4096) predicted / measured is 0.67-1.04: it errs fast, as it
leaves out the wait for global memory before each barrier.

Of a loop with a barrier inside (the k loop of a tiled kernel), only ``loops`` iterations
are interpreted, standing for the rest, so a prediction takes seconds, not minutes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from mlc.errors import ArgumentError
from mlc.target.cuda_sim.interp import Access, Interpreter, Observer, gpu_program, np_dtype
from mlc.tir import stmt as S
from mlc.tir.functor import post_order_visit

SECTOR = 32
BANKS = 32
BANK_BYTES = 4
VECTOR_BYTES = 16                  # the widest load a thread issues (float4)


@dataclass(frozen=True)
class GPUProfile:
    """The numbers of one GPU the model needs: peak rates and per-SM limits.

    Rates follow from the hardware: an SM issues one warp instruction per clock on each of
    its 4 schedulers, runs ``fp32_lanes`` fused multiply-adds per clock, and its L1/shared
    memory serves one 128-byte pass per clock (32 banks x 4 bytes)."""

    name: str
    sms: int
    clock_ghz: float                   # the clock under load (see PROFILES)
    dram_gbs: float                    # what a streaming kernel reaches (see PROFILES)
    l2_bytes: int
    l2_gbs: float
    fp32_lanes: int = 128              # FP32 FMA units per SM (4 schedulers x 32)
    l1_bytes_per_clock: int = 128      # per SM: 32 banks x 4 bytes; L1 has the same width
    shared_per_sm: int = 100 * 1024
    shared_per_block: int = 48 * 1024
    regs_per_sm: int = 65536
    max_threads_per_sm: int = 2048
    max_blocks_per_sm: int = 32
    warps_to_hide_latency: int = 8     # resident warps per SM below which time stretches
    launch_us: float = 3.0             # per kernel, back to back: Prediction.launch, not .time

    def __post_init__(self) -> None:
        # a rate or a limit of 0 (or NaN, or negative) made the model divide by zero or
        # predict negative times
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "name":
                continue
            least = 0.0 if f.name == "launch_us" else None  # the launch may cost nothing
            ok = (isinstance(value, (int, float)) and not isinstance(value, bool)
                  and math.isfinite(value) and (value >= least if least is not None
                                                else value > 0))
            if not ok:
                raise ArgumentError(
                    f"GPUProfile {self.name!r}: {f.name}={value!r}; it must be a finite "
                    f"number {'>= 0' if least is not None else '> 0'} (see PROFILES for "
                    "real GPUs' numbers)"
                )

    @property
    def fp32_tflops(self) -> float:
        """Peak FP32: an FMA (2 FLOPs) per lane per clock."""
        return self.sms * self.fp32_lanes * 2 * self.clock_ghz / 1e3

    @property
    def l1_gbs(self) -> float:
        return self.sms * self.l1_bytes_per_clock * self.clock_ghz


# Sources. H100: the SXM5 board (NVIDIA H100 Tensor Core GPU Architecture whitepaper):
# 132 SMs, 128 FP32 lanes and 228 KB shared memory per SM, 50 MB L2, HBM3 at 3.35 TB/s
# peak. Clock: 1.98 GHz, what nvidia-smi showed every 250 ms while benchmarks/gpu_model.py
# ran on one (the boost clock, held at 99% utilisation and 520 W of 700); 66.9 TFLOPS FP32.
# DRAM: 3.0 TB/s, about what a streaming kernel (an elementwise add over 200 MB) reaches
# there (benchmarks/results/gpu_model_h100.md);
# L2 ~7 TB/s (published microbenchmarks, e.g. Chips and Cheese's H100 article). Launch:
# the ~3 us between kernels launched back to back; a single timed call (launch, then
# wait) costs more, which benchmarks/gpu_model.py measures with an empty kernel.
# RTX 3050 Laptop (GA107, Ampere): 16 SMs at 1.5 GHz (6.1 TFLOPS), 128-bit GDDR6 at
# 12 Gb/s (192 GB/s), 2 MB L2, 100 KB shared memory and 1536 threads per SM.
PROFILES: dict[str, GPUProfile] = {
    "h100": GPUProfile(
        "NVIDIA H100 SXM5 80GB", sms=132, clock_ghz=1.98, dram_gbs=3000.0,
        l2_bytes=50 * 2**20, l2_gbs=7000.0, shared_per_sm=228 * 1024,
    ),
    "rtx3050-laptop": GPUProfile(
        "NVIDIA RTX 3050 Laptop", sms=16, clock_ghz=1.5, dram_gbs=192.0,
        l2_bytes=2 * 2**20, l2_gbs=1000.0, shared_per_sm=100 * 1024,
        max_threads_per_sm=1536, max_blocks_per_sm=16, launch_us=5.0,
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


def shared_passes(events: np.ndarray, lanes: np.ndarray, byte_addresses: np.ndarray,
                  warp_of_lane: np.ndarray, thread_of_lane: np.ndarray) -> tuple[int, int, int]:
    """Load/store instructions, passes (*wavefronts*) and conflict-free passes of shared-memory
    accesses: ``events[i]`` numbers the instruction in program order by which lane
    ``lanes[i]`` touched ``byte_addresses[i]``; instructions are issued per warp.

    A warp's instruction is served 128 bytes per pass (32 banks x 4 bytes per clock); a
    thread moving 8 bytes (``float2``) splits the warp into two half-warps, 16 bytes
    (``float4``) into four quarter-warps, each served in passes of its own (the CUDA C
    Programming Guide's shared-memory rules for 64- and 128-bit accesses). Within a phase,
    threads reading one word share it (a broadcast) and the passes are the most distinct
    words in one bank."""
    if len(lanes) == 0:
        return 0, 0, 0
    lanes = lanes.astype(np.int64)
    _, group = np.unique(events.astype(np.int64) << 24 | warp_of_lane[lanes], return_inverse=True)
    group = group.astype(np.int64).reshape(-1)
    n_groups = int(group.max()) + 1
    # bytes (and vector loads) each thread moves in each instruction
    lane_words = np.unique(group << 40 | lanes << 20 | (byte_addresses // BANK_BYTES) % (1 << 20))
    group_lane, words_per_lane = np.unique(lane_words >> 20, return_counts=True)
    width = np.zeros(n_groups, np.int64)
    np.maximum.at(width, group_lane >> 20, words_per_lane * BANK_BYTES)
    loads = np.maximum(1, -(-width // VECTOR_BYTES))
    phases = np.where(width <= 4, 1, np.where(width <= 8, 2, 4))
    lane_in_warp = thread_of_lane[lanes] % 32
    phase = group * 4 + lane_in_warp // (32 // phases[group])
    words = np.unique(phase << 32 | (byte_addresses // BANK_BYTES))
    ph, word = words >> 32, words & 0xFFFFFFFF
    banks, per_bank = np.unique(ph * BANKS + word % BANKS, return_counts=True)
    worst = np.zeros(n_groups * 4, np.int64)
    np.maximum.at(worst, banks // BANKS, per_bank)
    distinct = np.bincount(ph, minlength=n_groups * 4)
    return int(loads.sum()), int(worst.sum()), int(np.ceil(distinct / BANKS).sum())


def shared_reads(events: np.ndarray, lanes: np.ndarray, byte_addresses: np.ndarray,
                 warp_of_lane: np.ndarray, thread_of_lane: np.ndarray) -> tuple[int, int, int]:
    """:func:`shared_passes` of one barrier interval's reads of one shared buffer, as the
    compiled kernel makes them. NVCC (and NVRTC: LLVM's load/store vectorizer) does two things
    a count of the loop IR's loads misses, both seen in the PTX of the course's GEMM kernels
    (``benchmarks/gpu_gemm.py``: 32 ``ld.shared.v4.f32`` for 256 ``fma.rn.f32``):

    * a thread that reads the same word twice between two barriers keeps it in a register
      (no other thread may change it there: that would be a race), so only the first read
      goes to shared memory;
    * a thread's reads of one aligned 16-byte chunk (in unrolled code: NVCC unrolls small
      constant loops) become one vector load (``ld.shared.v4.f32``), issued where the first
      of them was: ``A_shared[r, k]`` for ``k`` in ``range(16)`` is 4 loads, not 16."""
    if len(lanes) == 0:
        return 0, 0, 0
    # 1. the first read of each (lane, address)
    key = lanes.astype(np.int64) << 32 | byte_addresses
    order = np.argsort(key, kind="stable")
    key_sorted = key[order]
    first = order[np.r_[True, key_sorted[1:] != key_sorted[:-1]]]
    ev, ln, ad = events[first], lanes[first], byte_addresses[first]
    # 2. a chunk's vector load is issued at the lane's first read of it
    chunk_key = ln.astype(np.int64) << 32 | (ad // VECTOR_BYTES)
    uniq, inverse = np.unique(chunk_key, return_inverse=True)
    issue = np.full(len(uniq), np.iinfo(np.int64).max)
    np.minimum.at(issue, inverse.reshape(-1), ev)
    return shared_passes(issue[inverse.reshape(-1)], ln, ad, warp_of_lane, thread_of_lane)


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
    shuffles: float = 0.0              # warp shuffle instructions (register to register)
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
        self.thread = interp.lanes.thread_ids
        self.pending: dict[int, list[tuple[np.ndarray, np.ndarray, np.ndarray]]] = {}
        self.pending_count = 0
        self.pending_weight = 1.0
        self.event = 0

    def flops(self, count: float) -> None:
        self.cur.flops += count

    def access(self, interp: Interpreter, a: Access) -> None:
        if a.scope == "local" or len(a.lanes) == 0:
            return
        c = self.cur
        w = a.weight
        size = np_dtype(a.buffer.dtype).itemsize
        addr = a.elems * size
        if a.scope == "shared":
            if a.is_write:
                stores, passes, ideal = shared_passes(
                    np.zeros(len(a.lanes), np.int64), a.lanes, addr, self.warp, self.thread)
                c.shared_requests += stores * w
                c.shared_wavefronts += passes * w
                c.shared_ideal += ideal * w
                return
            # reads are counted at the next barrier, when the interval's reads are all known
            if w != self.pending_weight or self.pending_count > 1 << 22:
                self.flush()
                self.pending_weight = w
            self.pending.setdefault(id(a.buffer.data), []).append(
                (np.full(len(a.lanes), self.event, np.int64), a.lanes, addr))
            self.event += 1
            self.pending_count += len(a.lanes)
            return
        warps = self.warp[a.lanes]
        c.global_requests += len(np.unique(warps)) * w
        c.global_sectors += sectors(addr, warps) * w
        c.global_bytes += useful_bytes(addr, warps, size) * w
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
            c.l1_miss_sectors += len(pairs) * w
            seen[pairs // n_sec, pairs % n_sec] = True

    def barrier(self, interp: Interpreter, stmt: S.Stmt) -> None:
        self.flush()

    def shuffle(self, interp: Interpreter, stmt: S.Stmt, warps: float) -> None:
        # one instruction per warp, no memory transaction and no barrier: it only issues
        self.cur.shuffles += warps

    def flush(self) -> None:
        """Count the shared-memory reads of one barrier interval (see :func:`shared_reads`)."""
        for parts in self.pending.values():
            ev = np.concatenate([p[0] for p in parts])
            lanes = np.concatenate([p[1] for p in parts])
            addr = np.concatenate([p[2] for p in parts])
            requests, passes, ideal = shared_reads(ev, lanes, addr, self.warp, self.thread)
            self.cur.shared_requests += requests * self.pending_weight
            self.cur.shared_wavefronts += passes * self.pending_weight
            self.cur.shared_ideal += ideal * self.pending_weight
        self.pending = {}
        self.pending_count = 0

    def end_kernel(self, interp: Interpreter, kernel: S.KernelLaunch) -> None:
        self.flush()
        c = self.cur
        scale = c.blocks / max(c.sampled_blocks, 1)
        for name in ("flops", "global_requests", "global_sectors", "global_bytes",
                     "l1_miss_sectors", "shared_requests", "shared_wavefronts", "shared_ideal",
                     "shuffles"):
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
        if counts.shared_bytes_per_block > gpu.shared_per_block:
            limits["shared memory per block"] = 0
    if tpb > 1024:
        limits["threads per block"] = 0
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
    instr = fp_instr + counts.global_requests + counts.shared_requests + counts.shuffles
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
    p.time = busy / (hide * balance)
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

    @property
    def launch(self) -> float:
        """Seconds the GPU adds launching the kernels back to back (not in :attr:`time`).
        Timing one call from the host (launch, then wait, as ``time_evaluator`` does)
        costs more: ``benchmarks/gpu_model.py`` measures that floor with an empty kernel."""
        return len(self.kernels) * self.gpu.launch_us * 1e-6

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


def count(f: Any, *arrays: np.ndarray, blocks: int | None = 4,
          loops: int | None = 4) -> list[KernelCounts]:
    """Run ``blocks`` blocks of each kernel of ``f`` (a cuda/cuda-sim module or a GPU
    program) on ``arrays`` (copies: they are not changed) and count; ``blocks=None`` runs
    every block. Of a loop with a barrier inside (the k loop of a tiled matmul), ``loops``
    iterations run and stand for all of them (``loops=None``: every iteration)."""
    func = gpu_program(f)
    counter = Counter()
    Interpreter(func, [counter], blocks=blocks, loops=loops).run(*(np.array(a) for a in arrays))
    return counter.kernels


def predict(f: Any, *arrays: np.ndarray, gpu: str | GPUProfile = "h100",
            blocks: int | None = 4, loops: int | None = 4) -> Prediction:
    """The model's estimated time of ``f(*arrays)`` on ``gpu`` (see the module docstring)."""
    g = profile(gpu)
    return Prediction([estimate(c, g) for c in count(f, *arrays, blocks=blocks, loops=loops)], g)


# -- tuning with the model as the cost -----------------------------------------------------

@dataclass
class Candidate:
    """One configuration of a search: its predicted time (``inf`` when it cannot run)."""

    config: Any
    time: float
    bound: str
    prediction: Prediction | None = None

    def __repr__(self) -> str:
        if self.prediction is None:
            return f"{self.config}: refused ({self.bound})"
        if math.isinf(self.time):
            return f"{self.config}: {self.bound}"
        return (f"{self.config}: {self.time * 1e6:.1f} us predicted "
                f"({self.prediction.flops / self.time / 1e12:.1f} TFLOP/s), bound by {self.bound}")


def search(configs: Iterable[Any], lower: Callable[[Any], Any], *arrays: np.ndarray,
           gpu: str | GPUProfile = "h100", blocks: int | None = 2,
           loops: int | None = 2) -> list[Candidate]:
    """Tune with the model as the cost: ``lower(config)`` is the GPU program of one
    configuration (``mlc.lower(schedule(*config).mod, target="cuda-sim")``); each is
    predicted on ``gpu`` and the candidates come back fastest first. A configuration the
    schedule or the build refuses (an :class:`~mlc.errors.MLCError`: tiles that do not
    divide, too much shared memory) is kept, last, with the reason.

    No GPU is needed and no time is measured, so the search is the same on any machine; a
    prediction takes a second or two, so search tens of configurations, not thousands
    (``blocks`` and ``loops`` are as in :func:`count`)."""
    from mlc.errors import MLCError

    out = []
    for config in configs:
        try:
            program = lower(config)
        except MLCError as err:
            out.append(Candidate(config, math.inf, f"{type(err).__name__}: "
                                                   f"{str(err).splitlines()[0]}"))
            continue
        p = predict(program, *arrays, gpu=gpu, blocks=blocks, loops=loops)
        bound = max((k for k in p.kernels), key=lambda k: k.time).bound if p.kernels else ""
        out.append(Candidate(config, p.time, bound, p))
    return sorted(out, key=lambda c: (c.prediction is None, c.time))

"""Pictures of GPU kernels at work, drawn from a real run of cuda-sim's interpreter.

    from mlc.viz import gpu
    rec = gpu.record(f, x, w, y)                     # f built with target="cuda-sim"
    gpu.thread_accesses(rec, "X_shared", block=(0, 0))   # who reads / writes which element
    gpu.thread_accesses(rec, "X", thread=(3, 1))         # one thread's elements
    gpu.barrier_timeline(rec)                        # statements per barrier interval
    gpu.warp_coalescing(rec, "W")                    # one warp's access: 32-byte sectors
    gpu.bank_conflicts(rec, "X_shared")              # one warp's access: shared banks
    gpu.race_picture(err)                            # err: a RaceError from f.check(...)

Every function returns a matplotlib Figure (or draws into ``ax=``). The recording runs the
kernels in :class:`mlc.target.cuda_sim.interp.Interpreter` and keeps every access with the
thread that made it; elements are numbered as the loop IR numbers them (flat), drawn as a
2-D grid (``shape=`` to choose; by default the buffer's shape, or a square).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlc.errors import ArgumentError, GPUCheckError
from mlc.target.cuda_sim.interp import (
    Access,
    Interpreter,
    Lanes,
    Observer,
    gpu_program,
    np_dtype,
    stmt_line,
)
from mlc.target.cuda_sim.model import BANKS, SECTOR, sectors, wavefronts
from mlc.tir import stmt as S
from mlc.viz.iteration import _figure

READ, WRITE = "#1e88e5", "#e53935"


@dataclass
class KernelRecord:
    """One kernel's accesses, with the lanes that made them."""

    kernel: S.KernelLaunch
    lanes: Lanes
    accesses: list[Access] = field(default_factory=list)
    barriers: list[tuple[int, S.Stmt]] = field(default_factory=list)
    sizes: dict[str, int] = field(default_factory=dict)
    shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)
    itemsize: dict[str, int] = field(default_factory=dict)


@dataclass
class Recording:
    """Every access of every kernel of one run (see :func:`record`)."""

    func: S.PrimFunc
    kernels: list[KernelRecord]

    def kernel(self, which: int | str = 0) -> KernelRecord:
        for i, k in enumerate(self.kernels):
            if which in (i, k.kernel.name):
                return k
        raise ArgumentError(f"no kernel {which!r}; the kernels are "
                            f"{[k.kernel.name for k in self.kernels]}")


class _Recorder(Observer):
    def __init__(self) -> None:
        self.kernels: list[KernelRecord] = []

    def begin_kernel(self, interp: Interpreter, kernel: S.KernelLaunch) -> None:
        self.kernels.append(KernelRecord(kernel, interp.lanes))

    def access(self, interp: Interpreter, a: Access) -> None:
        k = self.kernels[-1]
        k.accesses.append(a)
        name = a.buffer.name
        if name not in k.sizes:
            k.sizes[name] = interp.mem[id(a.buffer.data)].shape[-1]
            k.itemsize[name] = np_dtype(a.buffer.dtype).itemsize
            param = next((p for p in interp.func.params if p.data is a.buffer.data), None)
            if param is not None:
                k.shapes[name] = tuple(int(getattr(d, "value", 0)) for d in param.shape)

    def barrier(self, interp: Interpreter, stmt: S.Stmt) -> None:
        self.kernels[-1].barriers.append((interp.epoch, stmt))


def record(f: Any, *arrays: np.ndarray, blocks: int | None = None) -> Recording:
    """Run ``f`` (a cuda-sim module or GPU program) on copies of ``arrays`` and keep every
    access; ``blocks=n`` runs only n blocks of each kernel."""
    func = gpu_program(f)
    rec = _Recorder()
    Interpreter(func, [rec], blocks=blocks).run(*(np.array(a) for a in arrays))
    return Recording(func, rec.kernels)


# -- helpers -------------------------------------------------------------------------------

def _grid_shape(n: int, shape: tuple[int, ...] | None, known: tuple[int, ...] | None,
                row: int | None = None) -> tuple[int, int]:
    for cand in (shape, known):
        if cand and len(cand) >= 2 and int(np.prod(cand)) == n:
            return int(np.prod(cand[:-1])), int(cand[-1])
        if cand and len(cand) == 1 and cand[0] == n and shape is not None:
            return 1, n
    if row and n % row == 0:
        return n // row, row
    side = int(math.isqrt(n))
    if side * side == n:
        return side, side
    return 1, n


def _block_slot(k: KernelRecord, block: tuple[int, ...] | int) -> int:
    """The sampled-block slot of ``block`` ((x, y) blockIdx, or a linear block number)."""
    lanes = k.lanes
    if isinstance(block, int):
        hits = np.nonzero(lanes.block_ids == block)[0]
    else:
        sel = np.ones(len(lanes.block_ids), bool)
        for tag, v in zip(("blockIdx.x", "blockIdx.y", "blockIdx.z"), block):
            if tag in lanes.axis:
                sel &= lanes.axis[tag] == v
        hits = np.nonzero(sel)[0]
    if len(hits) == 0:
        raise ArgumentError(f"block {block} did not run in this recording (record with "
                            "blocks=None to run every block)")
    return int(lanes.block_slot[hits[0]])


def _lane_of(k: KernelRecord, slot: int, thread: tuple[int, ...] | int) -> int:
    lanes = k.lanes
    sel = lanes.block_slot == slot
    if isinstance(thread, int):
        sel &= lanes.thread_ids == thread
    else:
        for tag, v in zip(("threadIdx.x", "threadIdx.y", "threadIdx.z"), thread):
            if tag in lanes.axis:
                sel &= lanes.axis[tag] == v
    hits = np.nonzero(sel)[0]
    if len(hits) == 0:
        raise ArgumentError(f"no thread {thread} in this kernel (threads: "
                            f"{k.kernel.threads})")
    return int(hits[0])


def _buffer_accesses(k: KernelRecord, name: str) -> list[Access]:
    got = [a for a in k.accesses if a.buffer.name == name]
    if not got:
        raise ArgumentError(f"kernel {k.kernel.name} does not access {name!r}; it accesses "
                            f"{sorted(k.sizes)}")
    return got


# -- who touches what -----------------------------------------------------------------------

def thread_accesses(rec: Recording, buffer: str, block: tuple[int, ...] | int = 0,
                    thread: tuple[int, ...] | int | None = None, kernel: int | str = 0,
                    shape: tuple[int, ...] | None = None, ax: Any = None) -> Any:
    """Which thread of ``block`` reads (left) and writes (right) each element of ``buffer``.
    Without ``thread``: the shade is the number of threads reading an element, the colour
    of a written element the thread (``threadIdx`` linearised, x fastest) that wrote it last.
    With ``thread=(x, y)``: the elements that one thread reads and writes."""
    k = rec.kernel(kernel)
    slot = _block_slot(k, block)
    accesses = _buffer_accesses(k, buffer)
    n = k.sizes[buffer]
    rows, cols = _grid_shape(n, shape, k.shapes.get(buffer))
    read_count = np.zeros(n, np.int64)
    read_any = np.zeros(n, bool)
    writer = np.full(n, -1.0)
    lane_sel = None if thread is None else _lane_of(k, slot, thread)
    pairs = []
    for a in accesses:
        mine = k.lanes.block_slot[a.lanes] == slot
        if lane_sel is not None:
            mine &= a.lanes == lane_sel
        if not mine.any():
            continue
        if a.is_write:
            writer[a.elems[mine]] = k.lanes.thread_ids[a.lanes[mine]]
        else:
            read_any[a.elems[mine]] = True
            pairs.append(a.elems[mine] * (1 << 20) + k.lanes.thread_ids[a.lanes[mine]])
    if pairs:
        uniq = np.unique(np.concatenate(pairs))
        np.add.at(read_count, uniq >> 20, 1)
    fig, axes = _figure(ax, (9.0, 3.8), 2) if ax is None else (ax[0].figure, ax)
    who = "" if thread is None else f", thread {thread}"
    if thread is None:
        im = axes[0].imshow(np.ma.masked_equal(read_count, 0).reshape(rows, cols),
                            cmap="Blues", interpolation="nearest")
        fig.colorbar(im, ax=axes[0], label="threads reading it")
        im2 = axes[1].imshow(np.ma.masked_less(writer, 0).reshape(rows, cols), cmap="viridis",
                             interpolation="nearest")
        fig.colorbar(im2, ax=axes[1], label="thread that wrote it")
    else:
        axes[0].imshow(read_any.reshape(rows, cols), cmap="Blues", vmin=0, vmax=1,
                       interpolation="nearest")
        axes[1].imshow((writer >= 0).reshape(rows, cols), cmap="Reds", vmin=0, vmax=1,
                       interpolation="nearest")
    blk = tuple(int(k.lanes.axis[t][k.lanes.block_slot == slot][0])
                for t in ("blockIdx.x", "blockIdx.y") if t in k.lanes.axis)
    axes[0].set_title(f"{buffer}: reads by block {blk}{who}", fontsize=10)
    axes[1].set_title(f"{buffer}: writes by block {blk}{who}", fontsize=10)
    for a in axes:
        a.set_xlabel("column")
        a.set_ylabel("row")
    fig.tight_layout()
    return fig


# -- barriers --------------------------------------------------------------------------------

def barrier_timeline(rec: Recording, kernel: int | str = 0, ax: Any = None) -> Any:
    """The kernel's statements (rows, by line of the loop IR) against its barrier intervals
    (columns): a cell shows how many element accesses that statement made in that interval,
    blue for reads only, red when it writes. Dashed lines are the ``__syncthreads()``."""
    k = rec.kernel(kernel)
    epochs = max((a.epoch for a in k.accesses), default=0) + 1
    stmts: dict[int, tuple[int, str, S.Stmt]] = {}
    for a in k.accesses:
        if id(a.stmt) not in stmts:
            line, text = stmt_line(rec.func, a.stmt)
            src = text.splitlines()[line - 1].split("  # <--")[0].strip() if line else ""
            stmts[id(a.stmt)] = (line, src, a.stmt)
    order = sorted(stmts, key=lambda s: stmts[s][0])
    row_of = {s: i for i, s in enumerate(order)}
    counts = np.zeros((len(order), epochs))
    writes = np.zeros((len(order), epochs), bool)
    for a in k.accesses:
        r = row_of[id(a.stmt)]
        counts[r, a.epoch] += len(a.lanes)
        writes[r, a.epoch] |= a.is_write
    fig, ax = _figure(ax, (min(12.0, 4.0 + 0.5 * epochs), 0.9 + 0.42 * len(order)))
    for r in range(len(order)):
        for e in range(epochs):
            if counts[r, e]:
                ax.barh(r, 0.9, left=e + 0.05, color=WRITE if writes[r, e] else READ,
                        alpha=0.35 + 0.65 * counts[r, e] / counts.max())
                ax.text(e + 0.5, r, f"{int(counts[r, e])}", ha="center", va="center",
                        fontsize=7)
    for e in range(1, epochs):
        ax.axvline(e, color="black", linestyle="--", linewidth=1)
    ax.set_yticks(range(len(order)))
    ax.set_yticklabels([f"{stmts[s][0]}: {stmts[s][1][:48]}" for s in order], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, epochs)
    ax.set_xlabel("barrier interval (dashed: __syncthreads())")
    ax.set_title(f"{k.kernel.name}: accesses per statement and barrier interval "
                 f"(red: writes, blue: reads)", fontsize=10)
    fig.tight_layout()
    return fig


# -- one warp's access -------------------------------------------------------------------------

def _warp_access(rec: Recording | np.ndarray, buffer: str | None, kernel: int | str,
                 which: int, warp: int) -> tuple[np.ndarray, np.ndarray, str]:
    """(thread lane in the warp, byte address) of one warp's access, and a caption."""
    if isinstance(rec, np.ndarray):
        addr = np.asarray(rec, np.int64)
        return np.arange(len(addr)) % 32, addr, "given addresses"
    if buffer is None:
        raise ArgumentError("name the buffer: warp_coalescing(rec, 'W')")
    k = rec.kernel(kernel)
    accesses = _buffer_accesses(k, buffer)
    warps = k.lanes.warp_ids
    seen = [a for a in accesses if (warps[a.lanes] == warp).any()]
    if not seen:
        raise ArgumentError(f"warp {warp} never accesses {buffer}")
    a = seen[min(which, len(seen) - 1)]
    sel = warps[a.lanes] == warp
    line, _ = stmt_line(rec.func, a.stmt)
    size = k.itemsize[buffer]
    caption = f"{'store to' if a.is_write else 'load of'} {buffer}, line {line}"
    return k.lanes.thread_ids[a.lanes[sel]] % 32, a.elems[sel] * size, caption


def warp_coalescing(rec: Recording | np.ndarray, buffer: str | None = None,
                    kernel: int | str = 0, which: int = 0, warp: int = 0,
                    ax: Any = None) -> Any:
    """The 32 threads of one warp (top) and the bytes they access (bottom), grouped in the
    32-byte sectors the memory moves: consecutive threads on consecutive words take 4
    sectors for 32 floats; a stride takes up to 32. ``rec`` may be a recording (the
    ``which``-th access of ``buffer`` by ``warp``) or an array of byte addresses."""
    threads, addr, caption = _warp_access(rec, buffer, kernel, which, warp)
    fig, ax = _figure(ax, (10.0, 3.2))
    base = int(addr.min()) // SECTOR * SECTOR
    secs = np.unique((addr - base) // SECTOR)
    span = (secs.max() + 1) * SECTOR if len(secs) else SECTOR
    scale = 31.0 / max(span, 1)
    for i, s in enumerate(secs):
        ax.add_patch(_rect(s * SECTOR * scale, 0, SECTOR * scale, 0.5,
                           "#ffe082" if i % 2 == 0 else "#ffcc80"))
    for t, a in zip(threads, addr):
        ax.annotate("", xy=((a - base) * scale, 0.5), xytext=(t, 2.0),
                    arrowprops={"arrowstyle": "->", "color": READ, "lw": 0.8})
    ax.scatter(np.arange(32), np.full(32, 2.0), s=30, color="#455a64", zorder=3)
    n = sectors(addr)
    ax.set_xlim(-1, 33)
    ax.set_ylim(-0.3, 2.5)
    ax.set_yticks([0.25, 2.0])
    ax.set_yticklabels(["memory\n(32-byte sectors)", "threads\n0..31"])
    ax.set_xticks([])
    ax.set_title(f"one warp's {caption}: {len(addr)} accesses, {len(np.unique(addr))} "
                 f"distinct addresses -> {n} sector{'s' if n != 1 else ''} "
                 f"({n * SECTOR} bytes moved)", fontsize=10)
    fig.tight_layout()
    return fig


def bank_conflicts(rec: Recording | np.ndarray, buffer: str | None = None,
                   kernel: int | str = 0, which: int = 0, warp: int = 0,
                   ax: Any = None) -> Any:
    """Shared memory as 32 banks (columns) of 4-byte words, one row per 128 bytes; the
    words one warp access touches are marked with how many threads read each. A bank with
    k distinct marked words serialises into k passes (a k-way conflict)."""
    threads, addr, caption = _warp_access(rec, buffer, kernel, which, warp)
    words = addr // 4
    uniq, users = np.unique(words, return_counts=True)
    rows = int(uniq.max() // BANKS) + 1 if len(uniq) else 1
    grid = np.zeros((rows, BANKS))
    grid[uniq // BANKS, uniq % BANKS] = users
    fig, ax = _figure(ax, (9.0, 1.2 + 0.22 * min(rows, 40)))
    ax.imshow(np.ma.masked_equal(grid, 0), cmap="Oranges", aspect="auto",
              interpolation="nearest", vmin=0)
    passes, ideal = wavefronts(addr)
    per_bank = np.bincount(uniq % BANKS, minlength=BANKS)
    worst = int(per_bank.argmax())
    ax.axvline(worst, color=WRITE, linewidth=2, alpha=0.5)
    ax.set_xlabel("bank (word address % 32)")
    ax.set_ylabel("row (word // 32)")
    ax.set_title(f"one warp's {caption}: {passes} pass{'es' if passes != 1 else ''} "
                 f"(a {passes // max(ideal, 1)}-way conflict; without conflicts {ideal}); "
                 f"busiest bank {worst}", fontsize=10)
    fig.tight_layout()
    return fig


# -- races -------------------------------------------------------------------------------------

def race_picture(err: GPUCheckError | Any, which: int = 0, shape: tuple[int, ...] | None = None,
                 ax: Any = None) -> Any:
    """Who raced: left, the elements of the buffer where the ``which``-th finding of a
    :class:`~mlc.errors.RaceError` (or ``UninitializedReadError``) happened; right, the
    threads of the first racing block, coloured by their part (red: the thread of the second
    access, blue: the thread of the first, purple: both). The first race is annotated."""
    findings: Any = getattr(err, "findings", err)
    if not findings:
        raise ArgumentError("race_picture needs a GPUCheckError from f.check(...) (or its "
                            ".findings)")
    f = findings[which]
    size = int(np.prod([int(getattr(d, "value", 1)) for d in f.buffer.shape]))
    size = max(size, int(f.elements.max()) + 1)
    fig, axes = _figure(ax, (9.5, 4.0), 2) if ax is None else (ax[0].figure, ax)
    first_block = f.threads[0, :3]
    in_block = np.all(f.threads[:, :3] == first_block, axis=1)
    thread_cols = f.threads[:, 3:]
    row_len = int(thread_cols[:, 0].max()) + 1 if len(thread_cols) else 1
    rows, cols = _grid_shape(size, shape, None)
    hit = np.zeros(size)
    np.add.at(hit, f.elements, 1)
    axes[0].imshow(np.ma.masked_equal(hit, 0).reshape(rows, cols), cmap="Reds",
                   interpolation="nearest")
    e0 = int(f.elements[0])
    axes[0].scatter([e0 % cols], [e0 // cols], marker="o", s=120, facecolors="none",
                    edgecolors="black", linewidths=2)
    axes[0].set_title(f"{f.kernel}: {f.kind} on {f.buffer.name}\n"
                      f"{len(np.unique(f.elements))} elements ({f.count} accesses)",
                      fontsize=10)
    # threads of the first racing block
    tx = thread_cols[:, 0]
    ty = np.maximum(thread_cols[:, 1], 0)
    otx = f.other_threads[:, 3]
    oty = np.maximum(f.other_threads[:, 4], 0)
    o_in = np.all(f.other_threads[:, :3] == first_block, axis=1)
    ny = int(max(ty.max(), oty.max() if len(oty) else 0)) + 1
    nx = int(max(tx.max(), otx.max() if len(otx) else 0, row_len - 1)) + 1
    part = np.zeros((ny, nx), np.int64)
    part[ty[in_block], tx[in_block]] |= 2
    ok = o_in & (otx >= 0)
    part[oty[ok], otx[ok]] |= 1
    from matplotlib.colors import ListedColormap

    cmap = ListedColormap(["#eeeeee", READ, WRITE, "#8e24aa"])
    axes[1].imshow(part, cmap=cmap, vmin=0, vmax=3, interpolation="nearest")
    t0, o0 = f.threads[0], f.other_threads[0]
    if o0[3] >= 0:
        axes[1].annotate("", xy=(t0[3], max(t0[4], 0)), xytext=(o0[3], max(o0[4], 0)),
                         arrowprops={"arrowstyle": "->", "color": "black", "lw": 2})
    axes[1].set_title(f"threads of block {tuple(int(v) for v in first_block if v >= 0)}: "
                      "blue first access,\nred second, purple both", fontsize=10)
    axes[1].set_xlabel("threadIdx.x")
    axes[1].set_ylabel("threadIdx.y")
    axes[0].set_xlabel("column")
    axes[0].set_ylabel("row")
    fig.tight_layout()
    return fig


def _rect(x: float, y: float, w: float, h: float, color: str) -> Any:
    from matplotlib.patches import Rectangle

    return Rectangle((x, y), w, h, facecolor=color, edgecolor="#6d4c41")

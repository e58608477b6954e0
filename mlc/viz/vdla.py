"""Pictures of the VDLA accelerator at work, drawn from real simulations.

    from mlc.vdla.gemm import gemm
    from mlc.viz.vdla import vdla_gantt, vdla_latency_hiding, vdla_roofline
    _, stats, program = gemm(a, w, virtual_threads=2)
    vdla_gantt(stats, program)                  # the three modules over time, with tokens
    vdla_latency_hiding()                       # 1 virtual thread against 2 (the notes'
                                                # "no task pipelining" vs "task-level
                                                # pipelining" figure)
    vdla_roofline({"1 vt": stats1, "2 vt": stats2})   # the accelerator's roofline

A Gantt chart has one row per module (load on top, then compute, then store, as data flows);
each instruction is a bar from its start cycle to its end cycle, coloured by what it does,
and each dependency token is an arrow from the end of the instruction that pushed it to the
start of the one that popped it. Gaps in the compute row are cycles the tensor core waits.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from mlc.vdla.config import DEFAULT, MemScope, VDLAConfig
from mlc.vdla.isa import Alu, Gemm, Load, Module, Program, Store
from mlc.vdla.simulator import Event, Stats
from mlc.viz.iteration import _figure

ROWS = {Module.LOAD: 2, Module.COMPUTE: 1, Module.STORE: 0}
COLORS = {
    "load inputs": "#1976d2",
    "load weights": "#64b5f6",
    "load micro-ops / acc": "#b0bec5",
    "GEMM": "#e53935",
    "zero": "#ffb74d",
    "ALU": "#8e24aa",
    "store outputs": "#43a047",
    "finish": "#9e9e9e",
}
TOKEN_COLORS = {"LD->EX": "#0d47a1", "EX->LD": "#b71c1c", "EX->ST": "#1b5e20",
                "ST->EX": "#e65100"}


def _kind(event: Event, program: Program | None) -> str:
    ins = program.instructions[event.index] if program is not None else None
    if isinstance(ins, Load):
        return {MemScope.INP: "load inputs", MemScope.WGT: "load weights"}.get(
            ins.scope, "load micro-ops / acc")
    if isinstance(ins, Gemm):
        return "zero" if ins.reset else "GEMM"
    if isinstance(ins, Alu):
        return "ALU"
    if isinstance(ins, Store):
        return "store outputs"
    if ins is None:
        return {Module.LOAD: "load inputs", Module.STORE: "store outputs"}.get(
            event.module, "GEMM" if event.opcode.name == "GEMM" else "finish")
    return "finish"


def vdla_gantt(stats: Stats, program: Program | None = None, until: int | None = None,
               tokens: bool = True, max_tokens: int = 400, title: str | None = None,
               ax: Any = None) -> Any:
    """The three modules over time (see the module docstring). ``until`` shows only the
    first cycles (a long run is unreadable whole); ``program`` gives finer colours (input
    vs weight loads, zeroing vs GEMM)."""
    fig, ax = _figure(ax, (10.0, 2.6))
    end = stats.cycles if until is None else min(until, stats.cycles)
    groups: dict[str, dict[Module, list[tuple[int, int]]]] = {}
    for event in stats.timeline:
        if event.start >= end:
            continue
        by_module = groups.setdefault(_kind(event, program), {})
        by_module.setdefault(event.module, []).append(
            (event.start, max(event.end - event.start, 1)))
    for kind, by_module in groups.items():
        first = True
        for module, spans in by_module.items():
            ax.broken_barh(spans, (ROWS[module] - 0.35, 0.7), facecolors=COLORS[kind],
                           edgecolor="white", linewidth=0.3, label=kind if first else None)
            first = False
    if tokens:
        shown = [t for t in stats.tokens if t.push_time < end][:max_tokens]
        for token in shown:
            src, dst = ROWS[token.src], ROWS[token.dst]
            direction = 1 if dst > src else -1
            ax.annotate("", xy=(token.pop_time, dst - 0.35 * direction),
                        xytext=(token.push_time, src + 0.35 * direction),
                        arrowprops={"arrowstyle": "->", "color": TOKEN_COLORS[token.queue],
                                    "lw": 0.6, "alpha": 0.7, "shrinkA": 0, "shrinkB": 0})
    ax.set_yticks([ROWS[m] for m in Module])
    ax.set_yticklabels([m.name.lower() for m in Module])
    ax.set_ylim(-0.6, 2.6)
    ax.set_xlim(0, end)
    ax.set_xlabel("cycle")
    util = stats.utilization
    ax.set_title(title or f"{stats.cycles:,} cycles, compute utilization {util:.0%}",
                 fontsize=9)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.005, 1.0), framealpha=0.8)
    fig.tight_layout()
    return fig


def vdla_latency_hiding(runs: Mapping[int, tuple[Stats, Program]] | None = None,
                        until: int | None = None) -> Any:
    """One virtual thread against two, on the same time axis: the notes' "single module, no
    task pipelining" against "task-level pipelining", from real simulations. ``runs`` maps
    the number of virtual threads to ``(stats, program)``; by default a small GEMM
    (128 x 128 x 256, blocks of 8 x 8 tiles, 16 tiles of K a step) is simulated both ways."""
    if runs is None:
        from mlc.vdla.gemm import GemmTiling, gemm

        rng = np.random.default_rng(0)
        a = rng.integers(-128, 128, (128, 256), dtype=np.int8)
        w = rng.integers(-128, 128, (128, 256), dtype=np.int8)
        runs = {v: gemm(a, w, GemmTiling(8, 8, 16), v)[1:] for v in (1, 2)}
    from matplotlib.figure import Figure

    fig = Figure(figsize=(10.0, 2.4 * len(runs) + 0.4))
    axes = fig.subplots(len(runs), 1, sharex=True, squeeze=False)[:, 0]
    longest = max(stats.cycles for stats, _ in runs.values())
    names = {1: "no task pipelining", 2: "task-level pipelining"}
    for ax, (threads, (stats, program)) in zip(axes, sorted(runs.items())):
        plural = "s" if threads > 1 else ""
        vdla_gantt(stats, program, until=until, ax=ax, title=(
            f"{threads} virtual thread{plural} ({names.get(threads, 'pipelined')}): "
            f"{stats.cycles:,} cycles, compute utilization {stats.utilization:.0%}"))
        ax.set_xlim(0, until or longest)
    fig.tight_layout()
    return fig


def vdla_roofline(points: Mapping[str, Stats], config: VDLAConfig = DEFAULT,
                  title: str = "VDLA roofline", ax: Any = None) -> Any:
    """Attainable operations per cycle = min(peak, intensity x DRAM bytes per cycle),
    log-log, with one point per run (``name: stats``) at its operations per DRAM byte and
    the operations per cycle it reached. The load and the store module each have a DRAM
    port; the roof uses one, the bandwidth a single stream of loads gets."""
    fig, ax = _figure(ax, (5.0, 3.8))
    peak = config.peak_ops_per_cycle
    bw = float(config.dram_bytes_per_cycle)
    ridge = peak / bw
    xs_known = [s.intensity for s in points.values() if np.isfinite(s.intensity)] or [ridge]
    lo = min(min(xs_known) / 4, ridge / 16)
    hi = max(max(xs_known) * 4, ridge * 16)
    xs = np.logspace(np.log10(lo), np.log10(hi), 200)
    ax.loglog(xs, np.minimum(peak, xs * bw), color="black", linewidth=1.5, label="roof")
    ax.axvline(ridge, color="grey", linestyle=":", linewidth=1)
    ax.annotate(f"ridge {ridge:.0f} op/B", (ridge, peak / 30), fontsize=7, color="grey",
                rotation=90, ha="right")
    for name, stats in points.items():
        x = stats.intensity if np.isfinite(stats.intensity) else hi
        ax.loglog([x], [stats.ops_per_cycle], "o", markersize=6, label=name)
        ax.annotate(f"{name} ({stats.utilization:.0%})", (x, stats.ops_per_cycle),
                    textcoords="offset points", xytext=(5, -10), fontsize=8)
    ax.set_xlabel("arithmetic intensity (int ops / DRAM byte)")
    ax.set_ylabel("int ops / cycle")
    ax.set_title(f"{title}: peak {peak:.0f} ops/cycle, {bw:.0f} B/cycle", fontsize=9)
    fig.tight_layout()
    return fig

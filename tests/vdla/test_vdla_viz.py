"""The accelerator's pictures build from real simulations and show what they claim."""

from __future__ import annotations

import io

import numpy as np
import pytest

from mlc.vdla.gemm import GemmTiling, gemm

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from mlc.viz.vdla import vdla_gantt, vdla_latency_hiding, vdla_roofline  # noqa: E402


def _runs() -> dict[int, tuple]:
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (32, 64), dtype=np.int8)
    return {v: gemm(a, a, GemmTiling(2, 2, 4), v)[1:] for v in (1, 2)}


def _renders(fig: object) -> None:
    png = io.BytesIO()
    fig.savefig(png, format="png")  # type: ignore[attr-defined]
    assert png.getvalue().startswith(b"\x89PNG")


def test_gantt_has_a_row_per_module_a_bar_per_instruction_and_an_arrow_per_token() -> None:
    stats, program = _runs()[2]
    fig = vdla_gantt(stats, program)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["load", "compute", "store"]
    bars = sum(len(c.get_paths()) for c in ax.collections)
    assert bars == len(program.instructions) == len(stats.timeline)
    arrows = [t for t in ax.texts if getattr(t, "arrow_patch", None) is not None]
    assert len(arrows) == len(stats.tokens) > 0
    labels = {t.get_text() for t in ax.get_legend().get_texts()}
    assert {"load inputs", "load weights", "GEMM", "zero", "store outputs"} <= labels
    assert f"{stats.cycles:,} cycles" in ax.get_title()
    _renders(fig)


def test_gantt_window_shows_only_the_first_cycles() -> None:
    stats, program = _runs()[1]
    ax = vdla_gantt(stats, program, until=stats.cycles // 3, tokens=False).axes[0]
    assert ax.get_xlim() == (0, stats.cycles // 3)
    assert sum(len(c.get_paths()) for c in ax.collections) < len(stats.timeline)
    assert not ax.texts


def test_latency_hiding_puts_one_and_two_threads_on_one_time_axis() -> None:
    runs = _runs()
    fig = vdla_latency_hiding(runs)
    top, bottom = fig.axes[0], fig.axes[1]
    assert "1 virtual thread (no task pipelining)" in top.get_title()
    assert "2 virtual threads (task-level pipelining)" in bottom.get_title()
    assert top.get_xlim() == bottom.get_xlim() == (0, runs[1][0].cycles)
    _renders(fig)


def test_roofline_places_each_run_under_the_roof() -> None:
    runs = _runs()
    fig = vdla_roofline({"1 vt": runs[1][0], "2 vt": runs[2][0]})
    ax = fig.axes[0]
    roof, *points = ax.get_lines()
    peak = runs[1][0].config.peak_ops_per_cycle
    assert max(roof.get_ydata()) == peak
    assert [p.get_ydata()[0] for p in points[1:]] == [runs[1][0].ops_per_cycle,
                                                      runs[2][0].ops_per_cycle]
    assert all(0 < s.ops_per_cycle <= peak for s, _ in runs.values())
    assert any("2 vt" in t.get_text() for t in ax.texts)
    _renders(fig)

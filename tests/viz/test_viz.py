"""mlc.viz: drawings are valid SVG/PNG/DOT, pictures show what the loop nest does, widgets
rebuild and report errors, and nothing raises without graphviz's ``dot``."""

from __future__ import annotations

import io

import graphviz
import numpy as np
import pytest

from mlc import graph, te, tir, viz
from mlc.errors import MLCTypeError


def matmul(n: int = 8) -> tir.PrimFunc:
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])


def tiled(n: int = 8, t: int = 4) -> tir.Schedule:
    sch = tir.Schedule(matmul(n))
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, t])
    j0, j1 = sch.split(j, factors=[None, t])
    sch.reorder(i0, j0, k, i1, j1)
    sch.parallel(i0)
    sch.vectorize(j1)
    return sch


def test_loop_tree_dot_and_svg() -> None:
    d = viz.loop_tree(tiled())
    src = d.source
    assert 'label="i_0\\nextent 2\\nparallel"' in src
    assert "vectorized" in src and "block C" in src
    assert "buf_0 -> block" in src and "-> buf_2" in src  # A read, C written
    svg = d.to_svg()
    assert svg is not None and svg.lstrip().startswith("<?xml") and "</svg>" in svg
    assert "image/svg+xml" in d._repr_mimebundle_()


def test_drawing_falls_back_without_dot(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(*args: object, **kwargs: object) -> str:
        raise graphviz.ExecutableNotFound(("dot",))

    monkeypatch.setattr(graphviz.Digraph, "pipe", missing)
    d = viz.loop_tree(matmul())
    assert d.to_svg() is None
    bundle = d._repr_mimebundle_()
    assert "image/svg+xml" not in bundle
    assert bundle["text/plain"].startswith("graphviz's 'dot' program is not installed")
    assert "digraph main" in bundle["text/plain"]
    assert "apt-get install graphviz" in d._repr_html_()


def test_drawing_falls_back_with_empty_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    bundle = viz.loop_tree(matmul())._repr_mimebundle_()
    assert "digraph main" in bundle["text/plain"]


def test_code_marks_loops_blocks_and_handles() -> None:
    sch = tiled()
    text = str(viz.code(sch, mark="i_1"))
    assert [ln.strip() for ln in text.splitlines() if "# <-- here" in ln] == [
        "for i_1 in range(4):  # <-- here"
    ]
    assert '# <-- the tile' in str(viz.code(sch.mod, mark={"C": "the tile"}))
    loops = sch.get_loops(sch.get_block("C"))
    assert "for k in range(8):  # <-- here" in str(viz.code(sch, mark=loops[2]))
    assert "<pre" in viz.code(sch)._repr_html_()
    with pytest.raises(MLCTypeError, match="nothing called 'zz'"):
        viz.code(sch, mark="zz")


def test_steps_replay_each_primitive() -> None:
    sch = tiled()
    steps = viz.steps(sch)
    assert [s.call.split("(")[0].split()[-1] for s in steps] == [
        "sch.split", "sch.split", "sch.reorder", "sch.parallel", "sch.vectorize"
    ]
    assert steps[-1].after == str(sch.mod)
    assert steps[0].before == str(matmul())
    # the parallel step changes exactly one line
    assert [(t, x.strip()) for t, x in steps[3].marked_after() if t != " "] == [
        ("-", "for i_0 in range(2):"), ("+", "for i_0 in parallel(2):")
    ]
    # the same from the trace's JSON and the original function
    again = viz.steps(sch.trace.as_json(), matmul())
    assert [s.after for s in again][-1] == str(sch.mod)


def test_print_steps_and_widget(capsys: pytest.CaptureFixture[str]) -> None:
    sch = tiled()
    viz.print_steps(sch)
    out = capsys.readouterr().out
    assert "== step 4: sch.parallel(loop=l" in out
    assert "+     for i_0 in parallel(2):" in out
    box = viz.step_through(sch)
    slider = box.children[0].children[1]
    view = box.children[1]
    assert slider.max == 5 and "step 1:" in view.value
    box.children[0].children[2].click()  # next
    assert slider.value == 2 and "step 2:" in view.value


def test_steps_needs_the_function_for_a_bare_trace() -> None:
    with pytest.raises(MLCTypeError, match="needs the PrimFunc"):
        viz.steps(tiled().trace)


def test_visit_order_of_plain_and_tiled_nests() -> None:
    plain = viz.visit_order(matmul(4), "C")
    np.testing.assert_array_equal(plain, np.arange(16).reshape(4, 4))
    sch = tir.Schedule(matmul(4))
    i, j, k = sch.get_loops(sch.get_block("C"))
    i0, i1 = sch.split(i, factors=[None, 2])
    j0, j1 = sch.split(j, factors=[None, 2])
    sch.reorder(i0, j0, i1, j1)
    expected = np.array([[0, 1, 4, 5], [2, 3, 6, 7], [8, 9, 12, 13], [10, 11, 14, 15]])
    np.testing.assert_array_equal(viz.visit_order(sch, "C"), expected)


def test_visit_order_respects_predicates_of_uneven_splits() -> None:
    sch = tir.Schedule(matmul(5))
    i, _, _ = sch.get_loops(sch.get_block("C"))
    sch.split(i, factors=[None, 2])
    np.testing.assert_array_equal(viz.visit_order(sch, "C"), np.arange(25).reshape(5, 5))


def test_footprint_of_one_tile() -> None:
    counts = viz.footprint(tiled(8, 4), "C", {"i_0": 1, "j_0": 0})
    assert set(counts) == {"A", "B", "C"}
    assert (counts["A"][4:, :] == 4).all() and (counts["A"][:4, :] == 0).all()
    assert (counts["B"][:, :4] == 4).all() and (counts["B"][:, 4:] == 0).all()
    assert (counts["C"][4:, :4] == 16).all() and counts["C"].sum() == 16 * 16


def test_pictures_are_valid_png_and_svg() -> None:
    figs = [
        viz.iteration_order(tiled(), "C"),
        viz.tile_footprint(tiled(), "C", {"i_0": 0, "j_0": 1}),
        viz.gflops_bars({"naive": 1.0, "tiled": 4.0}, {"numpy": 8.0}, peak=20.0),
        viz.roofline({"naive": (1.0, 0.25)}, peak_gflops=100.0, bandwidth_gbs=20.0),
        viz.tuning_curve({"random": [1.0, 3.0, 2.0]}, reference=2.5),
    ]
    for fig in figs:
        png, svg = io.BytesIO(), io.StringIO()
        fig.savefig(png, format="png")
        fig.savefig(svg, format="svg")
        assert png.getvalue().startswith(b"\x89PNG")
        assert "</svg>" in svg.getvalue()


def test_pictures_refuse_large_or_symbolic_nests() -> None:
    with pytest.raises(MLCTypeError, match="use smaller shapes"):
        viz.visit_order(matmul(128), "C")
    n = te.var("n")
    A = te.placeholder((n, n), name="A")
    B = te.compute((n, n), lambda i, j: A[i, j] * 2.0, name="B")
    with pytest.raises(MLCTypeError, match="constant sizes"):
        viz.visit_order(te.create_prim_func([A, B]), "B")
    with pytest.raises(MLCTypeError, match="no block named 'D'"):
        viz.visit_order(matmul(), "D")


def test_tuning_curve_reads_a_tuner() -> None:
    class FakeTuner:
        def best_so_far(self) -> list[float]:
            return [1.0, 2.0]

    fig = viz.tuning_curve({"xgb": FakeTuner()})
    assert list(fig.axes[0].lines[0].get_ydata())[:2] == [1.0, 2.0]


def test_matmul_intensity() -> None:
    assert viz.matmul_intensity(64) == pytest.approx(2 * 64**3 / (4 * 3 * 64 * 64))


def test_explorer_rebuilds_and_shows_errors() -> None:
    ex = viz.matmul_explorer(16, timed=True)
    assert ex.last_error is None and ex.last_gflops is not None
    assert "GFLOPS" in ex.status.value
    ex.update(tile_i=4)
    assert "i_1 in range(4)" in ex.text and "tile_i=4" in ex.status.value
    ex.controls["tile_j"].value = 2  # what the slider does
    assert "j_1 in range(2)" in ex.text
    classes = [c._dom_classes for c in ex.widget.children]
    assert ex.widget._dom_classes == ("mlc-explorer",)
    assert classes == [("mlc-controls",), ("mlc-status",), ("mlc-code",)]

    def broken(**knobs: int) -> tir.Schedule:
        sch = tir.Schedule(matmul(8))
        i, j, k = sch.get_loops(sch.get_block("C"))
        sch.vectorize(k)  # a reduction loop: a ScheduleError the widget must show
        return sch

    bad = viz.Explorer(broken, {"t": [1, 2]})
    assert isinstance(bad.last_error, Exception)
    assert "ScheduleError" in bad.code.value and "does not work" in bad.status.value


def test_graph_drawing() -> None:
    x = graph.var("x", shape=(1, 8))
    w = np.ones((4, 8), np.float32)
    y = graph.nn.relu(graph.nn.dense(x, graph.const(w)))
    g = graph.Graph([x], [y])
    d = viz.graph_drawing(g)
    assert "dense" in d.source and "relu" in d.source
    svg = d.to_svg()
    assert svg is not None and "</svg>" in svg

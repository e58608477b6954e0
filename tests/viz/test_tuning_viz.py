"""The tuning pictures: the loop-context table and the annealing walk."""

from __future__ import annotations

import random

import numpy as np
import pytest

from mlc import te
from mlc.tune.sa import anneal
from mlc.viz.tuning import annealing_walk, loop_context_table


def test_loop_context_table_prints_the_papers_rows():
    A = te.placeholder((8, 8), name="A")
    B = te.placeholder((8, 8), name="B")
    k = te.reduce_axis((0, 8), name="k")
    C = te.compute((8, 8), lambda y, x: te.sum(A[k, y] * B[k, x], axis=k), name="C")
    table = loop_context_table(te.create_prim_func([A, B, C]))
    lines = str(table).splitlines()
    assert lines[0].split() == ["loop", "extent", "kind", "outer", "C", "bytes", "A", "bytes",
                                "B", "bytes", "C", "reuse", "A", "reuse", "B", "reuse"]
    assert lines[1].split() == ["k", "8", "serial", "64", "4", "32", "32", "8", "1", "1"]
    assert lines[3].split() == ["y", "8", "serial", "1", "256", "256", "256", "8", "8", "8"]
    assert repr(table) == str(table)  # a notebook shows the table, not a quoted string


def test_annealing_walk_draws_every_chain():
    dims = (4, 3, 2)
    scores = np.arange(24, dtype="float64")
    walk: list = []
    anneal(lambda pts: scores[list(pts)], dims, n_pick=3, exclude=set(),
           rng=random.Random(0), n_chains=3, n_iter=5, record=walk)
    fig = annealing_walk(walk, dims, scores, labels=("a", "b"),
                         ticklabels=(["1", "2", "3", "4"], ["x", "y", "z"]))
    left, right, _ = fig.axes  # the map, the scores, the map's colour bar
    assert len(right.lines) == 3
    assert left.get_xlabel() == "a" and right.get_xlabel() == "annealing step"
    # the map holds the best score over the third knob: cell (a=3, b=2) is config 23
    assert left.images[0].get_array()[2, 3] == 23.0


def test_annealing_walk_refuses_wrong_inputs():
    with pytest.raises(ValueError, match="the space has 24 points"):
        annealing_walk([object()], (4, 3, 2), [0.0] * 5)
    with pytest.raises(ValueError, match="record=\\[\\]"):
        annealing_walk([], (2,), [0.0, 1.0])
    walk: list = []
    anneal(lambda pts: np.zeros(len(pts)), (2, 2), n_pick=1, exclude=set(),
           rng=random.Random(0), n_chains=2, n_iter=2, record=walk)
    with pytest.raises(ValueError, match="chains 0 to 1"):
        annealing_walk(walk, (2, 2), [0.0] * 4, chains=[5])


def test_widgets_carry_an_html_picture_for_static_viewers():
    """GitHub and nbviewer cannot run a widget; they showed ``VBox(children=...)``."""
    from mlc import te, tir, viz

    A = te.placeholder((8, 8), name="A")
    B = te.compute((8, 8), lambda i, j: A[i, j] * 2, name="B")
    sch = tir.Schedule(te.create_prim_func([A, B]))
    sch.split(sch.get_loops(sch.get_block("B"))[0], [None, 4])
    bundle = viz.step_through(sch)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "step 1 of 1" in bundle["text/html"] and "<" in bundle["text/html"]
    bundle = viz.matmul_explorer(n=16)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "first setting" in bundle["text/html"]

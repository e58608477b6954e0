"""Pictures of what a tuner sees: the loop context vectors of one schedule, as a table, and
the simulated-annealing walk over the cost model's landscape.

    print(loop_context_table(func))
    walk = []
    anneal(model.predict, dims, n_pick=8, exclude=set(), rng=random.Random(0), record=walk)
    annealing_walk(walk, dims, model.predict(range(size)), axes=(0, 1))
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from mlc.errors import MLCTypeError
from mlc.tir.stmt import PrimFunc
from mlc.tune.features import loop_context
from mlc.tune.sa import AnnealStep
from mlc.viz.iteration import _figure


class Table(str):
    """Text that a notebook shows as itself (no quotes)."""

    def __repr__(self) -> str:
        return str(self)


def loop_context_table(func: PrimFunc) -> Table:
    """One row per loop around ``func``'s deepest block, innermost first (the order of
    ``itervar_features``): extent, kind, outer loop length (iterations of the loops outside),
    then for each buffer the bytes one run of the loop touches and the reuse (iterations per
    element touched). A tir.Schedule is read as its program."""
    func = getattr(func, "mod", func)
    if not isinstance(func, PrimFunc):
        raise MLCTypeError(
            f"loop_context_table takes a PrimFunc or a tir.Schedule, got {type(func).__name__}")
    rows = loop_context(func)
    if not rows:
        return Table("(no loops around a block)")
    names = [b.buffer for b in rows[0].buffers]
    head = ["loop", "extent", "kind", "outer"]
    head += [f"{n} bytes" for n in names] + [f"{n} reuse" for n in names]
    body = []
    for r in rows:
        cells = [r.loop, str(r.extent), r.kind.value, str(r.outer)]
        cells += [str(b.touched_bytes) for b in r.buffers]
        cells += [f"{b.reuse:g}" for b in r.buffers]
        body.append(cells)
    widths = [max(len(row[c]) for row in [head, *body]) for c in range(len(head))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.ljust(w) if k in (0, 2) else c.rjust(w)
                         for k, (c, w) in enumerate(zip(cells, widths))).rstrip()

    return Table("\n".join([line(head), *(line(b) for b in body)]))


def _choices(index: int, dims: Sequence[int]) -> list[int]:
    out = []
    for d in dims:
        out.append(index % d)
        index //= d
    return out


def annealing_walk(walk: Sequence[AnnealStep], dims: Sequence[int], scores: Sequence[float],
                   axes: tuple[int, int] = (0, 1), labels: Sequence[str] = ("knob 0", "knob 1"),
                   ticklabels: Sequence[Sequence[str]] | None = None,
                   chains: Sequence[int] | None = None) -> Any:
    """Left: the model's score over two knobs (``axes``; the best over the other knobs) as a
    heat map, each chain's walk drawn on it from its start (circle) to its end (star).
    Right: each chain's score against the step. ``scores[i]`` is the model's score of config
    ``i`` (the whole space); ``walk`` is what ``anneal(..., record=walk)`` filled."""
    size = math.prod(dims)
    if len(scores) != size:
        raise ValueError(f"scores has {len(scores)} entries; the space has {size} points")
    if not walk:
        raise ValueError("the walk is empty: pass record=[] to anneal and draw that list")
    a, b = axes
    grid = np.full((dims[a], dims[b]), -np.inf)
    for i, s in enumerate(scores):
        c = _choices(i, dims)
        grid[c[a], c[b]] = max(grid[c[a], c[b]], float(s))
    fig, (left, right) = _figure(None, (9.0, 3.8), ncols=2)
    image = left.imshow(grid.T, origin="lower", cmap="viridis", aspect="auto")
    fig.colorbar(image, ax=left, label="model score (higher = predicted faster)")
    n_chains = len(walk[0].points)
    picked = list(chains) if chains is not None else list(range(n_chains))
    if any(not 0 <= k < n_chains for k in picked):
        raise ValueError(f"chains {picked}: the walk has chains 0 to {n_chains - 1}")
    from matplotlib import patheffects

    outline = [patheffects.withStroke(linewidth=3, foreground="black")]
    colors = ["#e41a1c", "#ff7f00", "#f781bf", "#00e5ff", "#ffffff", "#984ea3"]
    rng = np.random.default_rng(0)  # jitter so chains on one cell stay apart
    for n, k in enumerate(picked):
        path = np.array([_choices(step.points[k], dims) for step in walk], dtype="float64")
        xy = path[:, [a, b]] + rng.uniform(-0.12, 0.12, size=2)
        color = colors[n % len(colors)]
        left.plot(xy[:, 0], xy[:, 1], "-", color=color, linewidth=1.5, path_effects=outline)
        left.plot(xy[0, 0], xy[0, 1], "o", color=color, markersize=7, markeredgecolor="k")
        left.plot(xy[-1, 0], xy[-1, 1], "*", color=color, markersize=13, markeredgecolor="k")
        right.plot([step.step for step in walk], [step.scores[k] for step in walk],
                   color=color, linewidth=1.5, path_effects=outline, label=f"chain {k}")
    left.set_xlabel(labels[0])
    left.set_ylabel(labels[1])
    if ticklabels is not None:
        left.set_xticks(range(dims[a]), list(ticklabels[0]), fontsize=7)
        left.set_yticks(range(dims[b]), list(ticklabels[1]), fontsize=7)
    left.set_title("the walk over the model's landscape")
    right.set_xlabel("annealing step")
    right.set_ylabel("model score of the chain's point")
    right.set_title("score along each chain")
    right.legend(fontsize=7)
    fig.tight_layout()
    return fig


__all__ = ["Table", "loop_context_table", "annealing_walk"]

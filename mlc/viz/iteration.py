"""Pictures of the iteration space: in which order a loop nest visits a 2-D index space, and
which elements of each buffer one tile touches (the locality lesson).

Both run the loop nest *symbolically*: they walk the loops around a block, evaluate the
block's ``iter_values`` (its ``vi = axis.spatial(64, i_0 * 8 + i_1)`` bindings) with
``tir.arith.evaluate_int`` and record what they see. Keep sizes small (16 x 16, 32 x 32).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from mlc.errors import MLCTypeError
from mlc.tir.arith.evaluate import evaluate_int
from mlc.tir.expr import BufferLoad, IntImm, IterKind, Var
from mlc.tir.functor import post_order_visit
from mlc.tir.stmt import BufferStore, For
from mlc.viz._ir import as_func, find_block

LIMIT = 300_000  # loop iterations a picture may walk


def _block_name(block: Any, sch: Any) -> str:
    if isinstance(block, str):
        return block
    if sch is not None and hasattr(sch, "get"):
        return str(sch.get(block).name)
    raise MLCTypeError("name the block by its name, e.g. viz.iteration_order(sch, 'C')")


def _static_int(e: Any, what: str) -> int:
    if isinstance(e, IntImm):
        return int(e.value)
    raise MLCTypeError(
        f"the picture needs constant sizes, but {what} is {e}; build the example with "
        "small fixed shapes (e.g. 16 x 16)"
    )


def walk_iterations(
    obj: Any, block: Any, fixed: dict[str, int] | None = None, args: Any = None
) -> Iterator[tuple[dict[str, int], dict[Var, int]]]:
    """Run the loops around ``block`` in program order; yield ``(loop values by name, block
    variable values)`` for every iteration where the block's predicate holds. ``fixed`` pins
    some loops (by variable name) to one value."""
    func = as_func(obj, args)
    realize, loops = find_block(func, _block_name(block, obj))
    fixed = fixed or {}
    unknown = set(fixed) - {lp.loop_var.name for lp in loops}
    if unknown:
        raise MLCTypeError(
            f"no loop called {sorted(unknown)[0]!r} around block {realize.block.name!r}; its "
            "loops are " + ", ".join(lp.loop_var.name for lp in loops)
        )
    total = 1
    for lp in loops:
        if lp.loop_var.name not in fixed:
            total *= _static_int(lp.extent, f"the extent of loop {lp.loop_var.name}")
    if total > LIMIT:
        raise MLCTypeError(
            f"the nest around {realize.block.name!r} runs {total} iterations; pictures walk at "
            f"most {LIMIT}: use smaller shapes (e.g. 16 x 16 x 16)"
        )
    env: dict[Var, int] = {}
    names: dict[str, int] = {}

    def go(depth: int) -> Iterator[tuple[dict[str, int], dict[Var, int]]]:
        if depth == len(loops):
            if not evaluate_int(realize.predicate, env):
                return
            values = {
                iv.var: int(evaluate_int(v, env))
                for iv, v in zip(realize.block.iter_vars, realize.iter_values)
            }
            yield dict(names), values
            return
        loop: For = loops[depth]
        lo = int(evaluate_int(loop.min, env))
        extent = int(evaluate_int(loop.extent, env))
        name = loop.loop_var.name
        if name in fixed:
            x = fixed[name]
            if isinstance(x, bool) or not isinstance(x, (int, np.integer)) or not (
                lo <= x < lo + extent
            ):
                raise MLCTypeError(
                    f"loop {name!r} around block {realize.block.name!r} runs over "
                    f"{lo}..{lo + extent - 1}; pin it to one of those, not {x!r}"
                )
        xs = [int(fixed[name])] if name in fixed else range(lo, lo + extent)
        for x in xs:
            env[loop.loop_var] = x
            names[name] = x
            yield from go(depth + 1)
        env.pop(loop.loop_var, None)
        names.pop(name, None)

    yield from go(0)


def visit_order(obj: Any, block: Any, axes: tuple[int, int] = (0, 1), args: Any = None
                ) -> np.ndarray:
    """A 2-D array over two of the block's spatial variables (``axes``): the step at which
    each point is first visited (0, 1, 2, ...; -1 where never)."""
    func = as_func(obj, args)
    realize, _ = find_block(func, _block_name(block, obj))
    spatial = [iv for iv in realize.block.iter_vars if iv.kind == IterKind.SPATIAL]
    if len(spatial) < max(axes) + 1:
        raise MLCTypeError(
            f"block {realize.block.name!r} has {len(spatial)} spatial variables; the picture "
            "needs two (a 2-D output)"
        )
    a, b = spatial[axes[0]], spatial[axes[1]]
    shape = (_static_int(a.dom.extent, a.var.name), _static_int(b.dom.extent, b.var.name))
    order = np.full(shape, -1, dtype=np.int64)
    step = 0
    for _, values in walk_iterations(func, realize.block.name):
        x, y = values[a.var], values[b.var]
        if order[x, y] < 0:
            order[x, y] = step
            step += 1
    return order


def iteration_order(obj: Any, block: Any, axes: tuple[int, int] = (0, 1), args: Any = None,
                    title: str | None = None, ax: Any = None, path: bool | None = None) -> Any:
    """Draw the order in which the loops visit the block's 2-D output (dark = early, light =
    late), with the visiting path for small grids. A plain ``i, j`` nest sweeps row by row;
    after ``split``+``reorder`` (tiling) the picture shows square tiles finished one at a
    time. Returns a matplotlib Figure."""
    order = visit_order(obj, block, axes, args)
    fig, ax = _figure(ax, (4.2, 3.8))
    masked = np.ma.masked_less(order, 0)
    im = ax.imshow(masked, cmap="viridis", origin="upper", interpolation="nearest")
    if path if path is not None else order.size <= 1024:
        pts = np.argwhere(order >= 0)
        pts = pts[np.argsort(order[order >= 0])]
        ax.plot(pts[:, 1], pts[:, 0], color="white", linewidth=0.8, alpha=0.8)
        ax.plot(pts[0, 1], pts[0, 0], "o", color="red", markersize=4)
    fig.colorbar(im, ax=ax, label="visit step")
    ax.set_xlabel(f"column (axis {axes[1]})")
    ax.set_ylabel(f"row (axis {axes[0]})")
    ax.set_title(title or f"visiting order of block {_block_name(block, obj)!r}")
    return fig


def footprint(obj: Any, block: Any, at: dict[str, int], args: Any = None
              ) -> dict[str, np.ndarray]:
    """Per buffer the block touches: an array of its shape counting how many times the
    iterations with the loops in ``at`` pinned (e.g. ``{"i_0": 0, "j_0": 0}``, one tile)
    read or write each element."""
    func = as_func(obj, args)
    realize, _ = find_block(func, _block_name(block, obj))
    accesses: list[tuple[str, tuple[Any, ...], tuple[Any, ...]]] = []

    def collect(node: Any) -> None:
        if isinstance(node, (BufferLoad, BufferStore)):
            accesses.append((node.buffer.name, node.buffer.shape, node.indices))

    post_order_visit(realize.block.body, collect)
    counts: dict[str, np.ndarray] = {}
    for name, shape, _ in accesses:
        if name not in counts:
            dims = tuple(_static_int(s, f"the shape of {name}") for s in shape)
            counts[name] = np.zeros(dims, dtype=np.int64)
    for _, values in walk_iterations(func, realize.block.name, fixed=at):
        for name, _, indices in accesses:
            idx = tuple(int(evaluate_int(i, values)) for i in indices)
            counts[name][idx] += 1
    return counts


def tile_footprint(obj: Any, block: Any, at: dict[str, int], args: Any = None,
                   title: str | None = None) -> Any:
    """Draw, for each buffer, the elements one tile touches (``at`` pins the outer loops,
    e.g. ``{"i_0": 1, "j_0": 2}``); the shade is how often each element is used. A tile that
    touches few distinct elements many times has good locality: they stay in cache."""
    counts = footprint(obj, block, at, args)
    fig, axes = _figure(None, (3.2 * len(counts), 3.2), ncols=len(counts))
    axes = list(np.atleast_1d(axes))
    for ax, (name, c) in zip(axes, counts.items()):
        grid = c if c.ndim == 2 else c.reshape(1, -1) if c.ndim < 2 else c.reshape(c.shape[0], -1)
        ax.imshow(np.ma.masked_equal(grid, 0), cmap="Oranges", vmin=0, interpolation="nearest")
        ax.set_xlim(-0.5, grid.shape[1] - 0.5)
        ax.set_ylim(grid.shape[0] - 0.5, -0.5)
        distinct = int((c > 0).sum())
        ax.set_title(f"{name}: {distinct} elements,\n{int(c.sum())} accesses", fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    pinned = ", ".join(f"{k}={v}" for k, v in at.items())
    fig.suptitle(title or f"one tile ({pinned}) of block {_block_name(block, obj)!r}",
                 fontsize=10)
    fig.tight_layout()
    return fig


def _figure(ax: Any, size: tuple[float, float], ncols: int = 1) -> tuple[Any, Any]:
    if ax is not None:
        return ax.figure, ax
    from matplotlib.figure import Figure

    fig = Figure(figsize=size)
    axes = fig.subplots(1, ncols)
    return fig, axes

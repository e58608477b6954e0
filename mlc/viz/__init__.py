"""Pictures and widgets for the course notebooks (imported by notebooks, never by the core).

Loop nests: ``loop_tree``, ``code``; schedules: ``steps``, ``print_steps``, ``step_through``;
iteration spaces: ``iteration_order``, ``visit_order``, ``tile_footprint``, ``footprint``;
graphs: ``graph_drawing``; performance: ``gflops_bars``, ``roofline``, ``tuning_curve``,
``measure_peak``, ``measure_bandwidth``, ``measure_gflops``, ``arithmetic_intensity``;
widgets: ``Explorer``, ``matmul_explorer``. Drawings fall back to DOT text when graphviz's
``dot`` is missing.
"""

from mlc.viz._dot import Drawing
from mlc.viz.graph import graph_drawing
from mlc.viz.iteration import footprint, iteration_order, tile_footprint, visit_order
from mlc.viz.loop_tree import Code, code, loop_tree
from mlc.viz.perf import (
    arithmetic_intensity,
    gflops_bars,
    matmul_intensity,
    measure_bandwidth,
    measure_gflops,
    measure_peak,
    roofline,
    seconds_per_call,
    tuning_curve,
)
from mlc.viz.steps import Step, print_steps, step_through, steps
from mlc.viz.tuning import annealing_walk, loop_context_table
from mlc.viz.widgets import Explorer, divisors, matmul_explorer

__all__ = [
    "Drawing", "graph_drawing", "footprint", "iteration_order", "tile_footprint",
    "visit_order", "Code", "code", "loop_tree", "arithmetic_intensity", "gflops_bars",
    "matmul_intensity",
    "measure_bandwidth", "measure_gflops", "measure_peak", "roofline", "seconds_per_call",
    "tuning_curve", "Step", "print_steps", "step_through", "steps", "Explorer", "divisors",
    "matmul_explorer", "annealing_walk", "loop_context_table",
]

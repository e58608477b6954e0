"""A chart's unit agrees with its data, where the source can tell.

``viz.gflops_bars`` draws a GFLOPS axis, so its data must be computed from a FLOP count
(the expression names ``flops``) and its title must not promise another unit (notebook 06
once titled "batches per ms" a chart whose axis said GFLOPS).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SOURCES = sorted((Path(__file__).resolve().parents[2] / "notebooks" / "src").glob("*.py"))
OTHER_UNITS = re.compile(r"per (ms|us|s|second)|batches|/ ?ms|\bms\b|\bus\b|seconds", re.I)


def gflops_calls(path: Path) -> list[tuple[str, str]]:
    """(data expression, title text) of every gflops_bars call, cell by cell."""
    found = []
    for cell in re.split(r"^# %%.*$", path.read_text(), flags=re.M):
        try:
            tree = ast.parse(cell)
        except SyntaxError:  # a cell with an IPython magic
            continue
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "gflops_bars" and node.args):
                title = next((k.value for k in node.keywords if k.arg == "title"), None)
                texts = [] if title is None else [
                    c.value for c in ast.walk(title)
                    if isinstance(c, ast.Constant) and isinstance(c.value, str)]
                found.append((ast.unparse(node.args[0]), " ".join(texts)))
    return found


@pytest.mark.parametrize("path", SOURCES, ids=[p.stem for p in SOURCES])
def test_gflops_charts_plot_flops(path: Path) -> None:
    for data, title in gflops_calls(path):
        assert "flops" in data.lower(), (
            f"{path.name}: gflops_bars({data}, ...) draws a GFLOPS axis; compute the data "
            "from a FLOP count (a name with 'flops' in it)")
        assert not OTHER_UNITS.search(title), (
            f"{path.name}: a GFLOPS chart titled {title!r} names another unit")

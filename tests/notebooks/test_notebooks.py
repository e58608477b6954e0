"""Every lecture notebook runs top to bottom and reproduces its committed outputs (nbval).

Each notebook runs in its own pytest subprocess, so ``-n 2`` spreads them over workers.
Outputs that vary (timings, widgets, drawings whose SVG depends on graphviz's version) are
tagged ``nbval-ignore-output`` in the notebook; ``nbval_sanitize.cfg`` masks addresses.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
PATHS = sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))
# notebooks built from notebooks/src (the lectures); others may be added by hand
LECTURES = [p for p in PATHS if (NOTEBOOKS / "src" / (p.stem + ".py")).exists()]


def test_there_are_notebooks() -> None:
    assert len(PATHS) >= 5


@pytest.mark.parametrize("path", LECTURES, ids=[p.stem for p in LECTURES])
def test_notebook_is_committed_with_outputs_and_a_picture(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(c.get("execution_count") for c in code), f"{path.name}: run it before committing"
    kinds = {k for c in code for o in c.get("outputs", []) for k in o.get("data", {})}
    assert kinds & {"image/png", "image/svg+xml", "application/vnd.jupyter.widget-view+json"}, (
        f"{path.name} shows no picture or widget"
    )
    src = (NOTEBOOKS / "src" / (path.stem + ".py")).read_text()
    if "### BEGIN SOLUTION" in src:
        last = code[-1].source
        assert "assert" in last or "check_" in last, (
            f"{path.name} should end with a checked exercise")
    else:  # an orientation chapter without exercises still checks what it shows
        assert any("assert" in c.source for c in code), f"{path.name} checks nothing it shows"


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_notebook_runs_and_matches_its_outputs(path: Path, tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "--nbval", str(path), "-p", "no:cacheprovider",
         "-p", "no:xdist", "--nbval-sanitize-with", str(NOTEBOOKS / "nbval_sanitize.cfg"),
         "--nbval-cell-timeout", "240", "--rootdir", str(tmp_path)],
        capture_output=True, text=True, cwd=NOTEBOOKS, timeout=600,
    )
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]


@pytest.mark.parametrize("path", PATHS, ids=[p.stem for p in PATHS])
def test_no_figure_is_committed_as_its_text(path: Path) -> None:
    """A matplotlib figure shown without ``%matplotlib inline`` (or a widget without its
    fallback) is committed as the text ``<Figure size 400x300 with 1 Axes>`` and no picture:
    chapters 02 and 06 once showed none of their charts, and nbval compared the text happily."""
    nb = nbformat.read(path, as_version=4)
    bad = []
    for k, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            text = data.get("text/plain", "") or out.get("text", "")
            if isinstance(text, list):
                text = "".join(text)
            shown = {"image/png", "image/svg+xml", "text/html"} & set(data)
            if ("<Figure size" in text or text.strip().startswith("VBox(")) and not shown:
                bad.append(f"cell {k}: {text.strip()[:60]}")
    assert not bad, f"{path.name} shows a figure as text only: {bad}"

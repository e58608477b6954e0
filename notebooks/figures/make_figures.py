"""Write every drawn figure of the course (``mlc.viz.concepts``) as an SVG file here.

    .venv/bin/python notebooks/figures/make_figures.py

The figures are code, so they stay true to the package and diff in review; the notebooks
draw them live (``concepts.stack(chapter=4)``), and these files are for the README, slides
and docs. ``stack_NN.svg`` is the map of chapter NN with its levels highlighted.
"""

from __future__ import annotations

import sys
from pathlib import Path

from mlc.viz.concepts import CHAPTER_LEVELS, FIGURES, stack

HERE = Path(__file__).resolve().parent


def main() -> int:
    drawings = {name: make() for name, make in FIGURES.items()}
    drawings.update({f"stack_{n:02d}": stack(chapter=n) for n in CHAPTER_LEVELS if n})
    for name, drawing in drawings.items():
        svg = drawing.to_svg()
        if svg is None:
            print("graphviz's dot is not installed: no SVG written", file=sys.stderr)
            return 1
        (HERE / f"{name}.svg").write_text(svg)
    print(f"wrote {len(drawings)} figures to {HERE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

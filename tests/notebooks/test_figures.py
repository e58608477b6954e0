"""The drawn figures of the course (mlc.viz.concepts): every chapter has its map, every
figure is a drawing with the nodes it promises, and a wrong chapter or level is refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlc.viz import concepts

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
CHAPTERS = sorted(int(p.name[:2]) for p in (NOTEBOOKS / "src").glob("[0-9][0-9]_*.py"))


def test_every_chapter_has_a_map_and_opens_with_it() -> None:
    assert set(CHAPTERS) <= set(concepts.CHAPTER_LEVELS)
    for n in CHAPTERS:
        if n == 0:
            continue
        src = next((NOTEBOOKS / "src").glob(f"{n:02d}_*.py")).read_text()
        head = src.split("\n# %% [markdown]\n# ## ", 1)[0]
        assert f"stack(chapter={n})" in head, f"chapter {n:02d} does not open with its map"


@pytest.mark.parametrize("chapter", sorted(concepts.CHAPTER_LEVELS))
def test_the_map_highlights_the_chapters_levels(chapter: int) -> None:
    body = "".join(concepts.stack(chapter=chapter).body)
    nodes = {key: body.split(f"\t{key} [" if f"\t{key} [" in body else f'\t"{key}" [', 1)[1]
             .split("]", 1)[0] for key, *_ in concepts.LEVELS}
    lit = {key for key, attrs in nodes.items() if 'fillcolor="#1565c0"' in attrs}
    assert lit == set(concepts.CHAPTER_LEVELS[chapter])


def test_a_wrong_chapter_or_level_is_refused() -> None:
    with pytest.raises(ValueError, match="no chapter 99"):
        concepts.stack(chapter=99)
    with pytest.raises(ValueError, match="unknown level"):
        concepts.stack(highlight=("kernels",))


@pytest.mark.parametrize("name", sorted(concepts.FIGURES))
def test_each_figure_draws(name: str) -> None:
    drawing = concepts.FIGURES[name]()
    assert "->" in drawing.source and drawing.source.count("[") >= 4

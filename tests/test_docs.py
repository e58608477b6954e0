"""The README and the architecture doc name only what exists; the course map lists every chapter."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "docs" / "architecture.md"]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_mlc_path_a_doc_names_exists(doc):
    text = doc.read_text()
    paths = set(re.findall(r"`(mlc/[A-Za-z0-9_/]+(?:\.py)?)`", text))
    assert paths, f"{doc.name} names no mlc/ path: the pattern is wrong"
    missing = sorted(p for p in paths if not (ROOT / p).exists())
    assert not missing, f"{doc.name} names paths that do not exist: {missing}"


def test_the_course_map_lists_every_chapter():
    text = (ROOT / "README.md").read_text()
    chapters = sorted(p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert len(chapters) >= 10
    rows = set(re.findall(r"^\| `([0-9][0-9]_[a-z0-9_]+)` \|", text, flags=re.M))
    assert rows == set(chapters)


def test_the_front_door_says_what_make_lab_prints_and_uses_the_venv():
    """The README quotes the line `make lab` ends with; every command it gives runs from the
    project's venv (a system Python lacks mlc's dependencies: No module named 'tqdm')."""
    readme = (ROOT / "README.md").read_text()
    makefile = (ROOT / "Makefile").read_text()
    lab = makefile.split("\nlab:", 1)[1].split("\n\n", 1)[0]
    assert "The course is open at" in lab and "The course is open at" in readme
    assert "|| echo" in lab, "an optional install (graphviz) must not stop make lab"
    bare = re.findall(r"`(?:python|pip)(?: -m)? [^`]*`", readme)
    assert not bare, f"README commands outside .venv: {bare}"
    assert "make test" in readme and "GB" in readme, "say what make test installs, and its size"

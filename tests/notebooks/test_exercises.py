"""The exercises at the end of each lecture: blank ones fail their checks, solutions pass.

A source in ``notebooks/src`` with ``### BEGIN SOLUTION`` regions has exercises. Its exercise
section (from the markdown cell ``## Exercises`` to the end) must run on its own after the
notebook's first code cell, so this test runs just those cells, twice: as written (every check
must print ✓) and as the student gets them (every check must print ✗ with a hint). It also
checks that the committed student notebook is the one ``notebooks/build.py`` writes.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import linecache
import re
from pathlib import Path

import nbformat
import pytest

from mlc.testing import exercises

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
_spec = importlib.util.spec_from_file_location("notebook_build", NOTEBOOKS / "build.py")
assert _spec is not None and _spec.loader is not None
build = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build)

SOURCES = [p for p in sorted((NOTEBOOKS / "src").glob("*.py"))
           if build.has_exercises(p.read_text())]


def exercise_code(nb: nbformat.NotebookNode) -> str:
    """The first code cell (imports; IPython magics dropped) and every code cell of the
    exercise section."""
    code = [c for c in nb.cells if c.cell_type == "code"]
    start = next((k for k, c in enumerate(nb.cells) if c.cell_type == "markdown"
                  and c.source.lstrip().startswith("## Exercises")), None)
    assert start is not None, "a notebook with exercises needs a '## Exercises' markdown cell"
    cells = [code[0]] + [c for c in nb.cells[start:] if c.cell_type == "code"]
    return "\n\n".join("\n".join(ln for ln in c.source.splitlines() if not ln.startswith("%"))
                       for c in cells)


def run_checks(source: str, label: str) -> list[exercises.Result]:
    exercises.RESULTS.clear()
    filename = f"<exercises of {label}>"  # mlc.script reads class sources through linecache
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    with contextlib.redirect_stdout(io.StringIO()):
        exec(compile(source, filename, "exec"), {"__name__": "__main__"})  # noqa: S102
    return list(exercises.RESULTS)


def test_some_notebooks_have_exercises() -> None:
    assert len(SOURCES) >= 5


# a chapter whose checks time code runs with the `timing` tests (alone, after the parallel run)
TIMED = [pytest.param(p, marks=pytest.mark.timing) if "time_evaluator" in p.read_text()
         .split("## Exercises", 1)[-1] else p for p in SOURCES]


@pytest.mark.parametrize("src", TIMED, ids=[p.stem for p in SOURCES])
def test_solutions_pass_and_blanks_fail_with_a_hint(src: Path) -> None:
    text = src.read_text()
    solved = run_checks(exercise_code(build.parse(text)), src.name)
    assert 2 <= len(solved) <= 6, f"{src.name}: {len(solved)} checks ran; a chapter has 2 to 4"
    assert all(r.passed for r in solved), [r for r in solved if not r.passed]
    blank = run_checks(exercise_code(build.student_notebook(text)), src.name + " (student)")
    assert [r.title for r in blank] == [r.title for r in solved]
    for r in blank:
        assert not r.passed, f"{src.name}: the blank '{r.title}' passes its check"
        assert "not written yet" in r.message and 'hint("' in r.message, r
        assert len(r.hints) >= 2, f"{src.name}: '{r.title}' needs the idea, then the tools"
        assert not any(h in r.message for h in r.hints), (
            f"{src.name}: the blank '{r.title}' prints its hint on the first run")


# A method call with arguments (``sch.split(i, factors=[None, 4])``), a keyword argument or
# a subscript with a slice: code, which a hint never gives (math such as log(1 + exp(-d))
# may appear). The first hint is the idea: no API name either.
CODE = re.compile(r"\b\w+\.\w+\([^)\s]|\(\s*[^)]*\b\w+=[\w\"'\[]|\[[^\]]*:[^\]]*\]")
API = re.compile(r"\b(te|tir|sch|graph|np|cfg|vdla|mlc|s)\.\w|\b\w+\.\w+\(")


@pytest.mark.parametrize("src", SOURCES, ids=[p.stem for p in SOURCES])
def test_hints_give_the_idea_first_and_never_code(src: Path) -> None:
    exercises.HINTS.clear()
    code = exercise_code(build.student_notebook(src.read_text()))
    run_checks(code, src.name)
    assert exercises.HINTS, f"{src.name}: no exercise registered its hints"
    for title, hints in exercises.HINTS.items():
        assert len(hints) >= 2, f"{src.name}: '{title}' has {len(hints)} hint(s)"
        for h in hints:
            assert not CODE.search(h), f"{src.name}: a hint of '{title}' gives code: {h!r}"
        assert not API.search(hints[0]), f"{src.name}: '{title}''s first hint names an API"


def with_answer(text: str, region: int, answer: str) -> str:
    """``text`` with its ``region``-th solution (0 first) replaced by ``answer``, indented
    as the region's marker."""
    lines, out, k, inside = text.splitlines(), [], -1, False
    for line in lines:
        if line.strip() == build.BEGIN_SOLUTION:
            k += 1
            inside = k == region
            if inside:
                pad = line[: len(line) - len(line.lstrip())]
                out += [pad + a for a in answer.strip("\n").splitlines()]
                continue
        if inside:
            if line.strip() == build.END_SOLUTION:
                inside = False
            continue
        out.append(line)
    return "\n".join(out) + "\n"


WRONG = [
    # a FLOP counter that never restores its trip count: right on one loop nest, wrong on
    # two nests one after the other
    ("03_loop_ir_and_lowering", 0, "1. count the FLOPs",
     "self.trips *= int(loop.extent)\nself.generic_visit(loop)"),
    # a flag table in which FINISH does not wait for the store
    ("10_accelerator", 0, "1. tokens",
     'return {3: {"push_next": True}, 4: {"pop_prev": True, "push_prev": True},\n'
     '        5: {"pop_next": True}, 6: {"push_next": True},\n'
     '        7: {"pop_prev": True, "push_next": True}, 8: {"pop_prev": True}}'),
    # a failed candidate treated as infinitely slow: a shape where all failed still gets one
    ("12_kernel_selection", 0, "1. pick per shape",
     "inf = float('inf')\n"
     "return {s: min(t, key=lambda nm: inf if t[nm] is None else t[nm])\n"
     "        for s, t in timings.items()}"),
    # a dispatcher that measures on every call
    ("12_kernel_selection", 2, "2. a timing cache",
     "return self.kernels[self.measure(x.shape)](x)"),
    # no compute_at: the whole n x n scores are allocated
    ("13_attention", 0, "1. attention, one row at a time", "return te.create_schedule(O.op)"),
    # a running sum that is not rescaled when a larger maximum arrives
    ("13_attention", 1, "2. online softmax",
     "m, total = -np.inf, 0.0\nfor b in blocks:\n    m = max(m, float(b.max()))\n"
     "    total += float(np.exp(b - m).sum())\nreturn m, total"),
    # the blocks kept and reduced at the end: not one pass with two numbers between blocks
    ("13_attention", 1, "2. online softmax",
     "x = np.concatenate(list(blocks))\nm = float(x.max())\n"
     "return m, float(np.exp(x - m).sum())"),
]


@pytest.mark.parametrize("chapter, region, title, answer", WRONG, ids=[w[2] for w in WRONG])
def test_a_wrong_answer_fails_its_check(chapter: str, region: int, title: str,
                                        answer: str) -> None:
    src = NOTEBOOKS / "src" / (chapter + ".py")
    text = with_answer(src.read_text(), region, answer)
    results = {r.title: r for r in run_checks(exercise_code(build.parse(text)), chapter)}
    assert not results[title].passed, f"{chapter}: the wrong answer passes '{title}'"
    assert "your code raised" not in results[title].message, results[title]


def test_who_raised_is_told_apart() -> None:
    @exercises.exercise("9. demo", hint=["the idea", "the tools"])
    def check(answer):
        value = answer()
        exercises.expect(value.shape == (2,), "two elements")  # AttributeError on an int

    def raises():
        return [][1]

    def returns_int():
        return 3

    exercises.RESULTS.clear()
    with contextlib.redirect_stdout(io.StringIO()):
        check(raises)
        check(returns_int)
    mine, theirs = exercises.RESULTS
    assert mine.message.startswith("your code raised IndexError"), mine
    assert theirs.message.startswith("checking your answer raised AttributeError"), theirs
    assert "not in yours" in theirs.message, theirs


def test_hint_on_request_one_at_a_time() -> None:
    @exercises.exercise("8. demo", hint=["first the idea", "then the tools"])
    def check(answer):
        answer()

    def stub():
        raise NotImplementedError()

    exercises.RESULTS.clear()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        check(stub)
    assert "first the idea" not in out.getvalue() and 'hint("8")' in out.getvalue()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exercises.hint()
        exercises.hint("8")
        exercises.hint("8")
    lines = out.getvalue().splitlines()
    assert "hint 1 of 2: first the idea" in lines[0] and "hint 2 of 2: then the tools" in lines[1]
    assert "the last" in lines[2] and "then the tools" in lines[2]


@pytest.mark.parametrize("src", SOURCES, ids=[p.stem for p in SOURCES])
def test_student_notebook_is_committed_and_current(src: Path) -> None:
    path = NOTEBOOKS / "student" / (src.stem + ".ipynb")
    assert path.exists(), f"run notebooks/build.py {src.stem[:2]} and commit {path}"
    committed = [c.source for c in nbformat.read(path, as_version=4).cells]
    expected = [c.source for c in build.student_notebook(src.read_text()).cells]
    assert committed == expected, f"{path.name} is stale: run notebooks/build.py {src.stem[:2]}"
    assert "BEGIN SOLUTION" not in "".join(committed)


def test_strip_solutions_keeps_the_indentation() -> None:
    src = "def f(x):\n    y = 1\n    ### BEGIN SOLUTION\n    return x + y\n    ### END SOLUTION\n"
    assert build.strip_solutions(src) == "def f(x):\n    y = 1\n    raise NotImplementedError()\n"
    with pytest.raises(ValueError):
        build.strip_solutions("### BEGIN SOLUTION\nx = 1\n")

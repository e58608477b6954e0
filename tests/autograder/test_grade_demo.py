"""Grading the numpy-only demo: full marks, zero marks, and hostile submissions.

All submissions are graded in one run (two in parallel), as an instructor would; each test
then reads the gradebook and feedback.
"""

from __future__ import annotations

import csv
import json
import os
from pathlib import Path

import pytest
from conftest import copy, variant

from autograder.cli import main
from autograder.sandbox import is_root

FIRST_TEST = 3  # index of the first test cell in the demo notebook
PATCH = """
import numpy as np, time
np.allclose = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
time.perf_counter = lambda: 0.0
import autograder.harness as h
h.export = lambda case_id, value: None
def add_scaled(a, b, alpha):
    return a
def row_softmax(x):
    return x
"""
READ_TESTS = """
import glob, os
stolen = ''
for path in glob.glob('{tests}/**/*.py', recursive=True):
    stolen += open(path).read()
assert not stolen, 'could read the hidden tests'
"""
WRITE_TESTS = """
for path in ['{tests}/demo_numpy/grader.py', '{repo}/autograder/__init__.py']:
    try:
        open(path, 'a').write('\\nCASES = []\\n')
    except OSError as err:
        print('refused', path, err)
"""
FORK_BOMB = """
import os, time
children = 0
try:
    for _ in range(100000):
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        children += 1
except OSError:
    pass
print('forks before refusal:', children)
"""


@pytest.fixture(scope="module")
def graded(demo, tmp_path_factory) -> dict:
    subs = tmp_path_factory.mktemp("subs")
    sol, blank, tests = demo["solution"], demo["blank"], demo["tests"]
    hostile = "\n".join([PATCH, READ_TESTS.format(tests=tests), WRITE_TESTS.format(
        tests=tests, repo=Path(__file__).resolve().parents[2])])
    notebooks = [
        copy(sol, subs / "solution.ipynb"),
        copy(blank, subs / "blank.ipynb"),
        variant(sol, subs / "loop.ipynb", insert={2: "while True:\n    pass"}),
        variant(sol, subs / "kill.ipynb",
                insert={FIRST_TEST: "import os\nos.kill(os.getpid(), 9)"}),
        variant(sol, subs / "syntax.ipynb",
                replace={2: "def add_scaled(a, b, alpha)\n    return a"}),
        # Every attack that leaves the kernel alive, on the blank notebook: any success would
        # show as points. Test cells replaced by `pass`; numpy, time and the harness patched;
        # the hidden tests read and written; a memory bomb; a fork bomb.
        variant(blank, subs / "hostile.ipynb", replace={3: "pass", 5: "pass"}, insert={
            2: hostile, 4: "hog = []\nwhile True:\n    hog.append(bytearray(1 << 28))",
            6: FORK_BOMB}),
    ]
    out = tmp_path_factory.mktemp("out")
    grader_before = (tests / "demo_numpy" / "grader.py").read_text()
    rc = main(["grade", "--assignment", "demo_numpy", "--tests", str(tests), "--out", str(out),
               "--timeout", "4", "--jobs", "2", "--memory-mb", "3072", "--quiet",
               *map(str, notebooks)])
    with (out / "grades.csv").open() as f:
        rows = {row["student"]: row for row in csv.DictReader(f)}
    return {"rc": rc, "rows": rows, "out": out, "tests": tests, "grader_before": grader_before}


def score(graded, student):
    return float(graded["rows"][student]["score"])


def test_solution_gets_full_marks(graded):
    assert graded["rc"] == 0
    assert score(graded, "solution") == 5.0
    assert graded["rows"]["solution"]["max_score"] == "5"


def test_blank_notebook_gets_zero(graded):
    assert score(graded, "blank") == 0.0
    feedback = (graded["out"] / "blank" / "feedback.md").read_text()
    assert "public test failed: NotImplementedError" in feedback
    assert "hidden test softmax_hidden: failed" in feedback


def test_feedback_and_gradescope_results(graded):
    results = json.loads((graded["out"] / "solution" / "results.json").read_text())
    assert results["score"] == 5.0
    assert [(t["name"], t["score"], t["max_score"]) for t in results["tests"]] == [
        ("t_add", 2.0, 2.0), ("t_softmax", 3.0, 3.0)]
    assert all({"output", "visibility"} <= set(t) for t in results["tests"])


def test_hidden_tests_say_only_pass_or_fail(graded):
    text = (graded["out"] / "hostile" / "feedback.md").read_text()
    assert "hidden test add_hidden: failed" in text
    assert "expected" not in text and "index" not in text  # no values leak from hidden cases


def test_an_interrupted_infinite_loop_costs_only_its_cell(graded):
    assert score(graded, "loop") == 5.0


def test_a_killed_kernel_fails_every_test_not_yet_passed(graded):
    assert score(graded, "kill") == 0.0
    assert "kernel died" in (graded["out"] / "kill" / "feedback.md").read_text()


def test_hostile_notebook_gets_nothing_and_leaves_no_process(graded):
    """Patching numpy/time/the harness, editing tests, a memory bomb and a fork bomb."""
    assert score(graded, "hostile") == 0.0
    if is_root():
        base = 200_000 + (os.getpid() % 100_000) * 64  # the uids this process's jobs used
        leftover = [p for p in os.listdir("/proc") if p.isdigit() and
                    base <= _uid(p) < base + 64]
        assert leftover == []


def _uid(pid: str) -> int:
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        return -1


def test_a_syntax_error_fails_only_what_it_breaks(graded):
    assert float(graded["rows"]["syntax"]["t_add"]) == 0.0
    assert float(graded["rows"]["syntax"]["t_softmax"]) == 3.0


@pytest.mark.skipif(not is_root(), reason="hiding the tests needs root (mount namespace)")
def test_the_kernel_cannot_read_or_write_the_tests(graded):
    assert (graded["tests"] / "demo_numpy" / "grader.py").read_text() == graded["grader_before"]
    assert "CASES = []" not in (Path(__file__).resolve().parents[2] / "autograder" /
                                "__init__.py").read_text()

"""Authoring markers: solution stubs, hidden regions, test metadata (no kernel needed)."""

import nbformat
import pytest

from autograder.notebook import AuthoringError, read_tests, split_hidden, strip_solutions


def test_strip_solutions_keeps_code_before_and_indents_the_stub():
    src = ("def f(x):\n    y = 1\n    ### BEGIN SOLUTION\n    return x + y\n"
           "    ### END SOLUTION\nz = 2")
    assert strip_solutions(src) == "def f(x):\n    y = 1\n    raise NotImplementedError()\nz = 2"


def test_split_hidden_separates_public_and_hidden_code():
    src = ("assert f(1) == 2\n### BEGIN HIDDEN TESTS\ngrading.check_call('c', f)\n"
           "### END HIDDEN TESTS")
    assert split_hidden(src) == ("assert f(1) == 2", "grading.check_call('c', f)")


def test_unclosed_region_is_an_authoring_error():
    with pytest.raises(AuthoringError, match="never closed"):
        strip_solutions("### BEGIN SOLUTION\nx = 1")


def _nb(*cells):
    nb = nbformat.v4.new_notebook()
    nb.cells = list(cells)
    return nb


def _test_cell(source, meta):
    cell = nbformat.v4.new_code_cell(source)
    cell.metadata["autograder"] = meta
    return cell


def test_read_tests_takes_points_and_case_ids_from_the_cell():
    cell = _test_cell("x\n### BEGIN HIDDEN TESTS\ngrading.check_te('a', f)\n"
                      "grading.check_te(\"b\", f)\n### END HIDDEN TESTS", {"id": "t1", "points": 2})
    (test,) = read_tests(_nb(cell))
    assert (test.id, test.points, test.case_ids) == ("t1", 2.0, ["a", "b"])


def test_a_graded_test_without_hidden_checks_is_refused():
    with pytest.raises(AuthoringError, match="no '### BEGIN HIDDEN TESTS'"):
        read_tests(_nb(_test_cell("assert True", {"id": "t1", "points": 1})))


def test_duplicate_test_ids_are_refused():
    src = "### BEGIN HIDDEN TESTS\ngrading.check_call('a', f)\n### END HIDDEN TESTS"
    cells = [_test_cell(src, {"id": "t1", "points": 1}), _test_cell(src, {"id": "t1", "points": 1})]
    with pytest.raises(AuthoringError, match="used twice"):
        read_tests(_nb(*cells))

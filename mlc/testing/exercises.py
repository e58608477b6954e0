"""Checks for the exercises at the end of each lecture notebook.

A check is a function decorated with :func:`exercise`; it receives the student's answer
(usually a function) and raises :class:`ExerciseFailure` (through :func:`expect`) when the
answer is wrong. Decorated, it never raises: it prints one line, ``✓`` or ``✗`` with what is
wrong and a hint, and records the outcome in :data:`RESULTS` (the notebook tests read it)::

    @exercise("1. row max", hint="te.max(A[i, k], axis=k) over a te.reduce_axis")
    def check_row_max(row_max):
        ...
        expect(np.allclose(r, a.max(axis=1)), "R[i] should be the largest element of row i")

    check_row_max(row_max)      # ✗ 1. row max: not written yet ...   hint: ...

A stub that still says ``raise NotImplementedError()`` reads as "not written yet"; any other
exception from the student's code is shown with its type and first line.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


class ExerciseFailure(Exception):
    """An answer that runs but is wrong; the message says what is wrong."""


@dataclass(frozen=True)
class Result:
    title: str
    passed: bool
    message: str


RESULTS: list[Result] = []  # every check run in this process, in order


def expect(condition: object, message: str) -> None:
    """Fail the exercise with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ExerciseFailure(message)


def _first_lines(err: BaseException, n: int = 4) -> str:
    lines = [ln for ln in str(err).strip().splitlines() if ln.strip()]
    return " / ".join(lines[:n])


def exercise(title: str, hint: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Turn ``check(answer, ...)`` into a check that prints its verdict and a hint."""

    def decorate(check: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(check)
        def run(*answers: Any, **kwargs: Any) -> None:
            try:
                check(*answers, **kwargs)
            except NotImplementedError as err:
                if err.args:  # raised by mlc, not by the stub
                    problem = f"mlc cannot do this: {_first_lines(err)}"
                else:
                    problem = ("not written yet: replace `raise NotImplementedError()` "
                               "with your code")
            except ExerciseFailure as err:
                problem = str(err)
            except AssertionError as err:
                problem = _first_lines(err) or "a comparison failed"
            except Exception as err:  # noqa: BLE001 - the student's code may raise anything
                problem = f"your code raised {type(err).__name__}: {_first_lines(err, 2)}"
            else:
                RESULTS.append(Result(title, True, "passes"))
                print(f"✓ {title}: passes")
                return
            RESULTS.append(Result(title, False, f"{problem} (hint: {hint})"))
            print(f"✗ {title}: {problem}\n  hint: {hint}")

        return run

    return decorate

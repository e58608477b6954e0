"""Checks for the exercises at the end of each lecture notebook.

A check is a function decorated with :func:`exercise`; it receives the student's answer
(usually a function) and raises :class:`ExerciseFailure` (through :func:`expect`) when the
answer is wrong. Decorated, it never raises: it prints one line, ``✓`` or ``✗`` with what is
wrong, and records the outcome in :data:`RESULTS` (the notebook tests read it)::

    @exercise("1. row max", hint=["each output element looks at one whole row of A: which "
                                  "index runs over the row, and what combines its elements?",
                                  "a reduce axis, and the te reduction that keeps the largest"])
    def check_row_max(row_max):
        ...
        expect(np.allclose(r, a.max(axis=1)), "R[i] should be the largest element of row i")

    check_row_max(row_max)      # ✗ 1. row max: not written yet ... (stuck? hint())
    hint()                      # hint 1 of 2 for the exercise that failed last
    hint("1")                   # the next hint of exercise "1. ..."

Hints are never printed by a failing check: a student asks for them with :func:`hint`, which
shows them one at a time, the idea first, then the tools to use (never the code).

A stub that still says ``raise NotImplementedError()`` reads as "not written yet". An
exception raised inside the student's own code is "your code raised ..."; one raised by mlc
on the student's answer is "mlc refused your answer ..."; one raised by the check's own code
(the answer returned something the check could not use, or the check has a bug) says so.
"""

from __future__ import annotations

import functools
import inspect
import traceback
import types
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mlc.errors import MLCError


class ExerciseFailure(Exception):
    """An answer that runs but is wrong; the message says what is wrong."""


@dataclass(frozen=True)
class Result:
    title: str
    passed: bool
    message: str
    hints: tuple[str, ...] = ()


RESULTS: list[Result] = []  # every check run in this process, in order
HINTS: dict[str, list[str]] = {}  # title -> its hints, the idea first
_SHOWN: dict[str, int] = {}  # title -> how many of its hints hint() has shown


def expect(condition: object, message: str) -> None:
    """Fail the exercise with ``message`` unless ``condition`` holds."""
    if not condition:
        raise ExerciseFailure(message)


def _first_lines(err: BaseException, n: int = 4) -> str:
    lines = [ln for ln in str(err).strip().splitlines() if ln.strip()]
    return " / ".join(lines[:n])


def _codes(obj: Any, seen: set[int] | None = None) -> set[types.CodeType]:
    """Every code object the student wrote in ``obj``: a function's (with its nested
    functions and lambdas), a class's methods, a list's or dict's items."""
    seen = set() if seen is None else seen
    if id(obj) in seen:
        return set()
    seen.add(id(obj))
    found: set[types.CodeType] = set()
    if isinstance(obj, types.CodeType):
        found.add(obj)
        for const in obj.co_consts:
            if isinstance(const, types.CodeType):
                found |= _codes(const, seen)
    elif isinstance(obj, (types.FunctionType, types.MethodType)):
        found |= _codes(getattr(obj, "__func__", obj).__code__, seen)
    elif inspect.isclass(obj) and obj.__module__ != "builtins":
        for value in vars(obj).values():
            value = getattr(value, "__func__", value)  # staticmethod / classmethod
            if isinstance(value, types.FunctionType):
                found |= _codes(value, seen)
    elif isinstance(obj, (list, tuple)):
        for item in obj:
            found |= _codes(item, seen)
    elif isinstance(obj, dict):
        for item in obj.values():
            found |= _codes(item, seen)
    return found


def _describe(err: BaseException, answers: Sequence[Any], check: Callable[..., None]) -> str:
    """What went wrong, told by where the exception was raised."""
    frames = traceback.extract_tb(err.__traceback__)
    student = _codes(list(answers))
    tb = err.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code in student:
            return f"your code raised {type(err).__name__}: {_first_lines(err, 2)}"
        tb = tb.tb_next
    if isinstance(err, MLCError):
        return f"mlc refused your answer: {type(err).__name__}: {_first_lines(err, 3)}"
    line = next((f.lineno for f in reversed(frames) if f.name == check.__name__), None)
    where = f", line {line} of the check" if line is not None else ""
    return (f"checking your answer raised {type(err).__name__}: {_first_lines(err, 2)} (in the "
            f"check's code{where}, not in yours: look at what your answer returns; if it "
            "looks right, tell your instructor)")


def hint(which: str | None = None) -> None:
    """Print the next hint of an exercise: ``which`` is the start of its title ("2" or
    "2. row max"); without it, the exercise whose check failed last. Hints come one at a
    time, the idea first; the last one names the tools, never the code."""
    if which is None:
        failed = [r.title for r in RESULTS if not r.passed]
        if not failed:
            print("no check has failed yet: run the check under an exercise first, or name "
                  'the exercise: hint("2")')
            return
        title = failed[-1]
    else:
        which = str(which)
        # "1" is exercise "1. ..." (never "10. ..."); a title merely starting so comes after
        matches = [t for t in HINTS if t == which or t.startswith(which.rstrip(".") + ".")] \
            or [t for t in HINTS if t.startswith(which)]
        if not matches:
            print(f"no exercise {which!r} here; the exercises are: {', '.join(HINTS)}")
            return
        title = matches[-1]
    hints = HINTS.get(title, [])
    if not hints:
        print(f"{title}: this exercise has no hint")
        return
    k = _SHOWN.get(title, 0)
    if k >= len(hints):
        print(f"{title}, hint {len(hints)} of {len(hints)}, the last (then read the chapter's "
              f"cells on this idea again, or ask): {hints[-1]}")
        return
    _SHOWN[title] = k + 1
    print(f"{title}, hint {k + 1} of {len(hints)}: {hints[k]}")


def exercise(title: str, hint: str | Sequence[str]) -> Callable[[Callable[..., None]],
                                                                Callable[..., None]]:
    """Turn ``check(answer, ...)`` into a check that prints its verdict. ``hint`` is one hint
    or a list of them, the idea first; :func:`hint` shows them on request."""
    hints = [hint] if isinstance(hint, str) else [str(h) for h in hint]
    HINTS[title] = hints
    _SHOWN.pop(title, None)
    short = title.split(".")[0] if title[:1].isdigit() else title

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
                problem = _describe(err, answers, check)
            else:
                RESULTS.append(Result(title, True, "passes", tuple(hints)))
                print(f"✓ {title}: passes")
                return
            ask = f'stuck? hint("{short}") gives a hint ({len(hints)} in all)'
            RESULTS.append(Result(title, False, f"{problem} ({ask})", tuple(hints)))
            print(f"✗ {title}: {problem}\n  {ask}")

        run.hint = lambda: globals()["hint"](title)  # type: ignore[attr-defined]
        return run

    return decorate

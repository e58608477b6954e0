"""hint("N") finds exercise N, not another whose number starts with the same digit."""

from __future__ import annotations

import contextlib
import io

from mlc.testing import exercises


def test_hint_by_number_picks_that_exercise_not_a_longer_number() -> None:
    saved = dict(exercises.HINTS), dict(exercises._SHOWN)
    try:
        exercises.HINTS.clear()
        exercises._SHOWN.clear()
        exercises.exercise("1. first", hint=["idea of one", "tools of one"])
        exercises.exercise("10. tenth", hint=["idea of ten", "tools of ten"])
        exercises.exercise("12 bis", hint=["idea of twelve", "tools of twelve"])
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exercises.hint("1")
            exercises.hint("10")
            exercises.hint("12")  # no "12." exercise: the title that starts so
        lines = out.getvalue().splitlines()
        assert lines[0].startswith("1. first, hint 1 of 2: idea of one"), lines
        assert lines[1].startswith("10. tenth, hint 1 of 2: idea of ten"), lines
        assert lines[2].startswith("12 bis, hint 1 of 2: idea of twelve"), lines
    finally:
        exercises.HINTS.clear()
        exercises.HINTS.update(saved[0])
        exercises._SHOWN.clear()
        exercises._SHOWN.update(saved[1])

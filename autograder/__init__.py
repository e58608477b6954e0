"""The mlc course autograder: generate assignments, grade submissions safely.

See docs/instructors.md. Commands: ``python -m autograder generate|grade|check``.
Hidden test cells call :mod:`autograder.harness` (``from autograder import harness as grading``).
"""

"""Step through a schedule: replay its trace one primitive at a time, with a diff per step.

    viz.print_steps(sch)                 # text: each primitive, then the lines it changed
    viz.step_through(sch)                # a widget: slider + prev/next, code with changes marked

A trace is TensorIR's record of every primitive applied (``sch.trace``). Replaying a prefix
of it on a fresh Schedule of the original PrimFunc gives the program after each step, so
students see what *each* primitive did, not only the final loop nest.
"""

from __future__ import annotations

import difflib
import html
from dataclasses import dataclass
from typing import Any

from mlc.errors import MLCTypeError
from mlc.tir.schedule import Instruction, Schedule, Trace
from mlc.tir.stmt import PrimFunc

_ADDED = "background:#d4f7d4"
_REMOVED = "background:#fbd5d5;text-decoration:line-through;color:#888"


@dataclass
class Step:
    """The program before and after one primitive."""

    index: int
    call: str  # the primitive as Python, e.g. "l4, l5 = sch.split(loop=l1, factors=[None, 8])"
    before: str
    after: str

    @property
    def changed(self) -> bool:
        return self.before != self.after

    def diff(self) -> list[str]:
        """Unified-diff lines (``-`` removed, ``+`` added) between before and after."""
        return list(
            difflib.unified_diff(
                self.before.splitlines(), self.after.splitlines(), "before", "after", lineterm=""
            )
        )

    def marked_after(self) -> list[tuple[str, str]]:
        """The lines after this step, each tagged ``"+"`` (new or changed), ``"-"`` (removed
        here; shown struck through) or ``" "`` (unchanged). A line that only moved deeper or
        shallower (a split re-indents the whole body) counts as unchanged."""
        old, new = self.before.splitlines(), self.after.splitlines()
        matcher = difflib.SequenceMatcher(
            None, [x.strip() for x in old], [x.strip() for x in new], autojunk=False
        )
        out: list[tuple[str, str]] = []
        for op, i1, i2, j1, j2 in matcher.get_opcodes():
            if op == "equal":
                out.extend((" ", line) for line in new[j1:j2])
                continue
            out.extend(("-", line) for line in old[i1:i2])
            out.extend(("+", line) for line in new[j1:j2])
        return out

    def changed_lines(self, context: int = 1) -> list[str]:
        """Only the changed lines (``+``/``-``) with ``context`` unchanged lines around them."""
        marked = self.marked_after()
        keep: set[int] = set()
        for k, (tag, _) in enumerate(marked):
            if tag != " ":
                keep.update(range(max(0, k - context), min(len(marked), k + context + 1)))
        out: list[str] = []
        last = -2
        for k in sorted(keep):
            if k != last + 1 and out:
                out.append("  ...")
            out.append(f"{marked[k][0]} {marked[k][1]}")
            last = k
        return out

    def to_html(self) -> str:
        rows = []
        for tag, text in self.marked_after():
            style = _ADDED if tag == "+" else _REMOVED if tag == "-" else ""
            mark = {"+": "+ ", "-": "- ", " ": "  "}[tag]
            rows.append(f'<span style="{style}">{html.escape(mark + text)}</span>')
        title = html.escape(f"step {self.index + 1}: {self.call}")
        return (
            f'<div class="mlc-step"><b style="font-family:monospace">{title}</b>'
            '<pre style="font-family:monospace;font-size:12px;line-height:1.3;'
            'background:#f8f8f8;padding:6px">' + "\n".join(rows) + "</pre></div>"
        )


def _source(obj: Any, func: PrimFunc | None) -> tuple[list[list[Any]], PrimFunc]:
    if isinstance(obj, Schedule):
        trace_json = obj.trace.as_json()
        func = func if func is not None else getattr(obj, "_orig", None)
    elif isinstance(obj, Trace):
        trace_json = obj.as_json()
    elif isinstance(obj, (list, str)):
        import json

        trace_json = json.loads(obj) if isinstance(obj, str) else obj
    else:
        raise MLCTypeError(
            f"step through a tir.Schedule, a Trace or trace JSON; got {type(obj).__name__}"
        )
    if not isinstance(func, PrimFunc):
        raise MLCTypeError(
            "replaying a trace needs the PrimFunc it started from: "
            "viz.steps(trace, te.create_prim_func([A, B, C]))"
        )
    return trace_json, func


def steps(obj: Any, func: PrimFunc | None = None, skip_unchanged: bool = True) -> list[Step]:
    """Replay ``obj`` (a Schedule, a Trace or trace JSON) on ``func`` one primitive at a time.

    Instructions that do not change the program (``get_block``, ``get_loops``, sampling) are
    left out when ``skip_unchanged``."""
    trace_json, func = _source(obj, func)
    out: list[Step] = []
    before = str(func)
    for k in range(len(trace_json)):
        sch = Schedule(func)
        Trace.apply_json_to_schedule(trace_json[: k + 1], sch)
        after = str(sch.mod)
        kind, inputs, outputs = trace_json[k]
        call = Instruction(kind, inputs, outputs).as_python()
        if skip_unchanged and after == before:
            continue
        out.append(Step(len(out), call, before, after))
        before = after
    return out


def print_steps(obj: Any, func: PrimFunc | None = None, context: int = 1) -> None:
    """Print each primitive and the lines it changed (a unified diff with ``context`` lines)."""
    for step in steps(obj, func):
        print(f"== step {step.index + 1}: {step.call}")
        for line in step.changed_lines(context):
            print(line)
        print()


def step_through(obj: Any, func: PrimFunc | None = None) -> Any:
    """A widget: a slider and prev/next buttons over the steps; the code shows the lines the
    step added (green) and removed (struck through). Needs ipywidgets (falls back to
    printing the steps without it)."""
    all_steps = steps(obj, func)
    try:
        import ipywidgets as w
    except ImportError:  # pragma: no cover - ipywidgets is a notebook dependency
        print_steps(obj, func)
        return None
    if not all_steps:
        return w.HTML("<i>the schedule made no changes</i>")
    view = w.HTML(all_steps[0].to_html())
    slider = w.IntSlider(value=1, min=1, max=len(all_steps), description="step")
    prev_b = w.Button(description="◀ prev", layout=w.Layout(width="80px"))
    next_b = w.Button(description="next ▶", layout=w.Layout(width="80px"))

    def show(change: Any = None) -> None:
        view.value = all_steps[slider.value - 1].to_html()

    def move(delta: int) -> None:
        slider.value = max(slider.min, min(slider.max, slider.value + delta))

    slider.observe(show, names="value")
    prev_b.on_click(lambda _: move(-1))
    next_b.on_click(lambda _: move(1))
    from mlc.viz.widgets import with_fallback

    fallback = (f"<p><i>step 1 of {len(all_steps)} (the buttons and the slider move through "
                "the steps in JupyterLab)</i></p>" + all_steps[0].to_html())

    class StepThrough(w.VBox):  # type: ignore[misc]
        def _repr_mimebundle_(self, **kwargs: Any) -> Any:
            return with_fallback(super()._repr_mimebundle_(**kwargs), fallback)

    box = StepThrough([w.HBox([prev_b, slider, next_b]), view])
    box.add_class("mlc-step-through")
    return box

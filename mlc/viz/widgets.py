"""Live controls: sliders for tile sizes and a loop-order menu that rebuild, re-time and
re-print a kernel. Errors (a ScheduleError from a bad choice) show inside the widget.

    ex = viz.matmul_explorer(n=128)      # displays as sliders + GFLOPS + the code
    ex.update(tile_i=16)                 # what a slider does, callable from code and tests

The element structure is stable for browser tests: a ``VBox.mlc-explorer`` holding an
``HBox.mlc-controls`` (one control per knob, each with class ``mlc-control-<name>``), an
``HTML.mlc-status`` line and an ``HTML.mlc-code`` block.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from mlc.tir.printer_html import to_html


def _error_html(err: BaseException) -> str:
    return (
        '<pre style="color:#b71c1c;background:#fdecea;padding:6px;white-space:pre-wrap">'
        f"{html.escape(type(err).__name__)}: {html.escape(str(err))}</pre>"
    )


class Explorer:
    """Knobs -> schedule -> code and GFLOPS, rebuilt when a knob moves.

    ``make(**knobs)`` returns a ``tir.Schedule`` or PrimFunc; ``knobs`` maps each name to its
    choices (a list). With ``arrays`` and ``flop`` every rebuild is compiled and timed; a
    ``check(module, arrays)`` callback can verify results (raise to report a wrong answer).
    Sliders fire on release (``continuous_update=False``), and a change that arrives while a
    rebuild runs is applied once after it: dragging never queues a pile of builds."""

    def __init__(self, make: Callable[..., Any], knobs: Mapping[str, Sequence[Any]],
                 arrays: Sequence[np.ndarray] | None = None, flop: float | None = None,
                 check: Callable[[Any, Sequence[np.ndarray]], None] | None = None,
                 number: int = 3) -> None:
        import ipywidgets as w

        self.make, self.arrays, self.flop = make, arrays, flop
        self.check, self.number = check, number
        self.values: dict[str, Any] = {name: list(choices)[0] for name, choices in knobs.items()}
        self.controls: dict[str, Any] = {}
        for name, choices in knobs.items():
            choices = list(choices)
            if all(isinstance(c, int) for c in choices):
                ctl = w.SelectionSlider(options=choices, value=choices[0], description=name,
                                        continuous_update=False)
            else:
                ctl = w.Dropdown(options=choices, value=choices[0], description=name)
            ctl.add_class(f"mlc-control-{name}")
            ctl.observe(self._on_change, names="value")
            self.controls[name] = ctl
        self.status = w.HTML()
        self.status.add_class("mlc-status")
        self.code = w.HTML()
        self.code.add_class("mlc-code")
        controls = w.HBox(list(self.controls.values()))
        controls.add_class("mlc-controls")
        self.widget = w.VBox([controls, self.status, self.code])
        self.widget.add_class("mlc-explorer")
        self._busy = False
        self._pending = False
        self.last_gflops: float | None = None
        self.last_error: BaseException | None = None
        self.text = ""  # the code shown, as plain text
        self.rebuild()

    def _on_change(self, change: Any) -> None:
        for name, ctl in self.controls.items():
            self.values[name] = ctl.value
        if self._busy:  # coalesce: remember that something changed, rebuild once after
            self._pending = True
            return
        self.rebuild()

    def update(self, **values: Any) -> Explorer:
        """Set knobs (as moving the controls would) and rebuild once."""
        self._busy = True
        try:
            for name, value in values.items():
                if name not in self.controls:
                    raise KeyError(f"no knob {name!r}; knobs: {', '.join(self.controls)}")
                self.controls[name].value = value
                self.values[name] = value
        finally:
            self._busy = False
        self._pending = False
        self.rebuild()
        return self

    def rebuild(self) -> None:
        """Make the schedule for the current knobs, show its code, build and time it."""
        self._busy = True
        try:
            while True:
                self._pending = False
                self._rebuild_once()
                if not self._pending:
                    break
        finally:
            self._busy = False

    def _rebuild_once(self) -> None:
        self.last_error, self.last_gflops = None, None
        knobs = ", ".join(f"{k}={v}" for k, v in self.values.items())
        try:
            sch = self.make(**self.values)
            func = getattr(sch, "mod", sch)
            self.text = str(func)
            self.code.value = to_html(func)
            text = f"<b>{html.escape(knobs)}</b>"
            if self.arrays is not None:
                import mlc

                module = mlc.build(func)
                if self.check is not None:
                    self.check(module, self.arrays)
                if self.flop:
                    t = module.time_evaluator(number=self.number, repeat=1)(*self.arrays)
                    self.last_gflops = self.flop / t.mean / 1e9
                    text += f": {self.last_gflops:.2f} GFLOPS ({t.mean * 1e3:.3f} ms)"
            self.status.value = text
        except Exception as err:  # shown to the student, never raised into the front end
            self.last_error = err
            self.status.value = f"<b>{html.escape(knobs)}</b>: this choice does not work"
            self.text = f"{type(err).__name__}: {err}"
            self.code.value = _error_html(err)

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        """The live widget, and for viewers without a widget manager (GitHub, nbviewer, a
        notebook opened without ipywidgets) the current state as HTML rather than
        ``VBox(children=...)``."""
        note = "<p><i>(the knobs move in JupyterLab; this is the first setting)</i></p>"
        return with_fallback(self.widget._repr_mimebundle_(**kwargs),
                             note + self.status.value + self.code.value)


def with_fallback(bundle: Any, html_text: str) -> Any:
    """A widget's mime bundle with a ``text/html`` picture of its state added: front ends that
    render widgets show the widget, the others (static viewers) the HTML."""
    data, meta = (bundle if isinstance(bundle, tuple) else (bundle, None))
    data = {**(data or {}), "text/html": html_text}
    return (data, meta) if meta is not None else data


def divisors(n: int, limit: int | None = None) -> list[int]:
    """The divisors of ``n`` (up to ``limit``): the tile sizes that split ``n`` evenly."""
    return [d for d in range(1, (limit or n) + 1) if n % d == 0]


def matmul_explorer(n: int = 64, timed: bool = True) -> Explorer:
    """Tile an ``n x n`` matmul with sliders for the tile sizes and a menu for the loop order
    of the inner loops; shows the code (and GFLOPS when ``timed``)."""
    from mlc import te, tir

    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    base = te.create_prim_func([A, B, C])

    def make(tile_i: int, tile_j: int, order: str) -> Any:
        sch = tir.Schedule(base)
        i, j, kk = sch.get_loops(sch.get_block("C"))
        i0, i1 = sch.split(i, factors=[None, tile_i])
        j0, j1 = sch.split(j, factors=[None, tile_j])
        inner = {"k, i_1, j_1": [kk, i1, j1], "i_1, k, j_1": [i1, kk, j1],
                 "i_1, j_1, k": [i1, j1, kk]}[order]
        sch.reorder(i0, j0, *inner)
        return sch

    rng = np.random.default_rng(0)
    arrays = None
    if timed:
        a = rng.random((n, n), dtype=np.float32)
        b = rng.random((n, n), dtype=np.float32)
        arrays = [a, b, np.zeros((n, n), np.float32)]

    def check(module: Any, xs: Sequence[np.ndarray]) -> None:
        module(*xs)
        np.testing.assert_allclose(xs[2], xs[0] @ xs[1], rtol=1e-3, atol=1e-3)

    tiles = divisors(n, 32)
    return Explorer(make, {"tile_i": tiles[::-1], "tile_j": tiles[::-1],
                           "order": ["k, i_1, j_1", "i_1, k, j_1", "i_1, j_1, k"]},
                    arrays=arrays, flop=2.0 * n**3 if timed else None,
                    check=check if timed else None)

"""Graphviz drawings that never crash a notebook.

Every drawing in ``mlc.viz`` is a :class:`Drawing`, a ``graphviz.Digraph`` whose notebook
display falls back to the DOT text (with a one-line install hint) when the ``dot`` binary is
missing, instead of raising ``ExecutableNotFound`` in the middle of a lecture.
"""

from __future__ import annotations

import html
import subprocess
from typing import Any

import graphviz

INSTALL_HINT = (
    "graphviz's 'dot' program is not installed, so here is the DOT text instead "
    "(install it: apt-get install graphviz / brew install graphviz / conda install graphviz)"
)


def quote(text: str) -> str:
    """Escape ``text`` for a DOT label (graphviz's own quoting handles the outer quotes)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')


class Drawing(graphviz.Digraph):
    """A ``graphviz.Digraph`` that shows as SVG when ``dot`` runs, as DOT text otherwise."""

    def to_svg(self) -> str | None:
        """The SVG text, or ``None`` when graphviz's ``dot`` program cannot run."""
        try:
            return self.pipe(format="svg", encoding="utf-8")
        except (graphviz.ExecutableNotFound, subprocess.CalledProcessError, OSError):
            return None

    def fallback_text(self) -> str:
        return f"{INSTALL_HINT}\n{self.source}"

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None, **kwargs: Any
    ) -> dict[str, str]:
        svg = self.to_svg()
        if svg is not None:
            return {"image/svg+xml": svg, "text/plain": f"<Drawing {self.name}>"}
        text = self.fallback_text()
        return {"text/plain": text, "text/html": f"<pre>{html.escape(text)}</pre>"}

    def _repr_html_(self) -> str:  # some front ends ask for HTML only
        svg = self.to_svg()
        if svg is not None:
            return svg
        return f"<pre>{html.escape(self.fallback_text())}</pre>"


def from_source(source: str, name: str = "graph") -> Drawing:
    """A Drawing from ready-made DOT text (e.g. ``mlc.graph``'s printer)."""
    d = Drawing(name=name)
    body = source.strip()
    start, end = body.find("{"), body.rfind("}")
    if start >= 0 and end > start:
        d.body.extend(line + "\n" for line in body[start + 1 : end].strip().splitlines())
    return d

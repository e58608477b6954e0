"""The loop IR as highlighted HTML: what a notebook shows for a PrimFunc, a Schedule or a
marked loop (the text itself comes from :mod:`mlc.tir.printer`, the one printer)."""

from __future__ import annotations

import html
import re
from typing import Any

from mlc.tir.printer import to_str

__all__ = ["highlight", "to_html"]

_STYLE = {
    "kw": "color:#0000cc;font-weight:bold",
    "num": "color:#098658",
    "str": "color:#a31515",
    "block": "color:#795e26;font-weight:bold",
    "comment": "color:#008000;font-style:italic",
    "deco": "color:#af00db",
}
_KEYWORDS = {
    "def", "for", "in", "with", "if", "else", "and", "or", "not", "lambda", "True", "False",
    "pass", "return",
}
_TOKEN = re.compile(
    r"(?P<comment>#.*$)"
    r"|(?P<block>(?<=block\()\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<str>\"(?:[^\"\\]|\\.)*\")"
    r"|(?P<deco>@\w+)"
    r"|(?P<num>\b\d+(?:\.\d*)?(?:e[+-]?\d+)?\b)"
    r"|(?P<word>\b[A-Za-z_]\w*\b)",
    re.MULTILINE,
)


def highlight(text: str) -> str:
    out: list[str] = []
    pos = 0
    for m in _TOKEN.finditer(text):
        out.append(html.escape(text[pos : m.start()]))
        kind = m.lastgroup or ""
        tok = m.group()
        if kind == "word":
            kind = "kw" if tok in _KEYWORDS else ""
        if kind:
            out.append(f'<span style="{_STYLE[kind]}">{html.escape(tok)}</span>')
        else:
            out.append(html.escape(tok))
        pos = m.end()
    out.append(html.escape(text[pos:]))
    return "".join(out)


def to_html(node: Any, mark: object | None = None) -> str:
    """The printed node as a highlighted ``<pre>`` block (what notebooks show)."""
    body = highlight(to_str(node, mark))
    return (
        '<pre style="font-family:monospace;font-size:13px;line-height:1.35;'
        f'background:#f8f8f8;padding:8px;border-radius:4px">{body}</pre>'
    )

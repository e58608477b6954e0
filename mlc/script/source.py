"""Where a script came from, and errors that point into it.

A script is read from the source text of a decorated function or class (``inspect``) or
from a string. :class:`Source` keeps the text and where it starts in its file, so an error
names the student's line and column, shows the line and puts a caret under the spot::

    mlc.errors.ScriptError: my_model.py, line 12, column 13: T.axis.remap expects one
    letter per variable ("SSR" for three), got "SS" for 3 variables
        vi, vj, vk = T.axis.remap("SS", [i, j, k])
                     ^
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from dataclasses import dataclass
from typing import Any

from mlc.errors import ScriptError

# Deeper nesting than this is refused with a ScriptError before Python's own recursion
# limit can turn it into a RecursionError: statements (loops, blocks, ifs) inside each other,
# and syntax nodes in all. An expression as deep as te.compute accepts (250 levels, see
# mlc.te.constructors.MAX_EXPR_DEPTH) prints as text that reads back.
MAX_DEPTH = 60
MAX_NODE_DEPTH = 300


@dataclass
class Source:
    """Dedented source text, with the file name and the line/column it starts at."""

    text: str
    filename: str = "<script>"
    first_line: int = 1  # line number of the text's first line in its file
    indent: int = 0  # columns removed by dedenting

    @staticmethod
    def of(obj: Any) -> Source:
        """The source of a function or class (works in files and in Jupyter cells)."""
        try:
            lines, start = inspect.getsourcelines(obj)
            filename = inspect.getsourcefile(obj) or inspect.getfile(obj)
        except (OSError, TypeError) as e:
            found = _class_source(obj) if isinstance(obj, type) else None
            if found is not None:
                lines, start, filename = found
                text = "".join(lines)
                dedented = textwrap.dedent(text)
                indent = _first_indent(text) - _first_indent(dedented)
                return Source(dedented, filename, max(start, 1), indent)
            raise ScriptError(
                f"cannot read the source of {getattr(obj, '__qualname__', obj)!r} ({e}); "
                "mlc.script reads the program's text, so define it in a file or a notebook "
                "cell, or pass the text to mlc.script.from_source(...)"
            ) from None
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        indent = _first_indent(text) - _first_indent(dedented)
        return Source(dedented, filename, max(start, 1), indent)

    def parse(self) -> ast.Module:
        try:
            return ast.parse(self.text, filename=self.filename)
        except SyntaxError as e:
            line = (e.lineno or 1) + self.first_line - 1
            raise self._make(f"this is not valid Python: {e.msg}", line,
                             (e.offset or 1) + self.indent) from None
        except (RecursionError, MemoryError, ValueError) as e:
            raise self._make(f"the script is too deeply nested or too large to read ({e})",
                             self.first_line, 1) from None

    def line_text(self, lineno: int) -> str:
        lines = self.text.splitlines()
        i = lineno - self.first_line
        return (" " * self.indent + lines[i]) if 0 <= i < len(lines) else ""

    def error(self, node: ast.AST | None, message: str) -> ScriptError:
        """A ScriptError at ``node`` (its line and column in the original file)."""
        if node is None or not hasattr(node, "lineno"):
            return self._make(message, self.first_line, 1)
        line = int(getattr(node, "lineno", 1)) + self.first_line - 1
        col = int(getattr(node, "col_offset", 0)) + 1 + self.indent
        return self._make(message, line, col)

    def _make(self, message: str, line: int, col: int) -> ScriptError:
        text = self.line_text(line)
        where = f"{self.filename}, line {line}, column {col}"
        shown = f"\n    {text.rstrip()}\n    {' ' * (col - 1)}^" if text.strip() else ""
        err = ScriptError(f"{where}: {message}{shown}")
        err.filename, err.lineno, err.offset, err.text = self.filename, line, col, text
        return err


def _class_source(cls: type) -> tuple[list[str], int, str] | None:
    """A class's source found through one of its methods (Python < 3.13 cannot find a class
    defined in a notebook cell: its module has no file, but its methods' code knows the
    cell)."""
    import linecache
    import re

    for value in vars(cls).values():
        fn = getattr(value, "fn", value)  # a pending @T.prim_func / @R.function
        code = getattr(fn, "__code__", None)
        if code is None:
            continue
        filename = code.co_filename
        lines = linecache.getlines(filename)
        pattern = re.compile(rf"^\s*class\s+{re.escape(cls.__name__)}\b")
        for i in range(min(code.co_firstlineno, len(lines)) - 1, -1, -1):
            if pattern.match(lines[i]):
                first = i
                while first > 0 and lines[first - 1].lstrip().startswith("@"):
                    first -= 1
                block = inspect.getblock(lines[i:])
                return lines[first:i] + list(block), first + 1, filename
    return None


def _first_indent(text: str) -> int:
    for line in text.splitlines():
        if line.strip():
            return len(line) - len(line.lstrip())
    return 0


def check_depth(tree: ast.AST, src: Source) -> None:
    """Refuse scripts whose statements are nested deeper than MAX_DEPTH, or whose syntax
    tree is deeper than MAX_NODE_DEPTH (a long expression)."""
    stack: list[tuple[ast.AST, int, int, ast.AST]] = [(tree, 0, 0, tree)]
    while stack:
        node, depth, stmts, placed = stack.pop()
        placed = node if hasattr(node, "lineno") else placed  # the line to show
        if stmts > MAX_DEPTH or depth > MAX_NODE_DEPTH:
            what = (f"{MAX_DEPTH} statements" if stmts > MAX_DEPTH
                    else f"{MAX_NODE_DEPTH} levels")
            raise src.error(placed, f"the script is nested more than {what} deep; split the "
                                    "expression or the loop nest")
        inner = stmts + isinstance(node, ast.stmt)
        stack.extend((child, depth + 1, inner, placed)
                     for child in ast.iter_child_nodes(node))

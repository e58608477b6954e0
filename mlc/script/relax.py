"""``R``: the graph-level half of mlc.script (``R.function``), being written."""

from __future__ import annotations

import ast
from typing import Any

from mlc.script.source import Source


def parse_graph_function(fdef: ast.FunctionDef, src: Source, mod: Any) -> Any:
    raise src.error(fdef, "@R.function is not supported yet")

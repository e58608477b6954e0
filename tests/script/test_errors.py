"""Mistakes in a script raise ScriptError at the student's line and column, with a message
that says what was expected; hostile scripts never raise another exception type."""

from __future__ import annotations

import inspect
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlc.errors import MLCError, ScriptError
from mlc.script import T, from_source, ir_module

HEADER = '@T.prim_func\ndef f(A: T.Buffer((8, 8), "float32"), B: T.Buffer((8, 8), "float32")):\n'


def _func(body: str) -> str:
    return HEADER + textwrap.indent(textwrap.dedent(body), "    ")


def _error(text: str) -> ScriptError:
    with pytest.raises(ScriptError) as info:
        from_source(text)
    return info.value


@pytest.mark.parametrize("body, line, marker, expected", [
    ("for i in range(8):\n    B[i, 0] = C[i, 0]\n", 4, "C[i, 0]", "undefined buffer 'C'"),
    ("for i in range(8):\n    B[i, 0] = A[i, q]\n", 4, "q]", "undefined name 'q'"),
    ("for i in range(8):\n    with T.block('B'):\n        B[i] = A[i, 0]\n", 5, "B[i]",
     "B has 2 dimension(s)"),
    ("for i, j in T.grid(8, 8):\n    with T.block('B'):\n"
     "        vi, vj = T.axis.remap('S', [i, j])\n        B[vi, vj] = A[vi, vj]\n",
     5, "T.axis.remap", "one letter and one loop per variable"),
    ("for i in T.foo(8):\n    B[i, 0] = 0.0\n", 3, "T.foo", "unknown loop kind T.foo"),
    ("for i in range(8):\n    B[i, 0] = T.frobnicate(A[i, 0])\n", 4, "T.frobnicate",
     "unknown function T.frobnicate"),
    ("for i in range(8):\n    B[i, 0] = T.max(A[i, 0])\n", 4, "T.max", "T.max takes 2 argument"),
    ("for i in range(8):\n    B[i, 0] = T.exp(i)\n", 4, "T.exp", "needs a float argument"),
    ("while True:\n    pass\n", 3, "while", "cannot contain `while True:`"),
    ("for i in range(8):\n    B[i, 0] = A[i, 0] ** 2\n", 4, "A[i, 0] **", "operator Pow"),
    ("T.reads(A[0, 0])\n", 3, "T.reads", "belongs at the top of a"),
    ("for i in range(8):\n    with T.init():\n        B[i, 0] = 0.0\n", 4, "with",
     "belongs inside a block"),
    ("for i in range(8):\n    vi = T.axis.spatial(8, i)\n", 4, "vi", "must be inside"),
    ("for i in range(8):\n    B[i, 0] = A[i // 2, i / 2]\n", 4, "i / 2", "ambiguous"),
    ("for i in range(8):\n    B[i, 0] = A[i, 0] if i else 0.0\n", 4, "i else",
     "expected a condition"),
    ("for i in range(8):\n    B[i, 0] = 1 < i < 3\n", 4, "1 <", "chained comparisons"),
])
def test_errors_point_at_the_line_and_column(body: str, line: int, marker: str,
                                             expected: str) -> None:
    text = _func(body)
    err = _error(text)
    col = text.splitlines()[line - 1].index(marker) + 1
    assert expected in str(err)
    assert (err.lineno, err.offset) == (line, col), str(err)
    assert f"line {line}, column {col}" in str(err)
    assert err.text is not None and err.text.strip()  # the student's line is shown


def test_syntax_errors_are_script_errors() -> None:
    err = _error(_func("for i in range(8)\n    B[i, 0] = 0.0\n"))
    assert err.lineno == 3 and "not valid Python" in str(err)


def test_missing_annotation_and_bad_buffer_type() -> None:
    assert "needs a type" in str(_error("@T.prim_func\ndef f(A):\n    pass\n"))
    err = _error('@T.prim_func\ndef f(A: T.Tensor((8,), "float32")):\n    pass\n')
    assert "expected a buffer type" in str(err) and err.lineno == 2
    err = _error('@T.prim_func\ndef f(A: T.Buffer((8,), "floaty")):\n    pass\n')
    assert 'expected a dtype string like "float32"' in str(err)


def test_errors_in_decorated_code_point_into_this_file() -> None:
    with pytest.raises(ScriptError) as info:
        @ir_module
        class Broken:
            @T.prim_func
            def main(A: T.Buffer((4,), "float32")):
                for i in range(4):
                    with T.block("A"):
                        vi = T.axis.spatial(4, i)
                        A[vi] = A[vi] + undefined_thing  # noqa: F821
    err = info.value
    assert err.filename == __file__
    src, start = inspect.getsourcelines(test_errors_in_decorated_code_point_into_this_file)
    offending = next(n for n, s in enumerate(src) if "undefined_thing" in s) + start
    assert err.lineno == offending
    assert err.offset == src[offending - start].index("undefined_thing") + 1


def test_graph_level_errors() -> None:
    module = '''
@ir_module
class M:
    @T.prim_func
    def f(A: T.Buffer((4,), "float32"), B: T.Buffer((4,), "float32")):
        for i in range(4):
            with T.block("B"):
                vi = T.axis.spatial(4, i)
                B[vi] = A[vi]

    @R.function
    def main(x: R.Tensor((4,), "float32")):
        with R.dataflow():
            lv = R.call_tir({callee}, {args}, out_sinfo=R.Tensor({shape}, "float32"))
            R.output(lv)
        return lv
'''
    err = _error(module.format(callee="g", args="(x,)", shape="(4,)"))
    assert "not one (the module has ['f'])" in str(err) and err.lineno == 14
    err = _error(module.format(callee="f", args="(x, x)", shape="(4,)"))
    assert "f takes 2 buffers" in str(err)
    err = _error(module.format(callee="f", args="(x,)", shape="(5,)"))
    assert "has shape (4,), the output has shape (5,)" in str(err)
    err = _error(module.format(callee="f", args="(y,)", shape="(4,)"))
    assert "undefined name 'y'" in str(err)
    err = _error(module.format(callee="f", args="(x,)", shape="(4,)").replace(
        "R.output(lv)", "pass"))
    assert "ends with R.output" in str(err) or "dataflow block holds" in str(err)
    err = _error(module.format(callee="f", args="(x,)", shape="(4,)").replace(
        "R.call_tir(f, (x,), out_sinfo=R.Tensor((4,), \"float32\"))", "R.nn.frob(x)"))
    assert "unknown op R.nn.frob" in str(err)


def test_calling_builtins_outside_a_script_is_a_script_error() -> None:
    with pytest.raises(ScriptError, match="only has a meaning inside"):
        T.grid(4, 4)


# -- hostile scripts ------------------------------------------------------------------------------

HOSTILE = [
    "", "x", "import os", "class A: pass", "def f(): pass", "@T.prim_func\nclass A: pass",
    "@T.prim_func\ndef f(*a): pass", "@T.prim_func\ndef f(A: 3): pass",
    '@T.prim_func\ndef f(A: T.Buffer()): pass',
    '@T.prim_func\ndef f(A: T.Buffer((8,), "float32", 3)): pass',
    '@T.prim_func\ndef f(A: T.Buffer(("x" + 1,), "float32")): pass',
    _func("for i in range(8):\n    B[i, 0] = A[i:, 0]\n"),
    _func("for i in range(1, 2, 3):\n    pass\n"),
    _func("for (i, j) in range(3):\n    pass\n"),
    _func("for i in T.grid(2, 2):\n    pass\n"),
    _func("with T.block(3):\n    pass\n"),
    _func("with open('x'):\n    pass\n"),
    _func("with T.block('a'):\n    vi = T.axis.remap(3, [])\n"),
    _func("with T.block('a'):\n    vi = T.axis.spatial()\n"),
    _func("with T.block('a'):\n    T.reads(3)\n"),
    _func("with T.block('a'):\n    T.where(1, 2)\n"),
    _func("B[0, 0] = A\n"),
    _func("B[0, 0] = A[0, 0](3)\n"),
    _func("B[0, 0] = [1, 2]\n"),
    _func("B[0, 0] = lambda: 3\n"),
    _func("B[0, 0] = T.float32(*A)\n"),
    _func("B[0, 0] = T.ramp(1, 2, 'x')\n"),
    _func("B[0, 0] = T.let(3, 4, 5)\n"),
    _func("T.func_attr(3)\n"),
    _func("X = T.match_buffer(q, (8,), 'float32')\n"),
    _func("return 3\n"),
    _func("B[0, 0] = (" * 200 + "1" + ")" * 200 + "\n"),
    _func("B[0, 0] = " + " + ".join(["1"] * 3000) + "\n"),
    _func("".join("    " * d + f"for i{d} in range(2):\n" for d in range(80)) + "    " * 80
          + "pass\n"),
    "@ir_module\nclass M:\n    x = 3\n",
    "@ir_module\nclass M:\n    def f(self): pass\n",
    "@ir_module\nclass M:\n    @R.function\n    def main(x):\n        return x\n",
    "@ir_module\nclass M:\n    @R.function\n    def main(x: R.Tensor((1, 'n'), 'float32')):"
    "\n        return x\n",
    "@ir_module\nclass M:\n    @R.function\n    def main(x: R.Tensor((1,), 'float32')):"
    "\n        with R.dataflow():\n            R.output(x)\n        return x\n",
    "@ir_module\nclass M:\n    @R.function\n    def main(x: R.Tensor((2,), 'float32')):"
    "\n        y = R.add(x)\n        return y\n",
    "@ir_module\nclass M:\n    @R.function\n    def main(x: R.Tensor((2,), 'float32')):"
    "\n        y = R.add(x, R.Tensor)\n",
]


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_scripts_raise_script_errors(text: str) -> None:
    with pytest.raises(ScriptError):
        from_source(text)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from(list("ABTij()[]:,.=+-*/<>\"' \n01") + [
    "for ", "in ", "range", "with ", "T.block", "T.axis.spatial", "T.grid", "if ", "else",
    "    ", "\n        "]), max_size=40).map("".join))
def test_random_bodies_raise_only_script_errors(body: str) -> None:
    try:
        from_source(_func(body))
    except ScriptError:
        pass
    except MLCError as e:  # pragma: no cover - the failure message names the leak
        raise AssertionError(f"{type(e).__name__} instead of ScriptError: {e}") from e

"""Hostile scripts and programs for TVMScript: names the printer cannot print as they are,
constants at the edges of their dtypes, stores of the wrong dtype, Python the parser must
refuse, accesses outside an array in plain-loop scripts, block bindings outside their
domain and ``T.reads`` that lie. Each was found to crash, compute a wrong answer or fail to
round-trip; each now round-trips, computes what numpy computes, or raises a typed error."""

from __future__ import annotations

import dataclasses
import textwrap

import numpy as np
import pytest

import mlc
from mlc import te, tir
from mlc.errors import IndexOutOfBoundsError, LoweringError, ScheduleError, ScriptError
from mlc.script import from_source
from mlc.tir.expr import IterKind

HEADER = '@T.prim_func\ndef f(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):\n'


def _func(body: str, header: str = HEADER) -> str:
    return header + textwrap.indent(textwrap.dedent(body), "    ")


def _round_trip(func: tir.PrimFunc) -> list[tir.PrimFunc]:
    out = []
    for text in (str(func), func.script()):
        back = from_source(text)
        tir.assert_structural_equal(func, back)
        out.append(back)
    return out


# -- names the printer must make readable back -------------------------------------------------

@pytest.mark.parametrize("a_name, b_name", [
    ("my tensor", "B"), ("A", "lambda"), ("T", "B"), ("range", "B"), ("A", "max"),
    ("exp", "B"), ("A", "1x"), ("A.b", "B"), ("None", "True"), ("block", "axis"),
    ("x\ny", "B"), ('a"b', "B"), ("\ufb01", "fi"),  # the ligature fi is NFKC "fi"
])
def test_tensor_names_that_are_not_plain_identifiers_round_trip(a_name: str,
                                                                b_name: str) -> None:
    A = te.placeholder((4,), name=a_name)
    B = te.compute((4,), lambda i: te.exp(A[i]) + te.max(A[i], 1.0), name=b_name)
    func = te.create_prim_func([A, B])
    a = np.linspace(-2, 2, 4, dtype="float32")
    for back in _round_trip(func):
        b = np.zeros(4, "float32")
        mlc.build(back, target="llvm")(a, b)
        np.testing.assert_allclose(b, np.exp(a) + np.maximum(a, 1.0), rtol=1e-6)


def test_loop_variables_named_like_builtins_round_trip() -> None:
    A = te.placeholder((4, 4), name="A")
    B = te.compute((4, 4), lambda T, range: A[T, range] * 2.0, name="B")
    _round_trip(te.create_prim_func([A, B]))


def test_block_names_with_control_characters_print_on_one_line() -> None:
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="x\n\ty\x00\u2028")
    func = te.create_prim_func([A, B])
    assert "\n\ty" not in func.script()
    _round_trip(func)


# -- constants at the edges --------------------------------------------------------------------

def test_int32_min_literal_stays_int32() -> None:
    X = te.placeholder((4,), "int32", name="X")
    Y = te.compute((4,), lambda i: X[i] + te.const(-(2**31), "int32"), name="Y")
    func = te.create_prim_func([X, Y])
    x = np.arange(4, dtype="int32")
    for back in _round_trip(func):
        y = np.zeros(4, "int32")
        mlc.build(back, target="llvm")(x, y)
        np.testing.assert_array_equal(y, x + np.int32(-(2**31)))


@pytest.mark.parametrize("dtype, expr, expected", [
    ("int8", "T.int8(1000)", "1000 does not fit int8"),
    ("uint8", "T.uint8(-1)", "-1 does not fit uint8"),
    ("uint8", "300", "300 does not fit uint8"),
    ("int32", 'T.int32("nan")', "only a float dtype takes a string"),
])
def test_literals_a_dtype_cannot_hold_are_refused(dtype: str, expr: str, expected: str) -> None:
    text = (f'@T.prim_func\ndef f(A: T.Buffer((8,), "{dtype}")):\n'
            f"    for i in range(8):\n        A[i] = {expr}\n")
    with pytest.raises(ScriptError, match=expected) as info:
        from_source(text)
    assert info.value.lineno == 4


def test_int8_edges_are_accepted_and_computed() -> None:
    text = ('@T.prim_func\ndef f(A: T.Buffer((2,), "int8")):\n'
            "    A[0] = T.int8(-128)\n    A[1] = T.int8(127)\n")
    a = np.zeros(2, "int8")
    mlc.build(from_source(text), target="llvm")(a)
    np.testing.assert_array_equal(a, [-128, 127])


# -- expressions the code generator cannot take ------------------------------------------------

@pytest.mark.parametrize("body, expected", [
    ("A[0] = T.Cast('float32', not A[1])\n", r"expected a condition \(bool\)"),
    ("A[0] = T.ramp(0, 1, 0)\n", "at least one lane, got 0"),
    ("A[0] = T.broadcast(1.0, -4)\n", "at least one lane, got -4"),
    ("T.call_extern(3, 'f')\n", "the result dtype comes first"),
    ("T.evaluate()\n", "T.evaluate takes one expression"),
    ("for i in range(8):\n    B[i] = T.Cast('int32', A[i])\n", "B holds float32 but the "
     "value stored is int32"),
    ("X = T.alloc_buffer((-1,), 'float32')\nX[0] = 1.0\n", "cannot be negative"),
])
def test_expressions_codegen_cannot_take_are_script_errors(body: str, expected: str) -> None:
    with pytest.raises(ScriptError, match=expected):
        from_source(_func(body))


# -- Python the parser must refuse -------------------------------------------------------------

@pytest.mark.parametrize("text, line, expected", [
    ('@T.prim_func\n@os.system("touch x")\ndef f(A: T.Buffer((8,), "float32")):\n    pass\n',
     2, "takes one decorator"),
    ('@T.prim_func\ndef f(A: T.Buffer((8,), "float32") = os.system("x")):\n    pass\n',
     2, "no default value"),
    ('@T.prim_func\ndef f(A: T.Buffer((8,), "float32")) -> os.system("x"):\n    pass\n',
     2, "returns nothing"),
    ('@T.prim_func\ndef f(A: T.Buffer((8,), "float32"), A: T.Buffer((4,), "float32")):\n'
     "    pass\n", 2, "'A' is declared twice"),
    (_func("with T.block('a') as x:\n    A[0] = 1.0\n"), 3, "binds no name"),
])
def test_python_that_is_not_a_prim_func_is_refused(text: str, line: int, expected: str) -> None:
    with pytest.raises(ScriptError, match=expected) as info:
        from_source(text)
    assert info.value.lineno == line


def test_a_return_annotation_of_none_is_accepted() -> None:
    func = from_source('@T.prim_func\ndef f(A: T.Buffer((8,), "float32")) -> None:\n'
                       "    A[0] = 1.0\n")
    assert func.name == "f"


# -- accesses outside an array in scripts of plain loops ---------------------------------------

@pytest.mark.parametrize("body, expected", [
    ("A[-1] = 1.0\n", "writes A[-1]: its index in dimension 0 (-1) reaches -1"),
    ("A[100000] = 1.0\n", "reaches 100000"),
    ("for i in range(100):\n    A[i] = 1.0\n", "writes A[i] with i in [0, 100)"),
    ("for i in range(8):\n    B[i] = A[i + 1]\n", "reads A[i + 1] with i in [0, 8)"),
    ("A[T.ramp(6, 1, 4)] = T.broadcast(1.0, 4)\n", "writes A[ramp(6, 1, 4)]: its index in "
     "dimension 0 (ramp(6, 1, 4)) reaches 9"),
])
def test_plain_loop_scripts_are_bounds_checked(body: str, expected: str) -> None:
    # these wrote outside the numpy array (heap corruption, then an abort of the process)
    func = from_source(_func(body))
    with pytest.raises(LoweringError) as info:
        mlc.build(func, target="llvm")
    assert expected in str(info.value)


def test_a_write_into_a_zero_size_parameter_is_refused() -> None:
    func = from_source('@T.prim_func\ndef f(A: T.Buffer((0,), "float32")):\n    A[0] = 1.0\n')
    with pytest.raises(LoweringError, match=r"A has shape \(0,\)"):
        mlc.build(func, target="llvm")


def test_plain_loop_scripts_in_bounds_still_compute() -> None:
    func = from_source(_func("for i in range(7):\n    B[i] = A[i + 1] * 2.0\nB[7] = 0.0\n"))
    a, b = np.arange(8, dtype="float32"), np.full(8, -1, "float32")
    mlc.build(func, target="llvm")(a, b)
    np.testing.assert_array_equal(b, np.append(a[1:] * 2, 0))


# -- blocks that lie ---------------------------------------------------------------------------

def test_a_binding_outside_its_domain_is_refused() -> None:
    # the block's accesses were checked over vi in [0, 8) while vi took 50..57: the kernel
    # wrote past the array without a word
    func = from_source(_func("""
        for i in range(8):
            with T.block("b"):
                vi = T.axis.spatial(8, i + 50)
                A[vi - 50] = 1.0
    """))
    with pytest.raises(LoweringError, match=r'block "b" binds its iteration variable vi to '
                                            r"i \+ 50, which reaches 57"):
        mlc.build(func, target="llvm")


LYING = '''
@T.prim_func
def f(A: T.Buffer((8,), "float32"), C: T.Buffer((8,), "float32")):
    B = T.alloc_buffer((8,), "float32")
    for i in range(8):
        with T.block("B"):
            vi = T.axis.spatial(8, i)
            B[vi] = A[vi] + 1.0
    for i in range(8):
        with T.block("C"):
            vi = T.axis.spatial(8, i)
            T.reads({reads})
            T.writes(C[vi])
            C[vi] = B[7 - vi] * 2.0
'''


@pytest.mark.parametrize("reads, expected", [
    ("B[vi]", r'block "C" reads B\[7 - vi\], which is B\[7\] at vi = 0, outside the regions'),
    ("A[vi]", r'block "C" reads B but its T.reads\(...\) does not list B'),
])
def test_reads_that_lie_are_refused(reads: str, expected: str) -> None:
    # compute_at trusted T.reads(B[vi]) and computed B[i] only: C read garbage (NaN)
    with pytest.raises(ScriptError, match=expected) as info:
        from_source(LYING.format(reads=reads))
    assert info.value.lineno == 12


def test_honest_reads_compute_at_matches_numpy() -> None:
    sch = tir.Schedule(from_source(LYING.format(reads="B[0:8]")))
    sch.compute_at(sch.get_block("B"), sch.get_loops(sch.get_block("C"))[0])
    a, c = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    mlc.build(sch.mod, target="llvm")(a, c)
    np.testing.assert_array_equal(c, (a + 1)[::-1] * 2)


def test_writes_that_lie_inside_an_inner_loop_are_refused() -> None:
    text = _func("""
        with T.block("B"):
            T.reads(A[0])
            T.writes(B[0])
            for i in range(8):
                B[i] = A[i]
    """)
    with pytest.raises(ScriptError, match=r'block "B" writes B\[i\], which is B\[4\] at '
                                          r"i = 4, outside the regions"):
        from_source(text)


MISLABELED = '''
@T.prim_func
def f(A: T.Buffer((65536,), "float32"), B: T.Buffer((1,), "float32")):
    for k in range(65536):
        with T.block("B"):
            vk = T.axis.{kind}(65536, k)
            B[0] = B[0] + A[vk]
'''


def test_a_reduction_labelled_spatial_is_refused() -> None:
    # parallel(k) trusted the label: two threads gave 32768.0 for a sum of 65536 ones
    with pytest.raises(ScriptError, match="the spatial variable vk does not appear in any "
                                          "element the block writes") as info:
        from_source(MISLABELED.format(kind="spatial"))
    assert info.value.lineno == 5
    sch = tir.Schedule(from_source(MISLABELED.format(kind="reduce")))
    with pytest.raises(ScheduleError, match="reduce"):
        sch.parallel(sch.get_loops(sch.get_block("B"))[0])
    b = np.zeros(1, "float32")
    mlc.build(sch.mod, target="llvm")(np.ones(65536, "float32"), b)
    assert b[0] == 65536


def test_a_scalar_parameter_named_t_takes_negative_values() -> None:
    # the T of T.Buffer counted as a size named T: the scalar became a SizeVar (>= 0) and
    # the call refused -3
    func = from_source('@T.prim_func\ndef f(A: T.Buffer((8,), "float32"), T: T.int32):\n'
                       '    A[0] = T.Cast("float32", T)\n')
    a = np.zeros(8, "float32")
    mlc.build(func, target="llvm")(a, -3)
    assert a[0] == -3.0
    _round_trip(func)


def test_two_blocks_with_one_name_are_refused() -> None:
    # the schedule finds blocks by name: sch.get_block("B") silently took the first
    text = _func("""
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = A[vi]
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                B[vi] = B[vi] * 2.0
    """)
    with pytest.raises(ScriptError, match='a second block named "B"') as info:
        from_source(text)
    assert info.value.lineno == 9


def test_unnamed_blocks_get_names_of_their_own() -> None:
    func = from_source(_func("with T.block():\n    A[0] = 1.0\nwith T.block():\n    A[1] = 1.0\n"))
    sch = tir.Schedule(func)
    block = sch.get(sch.get_block("block_1"))
    assert isinstance(block, tir.Block) and block.name == "block_1"


def test_annotations_with_infinities_and_lists_round_trip() -> None:
    func = from_source(_func("""
        T.func_attr({"x": 1e400, "y": -1e400, "z": [1, (2, 3)], "v": "a\\nb"})
        for i in T.serial(8, annotations={"pragma": 3.5}):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                T.block_attr({"meta": "x\\ty"})
                A[vi] = 1.0
    """))
    _round_trip(func)


def test_a_handle_matched_twice_is_refused() -> None:
    text = ('@T.prim_func\ndef f(a: T.handle):\n    A = T.match_buffer(a, (8,), "float32")\n'
            '    A2 = T.match_buffer(a, (4,), "float32")\n    A2[0] = 1.0\n')
    with pytest.raises(ScriptError, match="the handle 'a' is matched twice") as info:
        from_source(text)
    assert info.value.lineno == 4


@pytest.mark.parametrize("value, dtype", [
    (2**64 - 1, "uint64"), (-(2**63), "int64"), (2**63 - 1, "int64"), (-128, "int8"),
    (255, "uint8"), (-(2**31), "int32"), (2**31 - 1, "int32"),
])
def test_integer_edges_round_trip_and_compute(value: int, dtype: str) -> None:
    X = te.placeholder((2,), dtype, name="X")
    Y = te.compute((2,), lambda i: te.max(X[i], te.const(value, dtype)), name="Y")
    func = te.create_prim_func([X, Y])
    info = np.iinfo(dtype)
    x = np.array([info.min, info.max], dtype)
    for back in _round_trip(func):
        y = np.zeros(2, dtype)
        mlc.build(back, target="llvm")(x, y)
        np.testing.assert_array_equal(y, np.maximum(x, np.array(value, dtype)))


@pytest.mark.parametrize("header", ["T.where(vi < 7)", "T.reads(A[vi])", "T.writes(B[vi])",
                                    'T.block_attr({"k": 1})'])
def test_a_block_header_given_twice_is_refused(header: str) -> None:
    # the second T.where replaced the first without a word
    text = _func(f"""
        for i in range(8):
            with T.block("B"):
                vi = T.axis.spatial(8, i)
                {header}
                {header}
                B[vi] = A[vi]
    """)
    with pytest.raises(ScriptError, match="is given twice in block \"B\"") as info:
        from_source(text)
    assert info.value.lineno == 8


def test_plain_loop_gathers_check_each_dimension() -> None:
    # A[1, I[i]] with I[i] = 5 read A[2, 1]: the flat index stayed inside the array
    func = from_source('@T.prim_func\ndef f(A: T.Buffer((4, 4), "float32"), '
                       'I: T.Buffer((4,), "int32"), B: T.Buffer((4,), "float32")):\n'
                       "    for i in range(4):\n        B[i] = A[1, I[i]]\n")
    f = mlc.build(func, target="llvm")
    a, b = np.arange(16, dtype="float32").reshape(4, 4), np.zeros(4, "float32")
    with pytest.raises(IndexOutOfBoundsError, match=r"A\[1, I\[i\]\] in dimension 1"):
        f(a, np.array([0, 5, -1, 2], "int32"), b)
    f(a, np.array([3, 2, 1, 0], "int32"), b)
    np.testing.assert_array_equal(b, a[1, [3, 2, 1, 0]])


class _Relabel(tir.IRMutator):
    """Every block variable spatial: a reduction mislabelled in IR built by hand (the
    parser refuses it in a script)."""

    def visit_Block(self, op: tir.Block) -> tir.Stmt:
        op = self.generic_visit(op)
        ivs = tuple(dataclasses.replace(iv, kind=IterKind.SPATIAL) for iv in op.iter_vars)
        return dataclasses.replace(op, iter_vars=ivs)


@pytest.mark.parametrize("primitive", ["parallel", "vectorize"])
def test_a_mislabelled_reduction_in_hand_built_ir_cannot_run_at_once(primitive: str) -> None:
    func = from_source(MISLABELED.format(kind="reduce"))
    func = func.with_body(_Relabel().visit(func.body))
    sch = tir.Schedule(func)
    with pytest.raises(ScheduleError, match=r"block 'B' writes B\[0\] and reads B\[0\]"):
        getattr(sch, primitive)(sch.get_loops(sch.get_block("B"))[0])


def test_a_cast_of_a_constant_round_trips_as_a_conversion() -> None:
    # printed as T.int8(300), which read back as a constant that int8 cannot hold
    X = te.placeholder((4,), "int8", name="X")
    Y = te.compute((4,), lambda i: X[i] + te.const(100).astype("int8")
                   + te.const(2.7).astype("int8"), name="Y")
    func = te.create_prim_func([X, Y])
    x = np.array([-100, -1, 0, 20], "int8")
    for back in _round_trip(func):
        y = np.zeros(4, "int8")
        mlc.build(back, target="llvm")(x, y)
        np.testing.assert_array_equal(y, x + np.int8(100) + np.int8(2))
    Z = te.compute((4,), lambda i: X[i] + te.const(300).astype("int8"), name="Z")
    _round_trip(te.create_prim_func([X, Z]))


class _FlattenSeq(tir.IRMutator):
    def visit_SeqStmt(self, op: tir.SeqStmt) -> tir.Stmt:
        return tir.seq(*(self.visit(s) for s in op.seq))


def test_a_tensorized_int8_dense_round_trips_and_computes() -> None:
    # T.dp4a(acc, a, b) read back with the dtype of b (int8x64) instead of acc's (int32x16)
    from mlc.topi.x86 import dense_int8, schedule_dense_int8

    A = te.placeholder((16, 16), "int8", "A")
    W = te.placeholder((1, 4, 64), "int8", "W")
    comp = te.placeholder((16,), "int32", "comp")
    D = dense_int8(A, W, comp, units=16)
    func = schedule_dense_int8([A, W, comp, D]).mod
    func = func.with_body(_FlattenSeq().visit(func.body))
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (16, 16)).astype("int8")
    w = rng.integers(-128, 128, (1, 4, 64)).astype("int8")
    c = rng.integers(-1000, 1000, 16).astype("int32")
    want = np.zeros((16, 16), "int32")
    mlc.build(func, target="llvm")(a, w, c, want)
    for back in _round_trip(func):
        got = np.zeros((16, 16), "int32")
        mlc.build(back, target="llvm")(a, w, c, got)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", ["my func", "class", "1abc"])
def test_a_function_name_that_is_not_an_identifier_prints_as_one(name: str) -> None:
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    func = te.create_prim_func([A, B], name=name)
    for text in (str(func), func.script()):
        back = from_source(text)
        assert back.name.isidentifier()
        a, b = np.ones(4, "float32"), np.zeros(4, "float32")
        mlc.build(back, target="llvm")(a, b)
        np.testing.assert_array_equal(b, a + 1)


def test_an_expression_as_deep_as_te_accepts_round_trips() -> None:
    # te.compute takes 250 levels; the parser refused more than 60 (any depth, statements
    # or expressions), so print(func) of a 100-step Horner polynomial did not read back
    A = te.placeholder((4,), name="A")
    e: tir.PrimExpr = A[0]
    for n in range(124):
        e = e * A[n % 4] - 1.0
    B = te.compute((1,), lambda i: e, name="B")
    func = te.create_prim_func([A, B])
    a = np.full(4, 0.5, "float32")
    for back in _round_trip(func):
        b = np.zeros(1, "float32")
        mlc.build(back, target="llvm")(a, b)
        ref = np.float32(0.5)
        for _ in range(124):
            ref = ref * np.float32(0.5) - np.float32(1.0)
        np.testing.assert_allclose(b[0], ref, rtol=1e-5)


def test_an_unknown_thread_axis_is_refused_at_its_line() -> None:
    # T.thread_binding(8, thread="bogus.x") ran as a serial loop on llvm
    text = _func("for i in T.thread_binding(8, thread='threadIdx.w'):\n    A[i] = 1.0\n")
    with pytest.raises(ScriptError, match="unknown thread axis 'threadIdx.w'") as info:
        from_source(text)
    assert info.value.lineno == 3

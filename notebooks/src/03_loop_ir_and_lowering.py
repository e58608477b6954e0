# %% [markdown]
# # 03 · The loop IR and lowering
#
# Everything in mlc is one IR: a **PrimFunc** whose body is loops (`For`) around **blocks**.
# A block is TensorIR's unit of computation: named iteration variables (spatial or reduce)
# bound to the loops, the regions it reads and writes, an optional `init`. Schedules rewrite
# this tree; **lowering** turns it into what a code generator wants: plain loops over flat
# buffers, with vectors. The passes are one visible list.
#
# **You will:** look inside a block, run the pass pipeline and read the program after each
# pass, use the simplifier, meet the errors a schedule can raise, and write two passes of
# your own with the IR's visitor and mutator.

# %%
import mlc  # first: a folder named "mlc" where Jupyter started would hide the package

if not hasattr(mlc, "build"):
    raise ImportError(f"'import mlc' found the folder {list(mlc.__path__)[0]}, not the mlc "
                      "package: start Jupyter from another folder (`make lab` in the "
                      "checkout does), or rename that folder")

import matplotlib
import numpy as np

import mlc
from mlc import te, tir, viz
from mlc.errors import (
    AllocationError,
    IndexOutOfBoundsError,
    IntegerDivisionError,
    LoweringError,
    ScheduleError,
)
from mlc.testing.exercises import exercise, expect, hint  # noqa: F401 (hint("1") asks for a hint)
from mlc.tir.functor import IRMutator, IRVisitor

matplotlib.rcParams["figure.dpi"] = 80

# %% [markdown]
# **Why:** every schedule ends as a loop program, and that program is what runs. Reading it,
# and the passes that lower blocks to loops, is how you find out why a schedule is fast, slow
# or refused.
#
# Where this chapter works, on the map of chapter 00 (its levels in blue):

# %% tags=["nbval-ignore-output"]
from mlc.viz.concepts import stack

stack(chapter=3)

# %% [markdown]
# ## Blocks
# The IR nodes are small frozen dataclasses; the printer shows them as Python-like code.

# %%
A = te.placeholder((8, 8), name="A")
B = te.placeholder((8, 8), name="B")
k = te.reduce_axis((0, 8), name="k")
C = te.compute((8, 8), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
func = te.create_prim_func([A, B, C])
sch = tir.Schedule(func)
block = sch.get(sch.get_block("C"))
print("name:", block.name)
print("iter vars:", block.iter_vars)
print("reads:", [str(r) for r in block.reads], "writes:", [str(w) for w in block.writes])
print("init:", block.init)

# %% [markdown]
# ## The pass pipeline
# `mlc.lower` runs these passes in order (`mlc/transform/pipeline.py`; the list grows as the
# compiler does, so this output is not compared by the notebook tests):

# %% tags=["nbval-ignore-output"]
from mlc.transform.pipeline import PASSES, lower

for name, fn in PASSES:
    print(f"{name:16s} {fn.__module__}")

# %% [markdown]
# Schedule the matmul a little (split, reorder, vectorize) and watch each pass:
# `lower_blocks` removes the blocks, leaving plain statements in the loops (the `init`
# becomes an `if k == 0`),
# `flatten_buffers` makes `C[i, j]` into `C[i * 8 + j]`, `simplify` folds index arithmetic,
# `vectorize_loops` replaces the vectorized loop by one statement over 4-lane vectors:
# `ramp(base, 1, 4)` is the 4 consecutive indices from `base` (one vector load or store),
# `broadcast(x, 4)` the scalar `x` in all 4 lanes (the `A[i, k]` that every lane multiplies).
# (`MLC_TRACE=1` in the environment does the same for every `mlc.lower`/`mlc.build`.)

# %% tags=["nbval-ignore-output"]
i, j, kk = sch.get_loops(sch.get_block("C"))
j0, j1 = sch.split(j, factors=[None, 4])
sch.reorder(i, j0, kk, j1)
sch.vectorize(j1)
lowered = lower(sch.mod, trace=True)

# %% [markdown]
# ## The simplifier
# Splits and fuses leave index arithmetic like `(i_0 * 32 + i_1) // 32`. The simplifier
# knows the loop ranges, so it can prove `i_1 < 32` and fold the expression.

# %%
from mlc.tir.expr import Range

i0, i1 = te.var("i_0"), te.var("i_1")
expr = (i0 * 32 + i1) // 32
print("without ranges:", tir.simplify(expr))
ana = tir.Analyzer()
ana.bind(i1, Range.from_min_extent(0, 32))
print("with 0 <= i_1 < 32:", ana.simplify(expr), "and", ana.simplify((i0 * 32 + i1) % 32))

# %% [markdown]
# ## Errors you will meet
# Every schedule primitive checks that it keeps the program's meaning. When it cannot, it
# raises `ScheduleError` with the loop nest and the offending line marked, and says what
# would work. Three classics:

# %%
def try_it(fn):
    try:
        fn()
    except ScheduleError as err:
        print(str(err).splitlines()[0])

s1 = tir.Schedule(func)
try_it(lambda: s1.vectorize(s1.get_loops(s1.get_block("C"))[2]))  # k is a reduction loop

# %%
s2 = tir.Schedule(func)
s2.parallel(s2.get_loops(s2.get_block("C"))[1])
try_it(lambda: s2.vectorize(s2.get_loops(s2.get_block("C"))[0]))  # i holds the parallel j

# %% [markdown]
# A vectorized loop may hold other loops, as in TVM; only a parallel or thread-bound one is
# refused. `vectorize_loops` keeps the inner loops as scalar loops around vector statements
# (`for k: C[ramp(...)] = C[ramp(...)] + ...`). That runs the iterations in another order,
# `k` outside and all lanes at once, so the pass does it only when every lane provably
# touches its own elements of what the body writes; otherwise it leaves the loop serial:
# correct, only slower. Exercise 3 meets such a loop.
#
# How wide may a vector be? The machine's registers hold 8 or 16 floats; LLVM splits a wider
# vector into several registers, but a very wide one costs it dearly: 4096 lanes took
# seconds to compile (6 s on the machine where it was tried), and 65536 crashed LLVM (and
# with it the notebook). So `vectorize_loops` makes
# vectors of at most `MAX_LANES` lanes, and a longer vectorized loop becomes a loop over such
# vectors plus one shorter vector for the rest:

# %%
from mlc.transform.vectorize import MAX_LANES

Xw = te.placeholder((1000,), name="Xw")
Yw = te.compute((1000,), lambda i: Xw[i] * 2.0, name="Yw")
sw = te.create_schedule(Yw.op)
sw[Yw].vectorize(Yw.op.axis[0])
print("MAX_LANES =", MAX_LANES)
print(mlc.lower(sw, [Xw, Yw]))

# %%
s3 = tir.Schedule(func)
try_it(lambda: s3.compute_inline(s3.get_block("C")))  # a reduction cannot be inlined

# %% [markdown]
# The full message prints the program with the culprit marked:

# %%
try:
    s2.parallel(s2.get_loops(s2.get_block("C"))[2])
except ScheduleError as err:
    print(err)

# %% [markdown]
# Lowering checks one more thing before any code runs: that every access stays inside its
# array. Reading past the end could crash the notebook, so where the loop bounds decide it,
# the first pass, `check_bounds`, refuses the program and says which block reads what: the
# index in dimension 0 of `X`, `vi + 1`, reaches 16 when `vi` is 15:

# %%
X = te.placeholder((16,), name="X")
shifted = te.compute((16,), lambda i: X[i + 1], name="shifted")
try:
    mlc.build(te.create_schedule(shifted.op), [X, shifted])
except LoweringError as err:
    print(err)

# %% [markdown]
# Some indices are known only when the kernel runs: an index read from another array (a
# gather), an index into an array of symbolic size. Those accesses are checked *while* the
# kernel runs; a bad one is skipped and the call raises `IndexOutOfBoundsError` afterwards,
# naming the access and the value. Integer division works the same way: a CPU would kill
# the process on a division by zero, so the compiled code divides by one instead, and the
# call raises `IntegerDivisionError` (also a `ZeroDivisionError`). Accesses that the loops
# prove in range carry no check: a kernel whose indices are affine in its loops, over
# constant shapes, pays nothing. (The gather below has constant shapes too, but its index
# comes from data, so it keeps its check.)

# %%

idx = te.placeholder((4,), name="idx", dtype="int32")
gathered = te.compute((4,), lambda i: X[idx[i]], name="gathered")
f_gather = mlc.build(te.create_schedule(gathered.op), [X, idx, gathered])
x16, out4 = np.arange(16, dtype="float32"), np.zeros(4, "float32")
f_gather(x16, np.array([3, 1, 4, 1], "int32"), out4)
print(out4)
try:
    f_gather(x16, np.array([3, 1, 40, 1], "int32"), out4)
except IndexOutOfBoundsError as err:
    print(err)

# %%
N = te.placeholder((4,), name="N", dtype="int32")
D = te.placeholder((4,), name="D", dtype="int32")
Q = te.compute((4,), lambda i: N[i] // D[i], name="Q")
f_div = mlc.build(te.create_schedule(Q.op), [N, D, Q])
try:
    f_div(np.array([7, 8, 9, 10], "int32"), np.array([2, 0, 3, 5], "int32"), np.zeros(4, "int32"))
except IntegerDivisionError as err:
    print(err)

# %% [markdown]
# Memory is the third thing compiled code checks while it runs. Every intermediate stage
# gets a buffer of its own, and `big` below is 1,000,000 x 1,000,000 floats: 4 TB, which no
# machine gives. The allocation fails, the code that would use it does not run, and the call
# raises `AllocationError` naming the buffer (writing through the missing memory would kill
# the notebook). `compute_at` puts the producer inside the consumer's row loop, so only one
# row of `big` lives at a time (4 MB), and the same program runs:

# %%
A1 = te.placeholder((4,), name="A1")
big = te.compute((1_000_000, 1_000_000), lambda i, j: A1[i % 4] * 2.0, name="big")
kk = te.reduce_axis((0, 1_000_000), "kk")
rows = te.compute((4,), lambda i: te.sum(big[i, kk], axis=kk), name="rows")
s_big = te.create_schedule(rows.op)
out_rows = np.zeros(4, "float32")
try:
    mlc.build(s_big, [A1, rows])(np.ones(4, "float32"), out_rows)
except AllocationError as err:
    print(err)
s_big[big].compute_at(s_big[rows], rows.op.axis[0])
mlc.build(s_big, [A1, rows])(np.ones(4, "float32"), out_rows)
print(out_rows)

# %%
doubled = te.compute((15,), lambda i: X[i + 1] * 2.0, name="doubled")
f_const = mlc.build(te.create_schedule(doubled.op), [X, doubled])
print("run-time checks in the gather:", f_gather.has_checks,
      "| in the shifted kernel (affine indices):", f_const.has_checks)
assert f_gather.has_checks and not f_const.has_checks

# %% [markdown]
# The lowered program as a tree: no blocks left, only loops.

# %% tags=["nbval-ignore-output"]
viz.loop_tree(lowered)

# %% [markdown]
# ## Writing a program in script form
# The MLC course writes tensor programs by hand, as TVMScript: an `@ir_module` class whose
# `@T.prim_func` methods are loop nests of blocks. mlc reads the same text (from
# `mlc.script`) without running it, into the same `PrimFunc` that `te.create_prim_func`
# builds; `T.reads`/`T.writes` may be left out, they are inferred. Here is the course's
# `mm_relu`:

# %%
import numpy as np

from mlc.script import T, ir_module


@ir_module
class MyModule:
    @T.prim_func
    def mm_relu(A: T.Buffer((128, 128), "float32"),
                B: T.Buffer((128, 128), "float32"),
                C: T.Buffer((128, 128), "float32")):
        T.func_attr({"global_symbol": "mm_relu", "tir.noalias": True})
        Y = T.alloc_buffer((128, 128), dtype="float32")
        for i, j, k in T.grid(128, 128, 128):
            with T.block("Y"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                vk = T.axis.reduce(128, k)
                with T.init():
                    Y[vi, vj] = T.float32(0)
                Y[vi, vj] = Y[vi, vj] + A[vi, vk] * B[vk, vj]
        for i, j in T.grid(128, 128):
            with T.block("C"):
                vi = T.axis.spatial(128, i)
                vj = T.axis.spatial(128, j)
                C[vi, vj] = T.max(Y[vi, vj], T.float32(0))

# %% [markdown]
# Transform it with `tir.Schedule`, as in the course: split `j`, move the reduction loop `k`
# outside `j_1`, compute `C` under the outer `j` loop (`j_0`). `sch.mod.script()` prints TVMScript (with `T.`),
# `print(sch.mod)` the same program without the prefix; `mlc.script.from_source` reads
# either back.

# %%
sch = tir.Schedule(MyModule["mm_relu"])
block_Y = sch.get_block("Y")
i, j, k = sch.get_loops(block_Y)
j0, j1 = sch.split(j, factors=[None, 4])
sch.reorder(j0, k, j1)
sch.reverse_compute_at(sch.get_block("C"), j0)
print(sch.mod.script())

# %%
a_np = np.random.default_rng(0).random((128, 128), dtype=np.float32)
b_np = np.random.default_rng(1).random((128, 128), dtype=np.float32)
c_np = np.empty((128, 128), dtype="float32")
rt_lib = mlc.build(sch.mod, target="llvm")
rt_lib(a_np, b_np, c_np)
np.testing.assert_allclose(c_np, np.maximum(a_np @ b_np, 0), rtol=1e-4)
tir.assert_structural_equal(sch.mod, mlc.script.from_source(sch.mod.script()))
print("the transformed mm_relu matches numpy, and its script reads back to the same program")

# %% [markdown]
# A mistake in a script points at the line and column that caused it:

# %%
from mlc.errors import ScriptError

try:
    mlc.script.from_source("""
@T.prim_func
def f(A: T.Buffer((8,), "float32")):
    for i in range(8):
        with T.block("A"):
            vi, vj = T.axis.remap("SS", [i])
            A[vi] = 0.0
""")
except ScriptError as err:
    print(err)

# %% [markdown]
# > **What to remember**
# > * A block declares its iteration variables and what it reads and writes; lowering turns
# >   blocks into plain loops, one visible pass at a time.
# > * Errors come at schedule time (refused), lowering time or run time, each naming the
# >   block, loop or buffer.
# > * A pass is a visitor or mutator over the IR: you wrote two.

# %% [markdown]
# ## Exercises: passes of your own
# A pass is a function `PrimFunc -> PrimFunc` built on the IR's visitor and mutator
# (`mlc/tir/functor.py`): subclass `IRVisitor` (to look) or `IRMutator` (to rewrite) and
# define `visit_<NodeName>` for the nodes you care about; every other node is walked field
# by field, and `self.generic_visit(node)` walks (or rebuilds) a node's children.
#
# Complete each one and run its check (✓, or ✗ with what is wrong
# (`hint("1")` gives a hint for exercise 1, the idea first, when you want one)). Run the next
# cell first: it defines the checks. Nothing from the cells above is needed but the imports.

# %%
def matmul_func(n):
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    return te.create_prim_func([A, B, C])

def two_stage_func(n):  # two loops one after the other (sibling nests), one FLOP each
    X = te.placeholder((n,), name="X")
    B = te.compute((n,), lambda i: X[i] * 2.0, name="B")
    Y = te.compute((n,), lambda i: B[i] + 1.0, name="Y")
    return te.create_prim_func([X, Y])

def scaled_func(n):  # y = x / 3.0 + 1.0 / x: two float divisions, one by a constant
    X = te.placeholder((n,), name="X")
    Y = te.compute((n,), lambda i: X[i] / 3.0 + 1.0 / X[i], name="Y")
    return te.create_prim_func([X, Y])

@exercise("1. count the FLOPs", hint=[
          "an operation runs once per iteration of every loop around it, and of those "
          "only: a loop that has ended no longer multiplies what comes after it",
          "visit_For changes self.trips before visiting the loop's body and must leave it "
          "as it found it; float_op looks at the operation's dtype, then visits its "
          "operands"])
def check_count_flops(count_flops):
    for n in (4, 8):
        got = count_flops(mlc.lower(matmul_func(n)))
        expect(got is not None, "count_flops should return the count (an int)")
        want = 2 * n ** 3
        expect(got != n ** 3, f"{got} for the {n}x{n} matmul: that counts the multiply-adds; "
               "a multiply and an add are 2 FLOPs")
        expect(got >= want, f"the {n}x{n} matmul does 2 * {n}**3 = {want} FLOPs, you counted "
               f"{got}: count each operation once per iteration of every loop around it")
        expect(got == want, f"the {n}x{n} matmul does 2 * {n}**3 = {want} FLOPs, you counted "
               f"{got}: are index computations (integers) counted too?")
    got = count_flops(mlc.lower(scaled_func(16)))
    expect(got == 48, f"y = x / 3.0 + 1.0 / x over 16 elements is 48 FLOPs, you counted {got}")
    got = count_flops(mlc.lower(two_stage_func(16)))
    expect(got == 32, f"B = 2 * X, then Y = B + 1, over 16 elements: two loops one after the "
           f"other, 16 FLOPs each, 32 in all; you counted {got}. When a loop ends, do the "
           "loops after it still count its iterations?")

@exercise("2. divide by multiplying", hint=[
          "x / c is x * (1 / c), and 1 / c can be computed at compile time when c is a "
          "constant; rewrite the children first, so that nested divisions are handled too",
          "self.generic_visit rebuilds a node's children; tir.FloatImm is the float "
          "constant node; the * operator builds a product of IR expressions"])
def check_reciprocal(ReciprocalDivision):
    func = scaled_func(16)
    new = ReciprocalDivision().visit(func)
    expect(isinstance(new, tir.PrimFunc), "visit(func) should give back a PrimFunc")
    divs = tir.functor.collect(new.body, lambda n: isinstance(n, tir.Div))
    expect(len(divs) == 1, f"{len(divs)} divisions left; the one by the constant 3.0 should "
           "become a multiplication and 1.0 / X[i] (not a constant divisor) should stay")
    x = np.random.default_rng(4).random(16, dtype=np.float32) + 0.5
    y = np.zeros(16, "float32")
    mlc.build(new)(x, y)
    expect(np.allclose(y, x / 3.0 + 1.0 / x, rtol=1e-6), "the rewritten program computes "
           "something else than x / 3.0 + 1.0 / x")

@exercise("3. vector code for a stencil", hint=[
          "the lanes of a vector loop cannot each compute their own piece of an "
          "intermediate: compute the intermediate once for the whole tile, before the "
          "vector loop reads it",
          "compute_at B at the outer tile loop rather than at the vectorized one"])
def check_vector_blur(vector_blur):
    sch = tir.Schedule(blur_func(32))
    vector_blur(sch)
    b_loops = [sch.get(lp).loop_var.name for lp in sch.get_loops(sch.get_block("B"))]
    expect("x_0" in b_loops, "B should still be computed tile by tile, inside C's loop x_0 "
           f"(B's loops are {b_loops})")
    c_loops = sch.get_loops(sch.get_block("C"))
    expect(sch.get(c_loops[-1]).kind.name == "VECTORIZED", "C's inner loop x_1 should stay "
           "vectorized")
    lowered = mlc.lower(sch.mod)
    stores = tir.functor.collect(lowered.body, lambda n: isinstance(n, tir.BufferStore)
                                 and n.buffer.name == "C")
    expect(any(isinstance(st.indices[0], tir.Ramp) for st in stores), "C is not stored as a "
           "vector in the lowered program: vectorize_loops left x_1 serial. "
           "print(mlc.lower(sch.mod)) to see why")
    a = np.random.default_rng(5).random(33, dtype=np.float32)
    c = np.zeros(32, "float32")
    mlc.build(sch.mod)(a, c)
    expect(np.allclose(c, 2 * a[:-1] + 2 * a[1:], rtol=1e-6), "the result is no longer the "
           "blur C[x] = B[x] + B[x + 1] with B = 2 * A")

# %% [markdown]
# **1. Count the FLOPs.** Complete `FlopCounter`: it counts the floating-point `+ - * /`
# that a lowered program executes. An operation inside loops counts once per iteration of
# every loop around it (`self.trips`); integer arithmetic (indices) does not count.

# %%
class FlopCounter(IRVisitor):
    def __init__(self):
        self.flops = 0
        self.trips = 1  # iterations of the loops around the node being visited

    def visit_For(self, loop):
        ### BEGIN SOLUTION
        outer = self.trips
        self.trips *= int(loop.extent)
        self.generic_visit(loop)
        self.trips = outer
        ### END SOLUTION

    def float_op(self, op):
        ### BEGIN SOLUTION
        if op.dtype.startswith("float"):
            self.flops += self.trips
        self.generic_visit(op)
        ### END SOLUTION

    visit_Add = visit_Sub = visit_Mul = visit_Div = float_op

def count_flops(func):
    counter = FlopCounter()
    counter.visit(func.body)
    return counter.flops

check_count_flops(count_flops)

# %% [markdown]
# **2. Divide by multiplying.** A division costs several times a multiplication, so
# compilers (under fast-math) replace `x / c` by `x * (1 / c)` when `c` is a constant.
# Write that pass as an `IRMutator`: rewrite a float `Div` whose divisor is a `FloatImm`.

# %%
class ReciprocalDivision(IRMutator):
    def visit_Div(self, op):
        ### BEGIN SOLUTION
        op = self.generic_visit(op)
        if isinstance(op.b, tir.FloatImm):
            return op.a * tir.FloatImm(1.0 / op.b.value, op.dtype)
        return op
        ### END SOLUTION

check_reciprocal(ReciprocalDivision)

# %% [markdown]
# **3. Vector code for a stencil.** `vectorize` marks a loop; whether it becomes vector code
# is up to `vectorize_loops`. Here `C[x] = B[x] + B[x + 1]` with `B = 2 * A`, and `B` is
# computed at C's vectorized loop `x_1`: each lane needs its own two elements of `B`, a
# buffer allocated inside the loop, and neighbouring lanes compute overlapping windows. The
# pass cannot run those lanes side by side, so `x_1` stays a serial loop (no `ramp`):

# %%
def blur_func(n):
    A = te.placeholder((n + 1,), name="A")
    B = te.compute((n + 1,), lambda x: A[x] * 2.0, name="B")
    C = te.compute((n,), lambda x: B[x] + B[x + 1], name="C")
    return te.create_prim_func([A, C])

serial = tir.Schedule(blur_func(32))
(x,) = serial.get_loops(serial.get_block("C"))
xo, xi = serial.split(x, factors=[None, 8])
serial.compute_at(serial.get_block("B"), xi)
serial.vectorize(xi)
print(mlc.lower(serial.mod))

# %% [markdown]
# Change where `B` is computed (still tile by tile, inside `x_0`) so that `x_1` becomes
# vector code.

# %%
def vector_blur(sch):
    b = sch.get_block("B")
    (x,) = sch.get_loops(sch.get_block("C"))
    xo, xi = sch.split(x, factors=[None, 8])
    ### BEGIN SOLUTION
    sch.compute_at(b, xo)
    ### END SOLUTION
    sch.vectorize(xi)

check_vector_blur(vector_blur)

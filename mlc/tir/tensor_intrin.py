"""Tensor intrinsics: a *description* of a small computation and an *implementation* of it.

``tensorize`` looks for a tile whose computation matches the description and replaces it by
the implementation. The description is a PrimFunc on small buffers (a 16x16x16 matmul):
one chain of loops around one block. The implementation is a PrimFunc with the same
parameters (same order, shapes and dtypes) that computes the same thing differently: with
loops unrolled and vectorized (a CPU micro-kernel), or with calls a backend understands::

    desc = ...                               # C[i, j] += A[i, k] * B[k, j] on 16x16 buffers
    impl = ...                               # the same, k unrolled, j vectorized
    tir.TensorIntrin.register("gemm16", desc, impl)
    sch.tensorize(i_1, "gemm16")

:func:`register_cpu_gemm` registers a ready-made matmul intrinsic ("gemm_16x16x16_cpu").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mlc.errors import ScheduleError
from mlc.tir.analysis import structural_equal
from mlc.tir.arith import simplify
from mlc.tir.expr import IntImm, IterKind, IterVar, PrimExpr, Range, Var, const
from mlc.tir.stmt import (
    Block,
    BlockRealize,
    Buffer,
    BufferRegion,
    BufferStore,
    For,
    ForKind,
    PrimFunc,
    Stmt,
)


@dataclass(frozen=True, eq=False)
class TensorIntrin:
    """A registered tensor intrinsic: ``name``, ``desc`` (what it computes) and ``impl``
    (how). Register with :meth:`register`, look up with :meth:`get`."""

    name: str
    desc: PrimFunc
    impl: PrimFunc
    reset: PrimFunc | None = None
    """How the hardware zeroes the output tile (TVM's ``reduce_reset``: the notes'
    ``fill_zero``), with the description's parameters; tensorize makes it the tile's init.
    None: the tile keeps its own zeroing loops."""

    _registry: ClassVar[dict[str, TensorIntrin]] = {}

    @staticmethod
    def register(name: str, desc: PrimFunc, impl: PrimFunc, override: bool = False,
                 reset: PrimFunc | None = None) -> TensorIntrin:
        """Register ``desc``/``impl`` under ``name``; returns the TensorIntrin.

        Registering the same name again is allowed when the programs are structurally the
        same (re-running a notebook cell) or with ``override=True``."""
        for role, func in (("desc", desc), ("impl", impl)):
            if not isinstance(func, PrimFunc):
                raise ScheduleError(
                    f"TensorIntrin.register({name!r}): {role} must be a PrimFunc (e.g. "
                    f"te.create_prim_func([a, b, c]) or a Schedule's .mod), got "
                    f"{type(func).__name__}")
        _check_signature(name, desc, impl)
        if reset is not None:
            _check_signature(name, desc, reset)
        if desc_nest(desc) is None:
            raise ScheduleError(
                f"TensorIntrin.register({name!r}): the description must be one chain of loops "
                f"around one block (like te.create_prim_func of a single te.compute), got\n"
                f"{desc}")
        old = TensorIntrin._registry.get(name)
        if old is not None and not override:
            same = (structural_equal(old.desc, desc) and structural_equal(old.impl, impl)
                    and (old.reset is None) == (reset is None)
                    and (reset is None or structural_equal(old.reset, reset)))
            if not same:
                raise ScheduleError(
                    f"a tensor intrinsic named {name!r} is registered already with a different "
                    "description or implementation; pick another name or pass override=True")
            return old
        intrin = TensorIntrin(name, desc, impl, reset)
        TensorIntrin._registry[name] = intrin
        return intrin

    @staticmethod
    def get(name: str) -> TensorIntrin:
        """The intrinsic registered under ``name``."""
        if name not in TensorIntrin._registry:
            known = sorted(TensorIntrin._registry)
            raise ScheduleError(
                f"there is no tensor intrinsic named {name!r}; registered: {known}. Register "
                "one with tir.TensorIntrin.register(name, desc, impl) (or "
                "tir.tensor_intrin.register_cpu_gemm(16, 16, 16))")
        return TensorIntrin._registry[name]

    @staticmethod
    def list() -> list[str]:
        """The names of every registered intrinsic."""
        return sorted(TensorIntrin._registry)

    def __repr__(self) -> str:
        return f"TensorIntrin({self.name!r})\n# desc\n{self.desc}\n# impl\n{self.impl}"


def _check_signature(name: str, desc: PrimFunc, impl: PrimFunc) -> None:
    if len(desc.params) != len(impl.params):
        raise ScheduleError(
            f"TensorIntrin.register({name!r}): desc has {len(desc.params)} parameters but impl "
            f"has {len(impl.params)}; they must take the same buffers in the same order")
    for d, i in zip(desc.params, impl.params):
        shape_ok = len(d.shape) == len(i.shape) and all(
            _const(a) is not None and _const(a) == _const(b) for a, b in zip(d.shape, i.shape))
        if not shape_ok or d.dtype != i.dtype:
            raise ScheduleError(
                f"TensorIntrin.register({name!r}): parameter {d.name} of desc is "
                f"{_sig(d)} but parameter {i.name} of impl is {_sig(i)}; they must agree (and "
                "have constant shapes)")


def _sig(b: Buffer) -> str:
    return f"{tuple(str(s) for s in b.shape)} {b.dtype}"


def _const(e: PrimExpr) -> int | None:
    e = simplify(e)
    return e.value if isinstance(e, IntImm) else None


def root_body(func: PrimFunc) -> tuple[Stmt, tuple[Buffer, ...]]:
    """The statement under the root block of ``func`` and the root's allocations."""
    body = func.body
    if isinstance(body, BlockRealize) and not body.block.iter_vars:
        return body.block.body, body.block.alloc_buffers
    return body, ()


def loop_nest(body: Stmt) -> tuple[list[For], BlockRealize] | None:
    """``([loops...], realize)`` when ``body`` is a chain of loops around one block."""
    loops: list[For] = []
    while isinstance(body, For):
        loops.append(body)
        body = body.body
    if isinstance(body, BlockRealize):
        return loops, body
    return None


def desc_nest(desc: PrimFunc) -> tuple[list[For], BlockRealize] | None:
    return loop_nest(root_body(desc)[0])


# ---------------------------------------------------------------------------------------------
# a ready-made intrinsic


def gemm_func(m: int, n: int, k: int, dtype: str = "float32", transpose_b: bool = False,
              name: str = "gemm") -> PrimFunc:
    """``C[i, j] = C[i, j] + A[i, kk] * B[kk, j]`` on ``m x k``, ``k x n`` (``n x k`` when
    ``transpose_b``) and ``m x n`` buffers: an update without init, like the tile of a
    blockized matmul."""
    a = Buffer("A", (const(m), const(k)), dtype)
    b = Buffer("B", (const(n), const(k)) if transpose_b else (const(k), const(n)), dtype)
    c = Buffer("C", (const(m), const(n)), dtype)
    i, j, r = Var("i"), Var("j"), Var("k")
    vi, vj, vk = Var("vi"), Var("vj"), Var("vk")
    b_load = b[vj, vk] if transpose_b else b[vk, vj]
    store = BufferStore(c, c[vi, vj] + a[vi, vk] * b_load, (vi, vj))
    region_b = (_full(vj), _full(vk)) if transpose_b else (_full(vk), _full(vj))
    block = Block(
        f"gemm_{m}x{n}x{k}",
        (IterVar(vi, Range(const(0), const(m))), IterVar(vj, Range(const(0), const(n))),
         IterVar(vk, Range(const(0), const(k)), IterKind.REDUCE)),
        (BufferRegion(c, (_full(vi), _full(vj))), BufferRegion(a, (_full(vi), _full(vk))),
         BufferRegion(b, region_b)),
        (BufferRegion(c, (_full(vi), _full(vj))),),
        store,
    )
    nest: Stmt = BlockRealize((i, j, r), const(True), block)
    for var, ext in ((r, k), (j, n), (i, m)):
        nest = For(var, const(0), const(ext), ForKind.SERIAL, nest)
    root = Block("root", (), (), (), nest)
    return PrimFunc((a, b, c), BlockRealize((), const(True), root), name)


def _full(v: Var) -> Range:
    return Range(v, const(1))


def register_cpu_gemm(m: int = 16, n: int = 16, k: int = 16, dtype: str = "float32",
                      transpose_b: bool = False) -> str:
    """Register a CPU matmul micro-kernel and return its name, ``"gemm_{m}x{n}x{k}_cpu"``
    (``..._cpu_tb`` with ``transpose_b``, where B is indexed ``B[j, k]`` as in seed 004).

    desc: ``C[i, j] += A[i, k] * B[k, j]`` over ``i, j, k`` in ``m, n, k``.
    impl: the same loops reordered to ``i, k, j``, ``k`` unrolled and ``j`` vectorized, so
    each step is a vector multiply-add on a row of C::

        for i in range(16):
            for k in unroll(16):
                for j in vectorized(16):
                    C[i, j] = C[i, j] + A[i, k] * B[k, j]
    """
    from mlc.tir.schedule import Schedule

    name = f"gemm_{m}x{n}x{k}_cpu" + ("_tb" if transpose_b else "")
    if name in TensorIntrin._registry:
        return name
    desc = gemm_func(m, n, k, dtype, transpose_b, name=name + "_desc")
    sch = Schedule(gemm_func(m, n, k, dtype, transpose_b, name=name + "_impl"))
    i, j, r = sch.get_loops(sch.get_block(f"gemm_{m}x{n}x{k}"))
    sch.reorder(i, r, j)
    sch.unroll(r)
    sch.vectorize(j)
    TensorIntrin.register(name, desc, sch.mod)
    return name

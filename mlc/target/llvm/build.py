"""The CPU back end's build: a lowered PrimFunc -> LLVM IR -> machine code in a :class:`Module`.

``parallel`` loops use libgomp with ``MLC_NUM_THREADS`` threads (read now, at build time);
without libgomp they run serially and mlc warns once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlc import config
from mlc.errors import CodegenError
from mlc.runtime import jit, parallel
from mlc.runtime.cross import CrossModule
from mlc.runtime.export import is_cross, target_machine
from mlc.runtime.module import Module
from mlc.target.common import c_name
from mlc.target.llvm.codegen import codegen_llvm
from mlc.target.llvm.cpu import cannot_run_here
from mlc.target.llvm.dot import cpu_features
from mlc.target.llvm.extern import check_calls, entry_name, may_call_out
from mlc.target.target import Target, parse_target
from mlc.tir.functor import contains
from mlc.tir.stmt import For, ForKind, PrimFunc


def has_parallel(func: PrimFunc) -> bool:
    """Does ``func`` have a ``parallel`` loop (so it needs the thread pool)?"""
    return contains(func.body, lambda n: isinstance(n, For) and n.kind == ForKind.PARALLEL)


def compile_lowered(
    func: PrimFunc,
    target: str | dict[str, Any] | Target | None = "llvm",
    name: str | None = None,
    render_c: Callable[[PrimFunc, str], str] | None = None,
) -> Module:
    """Compile an already lowered PrimFunc (the input contract of :mod:`mlc.target.llvm.codegen`)
    for the CPU. ``render_c(func, entry)`` is another back end's renderer of the same program
    as C (the ``"c"`` target passes its own): the Module keeps its text for
    ``get_source("c")``, and this back end never imports that one."""
    tgt = parse_target(target)
    _refuse_hardware_calls(func, tgt)
    if is_cross(tgt.mtriple):  # another machine's code: to save, not to run (no JIT)
        return _compile_cross(func, tgt, name)
    use_threads = has_parallel(func) and parallel.available()
    tm = jit.machine_for(tgt)
    src = _generate(func, name, tgt, tm, use_threads, cpu_features(tgt))
    if not may_call_out():  # mlc.build(..., allow_calls=False): what is compiled, checked
        check_calls(src.ir, src.extern_symbols)
    missing = jit.missing_symbols(src.extern_symbols)
    if missing:
        raise CodegenError(
            f"the program calls the C function{'s' if len(missing) > 1 else ''} "
            f"{', '.join(missing)} (call_extern/call_pure_extern), which this process does "
            "not have; check the spelling (libm's float functions end in f: expf, erff)"
        )
    c_source = None if render_c is None else render_c(func, src.entry)
    compiled = jit.compile_ir(src.ir, src.entry, tgt)
    pin = src.uses_parallel_runtime and config.pin_threads()
    threads = _threads(tgt) if pin else 0  # the team to pin (0: none)
    return Module(func, src.entry, tgt, src.ir, compiled, c_source, src.check_sites, threads,
                  cannot_run=cannot_run_here(tgt))


def _compile_cross(func: PrimFunc, tgt: Target, name: str | None) -> CrossModule:
    """LLVM IR for ``tgt.mtriple`` (its features only what ``-mattr`` names, never this
    host's), kept in a :class:`CrossModule` for ``save``/``export_library``."""
    import dataclasses

    tm = target_machine(tgt.mtriple, tgt.mcpu, tgt.mattr)
    features = cpu_features(dataclasses.replace(tgt, mcpu=tgt.mcpu or "generic"))
    src = _generate(func, name, tgt, tm, has_parallel(func), features)
    return CrossModule(func, src.entry, tgt, src.ir, src.check_sites)


def _generate(func: PrimFunc, name: str | None, tgt: Target, tm: Any, threads: bool,
              features: frozenset[str]) -> Any:
    """LLVM IR of ``func`` for the machine ``tm`` describes (this one, or another's)."""
    return codegen_llvm(
        func,
        entry_name(c_name(name or func.name)),
        parallel_runtime=threads,
        num_threads=_threads(tgt) if threads else 0,
        triple=tm.triple,
        data_layout=str(tm.target_data),
        bounds_check=config.bounds_check(),
        cpu_features=features,
    )


_NOT_HARDWARE = ("access_ptr", "call_extern", "call_pure_extern", "call_packed")


def _hardware_calls(func: PrimFunc) -> list[str]:
    """The instructions of a tensor intrinsic's lowering function (``te.hardware_intrin``:
    calls that take ``access_ptr`` addresses) that ``func`` still calls."""
    from mlc.tir.expr import Call
    from mlc.tir.functor import collect

    found: list[str] = []
    for c in collect(func.body, lambda n: isinstance(n, Call)):
        if any(isinstance(a, Call) and a.op == "access_ptr" for a in c.args) \
                and c.op not in found and c.op not in _NOT_HARDWARE:
            found.append(str(c.op))
    return found


def _refuse_hardware_calls(func: PrimFunc, tgt: Target) -> None:
    calls = _hardware_calls(func)
    if not calls:
        return
    from mlc.target.vdla.pass_helpers import GEMM_CALLS

    vdla = [c for c in calls if c in (*GEMM_CALLS, "fill_zero")]
    owner = (f"the vdla target implements {', '.join(vdla)} (the course's accelerator: "
             "mlc.build(s, args, target='vdla') runs it on its simulator)" if vdla else
             "no mlc target implements it")
    raise CodegenError(
        f"{func.name} calls the hardware instruction{'s' if len(calls) > 1 else ''} "
        f"{', '.join(calls)} (te.hardware_intrin, from a tensor intrinsic's lowering function), "
        f"which the CPU ({tgt}) does not have: {owner}. To run the tile on the CPU, tensorize "
        "with an intrinsic whose implementation is a schedule of the description "
        "(te.decl_tensor_intrin(c.op, lambda sch: ...)) or a PrimFunc")


def _threads(tgt: Target) -> int:
    """The team of a parallel loop: the target's ``--num-cores``, else ``MLC_NUM_THREADS``."""
    return tgt.num_cores or config.num_threads()

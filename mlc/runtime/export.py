"""Compiled code that leaves the process: object files, shared libraries, and loading them back.

    f = mlc.build(s, [A, B], name="myfunc")
    f.save("myfunc.o")                     # LLVM object code (any target triple)
    f.export_library("myfunc.so")          # linked by the system's cc into a shared library
    g = mlc.runtime.load_module("myfunc.so")
    g(a, b)                                # the same call, with the same argument checks

Every library carries, beside the function, the C ABI of ``include/mlc_runtime.h``:

* ``const char *mlc_metadata(void)``: JSON describing the call (each argument's name, dtype,
  shape; the symbolic sizes; the run-time check sites). ``load_module``
  (:mod:`mlc.runtime.load`) reads it to check the arrays exactly as the Module that was
  exported;
* ``int32_t mlc_run(void *const *args, const int64_t *sizes)``: one pointer per argument, in
  the order of the build's argument list (an array's data, or the address of a scalar), and
  the symbolic sizes; returns 0, or the number of the run-time check that failed;
* the function itself under its own name: ``void myfunc(float *A, float *B)``.

A graph module exports its weights inside the library: ``mlc_run`` then takes the graph's
inputs and outputs only. A cross-compiled module (``"llvm -mtriple=aarch64-linux-gnu"``)
saves objects for its machine; linking one needs that machine's linker, and running one
needs the machine.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import llvmlite.binding as llvm
import numpy as np

from mlc.errors import ExportError, TargetError
from mlc.runtime import jit
from mlc.runtime.signature import to_json
from mlc.tir.stmt import PrimFunc

FORMAT = "mlc-library"
VERSION = 1
METADATA = "__mlc_metadata"

# ELF e_machine values of the machines mlc cross-compiles for (tests read them back)
ELF_MACHINES = {62: "x86_64", 183: "aarch64", 40: "arm", 3: "i386", 243: "riscv"}


# -- triples -----------------------------------------------------------------------------------
@functools.cache
def host_triple() -> str:
    return str(llvm.get_process_triple())


def arch_of(triple: str) -> str:
    """The machine family of a triple: ``aarch64-linux-gnu`` -> ``aarch64``, ``armv7l-...`` ->
    ``arm``, ``x86_64-...`` -> ``x86_64``."""
    arch = triple.split("-")[0].lower()
    if arch in ("x86_64", "amd64", "x86-64"):
        return "x86_64"
    if arch in ("aarch64", "arm64", "aarch64_be"):
        return "aarch64"
    if arch.startswith(("arm", "thumb")):
        return "arm"
    if arch in ("i386", "i486", "i586", "i686", "x86"):
        return "i386"
    if arch.startswith("riscv"):
        return "riscv"
    return arch


def is_cross(triple: str | None) -> bool:
    """Is code for ``triple`` unable to run on this machine's family of CPUs?"""
    return triple is not None and arch_of(triple) != arch_of(host_triple())


@functools.cache
def _initialize_all() -> None:
    jit._initialize()
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()


def target_machine(triple: str | None, mcpu: str | None = None, mattr: str | None = None,
                   pic: bool = True) -> llvm.TargetMachine:
    """An LLVM target machine for ``triple`` (None: this host), position-independent for a
    shared library. A cross triple defaults to its family's generic CPU."""
    _initialize_all()
    triple = triple or host_triple()
    try:
        target = llvm.Target.from_triple(triple)
    except RuntimeError as err:
        raise TargetError(
            f"LLVM cannot compile for the triple {triple!r} ({err}); triples look like "
            "aarch64-linux-gnu, armv7l-none-linux-gnueabihf, x86_64-linux-gnu") from None
    if is_cross(triple):
        cpu, features = mcpu or "generic", mattr or ""
    else:
        cpu = mcpu or llvm.get_host_cpu_name()
        features = mattr if mattr is not None else (
            llvm.get_host_cpu_features().flatten() if mcpu is None else "")
    tm, warnings = jit._stderr_of(lambda: target.create_target_machine(
        cpu=cpu, features=features, opt=3, reloc="pic" if pic else "default",
        codemodel="default"))
    unknown = [line for line in warnings.splitlines() if "is not a recognized" in line]
    if unknown:
        raise TargetError(
            f"LLVM does not know {unknown[0].split(' is not')[0]} for {triple} "
            f"(-mcpu={cpu} -mattr={features}): use one of that machine's CPU names "
            "(cortex-a72, cortex-a53 for aarch64; cortex-a7 for armv7) and features "
            "(+neon)")
    return tm


# -- what a module gives to export -------------------------------------------------------------
@dataclass
class Exportable:
    """What :func:`save`/:func:`export_library` need of a compiled module.

    ``bound``: parameters (by position in ``func.params``) whose arrays go into the library
    as constants, a graph's weights; ``graph``: the graph's inputs and outputs (names,
    shapes, dtypes) for :class:`mlc.runtime.load.LoadedGraphModule`."""

    func: PrimFunc
    entry: str
    ir: str
    target: Any
    check_sites: tuple[tuple[str, str, str], ...] = ()
    bound: dict[int, np.ndarray] | None = None
    graph: dict[str, Any] | None = None

    @property
    def triple(self) -> str:
        return getattr(self.target, "mtriple", None) or host_triple()


def public_signature(ex: Exportable) -> PrimFunc:
    """The call a user makes: the function's arguments less the bound constants."""
    if not ex.bound:
        return ex.func
    kept = tuple(p for k, p in enumerate(ex.func.params) if k not in ex.bound)
    return PrimFunc(kept, ex.func.body, ex.func.name, ex.func.attrs, ex.func.scalars)


def metadata(ex: Exportable) -> dict[str, Any]:
    from mlc.runtime.module import calls_packed

    if calls_packed(ex.func):
        raise ExportError(
            f"{ex.entry} calls packed functions (tir.call_packed), which are Python in this "
            "process: a library cannot carry them. Export a program without call_packed, or "
            "run it here")
    sig = public_signature(ex)
    return {
        "format": FORMAT, "version": VERSION, "kind": "graph" if ex.graph else "function",
        "entry": ex.entry, "public": _public_name(ex), "target": str(ex.target),
        "triple": ex.triple, "signature": to_json(sig),
        "checks": [list(s) for s in ex.check_sites], "graph": ex.graph,
        "features": _compiled_features(ex),
    }


def _compiled_features(ex: Exportable) -> list[str]:
    """The CPU features the code may use (what ``-mattr`` adds, or all of this host's when
    the target names no CPU): a machine without one of them would die of an illegal
    instruction running it, so :func:`mlc.runtime.load.load_module` checks them."""
    if is_cross(ex.triple):
        return []
    mcpu, mattr = getattr(ex.target, "mcpu", None), getattr(ex.target, "mattr", None)
    wanted = {w.strip()[1:] for w in (mattr or "").split(",") if w.strip().startswith("+")}
    if mcpu is None and mattr is None:
        jit._initialize()
        wanted |= {k for k, on in llvm.get_host_cpu_features().items() if on}
    return sorted(wanted)


def check_features(meta: dict[str, Any], path: str) -> None:
    needed = set(meta.get("features") or ())
    if not needed:
        return
    jit._initialize()
    here = {k for k, on in llvm.get_host_cpu_features().items() if on}
    missing = sorted(needed - here)
    if missing:
        raise TargetError(
            f"{path} was compiled for a CPU with {', '.join(missing[:6])}"
            f"{' ...' if len(missing) > 6 else ''}, which this CPU ({llvm.get_host_cpu_name()}) "
            "lacks: running it would end the process (an illegal instruction). Export it "
            "again on this machine, or build for a common CPU (target 'llvm -mcpu=x86-64-v3')")


def _public_name(ex: Exportable) -> str:
    return f"{ex.entry}_bound" if ex.bound else ex.entry


# -- the C ABI, written as LLVM IR beside the function -----------------------------------------
def _bytes_ir(data: bytes) -> str:
    h = data.hex().upper()
    return "".join("\\" + h[i:i + 2] for i in range(0, len(h), 2))


def abi_ir(ex: Exportable, entry_types: list[str], meta: dict[str, Any],
           has_error: bool) -> str:
    """LLVM IR of ``mlc_metadata``, ``mlc_run`` and, for bound weights, ``<entry>_bound``."""
    func = ex.func
    nparams, nsizes = len(func.params), len(func.size_vars)
    scalar_types = entry_types[nparams + nsizes:]
    lines = []
    text = json.dumps(meta).encode() + b"\0"
    lines.append(f'@{METADATA} = private unnamed_addr constant [{len(text)} x i8] '
                 f'c"{_bytes_ir(text)}", align 1')
    lines.append(f"define ptr @mlc_metadata() {{\n  ret ptr @{METADATA}\n}}")
    if has_error:
        lines.append("@__mlc_error = external global [2 x i64]")
    lines.append(f'declare void @"{ex.entry}"({", ".join(entry_types)})')
    bound = ex.bound or {}
    public = _public_name(ex)
    if bound:  # <entry>_bound(unbound pointers..., sizes..., scalars...) -> entry(all)
        for k, arr in bound.items():
            data = np.ascontiguousarray(arr).tobytes() or b"\0"
            lines.append(f"@__mlc_const_{k} = private unnamed_addr constant [{len(data)} x i8] "
                         f'c"{_bytes_ir(data)}", align 64')
        params, call = [], []
        for k in range(nparams):
            if k in bound:
                call.append(f"ptr @__mlc_const_{k}")
            else:
                params.append(f"ptr %p{k}")
                call.append(f"ptr %p{k}")
        for j, t in enumerate(entry_types[nparams:]):
            params.append(f"{t} %x{j}")
            call.append(f"{t} %x{j}")
        lines.append(f'define void @"{public}"({", ".join(params)}) {{\n'
                     f'  call void @"{ex.entry}"({", ".join(call)})\n  ret void\n}}')
    # mlc_run(args, sizes): args in the public call's order
    sig = public_signature(ex)
    position = {id(a): k for k, a in enumerate(sig.arguments)}
    body, call = [], []
    # a NULL argument array (or a NULL size array where sizes are needed) returns -1
    body.append("  %no_args = icmp eq ptr %args, null")
    if nsizes:
        body.append("  %no_sizes = icmp eq ptr %sizes, null")
        body.append("  %refuse = or i1 %no_args, %no_sizes")
    else:
        body.append("  %refuse = or i1 %no_args, false")
    body.append("  br i1 %refuse, label %bad, label %go")
    body.append("bad:\n  ret i32 -1")
    body.append("go:")
    for k, p in enumerate(sig.params):
        at = position[id(p)]
        body.append(f"  %a{k}.at = getelementptr ptr, ptr %args, i64 {at}")
        body.append(f"  %a{k} = load ptr, ptr %a{k}.at")
        call.append(f"ptr %a{k}")
    for j in range(nsizes):
        body.append(f"  %s{j}.at = getelementptr i64, ptr %sizes, i64 {j}")
        body.append(f"  %s{j} = load i64, ptr %s{j}.at")
        call.append(f"i64 %s{j}")
    for j, (v, t) in enumerate(zip(sig.scalar_args, scalar_types)):
        at = position[id(v)]
        body.append(f"  %v{j}.at = getelementptr ptr, ptr %args, i64 {at}")
        body.append(f"  %v{j}.p = load ptr, ptr %v{j}.at")
        body.append(f"  %v{j} = load {t}, ptr %v{j}.p")
        call.append(f"{t} %v{j}")
    if has_error:
        body.append("  store i64 0, ptr @__mlc_error")
    body.append(f'  call void @"{public}"({", ".join(call)})')
    if has_error:
        body += ["  %e = load i64, ptr @__mlc_error", "  %r = trunc i64 %e to i32",
                 "  ret i32 %r"]
    else:
        body.append("  ret i32 0")
    lines.append("define i32 @mlc_run(ptr %args, ptr %sizes) {\nentry:\n"
                 + "\n".join(body) + "\n}")
    return "\n\n".join(lines) + "\n"


def _parse_for(text: str, tm: llvm.TargetMachine) -> llvm.ModuleRef:
    mod = jit.parse(text)
    mod.triple = tm.triple
    mod.data_layout = str(tm.target_data)
    return mod


def compile_object(ex: Exportable, fmt: str = "o") -> bytes:
    """The module with its C ABI as an object file (``fmt="o"``), assembly (``"s"``) or
    LLVM IR (``"ll"``), for the module's target triple."""
    meta = metadata(ex)
    tgt = ex.target
    tm = target_machine(ex.triple, getattr(tgt, "mcpu", None), getattr(tgt, "mattr", None))
    mod = _parse_for(ex.ir, tm)
    fn = mod.get_function(ex.entry)
    types = [str(a.type) for a in fn.arguments]
    has_error = any(g.name == "__mlc_error" for g in mod.global_variables)
    mod.link_in(_parse_for(abi_ir(ex, types, meta, has_error), tm))
    jit.optimize(mod, tm)
    if fmt == "ll":
        return str(mod).encode()
    if fmt == "s":
        return str(tm.emit_assembly(mod)).encode()
    return bytes(tm.emit_object(mod))


def save(ex: Exportable, path: str | os.PathLike[str], fmt: str = "") -> None:
    """Write ``path``: by its extension (or ``fmt``) an object ``.o``, assembly ``.s``, LLVM
    IR ``.ll``, or a shared library ``.so`` (:func:`export_library`)."""
    fmt = (fmt or Path(path).suffix.lstrip(".") or "o").lower()
    if fmt == "so":
        export_library(ex, path)
        return
    if fmt not in ("o", "obj", "s", "ll"):
        raise ExportError(f"cannot save as {fmt!r}: use .o (object), .so (shared library), "
                          ".s (assembly) or .ll (LLVM IR)")
    data = compile_object(ex, "o" if fmt == "obj" else fmt)
    try:
        Path(path).write_bytes(data)
    except OSError as err:
        raise ExportError(f"cannot write {str(path)!r}: {err.strerror or err}") from None


# -- linking -----------------------------------------------------------------------------------
def find_linker(triple: str, cc: str | None = None) -> list[str]:
    """The command that links objects for ``triple`` into a shared library."""
    if cc is not None:
        found = shutil.which(cc)
        if found is None:
            raise ExportError(f"the C compiler {cc!r} is not installed (not on PATH)")
        return [found]
    if not is_cross(triple):
        for name in (os.environ.get("CC"), "cc", "gcc", "clang"):
            if name and shutil.which(name):
                return [str(shutil.which(name))]
        raise ExportError(
            "linking a shared library needs a C compiler, and none is installed (cc, gcc or "
            "clang): apt install gcc (conda install -c conda-forge c-compiler). Without one, "
            "lib.save('x.o') still writes the object file")
    arch = arch_of(triple)
    names = [f"{triple}-gcc", {"aarch64": "aarch64-linux-gnu-gcc",
                                "arm": "arm-linux-gnueabihf-gcc"}.get(arch, "")]
    for name in names:
        if name and shutil.which(name):
            return [str(shutil.which(name))]
    if shutil.which("clang") and shutil.which("ld.lld"):
        return [str(shutil.which("clang")), f"--target={triple}", "-fuse-ld=lld"]
    package = {"aarch64": "gcc-aarch64-linux-gnu", "arm": "gcc-arm-linux-gnueabihf"}.get(
        arch, f"a cross gcc for {triple}")
    raise ExportError(
        f"linking a shared library for {triple} needs that machine's linker, which is not "
        f"installed here: apt install {package} (or clang with lld). lib.save('x.o') writes "
        "the object file without one; copy it to that machine and link it there with "
        "cc -shared x.o -o x.so (remote.load_module does that on a remote device)")


def _link_flags(ir: str, triple: str) -> list[str]:
    flags = ["-lm"]
    if "GOMP_parallel" in ir:
        if is_cross(triple):
            flags.append("-lgomp")
        else:
            from mlc.runtime import parallel

            lib = parallel.libgomp()
            if lib is None:
                raise ExportError("the module runs parallel loops on libgomp, which is not "
                                  "installed: apt install libgomp1")
            if os.path.isabs(lib):
                flags += [lib, f"-Wl,-rpath,{os.path.dirname(lib)}"]
            else:
                flags.append(f"-l:{lib}")
    return flags


def link_shared(objects: list[str], out: str | os.PathLike[str], triple: str,
                flags: list[str], cc: str | None = None) -> None:
    """``cc -shared objects -o out`` (the cross linker for another triple)."""
    cmd = [*find_linker(triple, cc), "-shared", "-fPIC", "-o", str(out), *objects, *flags,
           "-Wl,-Bsymbolic"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ExportError(f"the linker did not run ({' '.join(cmd)}): {err}") from None
    if done.returncode != 0:
        raise ExportError(f"the linker failed ({' '.join(cmd)}):\n{done.stderr.strip()}")


def export_library(ex: Exportable, path: str | os.PathLike[str], cc: str | None = None) -> None:
    """Compile ``ex`` to an object and link it with ``cc`` into the shared library ``path``
    (a ``.o``/``.tar`` name writes only the object)."""
    if Path(path).suffix in (".o", ".obj"):
        save(ex, path)
        return
    flags = _link_flags(ex.ir, ex.triple)
    with tempfile.TemporaryDirectory(prefix="mlc-export-") as tmp:
        obj = os.path.join(tmp, "lib.o")
        Path(obj).write_bytes(compile_object(ex))
        link_shared([obj], path, ex.triple, flags, cc)


# -- the machine an object is for ---------------------------------------------------------
# -- loading -----------------------------------------------------------------------------------
def elf_machine(path: str | os.PathLike[str]) -> str | None:
    """The machine an ELF file is for (``"x86_64"``, ``"aarch64"``, ``"arm"``), None if the
    file is not ELF."""
    with open(path, "rb") as fh:
        head = fh.read(20)
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    code = (int.from_bytes(head[18:20], "little") if head[5] == 1
            else int.from_bytes(head[18:20], "big"))
    return ELF_MACHINES.get(code, f"machine {code}")

"""A module compiled for another machine (``"llvm -mtriple=aarch64-linux-gnu"``): code to save
and to read, not to run here.

    lib = mlc.build(s, [A, B], "llvm -target=armv7l-none-linux-gnueabihf", name="myfunc")
    lib.save("myfunc.o")            # an ARM ELF object (e_machine 40)
    lib.get_source("asm")           # ARM assembly
    lib(a, b)                       # TargetError: it needs an arm machine

The object runs where it belongs: copy it there and link it (``cc -shared``), or hand it to
a remote device (:mod:`mlc.rpc`), whose worker links and loads it.
"""

from __future__ import annotations

from typing import Any, NoReturn

from mlc.errors import ArgumentError, TargetError
from mlc.runtime import jit
from mlc.runtime.args import ArgumentChecker
from mlc.runtime.export import arch_of, host_triple, target_machine
from mlc.runtime.module import SOURCE_FORMATS, Module
from mlc.tir.stmt import PrimFunc


class CrossModule(Module):
    """A :class:`Module` whose machine code is for another CPU family: ``save``,
    ``export_library`` and ``get_source`` work; calling it raises :class:`TargetError`."""

    def __init__(self, func: PrimFunc, entry_name: str, target: Any, ir: str,
                 check_sites: tuple[tuple[str, str, str], ...] = ()) -> None:
        self.func = func
        self.entry_name = entry_name
        self.target = target
        self._ir = ir
        self._c_source = None
        self._asm: str | None = None
        self._optimized: str | None = None
        self._checker = ArgumentChecker(func)
        self.check_sites = check_sites

    @property
    def triple(self) -> str:
        return str(getattr(self.target, "mtriple", None))

    def _refuse(self) -> NoReturn:
        machine, here = arch_of(self.triple), arch_of(host_triple())
        raise TargetError(
            f"{self.entry_name} was built for {self.triple} (an {machine} machine) and this "
            f"machine is {here}: running it needs {'an' if machine[0] in 'aeiou' else 'a'} "
            f"{machine} machine. Save it there (lib.save('{self.entry_name}.o') or "
            "export_library with that machine's linker) and run it on it, e.g. through "
            "mlc.rpc.connect(...); or build for target='llvm' to run here")

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self._refuse()

    def bind(self, *args: Any, **kwargs: Any) -> Any:
        self._refuse()

    def time_evaluator(self, *args: Any, **kwargs: Any) -> Any:
        self._refuse()

    def get_source(self, fmt: str = "") -> str:
        fmt = fmt or "ll"
        if fmt == "ll-unopt":
            return self._ir
        if fmt not in ("ll", "asm"):
            if fmt == "c":
                raise ArgumentError('this module has no C source; build it with target="c"')
            raise ArgumentError(f"unknown source format {fmt!r}; use one of {SOURCE_FORMATS}")
        tm = target_machine(self.triple, self.target.mcpu, self.target.mattr)
        if self._optimized is None:
            mod = jit.parse(self._ir)
            jit.optimize(mod, tm)
            self._optimized = str(mod)
        if fmt == "ll":
            return self._optimized
        if self._asm is None:
            self._asm = str(tm.emit_assembly(jit.parse(self._optimized)))
        return self._asm

    def __repr__(self) -> str:
        return (f"CrossModule({self.entry_name}({self.signature()}), "
                f"target={str(self.target)!r})")

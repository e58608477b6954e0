"""Loading back what :mod:`mlc.runtime.export` wrote: a ``.so`` (or a ``.o``, linked first)
becomes a Module that is called, and checks its arguments, as the exported one did.

    g = mlc.runtime.load_module("myfunc.so")
    g(a, b)

The library's own ``mlc_metadata()`` says what the call takes (see
``include/mlc_runtime.h``); a library for another machine, another mlc version or CPU
features this one lacks is refused with the reason. Each load maps a private copy of the
file, so a library exported again under the same path runs its new code.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mlc.errors import ExportError, TargetError
from mlc.runtime import jit
from mlc.runtime.export import (
    FORMAT,
    VERSION,
    arch_of,
    check_features,
    elf_machine,
    host_triple,
    link_shared,
)
from mlc.runtime.module import Module
from mlc.runtime.signature import from_json


@dataclass(frozen=True)
class SavedTarget:
    """The target a library was built for, as its metadata says (what the JIT protocol asks)."""

    text: str
    mcpu: str | None = None
    mattr: str | None = None
    mtriple: str | None = None

    def __str__(self) -> str:
        return self.text


def _target_of(text: str, triple: str) -> SavedTarget:
    options = dict(w.lstrip("-").split("=", 1) for w in text.split()[1:] if "=" in w)
    return SavedTarget(text, options.get("mcpu"), options.get("mattr"), triple)


class _Symbols:
    """What the Module's error record asks of an engine, answered from a loaded library."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        self.lib = lib

    def get_global_value_address(self, name: str) -> int:
        try:
            return ctypes.addressof(ctypes.c_char.in_dll(self.lib, name))
        except ValueError:
            return 0


def _read_metadata(lib: ctypes.CDLL, path: str) -> dict[str, Any]:
    try:
        fn = lib.mlc_metadata
    except AttributeError:
        raise ExportError(f"{path} is a shared library but not one mlc exported (it has no "
                          "mlc_metadata); export it with mod.export_library(path)") from None
    fn.restype = ctypes.c_char_p
    fn.argtypes = []
    try:
        meta = json.loads(fn().decode())
    except (ValueError, UnicodeDecodeError, RecursionError) as err:
        raise ExportError(f"{path}: its metadata is not valid JSON ({str(err)[:100]}); "
                          "export the module again") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise ExportError(f"{path}: its metadata is not an mlc library's; export it again")
    if meta.get("version") != VERSION:
        raise ExportError(f"{path} was written by another version of mlc (library format "
                          f"{meta.get('version')}, this mlc reads {VERSION}); export it again")
    return meta


def _check_machine(path: str) -> None:
    machine = elf_machine(path)
    here = arch_of(host_triple())
    if machine is not None and machine != here:
        raise TargetError(
            f"{path} holds code for {machine}, and this machine is {here}: it needs "
            f"{'an' if machine[0] in 'aeiou' else 'a'} {machine} machine to run. Run it there "
            "(mlc.rpc.connect to a worker on that machine, remote.upload, "
            "remote.load_module), or build for target='llvm' to run here")


def load_module(path: str | os.PathLike[str], cc: str | None = None) -> Any:
    """Read back what :func:`export_library` or ``save`` wrote: a ``.so`` is opened, a ``.o``
    is linked with ``cc`` first. Returns a Module (called as the exported one, with the same
    argument checks) or, for a graph, a :class:`LoadedGraphModule`."""
    from mlc.runtime import parallel

    path = original = os.fspath(path)
    if not os.path.isfile(path):
        raise ExportError(f"no library at {path!r}")
    _check_machine(path)
    if path.endswith((".o", ".obj")):
        with tempfile.TemporaryDirectory(prefix="mlc-load-") as tmp:
            so = os.path.join(tmp, Path(path).stem + ".so")
            flags = ["-lm"]
            gomp = parallel.libgomp() if _has_symbol_text(path, b"GOMP_parallel") else None
            if gomp:
                flags += [gomp] if os.path.isabs(gomp) else [f"-l:{gomp}"]
            link_shared([path], so, host_triple(), flags, cc)
            lib = _open_fresh(so, original)
    else:
        if _has_symbol_text(path, b"GOMP_parallel"):
            parallel.libgomp()  # loaded globally before the library needs it
        lib = _open_fresh(path, original)
    path = original
    meta = _read_metadata(lib, path)
    check_features(meta, str(original))
    sig, public, sites, graph = _call_of(meta, path)
    try:
        address = ctypes.cast(getattr(lib, public), ctypes.c_void_p).value
    except AttributeError:
        raise ExportError(f"{path} lacks its function {public!r}") from None
    target = _target_of(str(meta.get("target", "llvm")), str(meta.get("triple", "")))
    compiled = jit.Compiled(_Symbols(lib), int(address or 0), "")  # type: ignore[arg-type]
    compiled.library = lib  # type: ignore[attr-defined]  # keeps the code mapped
    release = _symbol_address(lib, jit.WORKSPACE_RELEASE)
    if release:
        compiled.workspace = weakref.finalize(compiled, jit._release_workspace, lib, release)
    mod = LoadedModule(sig, public, target, "", compiled, None, sites, 0)  # type: ignore[arg-type]
    mod.library_path = os.fspath(original)
    if graph is None:
        return mod
    try:
        return LoadedGraphModule(mod, graph)
    except (KeyError, TypeError, ValueError) as err:
        raise _undescribed(path, err) from None


def _call_of(meta: dict[str, Any], path: str) -> tuple[Any, str, tuple[Any, ...], Any]:
    """The call a library's metadata describes: its signature, its function's name, its
    run-time check sites and (for a graph) its inputs and outputs. A tampered or truncated
    description (a missing key, a shape nested thousands deep) is an ExportError."""
    try:
        sig = from_json(meta["signature"])
        public = meta["public"]
        if not isinstance(public, str):
            raise TypeError(f"the function's name is {type(public).__name__}, not a string")
        sites = tuple(tuple(site) for site in meta.get("checks", ()))
        graph = meta["graph"] if meta.get("kind") == "graph" else None
    except (KeyError, TypeError, ValueError, RecursionError) as err:
        raise _undescribed(path, err) from None
    return sig, public, sites, graph


def _undescribed(path: str, err: BaseException) -> ExportError:
    return ExportError(f"{path}: its metadata does not describe a call mlc can make "
                       f"({type(err).__name__}: {str(err)[:100]}); export the module again")


def _open_fresh(path: str, shown: str) -> ctypes.CDLL:
    """dlopen a private copy of ``path``: the dynamic loader hands back the library it
    already has for a path it has seen, so a library exported again under the same name
    (a notebook cell run twice) would run the old code. The copy is removed once mapped."""
    fd, copy = tempfile.mkstemp(prefix="mlc-lib-", suffix=".so")
    try:
        with os.fdopen(fd, "wb") as out, open(path, "rb") as src:
            shutil.copyfileobj(src, out)
        try:
            return ctypes.CDLL(copy, mode=os.RTLD_LOCAL)
        except OSError as err:
            raise ExportError(f"cannot load {shown}: {str(err).replace(copy, shown)}") from None
    finally:
        with contextlib.suppress(OSError):
            os.unlink(copy)


class LoadedModule(Module):
    """A Module read from a library: machine code only (no IR to show or export)."""

    library_path = ""

    def get_source(self, fmt: str = "") -> str:
        raise ExportError(
            f"{self.entry_name} was loaded from {self.library_path}, which holds machine "
            "code only; its source is where it was built (f.get_source('ll') there), or "
            "disassemble the library (objdump -d)")

    def __repr__(self) -> str:
        return f"Module({self.entry_name}({self.signature()}), from {self.library_path!r})"


def _symbol_address(lib: ctypes.CDLL, name: str) -> int:
    try:
        return int(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0)
    except AttributeError:
        return 0


def _has_symbol_text(path: str, name: bytes) -> bool:
    with open(path, "rb") as fh:
        return name in fh.read()


class LoadedGraphModule:
    """A graph read back from a library: the executor calls of a GraphModule
    (``set_input``/``run``/``get_output``, ``mod(x=...)``) over the one native function,
    whose weights are inside the library."""

    def __init__(self, module: Any, info: dict[str, Any]) -> None:
        self.module = module
        self.input_names = [str(i["name"]) for i in info["inputs"]]
        self._inputs = {str(i["name"]): np.zeros(i["shape"], i["dtype"]) for i in info["inputs"]}
        self._outputs = [np.empty(o["shape"], o["dtype"]) for o in info["outputs"]]
        self._order = [int(k) for k in info.get("order", range(len(self._outputs)))]
        self._run = module.bind(*self._inputs.values(), *self._outputs)

    def set_input(self, name: str | None = None, value: Any = None, /, **kwargs: Any) -> None:
        if name is not None:
            kwargs[name] = value
        for key, arr in kwargs.items():
            buf = self._inputs.get(key)
            if buf is None:
                raise ExportError(f"the graph has no input {key!r}; its inputs are "
                                  f"{self.input_names}")
            arr = np.asarray(arr)
            if arr.shape != buf.shape or arr.dtype != buf.dtype:
                raise ExportError(f"input {key!r} takes a {buf.dtype} array of shape "
                                  f"{buf.shape}, got {arr.dtype} {arr.shape}")
            buf[...] = arr

    def run(self, **inputs: Any) -> None:
        if inputs:
            self.set_input(**inputs)
        self._run()

    def get_output(self, i: int) -> np.ndarray:
        if not 0 <= i < len(self._order):
            raise ExportError(f"output {i} does not exist; the graph has "
                              f"{len(self._outputs)} output(s)")
        return self._outputs[self._order[i]]

    @property
    def num_outputs(self) -> int:
        return len(self._order)

    def __call__(self, **inputs: Any) -> list[np.ndarray]:
        for key, arr in inputs.items():  # set_input, inlined for the common case
            buf = self._inputs.get(key)
            if (buf is not None and type(arr) is np.ndarray and arr.dtype is buf.dtype
                    and arr.shape == buf.shape):
                buf[...] = arr
            else:
                self.set_input(**{key: arr})
        self._run()
        return [self._outputs[k] for k in self._order]

    def __repr__(self) -> str:
        return f"LoadedGraphModule(inputs={self.input_names}, outputs={len(self._outputs)})"

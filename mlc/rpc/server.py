"""The remote side of :mod:`mlc.rpc`: functions a Dask worker runs for a session.

Nothing here listens on a socket: the worker is an ordinary ``dask worker`` on the remote
machine, the same one tuning measures on (:mod:`mlc.tune.executor`), and these functions
reach it as Dask tasks. Each session has a folder of its own on the worker (uploaded files)
and a table of the modules it loaded; both live in the worker process.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from typing import Any

import numpy as np

from mlc.errors import ArgumentError, ExportError

_LOCK = threading.Lock()
_FOLDERS: dict[str, str] = {}
_MODULES: dict[tuple[str, str], Any] = {}


def safe_name(name: str) -> str:
    """A file name inside the session's folder: no folders, no ``..``."""
    if (not isinstance(name, str) or not name or name in (".", "..") or "/" in name
            or "\\" in name or "\0" in name):
        raise ArgumentError(f"a remote file is named by a plain file name ('myfunc.o'), not "
                            f"{name!r}")
    return name


def folder(session: str) -> str:
    """The session's folder on this worker (made on first use)."""
    with _LOCK:
        path = _FOLDERS.get(session)
        if path is None or not os.path.isdir(path):
            path = _FOLDERS[session] = tempfile.mkdtemp(prefix="mlc-rpc-")
        return path


def machine() -> dict[str, Any]:
    """What the worker's machine is: its triple and CPU (``remote.machine``)."""
    import platform

    import llvmlite.binding as llvm

    from mlc.runtime.export import host_triple

    return {"triple": host_triple(), "cpu": llvm.get_host_cpu_name(),
            "host": platform.node(), "pid": os.getpid()}


def store(session: str, name: str, data: bytes) -> str:
    """``remote.upload``: write ``data`` as ``name`` in the session's folder."""
    path = os.path.join(folder(session), safe_name(name))
    with open(path, "wb") as fh:
        fh.write(data)
    return name


def fetch(session: str, name: str) -> bytes:
    """``remote.download``: the bytes of a file in the session's folder."""
    path = os.path.join(folder(session), safe_name(name))
    if not os.path.isfile(path):
        raise ExportError(f"no file {name!r} on the remote device")
    with open(path, "rb") as fh:
        return fh.read()


def listdir(session: str) -> list[str]:
    return sorted(os.listdir(folder(session)))


def load(session: str, name: str) -> dict[str, Any]:
    """``remote.load_module``: load (a ``.o`` is linked by the worker's cc first) and keep
    the module; returns what the client shows of it."""
    from mlc.runtime.load import LoadedGraphModule, load_module

    path = os.path.join(folder(session), safe_name(name))
    if not os.path.isfile(path):
        raise ExportError(f"no file {name!r} on the remote device; upload it first "
                          "(remote.upload(path))")
    mod = load_module(path)
    with _LOCK:
        _MODULES[(session, name)] = mod
    if isinstance(mod, LoadedGraphModule):
        return {"entry": mod.module.entry_name, "signature": mod.module.signature(),
                "graph": True, "inputs": mod.input_names}
    return {"entry": mod.entry_name, "signature": mod.signature(), "graph": False}


def _module(session: str, name: str) -> Any:
    with _LOCK:
        mod = _MODULES.get((session, name))
    if mod is None:
        raise ExportError(f"module {name!r} is not loaded on the remote device (a worker that "
                          "restarted forgets its modules): call remote.load_module again")
    return mod


def call(session: str, name: str, args: list[Any]) -> list[Any]:
    """Run the module once on ``args``; returns the arrays as the call left them."""
    mod = _module(session, name)
    mod(*args)
    return [a if isinstance(a, np.ndarray) else None for a in args]


def time_call(session: str, name: str, args: list[Any], number: int, repeat: int,
              min_repeat_ms: float) -> tuple[Any, list[Any]]:
    """``time_evaluator`` on the worker: the TimeResult and the arrays after the runs."""
    from mlc.tune.executor import timing_lock

    mod = _module(session, name)
    evaluate = mod.time_evaluator(number=number, repeat=repeat, min_repeat_ms=min_repeat_ms)
    with timing_lock():  # nothing else of mlc times on this machine meanwhile
        result = evaluate(*args)
    return result, [a if isinstance(a, np.ndarray) else None for a in args]


def graph_run(session: str, name: str, inputs: dict[str, Any]) -> list[np.ndarray]:
    mod = _module(session, name)
    return [np.array(o) for o in mod(**inputs)]


def close(session: str) -> None:
    """Forget the session's modules and remove its folder."""
    with _LOCK:
        for key in [k for k in _MODULES if k[0] == session]:
            del _MODULES[key]
        path = _FOLDERS.pop(session, None)
    if path:
        shutil.rmtree(path, ignore_errors=True)

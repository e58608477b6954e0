"""The device-side error record of a ``"cuda"`` module: an index read from data that leaves
its array raises after the launch, as on ``cuda-sim``.

The CUDA C (:mod:`mlc.target.cuda.codegen`) checks each index it cannot check before the
run; the first thread that fails writes ``mlc_error`` (a ``__device__`` array of four
``unsigned long long``: 1 + the check's number, the index, the linear block, the linear
thread) and skips the access. A module clears the record before a call and reads it after
the kernels have finished::

    flag = ErrorFlag(ctx, cu_module)      # the address of mlc_error in the loaded module
    flag.clear()
    ... launch, synchronize ...
    flag.raise_if_set(source, grids)      # GPUIndexError naming kernel, access, thread
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mlc.errors import GPUIndexError
from mlc.runtime import cuda_driver
from mlc.target.common import c_name
from mlc.target.cuda.codegen import ERROR_SYMBOL, CUDASource
from mlc.target.gpu.split_host_device import BLOCK_AXES, THREAD_AXES


def load(ctx: Any, ptx: str, names: Sequence[str],
         checked: bool) -> tuple[dict[str, Any], ErrorFlag | None]:
    """Load ``ptx`` into ``ctx``: its kernels by name, and its error record when ``checked``
    (the source checks indices on the device: ``CUDASource.checks``)."""
    functions, module = ctx.load(ptx, names)
    return dict(functions), ErrorFlag(ctx, module) if checked else None


class ErrorFlag:
    """The ``mlc_error`` record of one loaded module."""

    def __init__(self, ctx: Any, module: ctypes.c_void_p) -> None:
        self.ctx = ctx
        self.ptr = ctypes.c_uint64()
        size = ctypes.c_size_t()
        cuda_driver._check(ctx.lib, ctx.lib.cuModuleGetGlobal_v2(
            ctypes.byref(self.ptr), ctypes.byref(size), module, ERROR_SYMBOL.encode()),
            "cuModuleGetGlobal")

    def clear(self) -> None:
        cuda_driver._check(self.ctx.lib, self.ctx.lib.cuMemsetD8_v2(
            self.ptr, ctypes.c_ubyte(0), ctypes.c_size_t(32)), "cuMemsetD8")

    def read(self) -> np.ndarray:
        record = np.zeros(4, np.uint64)
        self.ctx.to_host(record, self.ptr)
        return record

    def raise_if_set(self, source: CUDASource, grids: Mapping[str, Sequence[int]]) -> None:
        record = self.read()
        if int(record[0]):
            raise index_error(source, record, grids)


def index_error(source: CUDASource, record: Sequence[int] | np.ndarray,
                grids: Mapping[str, Sequence[int]]) -> GPUIndexError:
    """The error for a set record: (1 + check number, index, linear block, linear thread);
    ``grids`` holds each kernel's last launch grid (x, y, z), by kernel name."""
    site, index, block, thread = (int(np.uint64(v)) for v in record)
    check = source.checks[site - 1]
    if index >= 1 << 63:
        index -= 1 << 64  # a negative index, as the kernel computed it
    kernel = next((k for k in source.kernels if k.name == check.kernel), None)
    grid = list(grids.get(c_name(check.kernel), grids.get(check.kernel, (1, 1, 1))))
    used_blocks = [t for t in BLOCK_AXES if kernel is None or t in kernel.grid]
    threads = kernel.threads if kernel is not None else {}
    used_threads = [t for t in THREAD_AXES if t in threads]
    b = _unravel(block, grid)
    t = _unravel(thread, [threads.get(a, 1) for a in THREAD_AXES])
    bx = ", ".join(str(b[BLOCK_AXES.index(a)]) for a in used_blocks)
    tx = ", ".join(str(t[THREAD_AXES.index(a)]) for a in used_threads)
    return GPUIndexError(
        f"kernel {check.kernel}: blockIdx ({bx}), threadIdx ({tx}) {check.access} with index "
        f"{index}, outside its {check.size} elements (checked on the GPU: the access was "
        "skipped and the outputs of this call were not copied back). Check the data used as "
        "an index; cuda-sim's f.check(...) shows the line.")


def _unravel(linear: int, extents: Sequence[int]) -> list[int]:
    out = []
    for extent in (*extents, 1, 1, 1)[:3]:
        extent = max(int(extent), 1)
        out.append(linear % extent)
        linear //= extent
    return out

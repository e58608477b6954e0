"""A small CUDA driver API binding (ctypes over ``libcuda.so``): load PTX, copy, launch.

Only used when a GPU and its driver are present (``available()``); every call checks its
result and raises :class:`DeviceError` with CUDA's error name.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Sequence

import numpy as np

from mlc.errors import DeviceError


@functools.lru_cache(maxsize=1)
def _library() -> ctypes.CDLL | None:
    for name in ("libcuda.so.1", "libcuda.so", ctypes.util.find_library("cuda")):
        if not name:
            continue
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        if lib.cuInit(0) != 0:
            return None
        count = ctypes.c_int()
        if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value == 0:
            return None
        return lib
    return None


def available() -> bool:
    """Is there a CUDA driver with at least one GPU?"""
    return _library() is not None


def _check(lib: ctypes.CDLL, code: int, what: str) -> None:
    if code != 0:
        text = ctypes.c_char_p()
        lib.cuGetErrorName(code, ctypes.byref(text))
        name = text.value.decode() if text.value else str(code)
        raise DeviceError(f"CUDA {what} failed: {name}")


class Context:
    """The primary context of device 0, made current, with loaded modules."""

    def __init__(self) -> None:
        lib = _library()
        if lib is None:
            raise DeviceError(
                "no NVIDIA GPU (or no CUDA driver) on this machine; build with "
                'target="cuda-sim" to run the same kernels on the CPU'
            )
        self.lib = lib
        self.device = ctypes.c_int()
        _check(lib, lib.cuDeviceGet(ctypes.byref(self.device), 0), "cuDeviceGet")
        self.ctx = ctypes.c_void_p()
        _check(lib, lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), self.device),
               "cuDevicePrimaryCtxRetain")
        _check(lib, lib.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def arch(self) -> str:
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.cuDeviceGetAttribute(ctypes.byref(major), 75, self.device)  # CC major
        self.lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, self.device)  # CC minor
        return f"compute_{major.value}{minor.value}"

    def load(self, ptx: str,
             names: Sequence[str]) -> tuple[dict[str, ctypes.c_void_p], ctypes.c_void_p]:
        """Load ``ptx``: its kernels by name, and the module handle (for its globals)."""
        module = ctypes.c_void_p()
        _check(self.lib, self.lib.cuModuleLoadData(ctypes.byref(module), ptx.encode() + b"\0"),
               "cuModuleLoadData")
        out = {}
        for name in names:
            fn = ctypes.c_void_p()
            _check(self.lib, self.lib.cuModuleGetFunction(ctypes.byref(fn), module,
                                                          name.encode()), "cuModuleGetFunction")
            out[name] = fn
        return out, module

    def alloc(self, nbytes: int) -> ctypes.c_uint64:
        ptr = ctypes.c_uint64()
        _check(self.lib, self.lib.cuMemAlloc_v2(ctypes.byref(ptr), ctypes.c_size_t(max(nbytes, 4))),
               "cuMemAlloc")
        return ptr

    def free(self, ptr: ctypes.c_uint64) -> None:
        self.lib.cuMemFree_v2(ptr)

    def to_device(self, ptr: ctypes.c_uint64, array: np.ndarray) -> None:
        _check(self.lib, self.lib.cuMemcpyHtoD_v2(ptr, array.ctypes.data_as(ctypes.c_void_p),
                                                  ctypes.c_size_t(array.nbytes)), "cuMemcpyHtoD")

    def to_host(self, array: np.ndarray, ptr: ctypes.c_uint64) -> None:
        _check(self.lib, self.lib.cuMemcpyDtoH_v2(array.ctypes.data_as(ctypes.c_void_p), ptr,
                                                  ctypes.c_size_t(array.nbytes)), "cuMemcpyDtoH")

    def launch(self, fn: ctypes.c_void_p, grid: Sequence[int], block: Sequence[int],
               args: Sequence[ctypes._SimpleCData]) -> None:
        argv = (ctypes.c_void_p * len(args))(
            *(ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args)
        )
        _check(self.lib, self.lib.cuLaunchKernel(fn, *[ctypes.c_uint(g) for g in grid],
                                                 *[ctypes.c_uint(b) for b in block],
                                                 ctypes.c_uint(0), None, argv, None),
               "cuLaunchKernel")

    def synchronize(self) -> None:
        _check(self.lib, self.lib.cuCtxSynchronize(), "cuCtxSynchronize")


@functools.lru_cache(maxsize=1)
def context() -> Context:
    return Context()

"""CUDA C -> PTX with NVRTC, NVIDIA's runtime compiler, loaded with ctypes.

NVRTC comes from the ``nvidia-cuda-nvrtc-cu12`` wheel (``pip install mlc[gpu]``) or a CUDA
toolkit on the library path. No GPU is needed to compile: PTX is the GPU's portable
assembly, and :func:`compile_to_ptx` works on any Linux machine with the library.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import glob
import importlib.util
import os

from mlc.errors import CodegenError

DEFAULT_ARCH = "compute_80"


@functools.lru_cache(maxsize=1)
def _library() -> ctypes.CDLL | None:
    candidates: list[str] = []
    for pkg in ("nvidia.cuda_nvrtc", "nvidia"):
        try:
            spec = importlib.util.find_spec(pkg)
        except (ImportError, ValueError):
            spec = None
        for base in (spec.submodule_search_locations or []) if spec else []:
            candidates += sorted(glob.glob(os.path.join(base, "**", "libnvrtc.so*"),
                                           recursive=True))
    candidates = [c for c in candidates if "builtins" not in c and ".alt." not in c]
    found = ctypes.util.find_library("nvrtc")
    if found:
        candidates.append(found)
    for path in candidates:
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def available() -> bool:
    """Is NVRTC loadable here?"""
    return _library() is not None


def version() -> tuple[int, int]:
    lib = _require()
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    return major.value, minor.value


def _require() -> ctypes.CDLL:
    lib = _library()
    if lib is None:
        raise CodegenError(
            "NVRTC (the CUDA runtime compiler) is not installed, so the CUDA source cannot be "
            "compiled to PTX: pip install nvidia-cuda-nvrtc-cu12 (or mlc[gpu]). The CUDA "
            'source is still in get_source("cuda"), and target="cuda-sim" runs it on the CPU'
        )
    return lib


def _error_string(lib: ctypes.CDLL, code: int) -> str:
    lib.nvrtcGetErrorString.restype = ctypes.c_char_p
    text = lib.nvrtcGetErrorString(code)
    return text.decode() if text else f"error {code}"


def compile_to_ptx(source: str, arch: str | None = None, name: str = "kernel.cu") -> str:
    """Compile CUDA C to PTX text; a :class:`CodegenError` with NVRTC's log on failure.

    ``arch`` is a virtual architecture such as ``"compute_80"`` (default) or ``"sm_86"``
    (read as ``compute_86``)."""
    lib = _require()
    arch = (arch or DEFAULT_ARCH).replace("sm_", "compute_")
    prog = ctypes.c_void_p()
    code = lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), name.encode(), 0,
                                  None, None)
    if code != 0:
        raise CodegenError(f"NVRTC could not create a program: {_error_string(lib, code)}")
    try:
        options = [f"--gpu-architecture={arch}".encode(), b"--std=c++14"]
        argv = (ctypes.c_char_p * len(options))(*options)
        code = lib.nvrtcCompileProgram(prog, len(options), argv)
        if code != 0:
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(prog, log)
            raise CodegenError(
                f"NVRTC could not compile the CUDA source ({_error_string(lib, code)}):\n"
                f"{log.value.decode(errors='replace')}"
            )
        size = ctypes.c_size_t()
        lib.nvrtcGetPTXSize(prog, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        lib.nvrtcGetPTX(prog, ptx)
        return ptx.value.decode()
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))

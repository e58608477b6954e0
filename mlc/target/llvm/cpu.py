"""What the CPU offers a kernel, read from LLVM's host features (a table of CPU names serves
only to refuse running code built for another CPU: :func:`cannot_run_here`).

Schedules that must fit the machine ask here: how many fp32 lanes one vector register holds,
how many vector registers there are, and the sizes of the data caches::

    >>> from mlc.target.llvm.cpu import host_simd
    >>> host_simd()            # on an AVX2 + FMA machine (AVX-512: 16 lanes, 32 registers)
    SIMD(lanes=8, registers=16, fma=True, isa='avx2')

A register tile of ``rows x cols`` fp32 accumulators takes ``rows * cols / lanes`` registers;
the rest hold the operands of the next multiply-add.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path

from mlc.target.llvm.dot import cpu_features


@dataclass(frozen=True)
class SIMD:
    """A CPU's vector unit as a kernel sees it."""

    lanes: int
    """fp32 lanes of the widest vector register."""
    registers: int
    """vector registers the ISA names (16 ymm with AVX2, 32 zmm with AVX-512, 32 on NEON)."""
    fma: bool
    """fused multiply-add (one instruction for ``acc += x * y``)."""
    isa: str


def simd_of(features: frozenset[str]) -> SIMD:
    """The vector unit that LLVM features (``{"avx2", "fma", ...}``) describe."""
    if "avx512f" in features:
        return SIMD(16, 32, True, "avx512")
    if "avx" in features:
        return SIMD(8, 16, "fma" in features, "avx2" if "avx2" in features else "avx")
    if "neon" in features or "fp-armv8" in features:
        return SIMD(4, 32, True, "neon")
    if "sse" in features or "sse2" in features:
        return SIMD(4, 16, False, "sse")
    return SIMD(1, 16, False, "scalar")


@functools.cache
def host_simd() -> SIMD:
    """The vector unit of this machine (LLVM's host CPU features)."""
    return simd_of(cpu_features())


def _sysfs_cache(level: int) -> int | None:
    base = Path("/sys/devices/system/cpu/cpu0/cache")
    try:
        for index in sorted(base.glob("index*")):
            if (index / "level").read_text().strip() != str(level):
                continue
            if (index / "type").read_text().strip() == "Instruction":
                continue
            size = (index / "size").read_text().strip().upper()
            mult = {"K": 1 << 10, "M": 1 << 20}.get(size[-1], 1)
            return int(size.rstrip("KM")) * mult
    except (OSError, ValueError):
        return None
    return None


@functools.cache
def cache_bytes(level: int) -> int:
    """Size in bytes of one core's level-``level`` data cache (1 or 2; 3 is shared). Read from
    ``sysconf`` or ``/sys``; 32 KiB / 512 KiB / 8 MiB when the system does not say."""
    names = {1: "SC_LEVEL1_DCACHE_SIZE", 2: "SC_LEVEL2_CACHE_SIZE", 3: "SC_LEVEL3_CACHE_SIZE"}
    try:
        size = os.sysconf(names[level])
    except (ValueError, OSError, KeyError):
        size = 0
    if size and size > 0:
        return int(size)
    return _sysfs_cache(level) or {1: 32 << 10, 2: 512 << 10}.get(level, 8 << 20)


# -- may code built for a target run on this machine? ------------------------------------------
# Code for a CPU this machine is not dies of an illegal instruction (SIGILL: the Jupyter kernel
# with it) the first time it reaches one, so a module built for another CPU is for reading
# (IR, assembly) unless every instruction set it may use is here. LLVM does not say which
# features a CPU name implies, so the x86 names are listed here by instruction-set level.
_V2 = frozenset({"sse4.2", "popcnt", "ssse3"})
_V3 = _V2 | {"avx", "avx2", "fma", "bmi2", "f16c", "movbe"}
_V4 = _V3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}
_VNNI = _V4 | {"avx512vnni"}
_BF16 = _VNNI | {"avx512bf16"}
CPU_NEEDS: dict[str, frozenset[str]] = {
    "x86-64": frozenset({"sse2"}), "x86-64-v2": _V2, "x86-64-v3": _V3, "x86-64-v4": _V4,
    **dict.fromkeys(("nehalem", "westmere", "silvermont", "goldmont"), _V2),
    **dict.fromkeys(("sandybridge", "ivybridge"), _V2 | {"avx"}),
    **dict.fromkeys(("haswell", "broadwell", "skylake", "alderlake", "raptorlake", "znver1",
                     "znver2", "znver3"), _V3),
    **dict.fromkeys(("skylake-avx512", "cannonlake"), _V4),
    **dict.fromkeys(("cascadelake", "icelake-client", "icelake-server", "tigerlake",
                     "rocketlake"), _VNNI),
    **dict.fromkeys(("cooperlake", "sapphirerapids", "emeraldrapids", "graniterapids",
                     "znver4", "znver5"), _BF16),
}


def cannot_run_here(target: object) -> str | None:
    """None when code built for ``target`` (its ``mcpu``/``mattr``) can run on this CPU;
    otherwise why it cannot (what the target may use that this CPU lacks)."""
    import llvmlite.binding as llvm

    mcpu: str | None = getattr(target, "mcpu", None)
    mattr: str | None = getattr(target, "mattr", None)
    host = cpu_features()
    wanted = {w.strip()[1:] for w in (mattr or "").split(",") if w.strip().startswith("+")}
    here = llvm.get_host_cpu_name()
    if mcpu is not None and mcpu not in ("native", here):
        needs = CPU_NEEDS.get(mcpu)
        if needs is None:
            return (f"mlc cannot tell which instructions code for -mcpu={mcpu} uses, and this "
                    f"CPU is {here!r}")
        wanted |= needs
    missing = sorted(wanted - host)
    if missing:
        return f"it may use {', '.join(missing)}, which this CPU ({here}) does not have"
    return None

"""What the CPU offers a kernel, read from LLVM's host features (never from a table of CPUs).

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

"""Main memory as the accelerator sees it: one flat byte array cut into named regions.

The host (numpy) puts tensors into DRAM in the accelerator's *packed* layout, where every
tile is contiguous, and reads results back::

    dram = DRAM()
    a = dram.put("A", pack(a_matrix))          # a Region: name, byte base, size
    c = dram.alloc("C", n_tiles * 256)
    ... LOAD(..., dram_base=a.tile(inp_buffer, config)) ...
    result = dram.get("C", np.int32, shape)

Instructions address DRAM in tiles of the kind they move (a LOAD of inp_buffer counts 64-byte
tiles with the default config), so regions start on a 256-byte boundary, which every tile
size divides. A DMA must stay inside one region: running off its end is an error that names
the region, not a silent read of the neighbour's data.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlc.errors import VDLAAccessError, VDLAProgramError
from mlc.vdla.config import REGION_ALIGN, MemScope, VDLAConfig

ALIGN = REGION_ALIGN
MAX_BYTES = 2**32
"""The most DRAM the accelerator addresses (and the simulator holds)."""


@dataclass(frozen=True)
class Region:
    """A named block of DRAM: ``nbytes`` bytes from byte address ``base``."""

    name: str
    base: int
    nbytes: int

    @property
    def end(self) -> int:
        return self.base + self.nbytes

    def tile(self, scope: MemScope, config: VDLAConfig) -> int:
        """The region's start as a tile address for a LOAD of ``scope``."""
        return self.out_tile(config.tile_bytes(scope))

    def out_tile(self, tile_bytes: int) -> int:
        """The region's start as a tile address for a STORE of ``tile_bytes``-byte tiles."""
        if self.base % tile_bytes:
            raise VDLAProgramError(
                f"DRAM region {self.name!r} starts at byte {self.base}, which is not a whole "
                f"number of {tile_bytes}-byte tiles; a DMA could not address it. Allocate "
                "with DRAM(config.dram_align) so that regions start on every tile size")
        return self.base // tile_bytes


class DRAM:
    """A growable byte array with named regions, each starting on a multiple of ``align``
    bytes."""

    def __init__(self, align: int = ALIGN) -> None:
        """``align``: the byte alignment of every region (``config.dram_align`` for a core
        whose tiles 256 does not divide)."""
        if not isinstance(align, int) or isinstance(align, bool) or align < 1:
            raise VDLAProgramError(f"DRAM(align={align!r}): the alignment must be an int >= 1")
        self.align = align
        self.data = np.zeros(0, dtype=np.uint8)
        self.regions: dict[str, Region] = {}

    def alloc(self, name: str, nbytes: int) -> Region:
        """Reserve ``nbytes`` zeroed bytes under ``name``."""
        if name in self.regions:
            raise VDLAProgramError(f"DRAM region {name!r} already exists")
        if not isinstance(nbytes, int) or nbytes < 0:
            raise VDLAProgramError(f"DRAM region {name!r}: size must be an int >= 0, "
                                   f"got {nbytes!r}")
        base = -(-len(self.data) // self.align) * self.align
        if base + nbytes > MAX_BYTES:
            raise VDLAProgramError(
                f"DRAM region {name!r} of {nbytes:,} bytes would end at byte {base + nbytes:,}; "
                f"the accelerator addresses {MAX_BYTES:,} bytes (32-bit addresses) and the "
                "simulator holds all of it in memory: use smaller tensors")
        grown = np.zeros(base + nbytes, dtype=np.uint8)
        grown[: len(self.data)] = self.data
        self.data = grown
        region = Region(name, base, nbytes)
        self.regions[name] = region
        return region

    def put(self, name: str, array: np.ndarray) -> Region:
        """Allocate a region holding a copy of ``array``'s bytes (C order)."""
        array = np.ascontiguousarray(array)
        if array.dtype.kind not in "biuf":
            raise VDLAProgramError(
                f"DRAM region {name!r}: an array of {array.dtype} has no bytes to copy; put "
                "numbers (int8 inputs and weights, int32 biases)")
        raw = array.view(np.uint8).reshape(-1)
        region = self.alloc(name, raw.size)
        self.data[region.base : region.end] = raw
        return region

    def get(self, name: str, dtype: type | np.dtype, shape: tuple[int, ...]) -> np.ndarray:
        """A copy of region ``name`` read as an array of ``dtype`` and ``shape``."""
        region = self.regions.get(name)
        if region is None:
            raise VDLAProgramError(f"no DRAM region named {name!r}; the regions are "
                                   f"{sorted(self.regions)}")
        item = np.dtype(dtype).itemsize
        want = int(np.prod(shape, dtype=np.int64)) * item
        if want != region.nbytes:
            raise VDLAProgramError(
                f"DRAM region {name!r} holds {region.nbytes} bytes, but {np.dtype(dtype)} of "
                f"shape {tuple(shape)} is {want} bytes")
        raw = self.data[region.base : region.end].copy()
        return raw.view(dtype).reshape(shape)

    def region_of(self, lo: int, hi: int) -> Region | None:
        """The region holding all of the bytes ``[lo, hi)``, or None."""
        for region in self.regions.values():
            if region.base <= lo and hi <= region.end:
                return region
        return None

    def check(self, lo: int, hi: int, what: str) -> None:
        """Raise :class:`VDLAAccessError` unless bytes ``[lo, hi)`` lie in one region."""
        if hi <= lo or self.region_of(lo, hi) is not None:
            return
        near = [r for r in self.regions.values() if r.base <= lo < r.end]
        if near:
            r = near[0]
            raise VDLAAccessError(
                f"{what} touches DRAM bytes [{lo}, {hi}) but region {r.name!r} is "
                f"[{r.base}, {r.end}): it runs {hi - r.end} bytes past its end")
        names = ", ".join(f"{r.name} [{r.base}, {r.end})" for r in self.regions.values())
        raise VDLAAccessError(
            f"{what} touches DRAM bytes [{lo}, {hi}), which start in no region "
            f"(regions: {names or 'none'})")

"""The Module ``mlc.build(..., target="vdla")`` returns: call it with numpy arrays and it
runs the program on the VDLA simulator.

    f = mlc.build(s, [A, B, C], target="vdla")
    f(a, b, c)               # packs a and b into DRAM tiles, simulates, unpacks into c
    f.stats                  # cycles, busy time per module, utilization (of the last call)
    print(f.get_source())    # the instruction stream, in the notes' style
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlc.target.vdla.codegen import DramTensor
from mlc.vdla.config import VDLAConfig
from mlc.vdla.dram import DRAM
from mlc.vdla.gemm import pack, unpack
from mlc.vdla.isa import Program
from mlc.vdla.simulator import Stats, simulate


class VDLAModule:
    """A compiled VDLA program and the DRAM layout of its arguments."""

    def __init__(self, name: str, program: Program, tensors: list[DramTensor],
                 config: VDLAConfig, lowered: Any) -> None:
        self.name = name
        self.program = program
        self.tensors = tensors
        self.config = config
        self.lowered = lowered
        self.stats: Stats | None = None

    def __call__(self, *arrays: np.ndarray) -> Stats:
        """Run on the simulator; outputs are written into their arrays. Returns the run's
        :class:`~mlc.vdla.Stats` (also kept as ``self.stats``)."""
        if len(arrays) != len(self.tensors):
            raise ValueError(f"{self.name} takes {len(self.tensors)} arrays "
                             f"({', '.join(t.buffer.name for t in self.tensors)}), "
                             f"got {len(arrays)}")
        dram = DRAM()
        for t, a in zip(self.tensors, arrays):
            if not isinstance(a, np.ndarray) or a.shape != t.shape or str(a.dtype) != t.dtype:
                got = f"{a.dtype}{a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
                raise ValueError(f"{self.name}: argument {t.buffer.name} must be a numpy "
                                 f"array {t.dtype}{t.shape}, got {got}")
            packed = pack(a, *t.tile) if t.role == "in" else np.zeros(
                (t.tiles[0], t.tiles[1], *t.tile), dtype=t.dtype)
            region = dram.put(t.buffer.name, packed)
            assert region.base == t.base, "DRAM layout differs from the one compiled for"
        self.stats = simulate(self.program, dram, self.config)
        for t, a in zip(self.tensors, arrays):
            if t.role == "out":
                tiles = dram.get(t.buffer.name, np.dtype(t.dtype), (*t.tiles, *t.tile))
                np.copyto(a, unpack(tiles, t.shape))
        return self.stats

    def get_source(self, fmt: str = "") -> str:
        """The instruction stream (``fmt="ir"``: the lowered loop program)."""
        if fmt == "ir":
            return str(self.lowered)
        return str(self.program)

    def __repr__(self) -> str:
        return (f"VDLAModule({self.name!r}, {len(self.program)} instructions, "
                f"{len(self.program.uops)} micro-ops)")

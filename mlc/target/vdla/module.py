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

from mlc.errors import ArgumentError, ArgumentTypeError
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

    def __call__(self, *arrays: np.ndarray, **kwargs: Any) -> Stats:
        """Run on the simulator; outputs are written into their arrays. Returns the run's
        :class:`~mlc.vdla.Stats` (also kept as ``self.stats``)."""
        names = ", ".join(f"{t.buffer.name}: {t.dtype}{list(t.shape)}" for t in self.tensors)
        if kwargs or len(arrays) != len(self.tensors):
            got = (f"the keyword(s) {', '.join(f'{k}=' for k in kwargs)}" if kwargs
                   else f"{len(arrays)}")
            raise ArgumentTypeError(f"{self.name}() takes {len(self.tensors)} arrays by "
                                    f"position ({names}), got {got}")
        dram = DRAM(self.config.dram_align)
        for k, (t, a) in enumerate(zip(self.tensors, arrays)):
            what = f"{self.name}: argument {k} {t.buffer.name!r}"
            if not isinstance(a, np.ndarray) or str(a.dtype) != t.dtype:
                got = f"dtype {a.dtype}" if isinstance(a, np.ndarray) else type(a).__name__
                raise ArgumentTypeError(f"{what} must be a numpy array of {t.dtype}, got "
                                        f"{got}; pass np.asarray(..., dtype={t.dtype!r})")
            if isinstance(a, np.ma.MaskedArray):
                raise ArgumentTypeError(f"{what} is a masked array; the accelerator would "
                                        "ignore its mask: pass a.filled(0) or np.asarray(a)")
            if a.shape != t.shape:
                raise ArgumentError(f"{what} has shape {a.shape} but the program was "
                                    f"compiled for {t.shape}")
            if t.role == "out" and not a.flags.writeable:
                raise ArgumentError(f"{what} is written by the program but the array is "
                                    "read-only; pass a writeable array (e.g. np.empty(...))")
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
        """The instruction stream (``fmt=""``, ``"vdla"`` or ``"asm"``); ``fmt="ir"``: the
        lowered loop program."""
        if fmt == "ir":
            return str(self.lowered)
        if fmt in ("", "vdla", "asm"):
            return str(self.program)
        raise ArgumentError(f"unknown source format {fmt!r} for a VDLA module; use '' (or "
                            "'vdla', 'asm') for its instructions or 'ir' for the loop program")

    def __repr__(self) -> str:
        return (f"VDLAModule({self.name!r}, {len(self.program)} instructions, "
                f"{len(self.program.uops)} micro-ops)")

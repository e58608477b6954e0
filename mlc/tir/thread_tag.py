"""The GPU thread tags a loop can be bound to: the one list of them.

    blockIdx.x/y/z     the grid of thread blocks (one kernel launch)
    threadIdx.x/y/z    the threads of one block
    vthread(.x/y/z)    virtual threads: the loop stays a loop, interleaved (TVM's vthread)
    cthread            TVM's name for a CPU thread axis (te.thread_axis accepts it; bind does not)

The IR stores tags as strings (``For.thread_binding``, ``KernelLaunch.grid``), so the tuples
below hold the enum's values, which compare and hash as the strings do.
"""

from __future__ import annotations

import enum


class ThreadTag(enum.Enum):
    BLOCK_X = "blockIdx.x"
    BLOCK_Y = "blockIdx.y"
    BLOCK_Z = "blockIdx.z"
    THREAD_X = "threadIdx.x"
    THREAD_Y = "threadIdx.y"
    THREAD_Z = "threadIdx.z"
    VTHREAD = "vthread"
    VTHREAD_X = "vthread.x"
    VTHREAD_Y = "vthread.y"
    VTHREAD_Z = "vthread.z"
    CTHREAD = "cthread"

    @property
    def is_block(self) -> bool:
        return self.value.startswith("blockIdx.")

    @property
    def is_thread(self) -> bool:
        return self.value.startswith("threadIdx.")

    @property
    def is_virtual(self) -> bool:
        return self.value.startswith("vthread")


ALL_TAGS: tuple[str, ...] = tuple(t.value for t in ThreadTag)
BLOCK_AXES: tuple[str, ...] = tuple(t.value for t in ThreadTag if t.is_block)  # x, y, z
THREAD_AXES: tuple[str, ...] = tuple(t.value for t in ThreadTag if t.is_thread)  # x, y, z
BINDABLE: tuple[str, ...] = tuple(t.value for t in ThreadTag if t is not ThreadTag.CTHREAD)

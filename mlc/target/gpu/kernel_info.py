"""Discovery helpers on a program after :func:`~mlc.target.gpu.split_host_device.split_host_device`:
its kernel launches (:func:`kernels`), the global intermediates the host allocates
(:func:`intermediates`) and the constant size of a shared/local buffer (:func:`numel`).
"""

from __future__ import annotations

from mlc.errors import CodegenError
from mlc.tir.expr import (
    as_int,
)
from mlc.tir.functor import (
    collect,
)
from mlc.tir.stmt import (
    Allocate,
    Buffer,
    KernelLaunch,
    PrimFunc,
    SeqStmt,
    Stmt,
)


def kernels(node: PrimFunc | Stmt) -> list[KernelLaunch]:
    """The kernel launches of a program after :func:`split_host_device`, in launch order."""
    body = node.body if isinstance(node, PrimFunc) else node
    found: list[KernelLaunch] = collect(body, lambda n: isinstance(n, KernelLaunch))
    return found


def intermediates(func: PrimFunc) -> list[Buffer]:
    """The global buffers the host program allocates (outside every kernel)."""
    found: list[Buffer] = []

    def walk(s: Stmt) -> None:
        if isinstance(s, Allocate):
            found.append(s.buffer)
            walk(s.body)
        elif isinstance(s, SeqStmt):
            for c in s.seq:
                walk(c)

    walk(func.body)
    return found


def _numel(buf: Buffer) -> int:
    n = 1
    for extent in buf.shape:
        value = as_int(extent) if not isinstance(extent, int) else extent
        if value is None:
            raise CodegenError(
                f"the {buf.scope} buffer {buf.name!r} has the symbolic size {buf.shape}; GPU "
                f"{buf.scope} memory needs a constant size (use constant tile sizes)"
            )
        n *= value
    return n


def numel(buf: Buffer) -> int:
    """The constant number of elements of a shared/local buffer (a CodegenError if symbolic)."""
    return _numel(buf)


# ---------------------------------------------------------------------------------------------

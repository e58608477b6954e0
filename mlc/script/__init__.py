"""Write programs as the MLC course does: TVMScript-style TensorIR and whole-model IRModules.

    from mlc.script import ir_module, T, R

    @ir_module
    class MyModule:
        @T.prim_func
        def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32"),
                 C: T.Buffer((128,), "float32")):
            for i in range(128):
                with T.block("C"):
                    vi = T.axis.spatial(128, i)
                    C[vi] = A[vi] + B[vi]

The decorated code is read from its source text, never run. ``print(func)`` and
``func.script()`` read back with :func:`from_source` to a structurally equal program.
"""

from mlc.script import ir as I
from mlc.script import relax as R
from mlc.script import tir as T
from mlc.script.ir_module import IRModule, from_source, ir_module, prim_func
from mlc.script.source import Source

tir = T
relax = R

__all__ = ["I", "IRModule", "R", "Source", "T", "from_source", "ir_module", "prim_func", "relax",
           "tir"]

"""``I``: TVM's ``from tvm.script import ir as I`` namespace, so ``@I.ir_module`` reads as in
the MLC course's newer notebooks."""

from mlc.script.ir_module import IRModule, ir_module

__all__ = ["IRModule", "ir_module"]

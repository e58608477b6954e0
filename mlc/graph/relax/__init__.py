"""The graph level in the MLC course's shape (``relax`` in TVM): functions of bindings,
``call_tir`` into the module's prim_funcs, a mutator for rewrites, conversion to and from
:class:`mlc.graph.Graph`, and ``from_fx``.

    from mlc.graph import relax
    updated = EwiseFMARewriter().visit_expr(MyModule["main"])    # a PyExprMutator
    relax.analysis.remove_all_unused(updated).show()
    fused = relax.optimize(MyModule)                            # fuse ops into prim_funcs
    ex = mlc.build(fused, target="llvm"); ex["main"](x, ...)
"""

from types import SimpleNamespace

from mlc.graph.mutator import BlockBuilder, PyExprMutator, call_te, mutator
from mlc.graph.relax.bridge import (
    Executable,
    VirtualMachine,
    build,
    from_fx,
    from_graph,
    map_param,
    optimize,
    run_function,
    to_graph,
)
from mlc.graph.relax.expr import (
    CALL_TIR,
    EWISE_FMA,
    Binding,
    BindingBlock,
    Call,
    Constant,
    DataflowBlock,
    DataflowVar,
    Expr,
    Function,
    GlobalVar,
    Op,
    Tensor,
    TensorStructInfo,
    Tuple,
    Var,
    VarBinding,
    call_tir,
    const,
    remove_all_unused,
)


def _op(name: str):  # type: ignore[no-untyped-def]
    def make(*args, **attrs):  # type: ignore[no-untyped-def]
        return Call(Op.get(name), list(args), attrs)

    make.__name__ = name.replace(".", "_")
    return make


# relax.op.add(x, y), relax.op.nn.relu(x)...: calls of the registered graph ops
op = SimpleNamespace(
    add=_op("add"), subtract=_op("subtract"), multiply=_op("multiply"), divide=_op("divide"),
    ewise_fma=_op("ewise_fma"), exp=_op("exp"), sum=_op("sum"), reshape=_op("reshape"),
    matmul=_op("nn.matmul"),
    nn=SimpleNamespace(dense=_op("nn.dense"), relu=_op("nn.relu"), softmax=_op("nn.softmax"),
                       bias_add=_op("nn.bias_add"), matmul=_op("nn.matmul")),
)
analysis = SimpleNamespace(remove_all_unused=remove_all_unused)
expr_functor = SimpleNamespace(mutator=mutator, PyExprMutator=PyExprMutator)

__all__ = [
    "BlockBuilder", "PyExprMutator", "call_te", "mutator", "Executable", "VirtualMachine",
    "build", "from_fx", "from_graph", "map_param", "optimize", "run_function", "to_graph",
    "CALL_TIR", "EWISE_FMA", "Binding", "BindingBlock", "Call", "Constant", "DataflowBlock",
    "DataflowVar", "Expr", "Function", "GlobalVar", "Op", "Tensor", "TensorStructInfo",
    "Tuple", "Var", "VarBinding", "call_tir", "const", "remove_all_unused", "op", "analysis",
    "expr_functor",
]
